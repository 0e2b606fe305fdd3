"""The JAX importer: StableHLO op walk, MATMUL/CONV shapes and FLOPs, XLA cost notes."""

from __future__ import annotations

from functools import partial

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from chipwise.errors import ExtractionError, WorkloadError  # noqa: E402
from chipwise.workload.from_jax import (  # noqa: E402
    DYNAMIC_DIM,
    graph_from_jax,
    graph_from_stablehlo,
)
from chipwise.workload.ir import Graph, Op, OpKind  # noqa: E402

S = jax.ShapeDtypeStruct


def _of(graph: Graph, kind: OpKind) -> list[Op]:
    return [op for op in graph.ops if op.kind == kind]


def _mlp(x, w1, w2):
    h = jax.nn.relu(x @ w1)
    return jnp.sum(jax.nn.softmax(h @ w2, axis=-1))


MLP_ARGS = (S((8, 16), jnp.float32), S((16, 32), jnp.float32), S((32, 4), jnp.float32))


def test_mlp_matmuls_carry_mnk_and_2mnk_flops() -> None:
    graph = graph_from_jax(_mlp, *MLP_ARGS)
    matmuls = _of(graph, OpKind.MATMUL)
    assert [(op.mnk, op.batch) for op in matmuls] == [((8, 32, 16), 1), ((8, 4, 32), 1)]
    assert [op.flops for op in matmuls] == [2 * 8 * 32 * 16, 2 * 8 * 4 * 32]
    assert {OpKind.ELEMENTWISE, OpKind.REDUCTION} <= {op.kind for op in graph.ops}
    assert graph.name == "_mlp" and graph.source == "jax stablehlo"


def test_mlp_total_flops_are_close_to_xla_cost_analysis() -> None:
    graph = graph_from_jax(_mlp, *MLP_ARGS)
    cost = jax.jit(_mlp).lower(*MLP_ARGS).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    assert graph.flops == pytest.approx(cost["flops"], rel=0.15)
    assert any(note.startswith("XLA cost_analysis") for note in graph.notes)


@pytest.mark.parametrize(
    ("dtype", "w1_bytes"),
    [(None, 16 * 32 * 4), ("bf16", 16 * 32 * 2), ("fp8", 16 * 32 * 1)],
)
def test_bytes_follow_the_target_dtype_or_each_tensor_own(dtype: str | None, w1_bytes: int) -> None:
    graph = graph_from_jax(_mlp, *MLP_ARGS, dtype=dtype)
    first = _of(graph, OpKind.MATMUL)[0]
    x_bytes = 8 * 16 * w1_bytes // (16 * 32)
    assert first.bytes_read == x_bytes + w1_bytes
    assert first.dtype == (dtype or "fp32")


def test_a_matmul_in_bf16_is_a_bf16_op_even_when_it_accumulates_in_fp32() -> None:
    def f(a, b):
        return jnp.matmul(a, b, preferred_element_type=jnp.float32)

    graph = graph_from_jax(f, S((8, 16), jnp.bfloat16), S((16, 4), jnp.bfloat16))
    (op,) = _of(graph, OpKind.MATMUL)
    assert op.dtype == "bf16"
    assert op.bytes_written == 8 * 4 * 4  # the fp32 result


