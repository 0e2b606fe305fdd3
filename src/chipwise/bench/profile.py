"""Time a real PyTorch model's training steps here, and compare with the prediction.

``profile_factory("pkg.mod:build", trust_code=True)`` imports the user's factory (the
contract of ``workload.from_torch``: ``build()`` returns ``(module, example_inputs)`` or a
module with ``example_inputs()``), builds it on the local device, and runs ``warmup`` + ``steps``
training steps: forward, ``loss = sum of the outputs`` (the importer's convention), backward,
``torch.optim.SGD`` step. The median step time is compared with the model's:

- the graph is the torch importer's trace of the same module and inputs (forward + backward),
  plus the SGD update (read parameter and gradient, write parameter: one element-wise op per
  parameter tensor, as ``torch.optim.SGD`` without ``foreach`` launches them);
- it is timed by ``perf.graph.time_graph`` on the catalog chip the device maps to (with the
  store's calibrated efficiency if there is one), or, for a device the catalog lacks (a
  CPU), on ``MeasuredModel`` from the device's own calibration (``chipwise calibrate``).

Floating-point example inputs are refilled with standard-normal values before timing (the
factory may build them with ``torch.empty``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from chipwise.bench.calibrate import MeasuredModel, load_calibration, load_measured_device
from chipwise.bench.devices import DeviceInfo, detect_device
from chipwise.errors import MeasurementError, WorkloadError
from chipwise.hardware import default_catalog
from chipwise.perf import PerfModel, model_for, time_graph
from chipwise.units import dtype_bytes
from chipwise.workload.from_torch import TRUST_CODE_MESSAGE, build_from_factory, graph_from_module
from chipwise.workload.ir import Op, OpKind

PROFILE_DTYPES = ("fp32", "bf16", "fp16")
SGD_LR = 1e-3  # any small rate: only the time of the update matters
# SGD without momentum: p -= lr * g, 2 FLOPs per element; reads p and g, writes p.
SGD_FLOPS_PER_PARAM = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileResult:
    """Measured and predicted training-step time of one model on the local device."""

    spec: str
    device: DeviceInfo
    dtype: str
    step_times_s: tuple[float, ...]
    predicted_step_s: float
    predicted_on: str  # "h200-sxm (calibrated)", "measured: <cpu> (calibrated)", ...
    graph_flops: float
    graph_ops: int
    notes: tuple[str, ...] = ()

    @property
    def measured_step_s(self) -> float:
        """Median of the timed steps."""
        return statistics.median(self.step_times_s)

    @property
    def error(self) -> float:
        """``predicted / measured - 1``: +0.1 means the prediction is 10 % too slow."""
        return self.predicted_step_s / self.measured_step_s - 1.0


def _prepare_inputs(torch: Any, inputs: Any, device: Any, dtype: Any) -> Any:
    """Inputs on ``device``; floating tensors cast to ``dtype`` and refilled with N(0, 1)."""
    from torch.utils._pytree import tree_map

    def fix(x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        x = x.to(device)
        if x.is_floating_point():
            x = torch.randn(x.shape, dtype=dtype, device=device)
        return x

    return tree_map(fix, inputs)


def _call(module: Any, inputs: Any) -> Any:
    if isinstance(inputs, dict):
        return module(**inputs)
    if isinstance(inputs, tuple | list):
        return module(*inputs)
    return module(inputs)


def _dtype_name(torch: Any, dtype: Any) -> str:
    names = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
    if dtype not in names:
        raise MeasurementError(f"profile runs fp32, bf16 or fp16 models, not {dtype}")
    return names[dtype]


def _sgd_op(module: Any, dtype: str) -> Op | None:
    params = [p for p in module.parameters() if p.requires_grad]
    if not params:
        return None
    elements = sum(p.numel() for p in params) / len(params)
    eb = dtype_bytes(dtype)
    return Op(
        name="optimizer:sgd",
        kind=OpKind.ELEMENTWISE,
        dtype=dtype,
        flops=SGD_FLOPS_PER_PARAM * elements,
        bytes_read=2 * elements * eb,
        bytes_written=elements * eb,
        count=len(params),
    )


def _predictor(device: DeviceInfo, db: str | Path | None) -> tuple[PerfModel, str]:
    """The model that times the graph for ``device``, and a label saying what it is."""
    if device.chip_id is not None:
        chip = default_catalog().chip(device.chip_id)
        efficiency = load_calibration(chip.id, db)
        label = "calibrated" if efficiency is not None else "packaged efficiency"
        return model_for(chip, efficiency), f"{chip.id} ({label})"
    measured = load_measured_device(device.name, db)
    if measured is None:
        raise MeasurementError(
            f"{device.name!r} is not in the catalog and was never calibrated here; run "
            f"'chipwise bench' then 'chipwise calibrate' first (same --db)"
        )
    return MeasuredModel(measured), f"measured {device.name} (calibrated)"


def profile_factory(
    spec: str,
    *,
    trust_code: bool,
    device: str = "auto",
    steps: int = 3,
    warmup: int = 1,
    dtype: str | None = None,
    db: str | Path | None = None,
    factory_kwargs: Mapping[str, Any] | None = None,
) -> ProfileResult:
    """Run ``steps`` real training steps of the factory's model and compare with the model.

    Args:
        spec: ``"package.module:factory"`` or ``"path/file.py:factory"``.
        trust_code: must be True: importing the factory runs its code.
        device: ``auto``, ``cuda`` or ``cpu`` (PyTorch runs the model).
        steps: timed steps (the median is reported); ``warmup`` untimed ones first.
        dtype: cast the module and floating inputs to ``fp32``, ``bf16`` or ``fp16``;
            ``None`` keeps the dtype the factory built.
        db: the measurement store with the calibration.
        factory_kwargs: keyword arguments for the factory (e.g. model sizes).

    Raises:
        WorkloadError: no ``trust_code``, or a malformed ``spec``.
        ExtractionError: the import, factory or trace failed.
        MeasurementError: no PyTorch device, bad ``steps``, or no calibration for a device
            the catalog lacks.
    """
    if not trust_code:
        raise WorkloadError(TRUST_CODE_MESSAGE.format(spec=spec))
    if steps < 1 or warmup < 0:
        raise MeasurementError(f"--steps must be >= 1 (got {steps}) and warm-up >= 0")
    if dtype is not None and dtype not in PROFILE_DTYPES:
        raise MeasurementError(f"--dtype {dtype!r}: choose one of {', '.join(PROFILE_DTYPES)}")
    dev = detect_device(device)
    if dev.library != "torch":
        raise MeasurementError(
            f"profile runs PyTorch models; {dev.name} is driven by {dev.library} here "
            "(install PyTorch, or pass --device cpu)"
        )
    import torch

    where = torch.device("cuda", 0) if dev.kind == "gpu" else torch.device("cpu")
    module, inputs = build_from_factory(
        spec, trust_code=trust_code, device=where, factory_kwargs=factory_kwargs
    )
    torch_dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    if dtype is not None:
        module = module.to(dtype=torch_dtypes[dtype])
    module = module.to(where).train()
    first = next((p for p in module.parameters() if p.is_floating_point()), None)
    run_dtype = first.dtype if first is not None else torch.float32
    dtype_name = _dtype_name(torch, run_dtype)
    inputs = _prepare_inputs(torch, inputs, where, run_dtype)
    model, predicted_on = _predictor(dev, db)  # fail before any step if nothing can predict

    graph = graph_from_module(module, inputs, dtype=dtype_name, backward=True, name=spec)
    sgd = _sgd_op(module, dtype_name)
    if sgd is not None:
        graph = replace(graph, ops=(*graph.ops, sgd))
    predicted = time_graph(graph, model)

    times = _time_steps(torch, module, inputs, dev, steps=steps, warmup=warmup)
    notes = [
        f"loss = sum of the outputs; SGD (lr {SGD_LR}, no momentum); {warmup} warm-up step(s)",
        *graph.notes,
    ]
    return ProfileResult(
        spec=spec,
        device=dev,
        dtype=dtype_name,
        step_times_s=tuple(times),
        predicted_step_s=predicted.total_s,
        predicted_on=predicted_on,
        graph_flops=graph.flops,
        graph_ops=sum(op.count for op in graph.ops),
        notes=tuple(notes),
    )


def _time_steps(
    torch: Any, module: Any, inputs: Any, dev: DeviceInfo, *, steps: int, warmup: int
) -> list[float]:
    """Seconds of each timed training step (host clock, device synchronised)."""
    from torch.utils._pytree import tree_leaves

    optimizer = torch.optim.SGD(module.parameters(), lr=SGD_LR, foreach=False)

    def sync() -> None:
        if dev.kind == "gpu":
            torch.cuda.synchronize()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        out = _call(module, inputs)
        losses = [t.sum() for t in tree_leaves(out) if isinstance(t, torch.Tensor)
                  and t.requires_grad]  # fmt: skip
        if not losses:
            raise MeasurementError("the model's outputs need no gradient; nothing to train")
        sum(losses[1:], losses[0]).backward()
        optimizer.step()

    for _ in range(warmup):
        step()
    sync()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - start)
    return times
