"""The torch importer: meta-device tracing, op kinds, FLOP counts, the factory contract."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from chipwise.errors import ExtractionError, WorkloadError  # noqa: E402
from chipwise.workload.examples import gpt2_like, resnet_like, unet_like  # noqa: E402
from chipwise.workload.from_torch import graph_from_module, load_torch_factory  # noqa: E402
from chipwise.workload.ir import Graph, OpKind  # noqa: E402

GPT2_SPEC = "chipwise.workload.examples.gpt2_like:build"
# ResNet-50 at 224 x 224: 4.1 G multiply-adds forward (He et al. 2016, table 1).
RESNET50_GMACS = 4.1
RESNET50_PARAMS = 25.6e6  # torchvision resnet50 model card: 25,557,032


def _tensor_flops(graph: Graph, *, backward: bool | None = None) -> float:
    return sum(
        op.total_flops
        for op in graph.ops
        if op.tensor_op and (backward is None or op.backward == backward)
    )


@pytest.fixture(scope="module")
def gpt2() -> Graph:
    return load_torch_factory(GPT2_SPEC, trust_code=True)


def test_gpt2_like_has_the_op_kinds_of_a_transformer(gpt2: Graph) -> None:
    kinds = {op.kind for op in gpt2.ops}
    assert {OpKind.MATMUL, OpKind.ATTENTION, OpKind.NORM, OpKind.GATHER} <= kinds
    assert OpKind.SCATTER in {op.kind for op in gpt2.ops if op.backward}  # embedding grad


def test_gpt2_like_forward_flops_match_2_params_tokens_plus_attention(gpt2: Graph) -> None:
    n_layer, d, seq, batch = 2, 128, 64, 2  # gpt2_like.build defaults
    tokens = batch * seq
    non_embedding = gpt2.params - seq * d  # position embedding does no matmul (nanoGPT)
    analytic = 2 * non_embedding * tokens + 4 * n_layer * d * seq * tokens
    assert _tensor_flops(gpt2, backward=False) == pytest.approx(analytic, rel=0.03)


def test_gpt2_like_forward_plus_backward_is_about_three_times_forward(gpt2: Graph) -> None:
    ratio = _tensor_flops(gpt2) / _tensor_flops(gpt2, backward=False)
    assert ratio == pytest.approx(3.0, rel=0.05)


def test_matmul_ops_carry_mnk_consistent_with_their_flops(gpt2: Graph) -> None:
    matmuls = [op for op in gpt2.ops if op.kind == OpKind.MATMUL]
    assert matmuls
    for op in matmuls:
        assert op.mnk is not None
        m, n, k = op.mnk
        assert op.flops == 2 * op.batch * m * n * k


def test_resnet50_at_224_is_4_1_gmacs_forward() -> None:
    module, inputs = _on_meta(resnet_like.build, width=64, image_size=224, batch=1)
    graph = graph_from_module(module, inputs, backward=False)
    gmacs = _tensor_flops(graph) / 2 / 1e9  # flop_counter counts 2 FLOPs per MAC
    assert gmacs == pytest.approx(RESNET50_GMACS, rel=0.05)
    assert graph.params == pytest.approx(RESNET50_PARAMS, rel=0.01)
    assert {OpKind.CONV, OpKind.NORM, OpKind.REDUCTION} <= {op.kind for op in graph.ops}


def test_unet_like_has_conv_norm_attention_and_a_timestep_matmul() -> None:
    graph = load_torch_factory(
        "chipwise.workload.examples.unet_like:build", trust_code=True, backward=False
    )
    kinds = {op.kind for op in graph.ops}
    assert {OpKind.CONV, OpKind.NORM, OpKind.ATTENTION, OpKind.MATMUL, OpKind.COPY} <= kinds
    assert not any(op.backward for op in graph.ops)


def _on_meta(build: Callable[..., Any], **kwargs: Any) -> Any:
    with torch.device("meta"):
        return build(**kwargs)


def test_tracing_allocates_no_storage_and_runs_on_meta_only() -> None:
    module, inputs = _on_meta(gpt2_like.build)
    seen_devices: list[str] = []
    module.register_forward_pre_hook(lambda _m, args: seen_devices.append(args[0].device.type))
    graph_from_module(module, inputs)
    assert seen_devices == ["meta"]
    assert all(p.is_meta for p in module.parameters())
    assert all(p.grad is None for p in module.parameters())  # no side effect left behind


def test_a_module_with_real_weights_is_traced_as_a_meta_copy_and_left_alone() -> None:
    module = torch.nn.Linear(64, 32, bias=False)
    before = module.weight.detach().clone()
    graph = graph_from_module(module, (torch.zeros(8, 64),), backward=False)
    assert module.weight.device.type == "cpu"
    assert torch.equal(module.weight.detach(), before)
    assert any("meta copy" in note for note in graph.notes)
    assert [op.kind for op in graph.ops] == [OpKind.MATMUL]


@pytest.mark.parametrize(
    ("dtype", "bytes_read", "bytes_written"),
    [
        # x (8 x 64) and W (32 x 64) read, y (8 x 32) written, at 2 or 4 bytes
        ("bf16", (8 * 64 + 64 * 32) * 2, 8 * 32 * 2),
        ("fp32", (8 * 64 + 64 * 32) * 4, 8 * 32 * 4),
        ("fp8", (8 * 64 + 64 * 32) * 1, 8 * 32 * 1),
    ],
)
def test_linear_bytes_follow_the_target_dtype(
    dtype: str, bytes_read: int, bytes_written: int
) -> None:
    with torch.device("meta"):
        module = torch.nn.Linear(64, 32, bias=False)
    graph = graph_from_module(module, torch.empty(8, 64), dtype=dtype, backward=False)
    (op,) = graph.ops
    assert (op.kind, op.mnk, op.batch, op.dtype) == (OpKind.MATMUL, (8, 32, 64), 1, dtype)
    assert op.flops == 2 * 8 * 32 * 64
    assert (op.bytes_read, op.bytes_written) == (bytes_read, bytes_written)


def test_bmm_records_the_batch_of_gemms() -> None:
    class Bmm(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.bmm(a, b)

    a, b = torch.empty(6, 16, 32, device="meta"), torch.empty(6, 32, 8, device="meta")
    (op,) = graph_from_module(Bmm(), (a, b), backward=False).ops
    assert (op.mnk, op.batch, op.flops) == ((16, 8, 32), 6, 2 * 6 * 16 * 8 * 32)


def test_float64_ops_are_fp64_at_8_bytes() -> None:
    with torch.device("meta"):
        module = torch.nn.Linear(4, 4, bias=False).double()
    (op,) = graph_from_module(module, torch.empty(2, 4, dtype=torch.float64), backward=False).ops
    assert (op.kind, op.dtype, op.bytes_written) == (OpKind.FP64, "fp64", 2 * 4 * 8)


class _Attention(torch.nn.Module):
    def forward(self, q: torch.Tensor, kv: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(
            q, kv, kv, attn_mask=mask, enable_gqa=True
        )


def test_sdpa_with_a_bool_mask_and_grouped_kv_heads_is_one_attention_op() -> None:
    q = torch.empty(2, 8, 16, 32, device="meta", requires_grad=True)
    kv = torch.empty(2, 2, 16, 32, device="meta", requires_grad=True)
    mask = torch.empty(16, 16, dtype=torch.bool, device="meta")
    graph = graph_from_module(_Attention(), (q, kv, mask))
    attention = [op for op in graph.ops if op.kind == OpKind.ATTENTION]
    assert [op.backward for op in attention] == [False, True]
    assert attention[0].flops == 4 * 2 * 8 * 16 * 16 * 32  # QK^T and PV, 2 FLOPs per MAC
    assert not any(op.kind == OpKind.SOFTMAX for op in graph.ops)


def test_without_backward_no_op_is_marked_backward() -> None:
    graph = load_torch_factory(GPT2_SPEC, trust_code=True, backward=False)
    assert graph.ops and not any(op.backward for op in graph.ops)


def test_load_torch_factory_refuses_without_trust_code() -> None:
    with pytest.raises(WorkloadError, match=r"importing '.*gpt2_like:build' runs its code; "):
        load_torch_factory(GPT2_SPEC, trust_code=False)


@pytest.mark.parametrize("spec", ["no_colon", "mod:", ":build", "mod:not-an-identifier"])
def test_a_malformed_spec_is_a_workload_error(spec: str) -> None:
    with pytest.raises(WorkloadError, match=r"must be 'package\.module:factory'"):
        load_torch_factory(spec, trust_code=True)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("chipwise_no_such_module_xyz:build", "ModuleNotFoundError"),
        ("chipwise.workload.examples.gpt2_like:no_such", "has no callable 'no_such'"),
        ("/no/such/file.py:build", "no file"),
    ],
)
def test_import_failures_are_one_line_extraction_errors(spec: str, message: str) -> None:
    with pytest.raises(ExtractionError, match=message) as info:
        load_torch_factory(spec, trust_code=True)
    assert "\n" not in str(info.value)


MODEL_FILE = """
import torch

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.proj(x))

    def example_inputs(self):
        return torch.empty(4, 16)

