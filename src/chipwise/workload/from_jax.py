"""Import a JAX function as a ``Graph``, from its StableHLO and XLA's cost analysis.

``graph_from_jax(fn, *example_args)`` lowers ``jax.jit(fn)`` with the example arguments
(arrays or ``jax.ShapeDtypeStruct``: no data is needed) and walks the StableHLO text op by
op. It is the program as written, before XLA fuses it: elementwise chains appear as
separate ELEMENTWISE ops, which a fusing compiler would merge.

* ``dot_general``/``dot`` -> MATMUL: (M, N, K) and batch from the operand shapes and the
  batching/contracting dimensions; FLOPs = 2 * batch * M * N * K.
* ``convolution`` -> CONV: FLOPs = 2 * output elements * (kernel elements / output
  features), i.e. 2 * N * Cout * Hout * Wout * Cin/groups * kh * kw.
* gather, scatter, sort/top_k, reduce/reduce_window, all_reduce and friends, custom_call
  -> GATHER, SCATTER, SORT, REDUCTION, COLLECTIVE, CUSTOM (a custom call whose target names
  attention, e.g. cuDNN fMHA or a flash kernel, is ATTENTION; it has no FLOP count).
* A gather reads the rows it fetches (output-sized), not its whole table.
* transpose, concatenate, pad, slice -> COPY; reshape, broadcast, constants, iota -> not
  recorded (no data moves once fused); everything arithmetic -> ELEMENTWISE.
* ``call`` is inlined; ``while``/``if``/``case`` bodies are walked once (trip counts are
  not known statically; noted); f64 arithmetic -> FP64.
* A ``?`` dimension (symbolic shapes from ``jax.export.symbolic_shape``) is taken as
  ``DYNAMIC_DIM`` and the op is flagged ``dynamic``.

Bytes: each op reads its operand types and writes its result types. With ``dtype=None``
each tensor counts at its own element size; with a dtype, floating tensors (except f64)
count at that dtype. XLA's own totals (``compiled.cost_analysis()``: FLOPs and bytes
accessed after fusion, for the local backend) go into the graph's notes.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from chipwise.errors import ChipwiseError, ExtractionError, WorkloadError
from chipwise.units import DTYPE_BYTES
from chipwise.workload.ir import FLOPS_PER_ELEMENT, Graph, Op, OpKind

NO_JAX_MESSAGE = "importing a JAX function needs jax; install it: pip install 'chipwise[jax]'"
DYNAMIC_DIM = 1  # size assumed for a '?' dimension; the op is flagged dynamic
MAX_CALL_DEPTH = 64  # nested func.call inlining limit (guards against recursion)

_TYPE = re.compile(r"tensor<((?:[^<>]|<[^<>]*>)*)>")
_TYPE_BODY = re.compile(r"^((?:(?:\d+|\?)x)*)([^,]+)")
_STRING = re.compile(r'(call_target_name\s*=\s*)?"((?:[^"\\]|\\.)*)"(\()?')
_FUNC = re.compile(r"^func\.func\s+(?:public\s+|private\s+)?@([\w.$-]+)\(")
_OP_NAME = re.compile(r'^(?:%[^=]*=\s*)?"?([a-z_][\w]*(?:\.[\w]+)*)"?')
_CALLEE = re.compile(r"@([\w.$-]+)")
_DECOMPOSITION = re.compile(r"decomposition\s*=\s*@([\w.$-]+)")
_CUSTOM_TARGET = re.compile(r'(?:custom_call\s+@|call_target_name\s*=\s*")([\w.$-]+)')
_SSA = re.compile(r"%[\w#.$-]+")
_DIMS = {
    name: re.compile(name + r"\s*=\s*\[([\d,\s]*)\]\s*x\s*\[([\d,\s]*)\]")
    for name in ("batching_dims", "contracting_dims")
}
_GENERIC_DOT_DIMS = {
    "batching_dims": (
        re.compile(r"lhs_batching_dimensions\s*=\s*\[([\d,\s]*)\]"),
        re.compile(r"rhs_batching_dimensions\s*=\s*\[([\d,\s]*)\]"),
    ),
    "contracting_dims": (
        re.compile(r"lhs_contracting_dimensions\s*=\s*\[([\d,\s]*)\]"),
        re.compile(r"rhs_contracting_dimensions\s*=\s*\[([\d,\s]*)\]"),
    ),
}
_CONV_RHS = re.compile(r"\]\s*x\s*\[([^\]]*)\]")
_ATTENTION_TARGET = re.compile(r"attention|flash|fmha|splash|\bmha", re.IGNORECASE)

_CONTROL_FLOW = frozenset({"while", "if", "case", "manual_computation"})  # walk their regions
_HLO_DIALECTS = frozenset({"stablehlo", "chlo", "mhlo"})  # their unlisted ops are elementwise
_CALLS = frozenset({"call", "func.call"})
_TERMINATORS = frozenset({"return", "func.return", "stablehlo.return", "mhlo.return"})
_KIND_TABLE: tuple[tuple[OpKind | None, str], ...] = (
    (OpKind.MATMUL, "dot_general dot"),
    (OpKind.CONV, "convolution"),
    (OpKind.GATHER, "gather dynamic_gather torch_index_select"),
    (OpKind.SCATTER, "scatter select_and_scatter"),
    (OpKind.SORT, "sort top_k topk"),
    (OpKind.REDUCTION, "reduce reduce_window argmax argmin"),
    (OpKind.NORM, "batch_norm_training batch_norm_inference batch_norm_grad"),
    (
        OpKind.COLLECTIVE,
        "all_reduce all_gather reduce_scatter all_to_all collective_permute "
        "collective_broadcast send recv",
    ),
    (
        OpKind.COPY,
        "transpose concatenate pad slice dynamic_slice real_dynamic_slice "
        "dynamic_update_slice reverse copy dynamic_pad",
    ),
    (OpKind.OTHER, "cholesky triangular_solve fft eigh qr svd lu infeed outfeed"),
    # no data moves once XLA fuses these (or they are bookkeeping): not recorded
    (
        None,
        "constant reshape dynamic_reshape broadcast_in_dim broadcast dynamic_broadcast_in_dim "
        "iota dynamic_iota get_tuple_element tuple optimization_barrier get_dimension_size "
        "bitcast_convert after_all create_token partition_id replica_id sharding_constraint",
    ),
)
_KINDS: dict[str, OpKind | None] = {
    name: kind for kind, names in _KIND_TABLE for name in names.split()
}
_FREE_CUSTOM_TARGETS = frozenset(
    {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
     "MoveToHost", "MoveToDevice", "X64Combine", "X64SplitLow", "X64SplitHigh",
     "shape_assertion", "LayoutConstraint"}
)  # fmt: skip
_ELEM_NAMES = {"f64": "fp64", "f32": "fp32", "bf16": "bf16", "f16": "fp16", "i8": "int8"}


@dataclass(frozen=True, slots=True)
class _Type:
    dims: tuple[int, ...]
    elem: str
    dynamic: bool

    @property
    def numel(self) -> int:
        return math.prod(self.dims)

    @property
    def is_float(self) -> bool:
        return self.elem.startswith(("f", "bf")) or self.elem.startswith("complex")

    @property
    def is_f64(self) -> bool:
        return self.elem in ("f64", "complex<f64>")

    def elem_bytes(self, target: float | None) -> float:
        if target is not None and self.is_float and not self.is_f64:
            return 2 * target if self.elem.startswith("complex") else target
        return _own_bytes(self.elem)


def _own_bytes(elem: str) -> float:
    if elem.startswith("complex<"):
        return 2 * _own_bytes(elem[len("complex<") : -1])
    if elem == "bf16":
        return 2.0
    if elem.startswith("f8") or elem.startswith("f4") or elem.startswith("f6"):
        return 1.0
    match = re.fullmatch(r"[a-z]*?(\d+)", elem)
    if match:
        return max(int(match.group(1)), 8) / 8 if elem != "i4" else 0.5
    return 8.0 if elem == "index" else 0.0


def _chipwise_dtype(elem: str) -> str | None:
    if elem.startswith("f8"):
        return "fp8"
    return _ELEM_NAMES.get(elem)


def _types(text: str) -> list[_Type]:
    found = []
    for body in _TYPE.findall(text):
        match = _TYPE_BODY.match(body)
        if match is None:  # unranked tensor<*xf32>
            found.append(_Type((), body.split("x")[-1], True))
            continue
        raw = [d for d in match.group(1).split("x") if d]
        dims = tuple(DYNAMIC_DIM if d == "?" else int(d) for d in raw)
        found.append(_Type(dims, match.group(2).strip(), "?" in raw))
    return found


@dataclass(slots=True)
class _Stmt:
    lines: list[str]
    level: int


def _statements(entries: list[tuple[str, int]], level: int) -> list[_Stmt]:
    """Split (line, depth) entries into statements that start at ``level``."""
    stmts: list[_Stmt] = []
    for line, depth in entries:
        starts = depth == level and line[:1] not in "}^)" and _OP_NAME.match(line) is not None
        if starts and not line.startswith(("cond", "do ", "reducer", "body")):
            stmts.append(_Stmt([line], level))
        elif stmts:
            stmts[-1].lines.append(line)
    return stmts


def _blank(match: re.Match[str]) -> str:
    """Blank a string literal (it may hold braces), but keep generic op names ("x.y"(...)
    and custom-call targets."""
    if match.group(1) or match.group(3):
        return match.group(0)
    return '""'


def _entries(text: str) -> list[tuple[str, int]]:
    """Each non-empty line (string literals blanked) with its brace depth before it."""
    depth = 0
    out = []
    for raw in text.splitlines():
        line = _STRING.sub(_blank, raw).strip()
        if line:
            out.append((line, depth))
            depth += line.count("{") - line.count("}")
    return out


def _functions(text: str) -> dict[str, list[tuple[str, int]]]:
    entries = _entries(text)
    funcs: dict[str, list[tuple[str, int]]] = {}
    i = 0
    while i < len(entries):
        line, depth = entries[i]
        match = _FUNC.match(line)
        i += 1
        if match is None:
            continue
        body = []
        while i < len(entries) and entries[i][1] > depth:
            body.append(entries[i])
            i += 1
        if body and body[-1][0].startswith("}"):
            body.pop()
        funcs[match.group(1)] = body
    return funcs


def _signature(stmt: _Stmt) -> tuple[list[_Type], list[_Type]]:
    """Operand and result types of a statement."""
    header = stmt.lines[0]
    sig_line = header
    if header.count("{") > header.count("}"):  # generic form with a region: the type is last
        closers = [ln for ln in stmt.lines[1:] if ln.startswith("}") and " : " in ln]
        sig_line = closers[-1] if closers else header
    if " : " not in sig_line:
        return [], []
    sig = sig_line.rsplit(" : ", 1)[1]
    if "->" in sig:
        left, right = sig.split("->", 1)
        return _types(left), _types(right)
    types = _types(sig)
    if not types:
        return [], []
    args = header.split("=", 1)[1] if header.startswith("%") else header
    n_operands = len(_SSA.findall(args.rsplit(" : ", 1)[0])) or 1
    operands = [types[min(i, len(types) - 1)] for i in range(n_operands)]
    return operands, [types[-1]]


def _index_list(text: str) -> list[int]:
    return [int(x) for x in text.replace(" ", "").split(",") if x]


def _dot_dims(header: str, which: str) -> tuple[list[int], list[int]]:
    match = _DIMS[which].search(header)
    if match:
        return _index_list(match.group(1)), _index_list(match.group(2))
    lhs_re, rhs_re = _GENERIC_DOT_DIMS[which]
    lhs, rhs = lhs_re.search(header), rhs_re.search(header)
    return (_index_list(lhs.group(1)) if lhs else [], _index_list(rhs.group(1)) if rhs else [])


def _matmul(
    short: str, header: str, operands: list[_Type]
) -> tuple[tuple[int, int, int], int] | None:
    if len(operands) < 2:
        return None
    lhs, rhs = operands[0].dims, operands[1].dims
    if short == "dot":  # (M x K) . (K x N), either side may be a vector
        m = lhs[0] if len(lhs) == 2 else 1
        n = rhs[1] if len(rhs) == 2 else 1
        return (m, n, lhs[-1] if lhs else 1), 1
    lhs_batch, rhs_batch = _dot_dims(header, "batching_dims")
    lhs_contract, rhs_contract = _dot_dims(header, "contracting_dims")
    batch = math.prod(lhs[d] for d in lhs_batch)
    k = math.prod(lhs[d] for d in lhs_contract)
    m = math.prod(s for d, s in enumerate(lhs) if d not in lhs_batch and d not in lhs_contract)
    n = math.prod(s for d, s in enumerate(rhs) if d not in rhs_batch and d not in rhs_contract)
    return (m, n, k), batch


def _conv_flops(header: str, operands: list[_Type], results: list[_Type]) -> float:
    if len(operands) < 2 or not results:
        return 0.0
    kernel = operands[1].dims
    match = _CONV_RHS.search(header)
    layout = [s.strip() for s in match.group(1).split(",")] if match else []
    out_features = kernel[layout.index("o")] if "o" in layout and len(layout) == len(kernel) else 0
    if not out_features:
        return 0.0
    # each output element is a dot product over Cin/groups * kh * kw kernel taps
    return 2.0 * results[0].numel * (math.prod(kernel) / out_features)


@dataclass(slots=True)
class _Walk:
    funcs: dict[str, list[tuple[str, int]]]
    target_bytes: float | None
    ops: list[tuple[Op, list[_Type]]]
    loops: int = 0
    custom_calls: int = 0

    def walk(self, entries: list[tuple[str, int]], level: int, path: tuple[str, ...]) -> None:
        if len(path) > MAX_CALL_DEPTH:
            raise ExtractionError(f"calls nested deeper than {MAX_CALL_DEPTH} in {path[0]!r}")
        for stmt in _statements(entries, level):
            self.statement(stmt, path)

    def statement(self, stmt: _Stmt, path: tuple[str, ...]) -> None:
        header = stmt.lines[0]
        match = _OP_NAME.match(header)
        assert match is not None  # _statements only starts statements on op lines
        full = match.group(1)
        short = full.rsplit(".", 1)[-1] if "." in full and full not in _CALLS else full
        if full in _TERMINATORS:
            return
        if full in _CALLS or short == "composite":  # a composite runs its decomposition
            callee = _DECOMPOSITION.search(header) if short == "composite" else None
            callee = callee or _CALLEE.search(header)
            if callee and callee.group(1) in self.funcs:
                body = self.funcs[callee.group(1)]
                self.walk(body, body[0][1] if body else 0, (*path, callee.group(1)))
            return
        if short in _CONTROL_FLOW:
            self.loops += short == "while"
            inner = [(ln, d) for ln, d in _entries_of(stmt) if d > stmt.level]
            self.walk(inner, stmt.level + 1, path)
            return
        kind: OpKind | None
        if short == "custom_call":
            raw_target = _CUSTOM_TARGET.search(header)
            target = raw_target.group(1) if raw_target else ""
            if target in _FREE_CUSTOM_TARGETS:
                return
            self.custom_calls += 1
            kind = OpKind.ATTENTION if _ATTENTION_TARGET.search(target) else OpKind.CUSTOM
            if "topk" in target.lower():
                kind = OpKind.SORT
            short = f"custom_call@{target}" if target else short
        else:
            dialect = full.split(".", 1)[0]
            kind = _KINDS.get(
                short, OpKind.ELEMENTWISE if dialect in _HLO_DIALECTS else OpKind.OTHER
            )
        if kind is None:
            return
        self.emit(kind, short, header, stmt, path)

    def emit(
        self, kind: OpKind, short: str, header: str, stmt: _Stmt, path: tuple[str, ...]
    ) -> None:
        operands, results = _signature(stmt)
        tensors = [*operands, *results]
        flops, mnk, batch = 0.0, None, 1
        if kind == OpKind.MATMUL:
            found = _matmul(short, header, operands)
            if found is not None:
                mnk, batch = found
                flops = 2.0 * batch * math.prod(mnk)
        elif kind == OpKind.CONV:
            flops = _conv_flops(header, operands, results)
        if any(t.is_f64 for t in tensors) and kind not in (OpKind.COPY, OpKind.COLLECTIVE):
            kind = OpKind.FP64
        if flops == 0.0 and kind in FLOPS_PER_ELEMENT:
            flops = FLOPS_PER_ELEMENT[kind] * max((t.numel for t in tensors), default=0)
        nbytes = [t.numel * t.elem_bytes(self.target_bytes) for t in tensors]
        bytes_read, bytes_written = sum(nbytes[: len(operands)]), sum(nbytes[len(operands) :])
        if kind == OpKind.GATHER:  # reads the rows it fetches, not the whole table
            bytes_read = sum(nbytes[1 : len(operands)]) + bytes_written
        place = "/".join(path[1:])
        op = Op(
            name=f"{place}:{short}" if place else short,
            kind=kind,
            flops=flops,
            bytes_read=bytes_read,
            bytes_written=bytes_written,
            shape=results[0].dims if results else (),
            mnk=mnk,
            batch=batch,
            dynamic=any(t.dynamic for t in tensors),
        )
        self.ops.append((op, tensors))


def _entries_of(stmt: _Stmt) -> list[tuple[str, int]]:
    """Re-derive depths for a statement's lines (relative to the statement's level)."""
    depth = stmt.level
    out = []
    for line in stmt.lines:
        out.append((line, depth))
        depth += line.count("{") - line.count("}")
    return out[1:]


def _finish(ops: list[tuple[Op, list[_Type]]], dtype: str | None) -> list[Op]:
    """Set each op's dtype (its own float type, else the program's main one); merge repeats."""
    float_elems = Counter(t.elem for _, ts in ops for t in ts if t.is_float)
    main = dtype
    if main is None:
        names = [(n, _chipwise_dtype(e)) for e, n in float_elems.most_common()]
        main = next((name for _, name in names if name), "fp32")
    merged: list[Op] = []
    for op, tensors in ops:
        if op.kind == OpKind.FP64:
            op_dtype = "fp64"
        elif dtype is not None:
            op_dtype = dtype
        else:  # a matmul computes in its inputs' type (it may accumulate into fp32)
            own = [_chipwise_dtype(t.elem) for t in tensors if t.is_float]
            own = own if op.tensor_op else own[::-1]
            op_dtype = next((d for d in own if d), main)
        op = replace(op, dtype=op_dtype)
        if merged and replace(merged[-1], count=1) == op:
            merged[-1] = replace(merged[-1], count=merged[-1].count + 1)
        else:
            merged.append(op)
    return merged


def graph_from_stablehlo(
    text: str, *, dtype: str | None = None, name: str = "main", entry: str = "main"
) -> Graph:
    """Build a Graph from StableHLO text (``jax.jit(f).lower(...).as_text()``).

    Raises:
        WorkloadError: an unknown ``dtype``.
        ExtractionError: no function ``entry`` in the text.
    """
    if dtype is not None and dtype not in DTYPE_BYTES:
        raise WorkloadError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_BYTES)}")
    funcs = _functions(text)
    if entry not in funcs:
        found = ", ".join(sorted(funcs)) or "none"
        raise ExtractionError(f"no function @{entry} in the StableHLO (functions: {found})")
    walk = _Walk(funcs, DTYPE_BYTES[dtype] if dtype else None, [])
    body = funcs[entry]
    walk.walk(body, body[0][1] if body else 0, (entry,))
    ops = _finish(walk.ops, dtype)
    notes = [f"StableHLO op walk (before XLA fusion); bytes at {dtype or 'each tensor dtype'}"]
    if walk.loops:
        notes.append(f"{walk.loops} while loop(s): each body counted once (trip count unknown)")
    if walk.custom_calls:
        notes.append(f"{walk.custom_calls} custom call(s) carry no FLOP count")
    if any(op.dynamic for op in ops):
        notes.append(f"dynamic ('?') dimensions taken as {DYNAMIC_DIM}")
    return Graph(name=name, ops=tuple(ops), source="jax stablehlo", notes=tuple(notes))


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {(text[0] if text else '')[:300]}"


def _cost_note(jax: Any, lowered: Any) -> str:
    try:
        cost = lowered.compile().cost_analysis()
    except Exception as err:  # symbolic shapes do not compile; the op walk still stands
        return f"no XLA cost analysis ({_one_line(err)})"
    if isinstance(cost, list | tuple):
        cost = cost[0] if cost else {}
    flops = float(cost.get("flops", 0.0)) if cost else 0.0
    moved = float(cost.get("bytes accessed", 0.0)) if cost else 0.0
    return (
        f"XLA cost_analysis on {jax.default_backend()} (after fusion): {flops:.6g} FLOP, "
        f"{moved:.6g} bytes accessed"
    )


def graph_from_jax(
    fn: Callable[..., Any],
    *example_args: Any,
    dtype: str | None = None,
    name: str | None = None,
) -> Graph:
    """Lower ``jax.jit(fn)`` on ``example_args`` and return its ops as a ``Graph``.

    Args:
        fn: a JAX-traceable function (jitted or not).
        example_args: arrays or ``jax.ShapeDtypeStruct`` (pytrees of them are fine).
        dtype: bytes per floating element to assume; None keeps each tensor's own dtype.
        name: the graph's name; ``fn.__name__`` by default.

    Raises:
        WorkloadError: ``fn`` is not callable, or an unknown ``dtype``.
        ExtractionError: jax missing, or lowering failed (one line).
    """
    if not callable(fn):
        raise WorkloadError(f"graph_from_jax needs a function, got {type(fn).__name__}")
    if dtype is not None and dtype not in DTYPE_BYTES:
        raise WorkloadError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_BYTES)}")
    try:
        import jax
    except ImportError as err:
        raise ExtractionError(NO_JAX_MESSAGE) from err
    graph_name = name or str(getattr(fn, "__name__", "jax_function"))
    try:
        lowered = jax.jit(fn).lower(*example_args)
        text = lowered.as_text()
    except ChipwiseError:
        raise
    except Exception as err:
        raise ExtractionError(
            f"lowering {graph_name!r} with jax.jit failed: {_one_line(err)}"
        ) from err
    graph = graph_from_stablehlo(text, dtype=dtype, name=graph_name)
    notes = (f"lowered with jax {jax.__version__}", *graph.notes, _cost_note(jax, lowered))
    return replace(graph, notes=notes)
