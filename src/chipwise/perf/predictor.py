"""``Predictor``: the one way into perf. One workload, one chip type, one precision.

It owns what a prediction is built from, built once and reused for every chip count:

* the chip's per-op model (``ops.models.model_for``) and its ``Network``;
* a ``StepModel`` (training) or ``ServeModel`` (serving) for a transformer, whose per-shape
  timings are cached, so planning 1, 2, 4, ... chips times each distinct op once;
* the planner (``plan.planner``), which picks the fastest fitting plan on a count.

``train`` / ``serve`` give one prediction on a number of chips (under a given plan, or the
planner's choice, noted as the first assumption); ``plan`` gives the planner's whole
answer; ``predict`` dispatches on the workload (a transformer's phase, an imported graph,
a primitive). ``memory_floor_bytes`` and ``step_floor_s`` are the lower bounds a search
uses to skip counts that cannot qualify. ``chipwise.perf.predict`` is one call on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from chipwise.errors import PlanError, UnsupportedOpError, WorkloadError
from chipwise.hardware.catalog import chip as find_chip
from chipwise.hardware.chip import Chip
from chipwise.perf.base import (
    Assumption,
    Breakdown,
    InferPrediction,
    MemoryUse,
    OpTime,
    PerfModel,
    Plan,
    Prediction,
    TrainPrediction,
)
from chipwise.perf.efficiency import Efficiency
from chipwise.perf.ops.graph import time_graph
from chipwise.perf.ops.layers import compute_dtype
from chipwise.perf.ops.models import model_for
from chipwise.perf.ops.primitives import predict_primitive
from chipwise.perf.plan.bounds import memory_floor_bytes, step_floor_s
from chipwise.perf.plan.memory import reserve_bytes, slack_bytes
from chipwise.perf.plan.parallel import Group, Network, check_plan
from chipwise.perf.plan.planner import (
    ServeChoice,
    TrainChoice,
    check_training_plan_keys,
    plan_engine,
    plan_serving,
    plan_slo,
    plan_training,
)
from chipwise.perf.step.engine import MAX_THROUGHPUT_MAX_SEQS
from chipwise.perf.step.serve import ServeModel
from chipwise.perf.step.train import DATA_PARALLEL_OVERLAP, StepModel
from chipwise.workload.ir import (
    ENGINE_VENDORS,
    Graph,
    Inference,
    NonMLKind,
    Primitive,
    Training,
    TransformerSpec,
    Workload,
)

# Matmul precisions (``layers.Dtypes``): int4 and w8a16 are weight-only (W4A16, W8A16: fewer
# weight bytes, bf16 math); fp4 is NVFP4/MXFP4 (W4A4) on chips with an fp4 rate.
PRECISIONS = ("bf16", "fp8", "int8", "fp16", "fp32", "fp4", "int4", "w8a16")
# How publications and checkpoints name them (lower case, punctuation dropped). A bare
# "w8a8" is left out: SmoothQuant's int8 and fp8 checkpoints both use the name.
_PRECISION_SPELLINGS = {
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32",
    "float8": "fp8", "fp8e4m3": "fp8", "e4m3": "fp8", "fp8dynamic": "fp8", "w8a8fp8": "fp8",
    "nvfp4": "fp4", "mxfp4": "fp4", "w4a4": "fp4",
    "w4a16": "int4", "awq": "int4", "gptq": "int4", "int4awq": "int4", "int4gptq": "int4",
    "awqint4": "int4", "int8weightonly": "w8a16", "w8a8int8": "int8",
}  # fmt: skip


def precision_id(name: str) -> str:
    """The ``PRECISIONS`` id a written precision means ('FP8', 'NVFP4', 'W4A16', 'AWQ',
    'bfloat16' ...); a name it does not know comes back lower-cased and stripped, for the
    predictor to refuse with the list."""
    text = name.strip().lower()
    key = "".join(ch for ch in text if ch.isalnum())
    return key if key in PRECISIONS else _PRECISION_SPELLINGS.get(key, text)


# Gradients of an imported graph are all-reduced in bf16 (PyTorch DDP with bf16 autocast
# keeps fp32 grads; DDP's bf16 compression hook halves that; bf16 assumed).
GRAPH_GRAD_BYTES = 2.0

# A server load (MLPerf Server) is the highest rate within p99 targets on an engine its
# submitter tuned: the batch limit (vLLM --max-num-seqs, TensorRT-LLM max_batch_size) is a
# knob as the layout is. Weighed: the engine's default and the largest batch engines are
# configured for at max throughput (2048); the one serving more requests/s within the
# targets wins. (AMD's MLPerf v4.1 Server on vLLM ran at p99 TPOT 0.198 s of the 0.2 s
# bound: ~400 sequences per GPU, beyond vLLM's default 256.)
SERVER_TUNED_MAX_NUM_SEQS = MAX_THROUGHPUT_MAX_SEQS

# Engines whose MLPerf Server runs go through a harness that sends each query to the
# instance with the fewest samples in flight: TensorRT-LLM's, as every TensorRT-LLM
# submission runs NVIDIA's harness (code/llmlib: traffic_distribution_policy
# "load_balancing" in the Server scenario, ykamiset/inference_results_v5.1@e9ccad4d, read
# 2026-12-06). The deployment found by the rate search is timed so (``Engine.least_loaded``);
# the search itself still stands one replica for all (see ``_server_choice``).
LEAST_LOADED_SERVER_ENGINES = frozenset({"trtllm"})

_P = TypeVar("_P", TrainPrediction, InferPrediction)


def _noted(pred: _P, reason: str) -> _P:
    """The planner's reason as the first assumption of ``pred``."""
    note = Assumption(name="plan", value=reason, source="planner")
    return replace(pred, assumptions=(note, *pred.assumptions))


