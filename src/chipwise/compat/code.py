"""Find accelerator-relevant code by reading it: Python by AST, C++/CUDA by text.

Nothing is imported, compiled to bytecode or run: ``ast.parse`` builds a syntax tree and the
visitors below look at it. Signal ids are those of ``data/packages.toml`` (``[[signal]]``).

Name resolution is deliberately small: ``import torch as th`` and ``from torch import cuda``
are followed, so ``th.cuda.synchronize()`` and ``cuda.synchronize()`` both read as
``torch.cuda.synchronize``; local assignments are not.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from chipwise.compat.hits import Hit, HitKind, excerpt

JIT_NAMES = frozenset({"jax.jit", "jax.pjit", "jax.experimental.pjit.pjit"})
PARTIAL_NAMES = frozenset({"functools.partial"})
TRITON_DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})
FP64_DEVICE_NAMES = frozenset(
    {
        "torch.float64",
        "torch.double",
        "torch.complex128",
        "torch.cdouble",
        "jax.numpy.float64",
        "jax.numpy.complex128",
        "jax.numpy.double",
        "tensorflow.float64",
        "tensorflow.double",
        "tensorflow.complex128",
    }
)
FP64_HOST_NAMES = frozenset({"numpy.float64", "numpy.double", "numpy.complex128", "numpy.cdouble"})
FP64_DTYPE_STRINGS = frozenset({"float64", "double", "f8", "<f8", "complex128", "c16"})
DEVICE_FRAMEWORKS = ("jax.", "torch.", "tensorflow.")
TPU_STRATEGY_NAMES = frozenset(
    {
        "tensorflow.distribute.TPUStrategy",
        "tensorflow.distribute.experimental.TPUStrategy",
        "tensorflow.distribute.cluster_resolver.TPUClusterResolver",
        "tensorflow.tpu.experimental.initialize_tpu_system",
    }
)
CUPY_KERNEL_NAMES = frozenset(
    {"cupy.RawKernel", "cupy.RawModule", "cupy.ElementwiseKernel", "cupy.ReductionKernel"}
)
TPU_KEYWORDS = frozenset({"backend", "accelerator", "device", "platform", "platform_name"})
TPU_ENV_VARS = frozenset({"JAX_PLATFORMS", "PJRT_DEVICE"})  # PJRT_DEVICE=TPU: torch_xla
FLASH_ATTN_IMPLS = frozenset({"flash_attention_2", "flash_attention_3"})
# Reading these from a traced JAX value gives a static Python value: branching on it is fine.
STATIC_ATTRS = frozenset({"shape", "ndim", "dtype", "size", "itemsize"})
STATIC_CALLS = frozenset({"len", "isinstance", "type", "callable", "hasattr", "id"})
_GUARD_EXCEPTIONS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})

_CUDA_INCLUDE = re.compile(
    r'^\s*#\s*include\s*[<"](?:cuda[_a-z]*\.h|cublas|cudnn|cub/|thrust/|cuda/|curand|cusparse|'
    r"cufft|nccl|cooperative_groups)"
)
_GLOBAL_KERNEL = re.compile(r"__global__\s")


@dataclass(slots=True)
class _Ctx:
    file: str
    lines: list[str]
    aliases: dict[str, str] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)

    def add(
        self,
        kind: HitKind,
        name: str,
        node: ast.AST,
        *,
        optional: bool = False,
        condition: str = "",
        detail: str = "",
    ) -> None:
        line: int = getattr(node, "lineno", 1)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        self.hits.append(
            Hit(
                kind=kind,
                name=name,
                file=self.file,
                line=line,
                evidence=excerpt(text),
                optional=optional,
                condition=condition,
                detail=detail,
            )
        )


def _collect_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted module path, from every absolute import in the file."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                if a.name != "*":
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _resolve(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """'th.cuda.synchronize' -> 'torch.cuda.synchronize'; None for non-name expressions."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, aliases)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _str_const(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _statics(keywords: list[ast.keyword]) -> tuple[frozenset[int], frozenset[str]]:
    """static_argnums / static_argnames of a jit call, where they are literals."""
    nums: set[int] = set()
    names: set[str] = set()
    for kw in keywords:
        elts = kw.value.elts if isinstance(kw.value, (ast.Tuple, ast.List)) else [kw.value]
        consts = [e.value for e in elts if isinstance(e, ast.Constant)]
        if kw.arg == "static_argnums":
            nums |= {c for c in consts if isinstance(c, int)}
        elif kw.arg == "static_argnames":
            names |= {c for c in consts if isinstance(c, str)}
    return frozenset(nums), frozenset(names)


