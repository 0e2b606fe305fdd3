"""Import an ONNX model file as a ``Graph``. Reading a file never executes code.

``load_onnx(path)`` parses the protobuf (``onnx.load``, external weight files are not
read: only shapes matter), inlines model-local functions, runs
``onnx.shape_inference.infer_shapes`` and turns each node into an ``Op``:

* MatMul/Gemm (and Einsum, FusedMatMul, quantized variants) -> MATMUL, (M, N, K) and batch
  from the operand shapes; FLOPs = 2 * batch * M * N * K.
* Conv -> CONV, FLOPs = 2 * N * Cout * Hout * Wout * Cin/groups * kh * kw (= 2 * output
  elements * weight elements per output channel); ConvTranspose per input element.
* Attention (opset 23 and com.microsoft) -> ATTENTION, FLOPs = 4 * B * Sq * Skv * H * Dh.
* Gather* -> GATHER (reads only the rows it fetches), Scatter* -> SCATTER, TopK -> SORT,
  *Normalization -> NORM, Softmax -> SOFTMAX, Reduce*/ArgMax/pools -> REDUCTION,
  Transpose/Concat/Slice/Pad/... -> COPY, pointwise ops -> ELEMENTWISE, DOUBLE tensors ->
  FP64, other domains -> CUSTOM, anything else -> OTHER. Reshape, Squeeze, Shape, Constant
  and friends move no data and are not recorded. If/Loop/Scan bodies are walked once.

Symbolic dimensions (``dim_param``, e.g. a batch axis) are taken as ``DYNAMIC_DIM`` (1),
or the value given for that name in ``dim_values``; ops whose shapes depend on one are
flagged ``dynamic``, as are data-dependent ops (NonZero, Unique, Compress).
Parameters are the elements of floating-point initializers.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from chipwise.errors import ExtractionError, WorkloadError
from chipwise.units import DTYPE_BYTES
from chipwise.workload.ir import FLOPS_PER_ELEMENT, Graph, Op, OpKind

NO_ONNX_MESSAGE = "reading an ONNX file needs onnx; install it: pip install 'chipwise[onnx]'"
DYNAMIC_DIM = 1  # size assumed for a symbolic dimension (batch, sequence) without a value
MAX_INFERENCE_PASSES = 4  # shape inference reruns after filling reshape targets

# Bytes per element by TensorProto type name (ONNX IR spec, onnx.proto "DataType").
_ELEM_BYTES = {
    "FLOAT": 4, "UINT8": 1, "INT8": 1, "UINT16": 2, "INT16": 2, "INT32": 4, "INT64": 8,
    "STRING": 0, "BOOL": 1, "FLOAT16": 2, "DOUBLE": 8, "UINT32": 4, "UINT64": 8,
    "COMPLEX64": 8, "COMPLEX128": 16, "BFLOAT16": 2, "FLOAT8E4M3FN": 1, "FLOAT8E4M3FNUZ": 1,
    "FLOAT8E5M2": 1, "FLOAT8E5M2FNUZ": 1, "FLOAT8E8M0": 1, "UINT4": 0.5, "INT4": 0.5,
    "FLOAT4E2M1": 0.5, "UINT2": 0.25, "INT2": 0.25, "FLOAT6E2M3": 0.75, "FLOAT6E3M2": 0.75,
}  # fmt: skip
_CHIPWISE_DTYPE = {
    "FLOAT": "fp32", "FLOAT16": "fp16", "BFLOAT16": "bf16", "DOUBLE": "fp64",
    "FLOAT8E4M3FN": "fp8", "FLOAT8E4M3FNUZ": "fp8", "FLOAT8E5M2": "fp8",
    "FLOAT8E5M2FNUZ": "fp8", "INT8": "int8", "UINT8": "int8", "INT4": "int4", "UINT4": "int4",
}  # fmt: skip
_STANDARD_DOMAINS = frozenset({"", "ai.onnx", "com.microsoft", "ai.onnx.ml"})

_KIND_TABLE: tuple[tuple[OpKind | None, str], ...] = (
    (OpKind.MATMUL, "MatMul Gemm MatMulInteger QLinearMatMul FusedMatMul MatMulNBits Einsum"),
    (OpKind.CONV, "Conv ConvTranspose ConvInteger QLinearConv"),
    (OpKind.ATTENTION, "Attention MultiHeadAttention GroupQueryAttention"),
    (OpKind.GATHER, "Gather GatherElements GatherND Compress"),
    (OpKind.SCATTER, "ScatterND ScatterElements Scatter"),
    (OpKind.SORT, "TopK Unique"),
    (
        OpKind.NORM,
        "LayerNormalization BatchNormalization GroupNormalization InstanceNormalization "
        "RMSNormalization LpNormalization MeanVarianceNormalization SkipLayerNormalization "
        "SimplifiedLayerNormalization SkipSimplifiedLayerNormalization",
    ),
    (OpKind.SOFTMAX, "Softmax LogSoftmax Hardmax"),
    (
        OpKind.REDUCTION,
        "ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum "
        "ReduceLogSumExp ReduceSumSquare ArgMax ArgMin GlobalAveragePool GlobalMaxPool "
        "GlobalLpPool AveragePool MaxPool LpPool CumSum",
    ),
    (
        OpKind.COPY,
        "Transpose Concat Split Slice Pad Tile Expand DepthToSpace SpaceToDepth "
        "ConcatFromSequence SplitToSequence ReverseSequence",
    ),
    (
        OpKind.ELEMENTWISE,
        "Add Sub Mul Div Pow Mod Neg Abs Reciprocal Sqrt Exp Log Erf Sin Cos Tan Tanh Sigmoid "
        "Relu LeakyRelu PRelu Elu Selu Celu Gelu FastGelu BiasGelu QuickGelu Softplus Softsign "
        "HardSigmoid HardSwish Mish Swish Clip Floor Ceil Round Sign Max Min Sum Mean Where "
        "Equal Less LessOrEqual Greater GreaterOrEqual Not And Or Xor BitShift IsNaN IsInf "
        "Cast CastLike Trilu Resize Upsample RotaryEmbedding BiasAdd QuantizeLinear "
        "DequantizeLinear ThresholdedRelu Shrink Asin Acos Atan Sinh Cosh Asinh Acosh Atanh "
        "BitwiseAnd BitwiseOr BitwiseXor BitwiseNot RandomNormalLike RandomUniformLike",
    ),
    (
        None,  # move no data (or only shapes): not recorded
        "Reshape Flatten Squeeze Unsqueeze Identity Shape Size Constant ConstantOfShape Range "
        "Dropout Optional OptionalGetElement OptionalHasElement SequenceConstruct "
        "SequenceAt SequenceEmpty SequenceLength EyeLike",
    ),
)
_KINDS: dict[str, OpKind | None] = {
    name: kind for kind, names in _KIND_TABLE for name in names.split()
}
_CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})
_DATA_DEPENDENT = frozenset({"NonZero", "Unique", "Compress", "NonMaxSuppression"})


@dataclass(frozen=True, slots=True)
class _Tensor:
    dims: tuple[int, ...]
    elem: str  # TensorProto type name
    dynamic: bool  # a dimension was symbolic or unknown
    known: bool = True  # shape inference gave a shape at all

    @property
    def numel(self) -> int:
        return math.prod(self.dims) if self.known else 0

    @property
    def is_float(self) -> bool:
        return _is_float(self.elem)

    def nbytes(self, target: float | None) -> float:
        per = float(_ELEM_BYTES.get(self.elem, 0))
        if target is not None and self.is_float and self.elem not in ("DOUBLE", "COMPLEX128"):
            per = 2 * target if self.elem.startswith("COMPLEX") else target
        return self.numel * per


def _is_float(elem: str) -> bool:
    return elem.startswith(("FLOAT", "BFLOAT", "DOUBLE", "COMPLEX"))


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {(text[0] if text else '')[:300]}"


def _graphs(graph: Any) -> Iterator[Any]:
    """The graph and every subgraph (If/Loop/Scan bodies), depth first."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from _graphs(attr.g)
            for sub in attr.graphs:
                yield from _graphs(sub)