def build(width=16):
    return Tiny()

def not_a_module():
    return 42

def broken():
    raise RuntimeError("boom\\nsecond line")

def data_dependent():
    class Nonzero(torch.nn.Module):
        def forward(self, x):
            return x.nonzero()
    return Nonzero(), (torch.empty(3, 3),)
"""


def test_a_file_factory_returning_a_module_with_example_inputs_is_traced(tmp_path: Path) -> None:
    path = tmp_path / "tiny_model.py"
    path.write_text(MODEL_FILE)
    graph = load_torch_factory(f"{path}:build", trust_code=True)
    assert graph.name == "Tiny"
    assert graph.params == 16 * 16 + 16
    assert {OpKind.MATMUL, OpKind.ELEMENTWISE} <= {op.kind for op in graph.ops}


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        ("not_a_module", "returned int"),
        ("broken", "RuntimeError: boom"),
        ("data_dependent", "data-dependent shapes"),
    ],
)
def test_bad_factories_are_one_line_extraction_errors(
    tmp_path: Path, factory: str, message: str
) -> None:
    path = tmp_path / "tiny_model.py"
    path.write_text(MODEL_FILE)
    with pytest.raises(ExtractionError, match=message) as info:
        load_torch_factory(f"{path}:{factory}", trust_code=True)
    assert "\n" not in str(info.value)


def test_an_unknown_dtype_is_a_workload_error() -> None:
    with torch.device("meta"):
        module = torch.nn.Linear(4, 4)
    with pytest.raises(WorkloadError, match="unknown dtype 'bf17'"):
        graph_from_module(module, torch.empty(1, 4), dtype="bf17")


def test_unet_like_rejects_an_image_size_its_down_path_cannot_halve() -> None:
    with pytest.raises(ValueError, match="divisible by 4"):
        unet_like.build(image_size=30)