@dataclass(frozen=True, slots=True, kw_only=True)
class SloServing:
    """A serving load met within latency targets: one replica's prediction at its share of
    the load, how many replicas, and the most one replica carries within the targets."""

    prediction: InferPrediction | None
    replicas: int
    capacity_rps: float
    missed: str = ""


# Serving fp4 weights on a chip without fp4 tensor cores (Hopper, Ampere, MI300X, TPUs):
# the engines run them weight-only, dequantising the 4-bit blocks to bf16 in the GEMM
# (vLLM's MXFP4 path for gpt-oss on Hopper and Ampere: triton matmul_ogs / Marlin W4A16
# kernels, docs.vllm.ai "GPT OSS" recipe, 2025-08), which is the int4 weight-only model.
FP4_WEIGHT_ONLY_NOTE = (
    "weight-only W4A16: {chip} has no fp4 tensor rate, so the engine dequantises the fp4 "
    "(MXFP4/NVFP4) weights to bf16 in each GEMM, as vLLM's MXFP4 kernels do on Hopper and "
    "Ampere"
)


def served_precision(precision: str, chip: Chip, phase: Training | Inference) -> str:
    """The precision ``chip`` serves ``precision`` at: fp4 weights on a chip with no fp4
    rate (but a bf16 one) are served weight-only (``int4``); anything else unchanged."""
    if (
        precision == "fp4"
        and isinstance(phase, Inference)
        and not chip.supports("fp4")
        and chip.supports("bf16")
    ):
        return "int4"
    return precision


def _check_chips(chips: int) -> None:
    if chips < 1:
        raise PlanError(f"chips must be >= 1, got {chips}")