def _value_types(onnx: Any, model: Any, default: int) -> dict[str, _Tensor]:
    """Name -> _Tensor for every typed value of an inferred model; a dimension without a
    value is taken as ``default`` and marks the tensor dynamic."""
    name_of = onnx.TensorProto.DataType.Name
    types: dict[str, _Tensor] = {}
    for graph in _graphs(model.graph):
        for init in graph.initializer:
            types[init.name] = _Tensor(tuple(init.dims), name_of(init.data_type), False)
        for info in (*graph.input, *graph.value_info, *graph.output):
            tensor_type = info.type.tensor_type
            if not info.type.HasField("tensor_type") or not tensor_type.elem_type:
                continue
            elem = name_of(tensor_type.elem_type)
            if not tensor_type.HasField("shape"):
                types.setdefault(info.name, _Tensor((), elem, True, known=False))
                continue
            dims = [d.dim_value if d.HasField("dim_value") else 0 for d in tensor_type.shape.dim]
            dynamic = 0 in dims
            types[info.name] = _Tensor(tuple(d or default for d in dims), elem, dynamic)
    return types


def _solve_reshapes(model: Any) -> bool:
    """Fill the one unknown output dimension of a Reshape from its input's element count.

    Exporters compute reshape targets at run time (Shape -> Gather -> Div -> Concat);
    ONNX shape inference does not propagate the Div, so the head dimension of attention is
    lost and everything after it would be unknown. Returns whether anything was filled.
    """
    changed = False
    for graph in _graphs(model.graph):
        infos = {i.name: i for i in (*graph.input, *graph.value_info, *graph.output)}
        for node in graph.node:
            if node.op_type != "Reshape" or node.input[0] not in infos:
                continue
            out = infos.get(node.output[0])
            src = infos[node.input[0]].type.tensor_type.shape.dim
            if out is None or not all(d.HasField("dim_value") for d in src):
                continue
            dims = out.type.tensor_type.shape.dim
            unknown = [d for d in dims if not d.HasField("dim_value")]
            known = math.prod(d.dim_value for d in dims if d.HasField("dim_value"))
            total = math.prod(d.dim_value for d in src)
            if len(unknown) == 1 and known and total % known == 0:
                unknown[0].dim_value = total // known
                changed = True
    return changed


