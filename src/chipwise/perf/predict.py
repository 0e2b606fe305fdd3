"""``predict``: the library's main entry. One workload, one chip type, a number of chips.

* A transformer (``TransformerSpec``) trains under a plan (given, or found by the planner)
  via ``step.StepModel``, or serves via ``serve.ServeModel``.
* A primitive (matmul, copy, all-reduce) goes to ``primitives.predict_primitive``.
* An imported ``Graph`` is timed op by op on one chip; across chips it runs data-parallel
  (each chip runs the graph on its own batch, then an all-reduce of the gradients).
* A non-ML workload (graphics, fp64 HPC, ...) is not something this model predicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from chipwise.errors import PlanError, UnsupportedOpError, WorkloadError
from chipwise.hardware.catalog import chip as find_chip
from chipwise.hardware.chip import Chip
from chipwise.perf.base import (
    Assumption,
    Breakdown,
    InferPrediction,
    MemoryUse,
    Plan,
    Prediction,
    TrainPrediction,
)
from chipwise.perf.efficiency import Efficiency
from chipwise.perf.ops.graph import time_graph
from chipwise.perf.ops.models import model_for
from chipwise.perf.ops.primitives import predict_primitive
from chipwise.perf.plan.memory import reserve_bytes
from chipwise.perf.plan.parallel import Group, Network, check_plan
from chipwise.perf.plan.planner import plan_serving, plan_training
from chipwise.perf.step.serve import ServeModel
from chipwise.perf.step.train import DATA_PARALLEL_OVERLAP, StepModel
from chipwise.workload.ir import (
    Graph,
    Inference,
    NonMLKind,
    Primitive,
    Training,
    TransformerSpec,
    Workload,
)

PRECISIONS = ("bf16", "fp8", "int8", "fp16", "fp32")


def _chip(chip: Chip | str) -> Chip:
    return chip if isinstance(chip, Chip) else find_chip(chip)


def _with_note(pred: Prediction, name: str, value: str, source: str) -> Prediction:
    note = Assumption(name=name, value=value, source=source)
    return replace(pred, assumptions=(note, *pred.assumptions))


def predict(
    workload: Workload,
    chip: Chip | str,
    chips: int = 1,
    precision: str = "bf16",
    plan: Plan | None = None,
    *,
    plan_keys: Mapping[str, int | str] | None = None,
    allow_unfit: bool = False,
    efficiency: Efficiency | None = None,
) -> Prediction:
    """Predict how ``workload`` runs on ``chips`` x ``chip`` at ``precision``.

    Args:
        workload: the model and the phase (training or inference).
        chip: a ``Chip`` or a catalog id/alias.
        chips: how many chips.
        precision: bf16 | fp8 | int8 | fp16 | fp32 (matmul precision; see ``layers.Dtypes``).
        plan: a complete parallelism plan; ``None`` lets the planner choose.
        plan_keys: a partial plan: the planner keeps these keys and chooses the rest.
        allow_unfit: if no plan fits, return the least-memory one (``fits`` False) instead
            of raising ``DoesNotFitError``.
        efficiency: overrides the per-op efficiency parameters (calibration).

    Raises:
        UnsupportedOpError: a precision the chip has no rate for; a non-ML workload.
        PlanError: a plan inconsistent with the chips or the model.
        DoesNotFitError: no plan fits in memory (with the bytes needed).
    """
    c = _chip(chip)
    if chips < 1:
        raise PlanError(f"chips must be >= 1, got {chips}")
    if precision not in PRECISIONS:
        raise UnsupportedOpError(
            f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}"
        )
    model = workload.model
    if isinstance(model, Primitive):
        return predict_primitive(model, c, chips, efficiency)
    if isinstance(model, NonMLKind):
        needs = ", ".join(r.capability for r in model.requirements)
        raise UnsupportedOpError(
            f"{model.name} ({model.title}) is not an ML workload chipwise can time (it needs "
            f"{needs}); 'chipwise advise' explains which chips can run it"
        )
    if isinstance(model, Graph):
        return _predict_graph(model, workload, c, chips, precision, efficiency)
    c.peak_flops_per_s(precision)  # an unsupported dtype is an error, never a fallback
    perf = model_for(c, efficiency)
    network = Network(c, efficiency)
    phase = workload.phase
    if isinstance(phase, Training):
        step = StepModel(model, c, precision, perf, network, training=phase)
        if plan is not None:
            check_plan(plan, chips, c, model)
            return step.train(plan, seq_len=phase.seq_len, global_batch=phase.global_batch)
        choice = plan_training(
            step,
            chips=chips,
            seq_len=phase.seq_len,
            global_batch=phase.global_batch,
            fixed=plan_keys,
            allow_unfit=allow_unfit,
        )
        return _with_note(choice.prediction, "plan", choice.reason, "planner")
    return _predict_serving(
        model,
        phase,
        c,
        chips,
        precision,
        plan,
        plan_keys,
        allow_unfit,
        ServeModel(model, c, precision, perf, network),
    )


def _predict_serving(
    spec: TransformerSpec,
    phase: Inference,
    chip: Chip,
    chips: int,
    precision: str,
    plan: Plan | None,
    plan_keys: Mapping[str, int | str] | None,
    allow_unfit: bool,
    serve: ServeModel,
) -> InferPrediction:
    kw = {"batch": phase.batch, "input_len": phase.input_len, "output_len": phase.output_len}
    if plan is not None:
        check_plan(plan, chips, chip, spec)
        return serve.serve(plan, **kw)
    choice = plan_serving(serve, chips=chips, fixed=plan_keys, allow_unfit=allow_unfit, **kw)
    pred = _with_note(choice.prediction, "plan", choice.reason, "planner")
    assert isinstance(pred, InferPrediction)
    return pred


# Gradients of an imported graph are all-reduced in bf16 (PyTorch DDP with bf16 autocast
# keeps fp32 grads; DDP's bf16 compression hook halves that; bf16 assumed).
GRAPH_GRAD_BYTES = 2.0


def _predict_graph(
    graph: Graph,
    workload: Workload,
    chip: Chip,
    chips: int,
    precision: str,
    efficiency: Efficiency | None,
) -> TrainPrediction:
    """Time an imported graph on one chip; data-parallel over ``chips``."""
    phase = workload.phase
    if not isinstance(phase, Training):
        raise WorkloadError(
            f"{graph.name}: an imported graph is timed as one training step; use "
            f"--phase train (serving needs a transformer: a zoo id or a config.json)"
        )
    perf = model_for(chip, efficiency)
    gt = time_graph(graph, perf)
    comm = 0.0
    if chips > 1:
        dp = Group(axis="dp", size=chips, in_domain=min(chips, chip.scale_up.domain_chips))
        ar = Network(chip, efficiency).time_s("all_reduce", graph.params * GRAPH_GRAD_BYTES, dp)
        backward = sum(t.seconds for t in gt.op_times if t.op.backward)
        comm = max(0.0, ar - DATA_PARALLEL_OVERLAP * backward)
    step = gt.total_s + comm
    tokens = phase.seq_len * phase.global_batch
    return TrainPrediction(
        workload=graph.name,
        chip_id=chip.id,
        chips=chips,
        precision=precision,
        plan=Plan(dp=chips),
        seq_len=phase.seq_len,
        global_batch=phase.global_batch,
        step_time_s=step,
        model_flops_per_token=graph.flops * chips / tokens,
        memory=MemoryUse(
            weights_bytes=graph.params * 2,
            grads_bytes=graph.params * 2,
            optimizer_bytes=graph.params * 12,
            other_bytes=reserve_bytes(chip),
        ),
        capacity_bytes=chip.hbm_capacity_bytes,
        breakdown=Breakdown(
            compute_s=gt.compute_s,
            memory_s=gt.memory_s,
            overhead_s=gt.overhead_s,
            communication_s=comm,
        ),
        assumptions=(
            Assumption(
                name="graph_step",
                value="the graph is one step on one chip's batch; activations not counted",
                source="perf/predict.py",
            ),
            *perf.assumptions(),
        ),
        op_times=gt.op_times,
    )