@pytest.mark.parametrize(
    ("numbers", "x_shape", "k_shape", "groups"),
    [
        (("NHWC", "HWIO", "NHWC"), (2, 8, 8, 6), (3, 3, 6, 16), 1),
        (("NCHW", "OIHW", "NCHW"), (2, 6, 8, 8), (16, 6, 3, 3), 1),
        (("NCHW", "OIHW", "NCHW"), (2, 6, 8, 8), (12, 1, 3, 3), 6),  # depthwise x2
    ],
)
def test_conv_flops_are_2_n_cout_hw_cin_per_group_kh_kw(
    numbers: tuple[str, str, str],
    x_shape: tuple[int, ...],
    k_shape: tuple[int, ...],
    groups: int,
) -> None:
    def conv(x, k):
        return jax.lax.conv_general_dilated(
            x, k, (1, 1), "SAME", dimension_numbers=numbers, feature_group_count=groups
        )

    (op,) = graph_from_jax(conv, S(x_shape, jnp.float32), S(k_shape, jnp.float32)).ops
    n, h, w = 2, 8, 8
    c_out = 16 if groups == 1 else 12
    c_in = 6
    assert op.kind == OpKind.CONV
    assert op.flops == 2 * n * c_out * h * w * (c_in // groups) * 3 * 3


def test_sort_and_gather_are_their_own_kinds_and_a_gather_reads_only_its_rows() -> None:
    def f(x, idx):
        return jnp.sort(x[idx])

    graph = graph_from_jax(f, S((1000, 8), jnp.float32), S((5,), jnp.int32))
    (gather,) = _of(graph, OpKind.GATHER)
    assert gather.bytes_written == 5 * 8 * 4
    assert gather.bytes_read == 5 * 4 + 5 * 8 * 4  # indices + the 5 rows, not 1000
    assert len(_of(graph, OpKind.SORT)) == 1


def test_scatter_top_k_loops_and_argmax() -> None:
    def f(x, idx, v):
        y = x.at[idx].add(v)
        values, _ = jax.lax.top_k(y, 3)
        z = jax.lax.fori_loop(0, 5, lambda i, c: c * 2.0, y)
        return values, jnp.argmax(z, axis=-1)

    graph = graph_from_jax(f, S((10, 8), jnp.float32), S((4,), jnp.int32), S((4, 8), jnp.float32))
    kinds = {op.kind for op in graph.ops}
    assert {OpKind.SCATTER, OpKind.SORT, OpKind.REDUCTION} <= kinds
    assert any("while loop" in note for note in graph.notes)
    assert any(op.name == "closed_call:multiply" for op in graph.ops)  # the loop body


def test_tiny_attention_is_two_batched_matmuls_over_batch_times_heads() -> None:
    b, s, h, d = 2, 16, 4, 8

    def attention(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, is_causal=True)

    graph = graph_from_jax(attention, *[S((b, s, h, d), jnp.bfloat16)] * 3)
    matmuls = _of(graph, OpKind.MATMUL)
    assert [op.batch for op in matmuls] == [b * h, b * h]
    assert all(op.flops == 2 * b * h * s * s * d for op in matmuls)
    assert OpKind.REDUCTION in {op.kind for op in graph.ops}  # the softmax max and sum


def test_symbolic_dimensions_are_flagged_dynamic_and_substituted() -> None:
    (batch,) = jax.export.symbolic_shape("b")

    def f(x):
        return jnp.tanh(x @ jnp.ones((4, 3)))

    graph = graph_from_jax(f, S((batch, 4), jnp.float32))
    (matmul,) = _of(graph, OpKind.MATMUL)
    assert matmul.dynamic and matmul.mnk == (DYNAMIC_DIM, 3, 4)
    assert any(note.startswith("no XLA cost analysis") for note in graph.notes)


def test_psum_in_shard_map_is_a_collective() -> None:
    mesh = jax.make_mesh((1,), ("x",))
    spec = jax.sharding.PartitionSpec("x")

    @partial(jax.shard_map, mesh=mesh, in_specs=spec, out_specs=jax.sharding.PartitionSpec())
    def total(a):
        return jax.lax.psum(a, "x")

    arg = S((8, 4), jnp.float32, sharding=jax.sharding.NamedSharding(mesh, spec))
    assert OpKind.COLLECTIVE in {op.kind for op in graph_from_jax(total, arg).ops}


def test_float64_arithmetic_is_fp64() -> None:
    with jax.enable_x64(True):
        graph = graph_from_jax(lambda a: a @ a, S((4, 4), jnp.float64))
    (op,) = graph.ops
    assert (op.kind, op.dtype, op.flops, op.mnk) == (OpKind.FP64, "fp64", 2 * 4**3, (4, 4, 4))


QKV = "tensor<2x128x8x64xbf16>"
VEC = "tensor<4xf32>"
CUSTOM_CALLS = f"""
module @m {{
  func.func public @main(%arg0: {QKV}, %arg1: {VEC}) -> {VEC} {{
    %0 = stablehlo.custom_call @cudnn$fmhaSoftmax(%arg0, %arg0, %arg0) \
{{backend_config = "{{\\"x\\": {{}}}}"}} : ({QKV}, {QKV}, {QKV}) -> {QKV}
    %1 = "stablehlo.custom_call"(%arg1) \
<{{call_target_name = "my_kernel", backend_config = "}}"}}> : ({VEC}) -> {VEC}
    %2 = stablehlo.custom_call @Sharding(%1) : ({VEC}) -> {VEC}
    %3 = tpu.mystery %2 : {VEC}
    return %3 : {VEC}
  }}
}}
"""


def test_custom_calls_from_text_attention_custom_and_free_sharding_markers() -> None:
    graph = graph_from_stablehlo(CUSTOM_CALLS)
    assert [(op.kind, op.name) for op in graph.ops] == [
        (OpKind.ATTENTION, "custom_call@cudnn$fmhaSoftmax"),
        (OpKind.CUSTOM, "custom_call@my_kernel"),
        (OpKind.OTHER, "mystery"),
    ]
    assert graph.ops[0].dtype == "bf16"
    assert any("2 custom call(s)" in note for note in graph.notes)


def test_text_without_the_entry_function_is_an_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="no function @main"):
        graph_from_stablehlo("module @m {}")


def test_a_function_that_does_not_lower_is_a_one_line_extraction_error() -> None:
    with pytest.raises(ExtractionError, match=r"lowering '<lambda>' with jax\.jit failed") as info:
        graph_from_jax(lambda a, b: a @ b, S((4, 3), jnp.float32), S((4, 3), jnp.float32))
    assert "\n" not in str(info.value)


def test_bad_arguments_are_workload_errors() -> None:
    with pytest.raises(WorkloadError, match="unknown dtype 'bf17'"):
        graph_from_jax(_mlp, *MLP_ARGS, dtype="bf17")
    with pytest.raises(WorkloadError, match="needs a function, got int"):
        graph_from_jax(3)