def _with_inputs_fixed(onnx: Any, model: Any, sizes: Mapping[str, int]) -> Any:
    """A copy whose graph inputs have concrete sizes in place of their dim_params."""
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    for info in fixed.graph.input:
        for dim in info.type.tensor_type.shape.dim:
            if not dim.HasField("dim_value"):
                dim.dim_value = sizes.get(dim.dim_param, DYNAMIC_DIM)  # clears dim_param
    return fixed


def _concrete_types(
    onnx: Any, model: Any, sizes: Mapping[str, int], notes: list[str]
) -> dict[str, _Tensor]:
    """Value types after shape inference with the symbolic input sizes fixed to ``sizes``."""

    def infer(m: Any) -> Any:
        try:
            return onnx.shape_inference.infer_shapes(m, data_prop=True)
        except Exception as err:
            note = f"shape inference failed ({_one_line(err)}); shapes partial"
            if note not in notes:
                notes.append(note)
            return m

    inferred = infer(_with_inputs_fixed(onnx, model, sizes))
    for _ in range(MAX_INFERENCE_PASSES):
        if not _solve_reshapes(inferred):
            break
        inferred = infer(inferred)
    return _value_types(onnx, inferred, DYNAMIC_DIM)


def _attr(onnx: Any, node: Any, name: str, default: Any) -> Any:
    for attr in node.attribute:
        if attr.name == name:
            return onnx.helper.get_attribute_value(attr)
    return default


def _matmul_mnk(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, int, int], int]:
    """(M, N, K) and batch of numpy-style matmul A @ B (broadcast batch dims)."""
    m = a[-2] if len(a) >= 2 else 1
    k = a[-1] if a else 1
    n = b[-1] if len(b) >= 2 else 1
    batch_a, batch_b = a[:-2], b[:-2]
    width = max(len(batch_a), len(batch_b))
    batch_a = (1,) * (width - len(batch_a)) + batch_a
    batch_b = (1,) * (width - len(batch_b)) + batch_b
    return (m, n, k), math.prod(max(x, y) for x, y in zip(batch_a, batch_b, strict=True))


