"""Import a PyTorch ``nn.Module`` as a ``Graph`` by tracing it on the meta device.

Nothing is computed and no weights exist. The module is built under
``torch.device("meta")`` (or a weightless meta copy is made), the example inputs become meta
tensors, and one forward pass (plus, with ``backward=True``, ``loss.backward()`` on the sum
of the outputs) runs under two dispatch modes:

* ``torch.utils.flop_counter.FlopCounterMode`` counts the FLOPs of tensor ops (matmul,
  conv, attention; 2 FLOPs per multiply-add, full S x S attention even when causal);
* a recorder above it sees every aten op with its input and output tensors, maps it to an
  ``OpKind`` and takes the FLOPs the counter added for it. Other ops get
  ``ir.FLOPS_PER_ELEMENT`` FLOPs per element of their largest tensor.

On the meta device ``F.scaled_dot_product_attention`` would decompose into bmm + softmax;
a ``TorchFunctionMode`` routes it to the fused memory-efficient kernel (it has a meta
implementation and a backward), so attention is one ATTENTION op, as it runs on a GPU or
TPU. sdpa called from inside another torch function (``nn.MultiheadAttention``) is not
re-routed and shows as MATMUL + SOFTMAX.

Bytes: an op reads its distinct input tensors and writes its outputs. Floating tensors
count at the TARGET dtype (``dtype=``, bf16 by default), integer and bool tensors at their
own size, float64 tensors at 8 bytes (the op becomes FP64). A gather (embedding look-up)
reads the rows it fetches, not its whole table. View ops (view, transpose,
expand, ...) move no data and are not recorded. The optimizer step is not included.

Factory contract, for ``load_torch_factory("pkg.mod:build")`` or ``"path/file.py:build"``:
    ``build(**factory_kwargs)`` is called inside ``torch.device("meta")`` and returns either

    * a tuple ``(module, example_inputs)``, or
    * a module with an ``example_inputs()`` method (also called under the meta device).

    ``example_inputs`` is a tuple of positional inputs; a single tensor is taken as a
    1-tuple and a dict is passed as keyword arguments. Build inputs from shapes only
    (``torch.empty``, ``torch.zeros``, ``torch.randint``): they are meta tensors.
    See ``chipwise.workload.examples.gpt2_like:build``.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chipwise.errors import ChipwiseError, ExtractionError, WorkloadError
from chipwise.units import DTYPE_BYTES
from chipwise.workload.ir import FLOPS_PER_ELEMENT, Graph, Op, OpKind

if TYPE_CHECKING:
    from torch.utils._python_dispatch import TorchDispatchMode

TRUST_CODE_MESSAGE = "importing {spec!r} runs its code; pass --trust-code"
SPEC_MESSAGE = "torch factory spec {spec!r} must be 'package.module:factory' or 'file.py:factory'"
NO_TORCH_MESSAGE = (
    "importing a PyTorch model needs torch; install it: pip install 'chipwise[torch]'"
)

# aten op names (overload packet, no namespace) by kind. Checked in this order; a name in no
# table falls back to the op's `pointwise` tag (ELEMENTWISE), then OTHER.
_MATMUL_OPS = frozenset(
    {"mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot", "_scaled_mm",
     "_int_mm", "matmul", "linear"}
)  # fmt: skip
_BIAS_FIRST_OPS = frozenset({"addmm", "baddbmm", "addbmm", "addmv"})  # (bias, a, b)
_CONV_PREFIXES = ("conv", "cudnn_conv", "miopen_conv", "mkldnn_conv", "slow_conv", "thnn_conv")
_ATTENTION_MARKS = ("scaled_dot_product", "flash_attention", "efficient_attention")
_GATHER_OPS = frozenset(
    {"embedding", "embedding_bag", "_embedding_bag", "_embedding_bag_forward_only",
     "index_select", "gather", "index", "_unsafe_index", "take", "take_along_dim"}
)  # fmt: skip
_SCATTER_OPS = frozenset(
    {"index_put", "index_put_", "_index_put_impl", "_index_put_impl_", "_unsafe_index_put",
     "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_",
     "index_add", "index_add_", "index_copy", "index_copy_", "index_reduce", "index_reduce_",
     "masked_scatter", "masked_scatter_", "embedding_dense_backward",
     "_embedding_bag_backward", "_embedding_bag_dense_backward"}
)  # fmt: skip
_SORT_OPS = frozenset(
    {"sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "_unique",
     "_unique2", "unique_dim", "unique_consecutive"}
)  # fmt: skip
_NORM_MARKS = ("layer_norm", "rms_norm", "batch_norm", "group_norm", "instance_norm")
_REDUCTION_OPS = frozenset(
    {"sum", "nansum", "mean", "amax", "amin", "max", "min", "aminmax", "prod", "var", "std",
     "var_mean", "std_mean", "norm", "linalg_vector_norm", "argmax", "argmin", "logsumexp",
     "cumsum", "cumprod", "all", "any", "count_nonzero"}
)  # fmt: skip
_COPY_OPS = frozenset(
    {"clone", "copy", "copy_", "_to_copy", "_copy_from", "_copy_from_and_resize", "cat",
     "stack", "contiguous", "repeat", "repeat_interleave", "roll", "flip", "slice_scatter",
     "select_scatter", "diagonal_scatter", "as_strided_scatter", "pixel_shuffle",
     "pixel_unshuffle", "channel_shuffle", "im2col", "col2im", "select_backward",
     "slice_backward", "diagonal_backward", "unfold_backward", "narrow_copy"}
)  # fmt: skip
_COPY_PREFIXES = ("constant_pad", "reflection_pad", "replication_pad", "upsample_nearest")
_ELEMENTWISE_OPS = frozenset(  # write-only fills and masks without the pointwise tag
    {"zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "fill", "fill_", "zero_",
     "new_zeros", "new_ones", "new_full", "scalar_tensor", "arange", "rand", "randn",
     "randint", "rand_like", "randn_like", "randint_like", "normal_", "uniform_",
     "bernoulli", "bernoulli_", "tril", "triu", "native_dropout", "native_dropout_backward"}
)  # fmt: skip
_FREE_OPS = frozenset(  # move no data (views, allocation, bookkeeping)
    {"_unsafe_view", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
     "lift_fresh", "set_", "resize_", "resize_as_", "_local_scalar_dense", "_assert_async",
     "_assert_tensor_metadata", "_functional_assert_async", "sym_constrain_range",
     "record_stream", "detach_"}
)  # fmt: skip
_COLLECTIVE_NAMESPACES = frozenset({"_c10d_functional", "c10d_functional", "c10d"})
_FREE_NAMESPACES = frozenset({"profiler", "prim", "prims"})


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as err:
        raise ExtractionError(NO_TORCH_MESSAGE) from err
    return torch


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(err).__name__}: {first[:300]}"


def _kind_of(func: Any) -> OpKind | None:
    """The kind of an aten op overload; None for ops that move no data."""
    name: str = func._opname
    namespace: str = func.namespace
    if namespace in _FREE_NAMESPACES or func.is_view or name in _FREE_OPS:
        return None
    if namespace in _COLLECTIVE_NAMESPACES:
        return OpKind.COLLECTIVE
    if namespace != "aten":
        return OpKind.CUSTOM
    bare = name.lstrip("_")
    if any(mark in name for mark in _ATTENTION_MARKS):
        return OpKind.ATTENTION
    if name in _MATMUL_OPS:
        return OpKind.MATMUL
    if bare.startswith(_CONV_PREFIXES) and not bare.startswith("convert"):
        return OpKind.CONV
    if name in _GATHER_OPS:
        return OpKind.GATHER
    if name in _SCATTER_OPS:
        return OpKind.SCATTER
    if name in _SORT_OPS:
        return OpKind.SORT
    if any(mark in name for mark in _NORM_MARKS):
        return OpKind.NORM
    if "softmax" in name:
        return OpKind.SOFTMAX
    import torch

    pointwise = torch.Tag.pointwise in func.tags
    if (name in _REDUCTION_OPS or "pool" in name) and not pointwise:
        return OpKind.REDUCTION
    if name in _COPY_OPS or bare.startswith(_COPY_PREFIXES):
        return OpKind.COPY
    if pointwise or name in _ELEMENTWISE_OPS:
        return OpKind.ELEMENTWISE
    return OpKind.OTHER


def _matmul_shape(name: str, tensors: list[Any]) -> tuple[tuple[int, int, int], int] | None:
    """(M, N, K) and batch of a matmul from its operands; None if the shapes are unusual."""
    operands = tensors[1:3] if name in _BIAS_FIRST_OPS else tensors[:2]
    if len(operands) < 2:
        return None
    a, b = (tuple(int(d) for d in t.shape) for t in operands)
    if not a or not b:
        return None
    m = a[-2] if len(a) >= 2 else 1
    k = a[-1]
    n = b[-1] if len(b) >= 2 else 1
    batch = 1
    for d in a[:-2]:
        batch *= d
    return (m, n, k), batch


class _Trace:
    """What the recorder collects: ops in order, plus counters for the notes."""

    def __init__(self, *, elem_bytes: float, dtype: str) -> None:
        self.elem_bytes = elem_bytes
        self.dtype = dtype
        self.ops: list[Op] = []
        self.backward = False
        self.active = True
        self.free_ops = 0

    def add(self, op: Op) -> None:
        last = self.ops[-1] if self.ops else None
        if last is not None and replace(last, count=1) == replace(op, count=1):
            self.ops[-1] = replace(last, count=last.count + 1)
        else:
            self.ops.append(op)


def _tensor_bytes(torch: Any, t: Any, elem_bytes: float) -> float:
    if t.dtype in (torch.float64, torch.complex128):
        per = t.element_size()
    elif t.dtype.is_complex:
        per = 2 * elem_bytes
    elif t.dtype.is_floating_point:
        per = elem_bytes
    else:
        per = t.element_size()
    return float(t.numel()) * float(per)


def _make_recorder(torch: Any, trace: _Trace, counter: Any, tracker: Any) -> TorchDispatchMode:
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    fp64 = (torch.float64, torch.complex128)
    dynamic_tags = {torch.Tag.dynamic_output_shape, torch.Tag.data_dependent_output}

    def module_path() -> str:
        names = [p for p in tracker.parents if p != "Global"]
        return max(names, key=lambda p: p.count(".")) if names else ""

    class _Recorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __torch_dispatch__(
            self,
            func: Any,
            types: Any,
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            kwargs = kwargs or {}
            before = counter.get_total_flops()
            out = func(*args, **kwargs)
            if not trace.active:
                return out
            kind = _kind_of(func)
            if kind is None:
                trace.free_ops += 1
                return out
            inputs = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
            outputs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
            distinct = list({id(t): t for t in inputs}.values())
            bytes_read = sum(_tensor_bytes(torch, t, trace.elem_bytes) for t in distinct)
            bytes_written = sum(_tensor_bytes(torch, t, trace.elem_bytes) for t in outputs)
            if kind == OpKind.GATHER and inputs:  # reads the rows it fetches, not the table
                bytes_read += bytes_written - _tensor_bytes(torch, inputs[0], trace.elem_bytes)
            flops = float(counter.get_total_flops() - before)
            dtype = trace.dtype
            if any(t.dtype in fp64 for t in (*inputs, *outputs)):
                kind, dtype = OpKind.FP64, "fp64"
            if flops == 0.0 and kind in FLOPS_PER_ELEMENT:
                largest = max((t.numel() for t in (*inputs, *outputs)), default=0)
                flops = FLOPS_PER_ELEMENT[kind] * largest
            mnk, batch = None, 1
            if func._opname in _MATMUL_OPS:
                found = _matmul_shape(func._opname, inputs)
                if found is not None:
                    mnk, batch = found
            path = module_path()
            trace.add(
                Op(
                    name=f"{path}:{func._opname}" if path else func._opname,
                    kind=kind,
                    dtype=dtype,
                    flops=flops,
                    bytes_read=bytes_read,
                    bytes_written=bytes_written,
                    shape=tuple(int(d) for d in outputs[0].shape) if outputs else (),
                    mnk=mnk,
                    batch=batch,
                    dynamic=bool(dynamic_tags.intersection(func.tags)),
                    backward=trace.backward,
                )
            )
            return out

    return _Recorder()  # type: ignore[no-untyped-call]


def _fused_sdpa(torch: Any, *args: Any, **kwargs: Any) -> Any:
    """sdpa through the memory-efficient kernel (meta-capable); None where it does not fit."""
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale")
    bound = dict(zip(names, args, strict=False)) | kwargs
    q, k, v, mask = (bound.get(n) for n in ("query", "key", "value", "attn_mask"))
    if q is None or k is None or v is None or any(t.dim() != 4 for t in (q, k, v)):
        return None
    if q.dtype == torch.float64:  # the fused kernel has no fp64 path on GPUs either
        return None
    if k.shape[1] != q.shape[1]:  # grouped-query attention: the kernel wants equal heads
        if not bound.get("enable_gqa") or q.shape[1] % k.shape[1]:
            return None
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    bias = None
    if mask is not None:
        if mask.dtype == torch.bool:
            zero = torch.zeros((), dtype=q.dtype, device=q.device)
            mask = torch.where(mask, zero, torch.full_like(zero, float("-inf")))
        bias = mask.expand(q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    out = torch.ops.aten._scaled_dot_product_efficient_attention(
        q,
        k,
        v,
        bias,
        needs_grad,
        float(bound.get("dropout_p", 0.0)),
        bool(bound.get("is_causal", False)),
        scale=bound.get("scale"),
    )
    return out[0]


def _make_sdpa_mode(torch: Any) -> Any:
    from torch.overrides import TorchFunctionMode

    sdpa = torch.nn.functional.scaled_dot_product_attention

    class _SdpaToFused(TorchFunctionMode):
        def __torch_function__(
            self,
            func: Any,
            types: Any,
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            kwargs = kwargs or {}
            if func is sdpa:
                out = _fused_sdpa(torch, *args, **kwargs)
                if out is not None:
                    return out
            return func(*args, **kwargs)

    return _SdpaToFused()


def _on_meta(torch: Any, module: Any) -> tuple[Any, bool]:
    """The module itself if it is all on meta, else a meta copy (weights are not copied)."""
    tensors = [*module.parameters(), *module.buffers()]
    if all(t.is_meta for t in tensors):
        return module, False
    memo: dict[int, Any] = {}
    for p in module.parameters():
        memo[id(p)] = torch.nn.Parameter(p.to("meta"), requires_grad=p.requires_grad)
    for b in module.buffers():
        memo[id(b)] = b.to("meta")
    return copy.deepcopy(module, memo), True


def _split_inputs(torch: Any, example_inputs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    from torch.utils._pytree import tree_map

    def to_meta(x: Any) -> Any:
        return x.to("meta") if isinstance(x, torch.Tensor) and not x.is_meta else x

    if isinstance(example_inputs, Mapping):
        return (), {str(k): tree_map(to_meta, v) for k, v in example_inputs.items()}
    if isinstance(example_inputs, tuple | list):
        return tuple(tree_map(to_meta, x) for x in example_inputs), {}
    return (tree_map(to_meta, example_inputs),), {}


def graph_from_module(
    module: Any,
    example_inputs: Any,
    *,
    dtype: str = "bf16",
    backward: bool = True,
    name: str | None = None,
) -> Graph:
    """Trace ``module`` on the meta device and return its ops as a ``Graph``.

    Args:
        module: a ``torch.nn.Module``; built on meta ideally, else a weightless meta copy
            is traced (the module itself is left alone).
        example_inputs: a tuple of positional inputs, a single tensor, or a dict of keyword
            inputs; tensors may be meta tensors (others are moved to meta).
        dtype: the dtype the workload will run in; sets bytes per floating element.
        backward: also trace ``sum(outputs).backward()``; its ops carry ``backward=True``.
        name: the graph's name; the module's class name by default.

    Raises:
        WorkloadError: an unknown ``dtype``.
        ExtractionError: torch missing, or the module cannot run on the meta device
            (data-dependent shapes, ``.item()``, ops without a meta kernel).
    """
    if dtype not in DTYPE_BYTES:
        raise WorkloadError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_BYTES)}")
    torch = _import_torch()
    from torch.utils._pytree import tree_leaves
    from torch.utils.flop_counter import FlopCounterMode
    from torch.utils.module_tracker import ModuleTracker

    module, copied = _on_meta(torch, module)
    args, kwargs = _split_inputs(torch, example_inputs)
    graph_name = name or type(module).__name__
    trace = _Trace(elem_bytes=DTYPE_BYTES[dtype], dtype=dtype)
    counter = FlopCounterMode(display=False)
    tracker = ModuleTracker()
    recorder = _make_recorder(torch, trace, counter, tracker)
    notes = [f"traced on the meta device with torch {torch.__version__}; bytes at {dtype}"]
    fresh = [p for p in module.parameters() if p.grad is None]  # grads to clear afterwards
    try:
        with _make_sdpa_mode(torch), tracker, counter, recorder:
            with torch.set_grad_enabled(backward):
                out = module(*args, **kwargs)
            forward_flops = counter.get_total_flops()
            if backward:
                trace.active = False
                leaves = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
                losses = [t.sum() for t in leaves if t.requires_grad]
                if losses:
                    loss = torch.stack(losses).sum()
                    trace.active, trace.backward = True, True
                    loss.backward()
                else:
                    notes.append("backward skipped: no output requires grad")
    except ChipwiseError:
        raise
    except Exception as err:
        raise ExtractionError(
            f"tracing {graph_name!r} on the meta device failed ({_one_line(err)}); ops with "
            "data-dependent shapes (nonzero, unique, .item()) cannot be traced without data"
        ) from err
    finally:
        for p in fresh:
            p.grad = None
    total = counter.get_total_flops()
    notes.append(
        f"flop_counter: forward {forward_flops:.4g} FLOP, backward {total - forward_flops:.4g}"
        " FLOP (matmul/conv/attention only)"
    )
    notes.append(f"{trace.free_ops} view/allocation ops not recorded (they move no data)")
    if backward:
        notes.append("optimizer step not included")
    if copied:
        notes.append("module had real tensors; a weightless meta copy was traced")
    return Graph(
        name=graph_name,
        ops=tuple(trace.ops),
        source="torch meta trace",
        params=float(sum(p.numel() for p in module.parameters())),
        notes=tuple(notes),
    )


def _import_file(path: Path, spec: str) -> Any:
    if not path.is_file():
        raise ExtractionError(f"cannot import {spec!r}: no file {str(path)!r}")
    mod_name = f"_chipwise_user_{path.stem}"
    file_spec = importlib.util.spec_from_file_location(mod_name, path)
    if file_spec is None or file_spec.loader is None:
        raise ExtractionError(f"cannot import {spec!r}: {str(path)!r} is not a Python file")
    mod = importlib.util.module_from_spec(file_spec)
    sys.modules[mod_name] = mod  # dataclasses and pickling look modules up here
    sys.path.insert(0, str(path.parent))  # so the file can import its neighbours
    try:
        file_spec.loader.exec_module(mod)
    except (Exception, SystemExit) as err:
        sys.modules.pop(mod_name, None)
        raise ExtractionError(f"cannot import {spec!r}: {_one_line(err)}") from err
    finally:
        sys.path.remove(str(path.parent))
    return mod


def _load_factory(spec: str) -> Callable[..., Any]:
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr.isidentifier():
        raise WorkloadError(SPEC_MESSAGE.format(spec=spec))
    if target.endswith(".py") or "/" in target or "\\" in target:
        mod = _import_file(Path(target).expanduser(), spec)
    else:
        try:
            mod = importlib.import_module(target)
        except (Exception, SystemExit) as err:
            raise ExtractionError(f"cannot import {spec!r}: {_one_line(err)}") from err
    factory = getattr(mod, attr, None)
    if not callable(factory):
        raise ExtractionError(f"cannot import {spec!r}: {target!r} has no callable {attr!r}")
    return factory  # type: ignore[no-any-return]


def build_from_factory(
    spec: str,
    *,
    trust_code: bool,
    device: Any = "meta",
    factory_kwargs: Mapping[str, Any] | None = None,
) -> tuple[Any, Any]:
    """Import ``spec`` and call its factory under ``torch.device(device)``.

    Returns ``(module, example_inputs)`` per the contract in this module's docstring. The
    importer builds on the meta device; ``chipwise profile`` builds on a real one.

    Raises:
        WorkloadError: ``trust_code`` not given, or a malformed ``spec``.
        ExtractionError: the import or the factory failed (one line).
    """
    if not trust_code:
        raise WorkloadError(TRUST_CODE_MESSAGE.format(spec=spec))
    factory = _load_factory(spec)
    torch = _import_torch()
    try:
        with torch.device(device):
            built = factory(**dict(factory_kwargs or {}))
            if isinstance(built, tuple) and len(built) == 2:
                module, inputs = built
            else:
                module = built
                make_inputs = getattr(built, "example_inputs", None)
                if not callable(make_inputs):
                    raise ExtractionError(
                        f"factory {spec!r} returned {type(built).__name__}; return "
                        "(module, example_inputs) or a module with an example_inputs() method"
                    )
                inputs = make_inputs()
    except ChipwiseError:
        raise
    except Exception as err:
        raise ExtractionError(f"factory {spec!r} failed: {_one_line(err)}") from err
    if not isinstance(module, torch.nn.Module):
        raise ExtractionError(
            f"factory {spec!r} returned {type(module).__name__}, not a torch.nn.Module"
        )
    return module, inputs


def load_torch_factory(
    spec: str,
    *,
    trust_code: bool,
    dtype: str = "bf16",
    backward: bool = True,
    factory_kwargs: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> Graph:
    """Import ``spec`` ("package.module:factory" or "file.py:factory"), build, trace.

    The factory contract is in this module's docstring. Importing runs the user's code, so
    it needs ``trust_code=True`` (the CLI's ``--trust-code``).

    Raises:
        WorkloadError: ``trust_code`` not given, or a malformed ``spec``.
        ExtractionError: the import, the factory or the trace failed (one line).
    """
    module, inputs = build_from_factory(
        spec, trust_code=trust_code, device="meta", factory_kwargs=factory_kwargs
    )
    return graph_from_module(module, inputs, dtype=dtype, backward=backward, name=name)
