"""The ONNX importer: op kinds, MATMUL/CONV shapes and FLOPs, symbolic dims, bad files."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from chipwise.errors import ExtractionError, WorkloadError  # noqa: E402
from chipwise.workload.from_onnx import DYNAMIC_DIM, load_onnx  # noqa: E402
from chipwise.workload.ir import Graph, Op, OpKind  # noqa: E402

np = pytest.importorskip("numpy")

F32 = TensorProto.FLOAT


def _save(
    tmp_path: Path,
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    inits: Sequence[onnx.TensorProto] = (),
    name: str = "m",
) -> Path:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("my.domain", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def _init(name: str, *shape: int, dtype: type = np.float32) -> TensorProto:
    return numpy_helper.from_array(np.zeros(shape, dtype=dtype), name)


def _of(graph: Graph, kind: OpKind) -> list[Op]:
    return [op for op in graph.ops if op.kind == kind]


@pytest.fixture
def mlp(tmp_path: Path) -> Path:
    """x (N x 16) -> MatMul 16x32 -> Add -> Relu -> MatMul 32x4 -> Softmax; N symbolic."""
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["logits"], name="fc2"),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=-1),
    ]
    return _save(
        tmp_path,
        nodes,
        [helper.make_tensor_value_info("x", F32, ["N", 16])],
        [helper.make_tensor_value_info("y", F32, ["N", 4])],
        [_init("w1", 16, 32), _init("b1", 32), _init("w2", 32, 4)],
        name="mlp",
    )


def test_mlp_kinds_mnk_flops_and_params(mlp: Path) -> None:
    graph = load_onnx(mlp)
    assert [op.kind for op in graph.ops] == [
        OpKind.MATMUL, OpKind.ELEMENTWISE, OpKind.ELEMENTWISE, OpKind.MATMUL, OpKind.SOFTMAX,
    ]  # fmt: skip
    fc1, fc2 = _of(graph, OpKind.MATMUL)
    assert (fc1.mnk, fc1.flops) == ((DYNAMIC_DIM, 32, 16), 2 * DYNAMIC_DIM * 32 * 16)
    assert fc2.mnk == (DYNAMIC_DIM, 4, 32)
    assert graph.params == 16 * 32 + 32 + 32 * 4
    assert (graph.name, graph.source) == ("mlp", "onnx")
    assert not any(op.backward for op in graph.ops)


def test_symbolic_batch_is_flagged_dynamic_and_takes_the_given_size(mlp: Path) -> None:
    graph = load_onnx(mlp, dim_values={"N": 8})
    fc1 = _of(graph, OpKind.MATMUL)[0]
    assert fc1.mnk == (8, 32, 16) and fc1.dynamic
    assert all(op.dynamic for op in graph.ops)  # every op's shape follows N
    assert any("N=8" in note for note in graph.notes)


@pytest.mark.parametrize(("dtype", "per"), [(None, 4), ("bf16", 2), ("fp8", 1)])
def test_bytes_follow_the_target_dtype_or_the_file_types(
    mlp: Path, dtype: str | None, per: int
) -> None:
    fc1 = _of(load_onnx(mlp, dtype=dtype), OpKind.MATMUL)[0]
    assert fc1.bytes_read == (1 * 16 + 16 * 32) * per
    assert fc1.bytes_written == 1 * 32 * per
    assert fc1.dtype == (dtype or "fp32")


def test_gemm_honours_trans_b(tmp_path: Path) -> None:
    node = helper.make_node("Gemm", ["a", "b"], ["y"], transB=1)
    path = _save(
        tmp_path,
        [node],
        [helper.make_tensor_value_info("a", F32, [4, 8])],
        [helper.make_tensor_value_info("y", F32, [4, 16])],
        [_init("b", 16, 8)],
    )
    (op,) = load_onnx(path).ops
    assert (op.kind, op.mnk, op.flops, op.dynamic) == (
        OpKind.MATMUL,
        (4, 16, 8),
        2 * 4 * 16 * 8,
        False,
    )


def test_grouped_conv_flops_are_2_n_cout_hw_cin_per_group_kh_kw(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "w"], ["y"], group=2, pads=[1, 1, 1, 1])
    path = _save(
        tmp_path,
        [node],
        [helper.make_tensor_value_info("x", F32, [2, 6, 8, 8])],
        [helper.make_tensor_value_info("y", F32, None)],
        [_init("w", 16, 3, 3, 3)],
    )
    (op,) = load_onnx(path).ops
    assert op.kind == OpKind.CONV and op.shape == (2, 16, 8, 8)
    assert op.flops == 2 * 2 * 16 * 8 * 8 * (6 // 2) * 3 * 3


def test_each_onnx_family_maps_to_its_kind(tmp_path: Path) -> None:
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"]),
        helper.make_node("LayerNormalization", ["emb", "g"], ["ln"], axis=-1),
        helper.make_node("Einsum", ["q", "k"], ["s"], equation="bhqd,bhkd->bhqk"),
        helper.make_node("TopK", ["s", "kk"], ["vals", "idx"]),
        helper.make_node("ReduceMean", ["ln"], ["mean"]),
        helper.make_node("ScatterND", ["table", "sidx", "upd"], ["scattered"]),
        helper.make_node("Transpose", ["ln"], ["t"], perm=[1, 0]),
        helper.make_node("Reshape", ["t", "shape"], ["flat"]),
        helper.make_node("NonZero", ["ids"], ["nz"]),
        helper.make_node("MyOp", ["ln"], ["custom"], domain="my.domain"),
    ]
    path = _save(
        tmp_path,
        nodes,
        [
            helper.make_tensor_value_info("ids", i64, [5]),
            helper.make_tensor_value_info("q", F32, [2, 4, 16, 8]),
            helper.make_tensor_value_info("k", F32, [2, 4, 16, 8]),
            helper.make_tensor_value_info("sidx", i64, [3, 1]),
            helper.make_tensor_value_info("upd", F32, [3, 8]),
        ],
        [helper.make_tensor_value_info(n, F32, None) for n in ("vals", "mean", "custom")],
        [
            _init("table", 1000, 8),
            _init("g", 8),
            numpy_helper.from_array(np.array([3], dtype=np.int64), "kk"),
            _init("shape", 1, dtype=np.int64),
        ],
    )
    graph = load_onnx(path)
    kinds = {op.name: op.kind for op in graph.ops}
    assert kinds == {
        "Gather": OpKind.GATHER,
        "LayerNormalization": OpKind.NORM,
        "Einsum": OpKind.MATMUL,
        "TopK": OpKind.SORT,
        "ReduceMean": OpKind.REDUCTION,
        "ScatterND": OpKind.SCATTER,
        "Transpose": OpKind.COPY,
        "NonZero": OpKind.OTHER,
        "MyOp": OpKind.CUSTOM,
    }  # Reshape moves no data: not recorded
    (gather,) = _of(graph, OpKind.GATHER)
    assert gather.bytes_read == 5 * 8 + 5 * 8 * 4  # int64 ids + the 5 rows, not 1000
    (einsum,) = _of(graph, OpKind.MATMUL)
    assert (einsum.mnk, einsum.batch) == ((16, 16, 8), 2 * 4)
    # data-dependent (NonZero) and unknown (MyOp: no shape inference) shapes are dynamic
    assert [op.name for op in graph.ops if op.dynamic] == ["NonZero", "MyOp"]


def test_double_tensors_are_fp64(tmp_path: Path) -> None:
    f64 = TensorProto.DOUBLE
    path = _save(
        tmp_path,
        [helper.make_node("Mul", ["a", "a"], ["y"])],
        [helper.make_tensor_value_info("a", f64, [10])],
        [helper.make_tensor_value_info("y", f64, [10])],
    )
    (op,) = load_onnx(path, dtype="bf16").ops
    assert (op.kind, op.dtype, op.bytes_written) == (OpKind.FP64, "fp64", 10 * 8)


def test_if_branches_are_walked_once_each(tmp_path: Path) -> None:
    def branch(op_type: str) -> onnx.GraphProto:
        node = helper.make_node(op_type, ["x", "x"], [f"{op_type}_out"])
        out = helper.make_tensor_value_info(f"{op_type}_out", F32, [4])
        return helper.make_graph([node], op_type, [], [out])

    node = helper.make_node(
        "If", ["cond"], ["y"], then_branch=branch("Add"), else_branch=branch("Mul")
    )
    path = _save(
        tmp_path,
        [node],
        [
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", F32, [4]),
        ],
        [helper.make_tensor_value_info("y", F32, [4])],
    )
    graph = load_onnx(path)
    assert sorted(op.name for op in graph.ops) == ["Add", "Mul"]
    assert any("If/Loop/Scan" in note for note in graph.notes)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "no graph nodes"),
        (b"\xff\xfe definitely not protobuf \x00\x01", "is it an ONNX model"),
    ],
)
def test_a_bad_file_is_a_one_line_extraction_error(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(ExtractionError, match=message) as info:
        load_onnx(path)
    assert "\n" not in str(info.value)


def test_a_missing_file_and_bad_options_are_errors(tmp_path: Path, mlp: Path) -> None:
    with pytest.raises(ExtractionError, match="no such file"):
        load_onnx(tmp_path / "nope.onnx")
    with pytest.raises(WorkloadError, match="unknown dtype 'bf17'"):
        load_onnx(mlp, dtype="bf17")
    with pytest.raises(WorkloadError, match="must be >= 1"):
        load_onnx(mlp, dynamic_dim=0)


def test_gpt2_like_exported_by_torch_matches_the_torch_trace(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from chipwise.workload.examples import gpt2_like
    from chipwise.workload.from_torch import graph_from_module

    sizes = {"n_layer": 1, "d": 32, "n_head": 2, "vocab": 64, "seq": 16, "batch": 2}
    module, inputs = gpt2_like.build(**sizes)
    path = tmp_path / "gpt2_like.onnx"
    with warnings.catch_warnings():  # the TorchScript exporter is deprecated in torch 2.9+
        warnings.simplefilter("ignore")
        try:  # dynamo=True would need onnxscript, which chipwise does not depend on
            torch.onnx.export(
                module, inputs, str(path), dynamo=False, input_names=["idx"],
                dynamic_axes={"idx": {0: "batch"}},
            )  # fmt: skip
        except Exception as err:  # pragma: no cover - depends on the torch build
            pytest.skip(f"torch.onnx.export unavailable offline: {err}")
    graph = load_onnx(path, dim_values={"batch": 2})
    with torch.device("meta"):
        traced = graph_from_module(*gpt2_like.build(**sizes), backward=False)
    torch_flops = sum(op.total_flops for op in traced.ops if op.tensor_op)
    assert sum(op.total_flops for op in _of(graph, OpKind.MATMUL)) == torch_flops
    # the export unties the LM head and folds all-ones/zeros norm weights into constants
    assert graph.params == pytest.approx(traced.params + 64 * 32, rel=0.01)
    assert {OpKind.MATMUL, OpKind.NORM, OpKind.SOFTMAX, OpKind.GATHER} <= {
        op.kind for op in graph.ops
    }