def _einsum_mnk(
    equation: str, a: tuple[int, ...], b: tuple[int, ...]
) -> tuple[tuple[int, int, int], int] | None:
    """M, N, K, batch of a two-operand einsum without ellipsis ('bhqd,bhkd->bhqk')."""
    eq = equation.replace(" ", "")
    if "..." in eq or eq.count(",") != 1:
        return None
    inputs, _, out = eq.partition("->")
    left, right = inputs.split(",")
    if not out and "->" not in eq:  # implicit output: letters used once, sorted
        out = "".join(sorted(c for c in set(left + right) if (left + right).count(c) == 1))
    if len(left) != len(a) or len(right) != len(b):
        return None
    size = dict(zip(left, a, strict=True)) | dict(zip(right, b, strict=True))
    batch = math.prod(size[c] for c in set(left) & set(right) & set(out))
    k = math.prod(size[c] for c in (set(left) & set(right)) - set(out))
    m = math.prod(size[c] for c in set(left) - set(right))
    n = math.prod(size[c] for c in set(right) - set(left))
    return (m, n, k), batch


def _tensor_op_work(
    onnx: Any, node: Any, ins: list[_Tensor | None], outs: list[_Tensor | None]
) -> tuple[float, tuple[int, int, int] | None, int]:
    """(FLOPs, mnk, batch) of a MATMUL, CONV or ATTENTION node; zeros if shapes are unknown."""
    op = node.op_type

    def dims(i: int, of: list[_Tensor | None] = ins) -> tuple[int, ...] | None:
        t = of[i] if i < len(of) else None
        return t.dims if t is not None and t.known else None

    found: tuple[tuple[int, int, int], int] | None = None
    a, b = dims(0), dims(3 if op.startswith("QLinear") else 1)
    if op in ("MatMul", "MatMulInteger", "QLinearMatMul", "FusedMatMul") and a and b:
        if op == "FusedMatMul" and _attr(onnx, node, "transA", 0):
            a = (*a[:-2], a[-1], a[-2])
        if op == "FusedMatMul" and _attr(onnx, node, "transB", 0):
            b = (*b[:-2], b[-1], b[-2])
        found = _matmul_mnk(a, b)
    elif op == "Gemm" and a and b:
        m, k = (a[1], a[0]) if _attr(onnx, node, "transA", 0) else (a[0], a[1])
        n = b[0] if _attr(onnx, node, "transB", 0) else b[1]
        found = (m, n, k), 1
    elif op == "MatMulNBits" and a:
        k, n = _attr(onnx, node, "K", a[-1]), _attr(onnx, node, "N", 0)
        found = (math.prod(a) // max(k, 1), n, k), 1
    elif op == "Einsum" and a and b:
        found = _einsum_mnk(_attr(onnx, node, "equation", b"").decode(), a, b)
    if found is not None:
        (m, n, k), batch = found
        return 2.0 * batch * m * n * k, (m, n, k), batch
    weight = dims(3 if op == "QLinearConv" else 1)
    if op in ("Conv", "ConvInteger", "QLinearConv") and weight and dims(0, outs):
        # each output element: a dot product over Cin/groups * kh * kw weight taps
        return 2.0 * math.prod(dims(0, outs) or ()) * math.prod(weight[1:]), None, 1
    if op == "ConvTranspose" and weight and a:  # each input element feeds Cout/g * kh * kw
        return 2.0 * math.prod(a) * math.prod(weight[1:]), None, 1
    if node.op_type in ("Attention", "MultiHeadAttention", "GroupQueryAttention") and a:
        return _attention_flops(onnx, node, a, dims(1)), None, 1
    return 0.0, None, 1


def _attention_flops(
    onnx: Any, node: Any, q: tuple[int, ...], second: tuple[int, ...] | None
) -> float:
    """QK^T and PV: 4 * B * Sq * Skv * (H * Dh), plus the QKV projection where fused in."""
    if node.domain == "com.microsoft" and node.op_type == "Attention":
        if second is None or len(q) != 3:  # input (B, S, D_in), weights (D_in, 3 * D)
            return 0.0
        batch, seq, d_in = q
        hidden = second[1] // 3
        return 2.0 * batch * seq * d_in * second[1] + 4.0 * batch * seq * seq * hidden
    k = second or q
    if len(q) == 4:  # (B, H, S, Dh)
        return 4.0 * q[0] * q[2] * k[2] * q[1] * q[3]
    if len(q) == 3:  # (B, S, H * Dh)
        return 4.0 * q[0] * q[1] * (k[1] if len(k) == 3 else q[1]) * q[2]
    return 0.0


def _kind(node: Any) -> OpKind | None:
    if node.domain not in _STANDARD_DOMAINS:
        return OpKind.CUSTOM
    if node.op_type.startswith("Reduce"):
        return OpKind.REDUCTION
    return _KINDS.get(node.op_type, OpKind.OTHER)


@dataclass(slots=True)
class _Walk:
    onnx: Any
    types: dict[str, _Tensor]
    varying: set[str]  # values whose shape depends on a symbolic input dimension
    target_bytes: float | None
    dtype: str | None
    ops: list[Op]
    main_dtype: str = "fp32"  # for ops on integer tensors only (shape arithmetic)
    subgraphs: int = 0
    unknown_shapes: int = 0

    def graph(self, graph: Any) -> None:
        for node in graph.node:
            if node.op_type in _CONTROL_FLOW and node.domain in ("", "ai.onnx"):
                self.subgraphs += 1
                for attr in node.attribute:
                    for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                        self.graph(sub)
                continue
            kind = _kind(node)
            if kind is not None:
                self.node(node, kind)

    def node(self, node: Any, kind: OpKind) -> None:
        ins = [self.types.get(n) if n else None for n in node.input]
        outs = [self.types.get(n) for n in node.output if n]
        known_in = [t for t in ins if t is not None]
        known_out = [t for t in outs if t is not None]
        if len(known_out) < len(outs) or any(not t.known for t in (*known_in, *known_out)):
            self.unknown_shapes += 1
        tensors = [*known_in, *known_out]
        flops, mnk, batch = 0.0, None, 1
        if kind in (OpKind.MATMUL, OpKind.CONV, OpKind.ATTENTION):
            flops, mnk, batch = _tensor_op_work(self.onnx, node, ins, outs)
        if any(t.elem in ("DOUBLE", "COMPLEX128") for t in tensors) and kind != OpKind.COPY:
            kind = OpKind.FP64
        if flops == 0.0 and kind in FLOPS_PER_ELEMENT:
            flops = FLOPS_PER_ELEMENT[kind] * max((t.numel for t in tensors), default=0)
        # distinct inputs by name (a tensor fed twice is read once)
        read_names = list(dict.fromkeys(n for n in node.input if n and n in self.types))
        bytes_read = sum(self.types[n].nbytes(self.target_bytes) for n in read_names)
        bytes_written = sum(t.nbytes(self.target_bytes) for t in known_out)
        if kind == OpKind.GATHER and read_names:  # reads the rows it fetches, not the table
            bytes_read += bytes_written - self.types[read_names[0]].nbytes(self.target_bytes)
        names = [n for n in (*node.input, *node.output) if n]
        dynamic = node.op_type in _DATA_DEPENDENT or any(
            n in self.varying or (n in self.types and self.types[n].dynamic) for n in names
        )
        self.ops.append(
            Op(
                name=f"{node.name}:{node.op_type}" if node.name else node.op_type,
                kind=kind,
                dtype=self.op_dtype(kind, tensors),
                flops=flops,
                bytes_read=max(bytes_read, 0.0),
                bytes_written=bytes_written,
                shape=known_out[0].dims if known_out and known_out[0].known else (),
                mnk=mnk,
                batch=batch,
                dynamic=dynamic,
            )
        )

    def op_dtype(self, kind: OpKind, tensors: list[_Tensor]) -> str:
        if kind == OpKind.FP64:
            return "fp64"
        if self.dtype is not None:
            return self.dtype
        own = [_CHIPWISE_DTYPE.get(t.elem) for t in tensors]
        if kind not in (OpKind.MATMUL, OpKind.CONV, OpKind.ATTENTION):
            own.reverse()  # an elementwise op is in its result type; a matmul in its inputs'
        return next((d for d in own if d), self.main_dtype)


def _read_model(onnx: Any, path: Path) -> Any:
    if not path.is_file():
        raise ExtractionError(f"cannot read ONNX file {str(path)!r}: no such file")
    try:
        # protobuf parsing only; external weight files are not needed for shapes
        model = onnx.load(str(path), load_external_data=False)
    except Exception as err:
        raise ExtractionError(
            f"cannot read ONNX file {str(path)!r}: {_one_line(err)}; is it an ONNX model?"
        ) from err
    if not model.graph.node:
        raise ExtractionError(
            f"cannot read ONNX file {str(path)!r}: it has no graph nodes; is it an ONNX model?"
        )
    return model


def load_onnx(
    path: str | os.PathLike[str],
    *,
    dtype: str | None = None,
    dynamic_dim: int = DYNAMIC_DIM,
    dim_values: Mapping[str, int] | None = None,
) -> Graph:
    """Read an ONNX file into a ``Graph`` (inference: no backward ops).

    Args:
        path: the ``.onnx`` file.
        dtype: bytes per floating element to assume; None keeps each tensor's own type.
        dynamic_dim: the size taken for a symbolic dimension (``dim_param``).
        dim_values: sizes for named symbolic dimensions, e.g. ``{"batch": 8}``.

    Raises:
        WorkloadError: an unknown ``dtype`` or a non-positive ``dynamic_dim``.
        ExtractionError: onnx missing, or the file is missing or not an ONNX model.
    """
    if dtype is not None and dtype not in DTYPE_BYTES:
        raise WorkloadError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_BYTES)}")
    sizes = dict(dim_values or {})
    if dynamic_dim < 1 or any(v < 1 for v in sizes.values()):
        raise WorkloadError(f"dynamic_dim and dim_values must be >= 1, got {dynamic_dim}")
    try:
        import onnx
        import onnx.inliner
        import onnx.shape_inference
    except ImportError as err:
        raise ExtractionError(NO_ONNX_MESSAGE) from err
    file = Path(path).expanduser()
    model = _read_model(onnx, file)
    notes = [
        f"ONNX from {model.producer_name or 'unknown producer'} {model.producer_version}".strip()
        + f", opset {max((o.version for o in model.opset_import if not o.domain), default=0)}"
    ]
    if model.functions:
        try:
            model = onnx.inliner.inline_local_functions(model)
        except Exception as err:
            notes.append(f"local functions not inlined ({_one_line(err)})")

    symbols = sorted({d.dim_param for i in model.graph.input for d in _dims(i) if d.dim_param})
    types = _concrete_types(onnx, model, {s: sizes.get(s, dynamic_dim) for s in symbols}, notes)
    varying: set[str] = set()
    if symbols:  # infer again one larger: whatever changes shape depends on a symbol
        bumped = {s: sizes.get(s, dynamic_dim) + 1 for s in symbols}
        other = _concrete_types(onnx, model, bumped, [])
        varying = {n for n, t in types.items() if n in other and other[n].dims != t.dims}
    floats = Counter(_CHIPWISE_DTYPE.get(t.elem) for t in types.values() if t.is_float)
    main = next((d for d, _ in floats.most_common() if d), "fp32")
    walk = _Walk(onnx, types, varying, DTYPE_BYTES[dtype] if dtype else None, dtype, [], main)
    walk.graph(model.graph)
    if symbols:
        taken = ", ".join(f"{s}={sizes.get(s, dynamic_dim)}" for s in symbols)
        notes.append(f"symbolic dimensions taken as {taken} (ops using them flagged dynamic)")
    if walk.subgraphs:
        notes.append(f"{walk.subgraphs} If/Loop/Scan node(s): each body counted once")
    if walk.unknown_shapes:
        notes.append(f"{walk.unknown_shapes} node(s) with unknown shapes: their bytes are partial")
    params = sum(
        math.prod(init.dims)
        for graph in _graphs(model.graph)
        for init in graph.initializer
        if _is_float(onnx.TensorProto.DataType.Name(init.data_type))
    )
    return Graph(
        name=file.stem,
        ops=tuple(_merge(walk.ops)),
        source="onnx",
        params=float(params),
        notes=tuple(notes),
    )


def _dims(info: Any) -> Any:
    return info.type.tensor_type.shape.dim


def _merge(ops: list[Op]) -> list[Op]:
    merged: list[Op] = []
    for op in ops:
        if merged and replace(merged[-1], count=1) == op:
            merged[-1] = replace(merged[-1], count=merged[-1].count + 1)
        else:
            merged.append(op)
    return merged