def _reads_traced(expr: ast.AST, traced: set[str]) -> str | None:
    """The first traced name ``expr`` reads as a value (None if it reads only static facts)."""
    if isinstance(expr, ast.Name):
        return expr.id if expr.id in traced else None
    if isinstance(expr, ast.Attribute) and expr.attr in STATIC_ATTRS:
        return None
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id in STATIC_CALLS
    ):
        return None
    if isinstance(expr, ast.Compare):
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in expr.ops):
            return None  # x is None
        if all(isinstance(op, (ast.In, ast.NotIn)) for op in expr.ops) and _str_const(expr.left):
            return None  # "key" in batch: a dict (pytree) look-up
    if isinstance(expr, ast.Lambda):
        return None
    for child in ast.iter_child_nodes(expr):
        found = _reads_traced(child, traced)
        if found:
            return found
    return None


def _store_names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _walk_traced(stmts: list[ast.stmt], traced: set[str], found: list[tuple[ast.AST, str]]) -> None:
    """Record if/while/assert/conditional expressions that test a traced value."""
    for st in stmts:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(st, (ast.If, ast.While)):
            var = _reads_traced(st.test, traced)
            if var:
                found.append((st, var))
            _walk_traced(st.body, traced, found)
            _walk_traced(st.orelse, traced, found)
            continue
        if isinstance(st, (ast.For, ast.AsyncFor)):
            if _reads_traced(st.iter, traced):
                traced |= _store_names(st.target)
            _walk_traced(st.body, traced, found)
            _walk_traced(st.orelse, traced, found)
            continue
        if isinstance(st, (ast.With, ast.AsyncWith)):
            _walk_traced(st.body, traced, found)
            continue
        if isinstance(st, (ast.Try, ast.TryStar)):
            _walk_traced(st.body, traced, found)
            for h in st.handlers:
                _walk_traced(h.body, traced, found)
            _walk_traced(st.orelse, traced, found)
            _walk_traced(st.finalbody, traced, found)
            continue
        if isinstance(st, ast.Assert):
            var = _reads_traced(st.test, traced)
            if var:
                found.append((st, var))
        for node in ast.walk(st):
            if isinstance(node, ast.IfExp):
                var = _reads_traced(node.test, traced)
                if var:
                    found.append((node, var))
        if (
            isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            and st.value is not None
            and _reads_traced(st.value, traced)
        ):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            for t in targets:
                traced |= _store_names(t)


def traced_branches(
    fn: ast.FunctionDef, static_nums: frozenset[int], static_names: frozenset[str]
) -> list[tuple[ast.AST, str]]:
    """(node, traced name) for each Python branch on a traced argument of a jitted ``fn``."""
    args = fn.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    traced = {n for i, n in enumerate(positional) if i not in static_nums and n not in static_names}
    traced |= {a.arg for a in args.kwonlyargs if a.arg not in static_names}
    if args.vararg:
        traced.add(args.vararg.arg)
    traced -= {"self", "cls"}
    found: list[tuple[ast.AST, str]] = []
    _walk_traced(fn.body, traced, found)
    return found


