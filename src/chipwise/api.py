"""The notebook API: one call per question, ids and strings accepted.

    import chipwise
    p = chipwise.predict("llama3-8b", chip="h100", chips=8)      # a TrainPrediction
    s = chipwise.predict("llama3-8b", chip="h100", phase="infer", batch=32)
    rec = chipwise.advise("llama3-70b", tokens=2e12, objective="time")
    wl = chipwise.load_workload("llama3-70b", seq_len=8192, global_batch=512)

Each is a thin call on a stage's own entry point (``perf.Predictor``, ``advise.recommend``
over ``advise.build_request``); the CLI commands make the same calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chipwise.advise import AdviseOptions, Recommendation, build_request, recommend
from chipwise.advise.defaults import DEFAULT_WORKLOAD
from chipwise.errors import WorkloadError
from chipwise.hardware import Catalog, Chip
from chipwise.hardware.prices import run_catalog
from chipwise.perf import Plan, Prediction, Predictor, plan_constraints
from chipwise.workload.ir import Inference, Model, Training, Workload
from chipwise.workload.load import load_workload_model

__all__ = ["advise", "load_workload", "predict"]


def load_workload(
    workload: str | Path | Model | Workload,
    *,
    phase: str = "train",
    seq_len: int = 4096,
    global_batch: int = 256,
    batch: int = 64,
    input_len: int = 1024,
    output_len: int = 256,
) -> Workload:
    """A workload: a zoo id, config.json path, primitive or kind (or a model), trained with
    ``seq_len`` x ``global_batch`` (``phase="train"``) or served to ``batch`` requests of
    ``input_len`` in, ``output_len`` out (``phase="infer"``). A ``Workload`` is returned as is.
    """
    if isinstance(workload, Workload):
        return workload
    model = load_workload_model(str(workload)) if isinstance(workload, str | Path) else workload
    if phase == "train":
        return Workload(model=model, phase=Training(seq_len=seq_len, global_batch=global_batch))
    if phase == "infer":
        return Workload(
            model=model, phase=Inference(batch=batch, input_len=input_len, output_len=output_len)
        )
    raise WorkloadError(f"phase {phase!r} is not one of train, infer")


def predict(
    workload: str | Path | Model | Workload,
    chip: Chip | str,
    chips: int = 1,
    precision: str = "bf16",
    plan: Plan | str | None = None,
    *,
    phase: str = "train",
    seq_len: int = 4096,
    global_batch: int = 256,
    batch: int = 64,
    input_len: int = 1024,
    output_len: int = 256,
    allow_unfit: bool = False,
) -> Prediction:
    """How ``workload`` runs on ``chips`` x ``chip`` at ``precision``.

    ``plan`` is a full plan (a ``Plan``), or a ``--plan`` string whose named keys are kept
    while the planner picks the rest ("tp=8,pp=2"); None lets the planner choose. The phase
    options are ``load_workload``'s (ignored when ``workload`` is a ``Workload``).
    """
    wl = load_workload(
        workload, phase=phase, seq_len=seq_len, global_batch=global_batch, batch=batch,
        input_len=input_len, output_len=output_len,
    )  # fmt: skip
    predictor = Predictor(wl, chip, precision)
    keys: Mapping[str, int | str] | None = None
    full: Plan | None = None
    if isinstance(plan, str):
        keys = plan_constraints(plan, chips)
    else:
        full = plan
    return predictor.predict(chips, full, plan_keys=keys, allow_unfit=allow_unfit)


def advise(
    workload: str | Path | Model = DEFAULT_WORKLOAD,
    *,
    catalog: Catalog | None = None,
    **options: Any,
) -> Recommendation:
    """Every chip planned, priced and ranked for ``workload``: the pick, the best GPU and
    TPU, and the reasons. ``options`` are ``advise.AdviseOptions`` fields (the CLI's options
    in their units: ``tokens=2e12``, ``phase="infer"``, ``objective="time"``,
    ``chips=("h100", "v5p")``, ...). ``catalog``: default the packaged one with any cached
    prices (as the CLI)."""
    wl = str(workload) if isinstance(workload, Path) else workload
    opts = AdviseOptions(workload=wl, **options)
    if catalog is None:
        catalog, _ = run_catalog(None)
    return recommend(build_request(opts), catalog)