class Predictor:
    """Predicts ``workload`` on any number of ``chip`` at ``precision``.

    Args:
        workload: the model and the phase (training or inference).
        chip: a ``Chip`` or a catalog id/alias ("h100", "v5p").
        precision: bf16 | fp8 | int8 | fp16 | fp32 (matmul precision).
        efficiency: overrides the chip's packaged efficiency parameters (calibration).
        network: overrides the collective model (default: ``Network(chip, efficiency)``).

    Raises:
        UnknownChipError: a chip id the catalog does not know.
        UnsupportedOpError: an unknown precision.
    """

    def __init__(
        self,
        workload: Workload,
        chip: Chip | str,
        precision: str = "bf16",
        *,
        efficiency: Efficiency | None = None,
        network: Network | None = None,
    ) -> None:
        self.chip = chip if isinstance(chip, Chip) else find_chip(chip)
        if precision not in PRECISIONS:
            raise UnsupportedOpError(
                f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}"
            )
        self.workload = workload
        self.requested_precision = precision
        self.precision = served_precision(precision, self.chip, workload.phase)
        self.efficiency = efficiency
        self._network = network
        self._perf: PerfModel | None = None
        self._step: StepModel | None = None
        self._serve: ServeModel | None = None

    def for_phase(self, phase: Training | Inference) -> Predictor:
        """A predictor of the same model, chip and precision under another ``phase`` (e.g.
        a disaggregated serving load beside a colocated one) that shares this one's per-op
        model, network and serving model (which depends only on the engine), so op
        timings cached by one are reused by the other."""
        other = Predictor(replace(self.workload, phase=phase), self.chip, self.requested_precision,
                          efficiency=self.efficiency, network=self.network)  # fmt: skip
        other._perf = self.perf_model
        if other._engine() == self._engine() and other._moe_backend() == self._moe_backend():
            # the serving model depends on the engine and its MoE kernels
            other._serve = self._serve
        return other

    def _engine(self) -> str:
        """The serving engine of the phase (vLLM's kernels for a training phase)."""
        phase = self.workload.phase
        return phase.engine if isinstance(phase, Inference) else "vllm"

    def _moe_backend(self) -> str:
        """The serving phase's MoE kernels ("" = the engine's default; training: "")."""
        phase = self.workload.phase
        return phase.moe_backend if isinstance(phase, Inference) else ""

    # ---- the pieces, built once ---------------------------------------------------------

    @property
    def perf_model(self) -> PerfModel:
        """The chip's per-op model."""
        if self._perf is None:
            self._perf = model_for(self.chip, self.efficiency)
        return self._perf

    @property
    def network(self) -> Network:
        """The collective model of a job on the chip."""
        if self._network is None:
            self._network = Network(self.chip, self.efficiency)
        return self._network

    def _spec(self) -> TransformerSpec:
        model = self.workload.model
        if not isinstance(model, TransformerSpec):
            raise WorkloadError(
                f"{model.name}: only a transformer (a zoo id or a config.json) has training "
                "and serving steps to plan"
            )
        return model

    def step_model(self) -> StepModel:
        """The training-step model (cached per-shape timings)."""
        if self._step is None:
            spec = self._spec()
            self.chip.peak_flops_per_s(self.precision)  # an unsupported dtype is an error
            self._step = StepModel(spec, self.chip, self.precision, self.perf_model,
                                   self.network, training=self._training())  # fmt: skip
        return self._step

    def serve_model(self) -> ServeModel:
        """The serving model (cached per-shape timings)."""
        if self._serve is None:
            spec = self._spec()
            self.chip.peak_flops_per_s(compute_dtype(self.precision))
            vendor = ENGINE_VENDORS.get(self._engine())
            if vendor is not None and self.chip.vendor != vendor:
                raise PlanError(
                    f"the {self._engine()} engine runs on {vendor.upper()} GPUs only, not on "
                    f"{self.chip.id} ({self.chip.vendor}); choose another --engine"
                )
            # the per-op model as the engine runs the ops (its fused-MoE kernel)
            phase = self.workload.phase
            date = phase.engine_date if isinstance(phase, Inference) else ""
            perf = self.perf_model.for_engine(self._engine(), date).with_moe_backend(
                self._moe_backend()
            )
            self._serve = ServeModel(
                spec, self.chip, self.precision, perf, self.network, engine=self._engine()
            )
        return self._serve

    def _training(self) -> Training:
        phase = self.workload.phase
        if not isinstance(phase, Training):
            raise WorkloadError(
                f"{self.workload.model.name}: the workload's phase is inference; use serve()"
            )
        return phase

    def _inference(self) -> Inference:
        phase = self.workload.phase
        if not isinstance(phase, Inference):
            raise WorkloadError(
                f"{self.workload.model.name}: the workload's phase is training; use train()"
            )
        return phase

    # ---- predictions --------------------------------------------------------------------

    def plan(
        self,
        chips: int,
        *,
        plan_keys: Mapping[str, int | str] | None = None,
        allow_unfit: bool = False,
    ) -> TrainChoice | ServeChoice:
        """The planner's answer on ``chips`` chips (keys in ``plan_keys`` are kept): the
        chosen prediction, how many plans it weighed, and why.

        Raises:
            DoesNotFitError: no plan fits (unless ``allow_unfit``: the least-memory one).
        """
        _check_chips(chips)
        phase = self.workload.phase
        if isinstance(phase, Training):
            return plan_training(
                self.step_model(),
                chips=chips,
                seq_len=phase.seq_len,
                global_batch=phase.global_batch,
                fixed=plan_keys,
                allow_unfit=allow_unfit,
            )
        chips = decode_chips(phase, chips)
        if phase.load == "server":
            return self._server_choice(chips, phase, plan_keys)
        if phase.load != "batch":
            return plan_engine(self.serve_model(), phase, chips=chips, fixed=plan_keys,
                               allow_unfit=allow_unfit)  # fmt: skip
        return plan_serving(
            self.serve_model(),
            chips=chips,
            batch=phase.batch,
            input_len=phase.input_len,
            output_len=phase.output_len,
            fixed=plan_keys,
            allow_unfit=allow_unfit,
        )

    def train(
        self,
        chips: int,
        *,
        plan: Plan | None = None,
        plan_keys: Mapping[str, int | str] | None = None,
        allow_unfit: bool = False,
    ) -> TrainPrediction:
        """One training step on ``chips`` chips: under ``plan``, else the planner's choice
        (its reason is the first assumption). An imported graph runs data-parallel."""
        _check_chips(chips)
        if isinstance(self.workload.model, Graph):
            return self._graph(self.workload.model, chips)
        phase = self._training()
        step = self.step_model()
        if plan is not None:
            check_training_plan_keys({"adp": plan.adp})
            check_plan(plan, chips, self.chip, step.spec)
            return step.train(plan, seq_len=phase.seq_len, global_batch=phase.global_batch)
        choice = self.plan(chips, plan_keys=plan_keys, allow_unfit=allow_unfit)
        assert isinstance(choice, TrainChoice)
        return _noted(choice.prediction, choice.reason)

    def serve(
        self,
        chips: int,
        *,
        plan: Plan | None = None,
        plan_keys: Mapping[str, int | str] | None = None,
        allow_unfit: bool = False,
    ) -> InferPrediction:
        """Serving on ``chips`` chips: under ``plan``, else the planner's choice."""
        _check_chips(chips)
        phase = self._inference()
        serve = self.serve_model()
        if plan is None:
            choice = self.plan(chips, plan_keys=plan_keys, allow_unfit=allow_unfit)
            assert isinstance(choice, ServeChoice)
            return self._precision_noted(_noted(choice.prediction, choice.reason))
        chips = decode_chips(phase, chips)
        check_plan(plan, chips, self.chip, serve.spec)
        if phase.load == "server":
            keys = {"tp": plan.tp, "ep": plan.ep, "adp": plan.adp}
            pred = self._server_choice(chips, phase, keys).prediction
        elif phase.load != "batch":
            pred = serve.serve_engine(plan, phase)
        else:
            pred = serve.serve(plan, batch=phase.batch, input_len=phase.input_len,
                               output_len=phase.output_len)  # fmt: skip
        return self._precision_noted(pred)

    def _precision_noted(self, pred: InferPrediction) -> InferPrediction:
        """``pred`` saying so when the chip serves another precision than was asked."""
        if self.precision == self.requested_precision:
            return pred
        note = Assumption(name="precision", source="perf.predictor.served_precision",
                          value=FP4_WEIGHT_ONLY_NOTE.format(chip=self.chip.id))  # fmt: skip
        return replace(pred, assumptions=(*pred.assumptions, note))

    def _server_choice(
        self, chips: int, phase: Inference, plan_keys: Mapping[str, int | str] | None
    ) -> ServeChoice:
        """A server load: the plan with the most requests/s within the p99 targets, at that
        rate (MLPerf Server reports the tokens/s of the highest passing rate). Unless the
        load states ``max_num_seqs``, the engine's batch limit is chosen too
        (its default on this chip and release, or ``SERVER_TUNED_MAX_NUM_SEQS``), as
        submitters tune it."""
        default = self.serve_model().batch_defaults(phase).max_num_seqs
        limits = (
            (phase.max_num_seqs,)
            if phase.max_num_seqs
            else sorted({default, SERVER_TUNED_MAX_NUM_SEQS})
        )
        # the search runs without the stated rate (``Inference.rps``), which only says
        # where the chosen deployment is then timed
        choices = [
            plan_slo(
                self.serve_model(),
                replace(phase, max_num_seqs=limit, rps=0.0),
                chips=chips,
                ttft_p99_s=phase.ttft_p99_s or None,
                tpot_p99_s=phase.tpot_p99_s or None,
                fixed=plan_keys,
            )
            for limit in limits
        ]
        # the limit serving the most requests/s within the targets; none: the first's miss
        met = [c for c in choices if c.plan is not None]
        choice = max(met, key=lambda c: c.capacity_rps) if met else choices[0]
        if choice.plan is None:
            raise PlanError(
                f"{self.workload.model.name} on {chips} x {self.chip.id}: no load meets the "
                f"p99 targets ({choice.missed}); use more chips or looser --ttft/--tpot"
            )
        plan = choice.plan
        limit = limits[choices.index(choice)]
        least_loaded = phase.engine in LEAST_LOADED_SERVER_ENGINES
        # the chosen deployment at its highest passing rate (MLPerf's reported one), or ...
        rps, slot_queue = choice.capacity_rps, False
        if 0 < phase.rps < choice.capacity_rps:
            # ... at the run's stated rate (its scheduled one). A stated rate at or above
            # the rate the model finds within the targets keeps the search's rate (a run
            # that met them is no faster than the model's deployment at its own highest
            # passing rate): timed at that capacity with the slot wait added, its p99 TTFT
            # overshot the target it was searched to meet (the batch then sits at the slot
            # limit, where the Erlang C wait diverges: RTX Pro 6000 gpt-oss-120b p99 TTFT
            # +24,000 %, 2026-12-06)
            rps, slot_queue = phase.rps, True
        # least-loaded engines: the prompts queue at one pool of replicas. The search keeps
        # the split queues: searched with the pooled one, the model's Llama-3.1-405B runs
        # (TTFT-bound in it) went to rates the runs do not reach (B200 tokens/s +7 -> +30 %,
        # GB300 +3 -> +57 %, p99 TPOT +9 -> +75 %; measured p99 TTFT sits at 0.56-0.94 of its
        # target: submitters stop short of it)
        pred = self.serve_model().serve_engine(
            plan,
            replace(phase, max_num_seqs=limit, load="rps", rps=rps),
            slot_queue=slot_queue,
            least_loaded=least_loaded,
        )
        return ServeChoice(prediction=pred, candidates=choice.candidates,
                           fitting=choice.candidates, fixed=dict(plan_keys or {}))  # fmt: skip

    def serve_slo(
        self,
        chips: int,
        *,
        rps: float,
        ttft_p99_s: float | None = None,
        tpot_p99_s: float | None = None,
        plan_keys: Mapping[str, int | str] | None = None,
    ) -> SloServing:
        """Serve ``rps`` Poisson requests/s with replicas of ``chips`` chips, each loaded no
        more than its p99 TTFT/TPOT targets allow: the planner's plan with the most
        requests/s within the targets gives the replica count ``ceil(rps / capacity)``;
        the prediction is one replica at ``rps / replicas`` (its own latency, lower than at
        capacity). ``prediction`` is None when no load meets the targets (``missed`` says
        which, by how much)."""
        _check_chips(chips)
        if not rps > 0:
            raise WorkloadError(f"rps must be > 0, got {rps}")
        phase = self._inference()
        serve = self.serve_model()
        choice = plan_slo(serve, phase, chips=decode_chips(phase, chips), ttft_p99_s=ttft_p99_s,
                          tpot_p99_s=tpot_p99_s, fixed=plan_keys)  # fmt: skip
        if choice.plan is None:
            return SloServing(prediction=None, replicas=0, capacity_rps=0.0, missed=choice.missed)
        replicas = max(1, math.ceil(rps / choice.capacity_rps * (1 - 1e-9)))
        pred = serve.serve_engine(choice.plan, replace(phase, load="rps", rps=rps / replicas))
        reason = (
            f"planner chose {pred.plan} as the serving plan of {chips} chips with the most "
            f"requests/s within the p99 targets ({choice.capacity_rps:.3g} req/s of "
            f"{choice.candidates} plans); {replicas} replica(s) carry {rps:.3g} req/s"
        )
        return SloServing(prediction=self._precision_noted(_noted(pred, reason)), replicas=replicas,
                          capacity_rps=choice.capacity_rps)  # fmt: skip

    def predict(
        self,
        chips: int = 1,
        plan: Plan | None = None,
        *,
        plan_keys: Mapping[str, int | str] | None = None,
        allow_unfit: bool = False,
    ) -> Prediction:
        """Whatever the workload is: a transformer trains or serves (by its phase), an
        imported graph trains data-parallel, a primitive is timed; a non-ML workload is
        an ``UnsupportedOpError``."""
        _check_chips(chips)
        model = self.workload.model
        if isinstance(model, Primitive):
            return predict_primitive(model, self.chip, chips, self.efficiency)
        if isinstance(model, NonMLKind):
            needs = ", ".join(r.capability for r in model.requirements)
            raise UnsupportedOpError(
                f"{model.name} ({model.title}) is not an ML workload chipwise can time (it "
                f"needs {needs}); 'chipwise advise' explains which chips can run it"
            )
        if isinstance(model, Graph):
            return self._graph(model, chips)
        self.chip.peak_flops_per_s(compute_dtype(self.precision))  # unsupported: an error
        if isinstance(self.workload.phase, Training):
            return self.train(chips, plan=plan, plan_keys=plan_keys, allow_unfit=allow_unfit)
        return self.serve(chips, plan=plan, plan_keys=plan_keys, allow_unfit=allow_unfit)

    # ---- bounds a search uses -----------------------------------------------------------

    def memory_floor_bytes(self, chips: int) -> float | None:
        """Bytes per chip every plan on ``chips`` chips needs at least (None: not a
        transformer, no bound)."""
        spec = self.workload.model
        if not isinstance(spec, TransformerSpec):
            return None
        phase = self.workload.phase
        if isinstance(phase, Training):
            return memory_floor_bytes(spec, self.chip, chips, self.precision, training=True,
                                      method=phase.method)  # fmt: skip
        return memory_floor_bytes(spec, self.chip, chips, self.precision, training=False)

    def step_floor_s(self, chips: int) -> float | None:
        """Seconds per training step no plan on ``chips`` chips can beat (None: not a
        transformer in training, no bound)."""
        spec, phase = self.workload.model, self.workload.phase
        if not isinstance(spec, TransformerSpec) or not isinstance(phase, Training):
            return None
        return step_floor_s(spec, phase, self.chip, chips, self.precision)

    def serving_layer_op_times(
        self, pred: InferPrediction
    ) -> tuple[tuple[OpTime, ...], tuple[OpTime, ...]]:
        """Per-op times of one prefill and one decode layer under ``pred``'s plan (a serving
        prediction keeps none), for a roofline chart."""
        return self.serve_model().layer_op_times(
            pred.plan, batch=pred.batch, input_len=pred.input_len, output_len=pred.output_len
        )

    # ---- an imported graph --------------------------------------------------------------

    def _graph(self, graph: Graph, chips: int) -> TrainPrediction:
        """Time an imported graph on one chip; data-parallel over ``chips``."""
        phase = self.workload.phase
        if not isinstance(phase, Training):
            raise WorkloadError(
                f"{graph.name}: an imported graph is timed as one training step; use "
                f"--phase train (serving needs a transformer: a zoo id or a config.json)"
            )
        chip, perf = self.chip, self.perf_model
        gt = time_graph(graph, perf)
        comm = 0.0
        if chips > 1:
            dp = Group(axis="dp", size=chips, in_domain=min(chips, chip.scale_up.domain_chips))
            ar = self.network.time_s("all_reduce", graph.params * GRAPH_GRAD_BYTES, dp)
            backward = sum(t.seconds for t in gt.op_times if t.op.backward)
            comm = max(0.0, ar - DATA_PARALLEL_OVERLAP * backward)
        step = gt.total_s + comm
        tokens = phase.seq_len * phase.global_batch
        return TrainPrediction(
            workload=graph.name,
            chip_id=chip.id,
            chips=chips,
            precision=self.precision,
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
                slack_bytes=slack_bytes(chip),
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
                    source="perf/predictor.py",
                ),
                *perf.assumptions(),
            ),
            op_times=gt.op_times,
        )


def decode_chips(phase: Inference, chips: int) -> int:
    """The chips a serving plan lays out: all ``chips``, or under a prefill pool of its
    own (``Inference.prefill_pool``) those left for the decode pool."""
    pool = phase.prefill_pool
    if pool is None:
        return chips
    if pool.chips >= chips:
        raise PlanError(
            f"the prefill pool ({pool}) holds {pool.chips} chips of {chips}: none are left "
            f"for the decode pool; give more chips or a smaller prefill pool"
        )
    return chips - pool.chips