class _Visitor(ast.NodeVisitor):
    def __init__(self, ctx: _Ctx) -> None:
        self.ctx = ctx
        self.guard: list[str] = []  # why imports here are optional (innermost last)
        self.jit_calls: list[tuple[str, frozenset[int], frozenset[str]]] = []

    def _r(self, node: ast.AST) -> str:
        return _resolve(node, self.ctx.aliases) or ""

    # imports -----------------------------------------------------------------------------
    def _import(self, node: ast.AST, dotted: str) -> None:
        cond = self.guard[-1] if self.guard else ""
        self.ctx.add("import", dotted, node, optional=bool(cond), condition=cond)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._import(node, a.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return  # a relative import names the project's own modules
        for a in node.names:
            self._import(node, node.module if a.name == "*" else f"{node.module}.{a.name}")

    def _visit_try(self, node: ast.Try | ast.TryStar) -> None:
        guarded = False
        for h in node.handlers:
            types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
            guarded |= h.type is None or any(
                isinstance(t, ast.Name) and t.id in _GUARD_EXCEPTIONS for t in types
            )
        if guarded:
            self.guard.append("guarded import (try/except ImportError)")
        for st in node.body:
            self.visit(st)
        if guarded:
            self.guard.pop()
        for part in (*node.handlers, *node.orelse, *node.finalbody):
            self.visit(part)

    visit_Try = _visit_try
    visit_TryStar = _visit_try

    def visit_If(self, node: ast.If) -> None:
        if self._r(node.test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}:
            self.guard.append("typing-only import (if TYPE_CHECKING)")
            for st in node.body:
                self.visit(st)
            self.guard.pop()
            for st in node.orelse:
                self.visit(st)
            return
        self.generic_visit(node)

    # names -------------------------------------------------------------------------------
    def _check_name(self, node: ast.AST, full: str) -> None:
        if full == "torch.cuda" or full.startswith(("torch.cuda.", "torch.backends.cudnn")):
            self.ctx.add("signal", "torch-cuda-api", node, detail=full)
        elif full in FP64_DEVICE_NAMES:
            self.ctx.add("signal", "fp64-device", node, detail=full)
        elif full in FP64_HOST_NAMES:
            self.ctx.add("signal", "fp64-host", node, detail=full)
        elif full in TPU_STRATEGY_NAMES:
            self.ctx.add("signal", "tpu-strategy", node, detail=full)
        elif full in CUPY_KERNEL_NAMES:
            self.ctx.add("signal", "cupy-raw-kernel", node, detail=full)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        full = _resolve(node, self.ctx.aliases)
        if full:
            self._check_name(node, full)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id in self.ctx.aliases:
            self._check_name(node, self.ctx.aliases[node.id])

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value.lower() == "jax_enable_x64":
            self.ctx.add("signal", "fp64-device", node, detail="jax_enable_x64")

    def visit_Compare(self, node: ast.Compare) -> None:
        if any((_str_const(c) or "").lower() == "tpu" for c in (node.left, *node.comparators)):
            self.ctx.add("signal", "tpu-device-use", node, detail="comparison with 'tpu'")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        value = (_str_const(node.value) or "").lower()
        if "tpu" in value and any(
            v in ast.unparse(t) for t in node.targets for v in TPU_ENV_VARS
        ):  # os.environ["PJRT_DEVICE"] = "TPU"
            self.ctx.add("signal", "tpu-device-use", node, detail=ast.unparse(node.targets[0]))
        self.generic_visit(node)

    # calls -------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        add = self.ctx.add
        func = node.func
        fn = self._r(func)
        attr = func.attr if isinstance(func, ast.Attribute) else (fn.rsplit(".", 1)[-1])
        first = _str_const(node.args[0]) if node.args else None
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        kws = {k: _str_const(v) for k, v in kw.items()}
        if isinstance(func, ast.Attribute) and attr == "cuda" and not fn.startswith("torch."):
            add("signal", "torch-cuda-api", node, detail=".cuda()")
        if (attr == "to" or fn == "torch.device") and (first or "").startswith("cuda"):
            add("signal", "torch-cuda-api", node, detail=f"{attr}({first!r})")
        if (kws.get("device") or "").startswith("cuda"):
            add("signal", "torch-cuda-api", node, detail=f"device={kws['device']!r}")
        if isinstance(func, ast.Attribute) and attr == "double" and not node.args and not kw:
            add("signal", "fp64-device", node, detail=".double()")
        if kws.get("dtype") in FP64_DTYPE_STRINGS:
            sig = "fp64-device" if fn.startswith(DEVICE_FRAMEWORKS) else "fp64-host"
            add("signal", sig, node, detail=f"dtype={kws['dtype']!r}")
        if attr == "astype" and first in FP64_DTYPE_STRINGS:
            add("signal", "fp64-host", node, detail=f"astype({first!r})")
        if attr == "init_process_group" and "nccl" in {first, kws.get("backend")}:
            add("signal", "nccl-backend", node, detail="init_process_group('nccl')")
        if attr == "CUDAExtension":
            add("signal", "cuda-kernel", node, detail="CUDAExtension")
        elif attr == "CppExtension":
            add("signal", "cpp-extension", node, detail="CppExtension")
        elif attr == "load_inline" and "cuda_sources" in kw:
            add("signal", "cuda-kernel", node, detail="load_inline(cuda_sources=...)")
        elif fn.endswith("cpp_extension.load") and any(
            (_str_const(n) or "").endswith((".cu", ".cuh")) for n in ast.walk(node)
        ):
            add("signal", "cuda-kernel", node, detail="cpp_extension.load(.cu sources)")
        if fn in TRITON_DECORATORS and node.args:
            add("signal", "triton-kernel", node, detail=f"{fn}(...)")
        if fn in JIT_NAMES and node.args and isinstance(node.args[0], ast.Name):
            nums, names = _statics(node.keywords)
            self.jit_calls.append((node.args[0].id, nums, names))
        if (fn.startswith("jax.") and (first or "").lower() == "tpu") or any(
            k in TPU_KEYWORDS and (v or "").lower() == "tpu" for k, v in kws.items()
        ):
            add("signal", "tpu-device-use", node, detail=f"{fn or attr}(... 'tpu')")
        consts = [(_str_const(a) or "") for a in node.args]
        if any(c in TPU_ENV_VARS for c in consts) and any("tpu" in c.lower() for c in consts):
            add("signal", "tpu-device-use", node, detail="TPU environment variable")
        if kws.get("attn_implementation") in FLASH_ATTN_IMPLS:
            add("signal", "flash-attention-2-flag", node, detail=str(kws["attn_implementation"]))
        self.generic_visit(node)

    # functions ---------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.ctx.functions.setdefault(node.name, node)
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            name = self._r(target)
            if name in TRITON_DECORATORS:
                self.ctx.add("signal", "triton-kernel", dec, detail=f"@{name} {node.name}")
            jit: tuple[frozenset[int], frozenset[str]] | None = None
            if name in JIT_NAMES:
                jit = (
                    _statics(dec.keywords)
                    if isinstance(dec, ast.Call)
                    else (frozenset(), frozenset())
                )
            elif (
                name in PARTIAL_NAMES
                and isinstance(dec, ast.Call)
                and dec.args
                and self._r(dec.args[0]) in JIT_NAMES
            ):
                jit = _statics(dec.keywords)
            if jit is not None:
                self._jit_branches(node, *jit)
        self.generic_visit(node)

    def _jit_branches(
        self, fn: ast.FunctionDef, nums: frozenset[int], names: frozenset[str]
    ) -> None:
        for where, var in traced_branches(fn, nums, names):
            self.ctx.add(
                "signal",
                "jax-traced-control-flow",
                where,
                detail=f"'{var}' is traced in jitted {fn.name}()",
            )


def scan_python(file: str, text: str, tree: ast.Module) -> list[Hit]:
    """Imports and code signals of one parsed Python file."""
    ctx = _Ctx(file=file, lines=text.splitlines(), aliases=_collect_aliases(tree))
    visitor = _Visitor(ctx)
    visitor.visit(tree)
    for name, nums, names in visitor.jit_calls:  # f_fast = jax.jit(f, static_argnums=...)
        fn = ctx.functions.get(name)
        if fn is not None:
            visitor._jit_branches(fn, nums, names)
    return ctx.hits


def scan_native(file: str, text: str) -> list[Hit]:
    """C/C++ sources and headers: CUDA headers or ``__global__`` kernels mean CUDA code."""
    for no, ln in enumerate(text.splitlines(), 1):
        if _CUDA_INCLUDE.search(ln) or _GLOBAL_KERNEL.search(ln):
            return [
                Hit(
                    kind="signal",
                    name="cuda-kernel",
                    file=file,
                    line=no,
                    evidence=excerpt(ln),
                    detail="CUDA code in a C/C++ file",
                )
            ]
    return []


def first_line_matching(text: str, pattern: re.Pattern[str]) -> tuple[int, str]:
    """(line, text) of the first match, or (1, first line)."""
    lines = text.splitlines()
    for no, ln in enumerate(lines, 1):
        if pattern.search(ln):
            return no, ln
    return 1, lines[0] if lines else ""


KERNEL_LINE = _GLOBAL_KERNEL
