"""Find the fastest parallelism plan that fits, for training and for serving.

The search enumerates factorizations of the chip count into ``tp x cp x pp x fsdp x dp``
(``ep`` out of ``fsdp x dp`` for MoE, or folded over ``tp x cp x fsdp x dp`` when the
experts are whole on each rank: Megatron's EP x ETP), micro-batch sizes that divide the
per-rank batch, interleaving ``vp`` and recompute none/selective/full, subject to:

* ``tp`` within one scale-up domain and dividing the heads (Megatron practice: TP over
  NVLink/ICI only);
* ``cp`` only for long sequences (>= ``CP_MIN_SEQ_LEN``);
* memory: for each layout only the cheapest recompute that fits is timed (less recompute
  is never slower), and a layout whose memory with full recompute exceeds the chip is
  skipped before any timing.

Per-layer op timings are cached by shape inside one ``StepModel``, so the search times a
few hundred distinct ops and then composes thousands of plans arithmetically.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from chipwise.errors import DoesNotFitError, PlanError
from chipwise.hardware import Chip
from chipwise.perf.base import (
    InferPrediction,
    Plan,
    Recompute,
    States,
    TrainPrediction,
    plan_values,
)
from chipwise.perf.plan.memory import offloads, reserve_bytes, slack_bytes, train_memory_parts
from chipwise.perf.plan.parallel import check_plan, domain_chips
from chipwise.perf.step.engine import HARNESS_ARRIVAL_WINDOWS
from chipwise.perf.step.serve import ServeModel
from chipwise.perf.step.train import StepModel
from chipwise.units import format_bytes
from chipwise.workload.ir import Inference, TransformerSpec

# Context parallelism is worth its ring traffic only for long sequences (Megatron CP docs
# recommend it from 8k-32k tokens up; below that attention is a small share of the step).
CP_MIN_SEQ_LEN = 16384
MAX_TP = 64
MAX_MICROBATCH = 64
VP_CHOICES = (1, 2, 4)
RECOMPUTE_ORDER: tuple[Recompute, ...] = ("none", "selective", "full")
PLAN_KEYS = frozenset(f.name for f in fields(Plan))


def divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


LAYOUT_KEYS = ("dp", "fsdp", "tp", "pp", "cp", "ep", "vp")
# How the layout is run rather than where ranks sit: free unless a plan names them.
SCHEDULE_KEYS = ("vp", "microbatch", "recompute", "states")
# Framework settings a recipe states (``Plan.grad_reduce``, ``Plan.a2a_overlap``,
# ``Plan.attn_graph``, ``Plan.full_graph``, ``Plan.end_slots``, ``Plan.flash``,
# ``Plan.dispatcher``): kept when named, else the framework default; the planner does not
# search them.
RECIPE_KEYS = (
    "grad_reduce", "a2a_overlap", "attn_graph", "full_graph", "end_slots", "flash", "dispatcher",
)  # fmt: skip
# How a serving engine runs its tensor-parallel ranks (``Plan.adp``: attention data
# parallelism): kept when named, else off (vLLM's and SGLang's default, TensorRT-LLM's
# enable_attention_dp default False); the serving planners do not search it.
SERVING_KEYS = ("adp",)


def given_keys(text: str) -> dict[str, int | str]:
    """The key=value pairs a ``--plan`` string names (validated by ``parse_plan`` rules)."""
    return plan_values(text)


def plan_constraints(text: str, chips: int) -> dict[str, int | str]:
    """What a ``--plan`` string fixes: every parallel axis (unnamed axes are 1, ``dp`` takes
    the chips left over), and the schedule (micro-batch, recompute, interleaving ``vp``) only
    if named (else the planner picks, as a framework's tuned config would).

    Raises ``PlanError`` when the named axes do not divide ``chips``.
    """
    keys = given_keys(text)
    fixed: dict[str, int | str] = {
        k: int(keys.get(k, 1)) for k in LAYOUT_KEYS if k not in ("dp", *SCHEDULE_KEYS)
    }
    used = 1
    for k in ("fsdp", "tp", "pp", "cp"):
        used *= int(fixed[k])
    if "dp" in keys:
        fixed["dp"] = int(keys["dp"])
        if used * int(keys["dp"]) != chips:
            raise PlanError(
                f"plan {text!r} uses dp*fsdp*tp*pp*cp = {used * int(keys['dp'])} chips, but "
                f"--chips is {chips}; make the product equal {chips} (or leave dp out and it "
                "takes the chips left over)"
            )
    elif chips % used == 0:
        fixed["dp"] = chips // used
    else:
        raise PlanError(
            f"plan {text!r} uses fsdp*tp*pp*cp = {used} chips, which does not divide "
            f"--chips {chips}; choose axes whose product divides {chips}"
        )
    for k in (*SCHEDULE_KEYS, *RECIPE_KEYS, *SERVING_KEYS):
        if k in keys:
            fixed[k] = keys[k]
    if "etp" in keys:  # the experts' tensor parallelism, only when named (else automatic)
        etp = int(keys["etp"])
        if int(fixed["tp"]) % etp:
            raise PlanError(
                f"plan {text!r}: etp={etp} must divide tp={fixed['tp']} (the experts split "
                f"over a subset of the tensor-parallel ranks); choose etp among the divisors "
                f"of {fixed['tp']}"
            )
        fixed["etp"] = etp
    return fixed


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainChoice:
    """The planner's answer: the chosen prediction, and why."""

    prediction: TrainPrediction
    candidates: int  # layouts considered
    fitting: int  # layouts that fit
    runner_up: TrainPrediction | None
    fixed: Mapping[str, int | str]
    pruned: int = 0  # layouts ruled out by a time bound before their memory was checked

    @property
    def reason(self) -> str:
        p = self.prediction
        fixed = ", ".join(f"{k}={v}" for k, v in self.fixed.items())
        parts = [
            f"planner chose {p.plan} as the fastest of {self.fitting} fitting plans "
            f"({self.candidates} considered"
            + (f", {self.pruned} provably slower without a memory check" if self.pruned else "")
            + f"{'; fixed: ' + fixed if fixed else ''})"
        ]
        if self.runner_up is not None:
            slower = self.runner_up.step_time_s / p.step_time_s - 1
            parts.append(f"next best {self.runner_up.plan} is {slower:.1%} slower")
        parts.append(
            f"memory {format_bytes(p.memory.total_bytes)} of {format_bytes(p.capacity_bytes)}"
        )
        if p.limited_by != "compute":
            b = p.breakdown
            share = {
                "memory": b.memory_s,
                "communication": b.communication_s,
                "pipeline bubble": b.bubble_s,
                "overhead": b.overhead_s,
            }[p.limited_by] / p.step_time_s
            parts.append(f"limited by {p.limited_by} ({share:.0%} of the step)")
        if not p.fits:
            parts.append("NO PLAN FITS: this is the least-memory plan under the constraints")
        return "; ".join(parts)


def _layouts(model: StepModel, chips: int, seq_len: int, global_batch: int,
             fixed: Mapping[str, int | str]) -> Iterator[Plan]:  # fmt: skip
    """Every (tp, cp, pp, vp, fsdp, dp, ep, microbatch) layout, recompute 'none'."""
    spec, chip = model.spec, model.chip
    domain = domain_chips(chip, chips)

    def allowed(key: str, values: list[int]) -> list[int]:
        if key in fixed:  # kept as given; check_plan and train() reject impossible values
            return [int(fixed[key])]
        return values

    etp = int(fixed.get("etp", 0))
    recipe: dict[str, Any] = {k: fixed[k] for k in RECIPE_KEYS if k in fixed}
    tps = allowed("tp", [t for t in divisors(chips) if t <= min(domain, MAX_TP)
                         and spec.n_heads % t == 0])  # fmt: skip
    for tp in tps:
        rest_tp = chips // tp
        cps = [1]
        if seq_len >= CP_MIN_SEQ_LEN or "cp" in fixed:
            cps = [c for c in divisors(rest_tp) if seq_len % (2 * c) == 0 or c == 1]
        for cp in allowed("cp", cps):
            rest_cp = rest_tp // cp
            pps = [p for p in divisors(rest_cp) if p <= spec.n_layers]
            for pp in allowed("pp", pps):
                data = rest_cp // pp
                if global_batch % data and "dp" not in fixed and "fsdp" not in fixed:
                    continue
                vps = [v for v in VP_CHOICES if (v == 1 or pp > 1) and pp * v <= spec.n_layers]
                for fsdp in allowed("fsdp", divisors(data)):
                    if data % fsdp:
                        continue
                    dp = data // fsdp
                    if "dp" in fixed and int(fixed["dp"]) != dp:
                        continue
                    if global_batch % data:
                        continue
                    per_rank = global_batch // data
                    eps = [1]
                    if spec.is_moe:
                        eps = _expert_parallel_sizes(spec.n_experts, tp, cp, data, etp)
                    mbs = [b for b in divisors(per_rank) if b <= MAX_MICROBATCH]
                    for ep in allowed("ep", eps):
                        for vp in allowed("vp", vps):
                            for mb in allowed("microbatch", mbs):
                                if per_rank % mb:
                                    continue
                                yield Plan(dp=dp, fsdp=fsdp, tp=tp, pp=pp, cp=cp, ep=ep, vp=vp,
                                           microbatch=mb, etp=etp, **recipe)  # fmt: skip


def check_training_plan_keys(keys: Mapping[str, int | str]) -> None:
    """Raise ``PlanError`` for a serving-only key (``adp=1``) in a training plan."""
    if int(keys.get("adp", 0)):
        raise PlanError(
            "plan: adp=1 (attention data parallelism) is a serving setting; drop it from a "
            "training --plan"
        )


def _expert_parallel_sizes(experts: int, tp: int, cp: int, data: int, etp: int) -> list[int]:
    """Expert-parallel sizes a stage of ``tp x cp x data`` ranks can hold: divisors of the
    experts that divide the data-parallel ranks, or, when the experts' tensor parallelism
    is narrower than ``tp`` (``etp`` 1, automatic under expert parallelism), any that divide
    the stage's ``tp x cp x data / etp`` ranks: Megatron regroups them as ``etp x ep x edp``,
    so EP folds over the tensor-parallel ranks (EP32 on dp=16 x tp=2, as Megatron-Bridge's
    Qwen3-235B-A22B H100 recipe runs; ``parallel.check_plan`` has the rule)."""
    expert_tp = etp or 1
    if expert_tp >= tp:  # experts split like the dense layers: ep within the data ranks
        return [e for e in divisors(data) if experts % e == 0]
    return [e for e in divisors(tp * cp * data // expert_tp) if experts % e == 0]


def plan_training(
    model: StepModel,
    *,
    chips: int,
    seq_len: int,
    global_batch: int,
    fixed: Mapping[str, int | str] | None = None,
    allow_unfit: bool = False,
) -> TrainChoice:
    """The fastest fitting training plan on ``chips`` chips (keys in ``fixed`` are kept).

    Raises ``DoesNotFitError`` (with the least bytes any plan needs) when nothing fits,
    unless ``allow_unfit``, which returns the least-memory plan flagged ``fits=False``.
    """
    fixed = dict(fixed or {})
    unknown = set(fixed) - PLAN_KEYS
    if unknown:
        raise PlanError(f"plan: unknown key(s) {sorted(unknown)}")
    check_training_plan_keys(fixed)
    capacity = model.chip.hbm_capacity_bytes
    recomputes: tuple[Recompute, ...] = RECOMPUTE_ORDER
    if "recompute" in fixed:
        recomputes = (str(fixed["recompute"]),)  # type: ignore[assignment]
    # MaxText runs (TPUs) may keep bf16 weights and moments (weight_dtype bfloat16, as the
    # TPU recipes for large models do) when no plan with fp32 states fits.
    states: tuple[States, ...] = ("fp32",)
    if "states" in fixed:
        states = (str(fixed["states"]),)  # type: ignore[assignment]
    elif offloads(model.chip) and not model.training.adapters and model.precision != "fp32":
        states = ("fp32", "bf16")
    least: tuple[float, Plan] | None = None
    least_of: dict[str, float] = {}  # the least need of each states dtype, once searched
    spec, precision = model.spec, model.precision
    reserve = reserve_bytes(model.chip)
    # Passes, each only when the ones before found nothing: fp32 states, then bf16 (TPU),
    # with the allocator's fragmentation allowance kept free; then the same letting plans
    # use it ("tight": how published runs at their largest micro-batch sit). A pass that
    # finds nothing prunes nothing, so its least need says whether a later pass can help.
    limits = (capacity, capacity + slack_bytes(model.chip))
    passes = [(lim, st) for lim in limits for st in states]
    offload = offloads(model.chip)
    best: TrainPrediction | None = None
    second: TrainPrediction | None = None
    candidates = fitting = pruned = 0
    blocked = ""  # why the last layout that fits in memory could not run
    for limit, st in passes:
        if least_of.get(st, 0.0) > limit:
            continue  # an earlier pass of these states, which pruned nothing, found none
        best = second = None
        candidates = fitting = pruned = 0
        for layout in _layouts(model, chips, seq_len, global_batch, fixed):
            try:
                check_plan(layout, chips, model.chip, spec)
            except PlanError:
                continue
            candidates += 1
            if (
                second is not None
                and model.lower_bound_s(layout, seq_len=seq_len, global_batch=global_batch)
                >= second.step_time_s
            ):
                # no recompute makes it faster than its recompute-free work: not among the two
                # fastest whatever memory it needs, so its memory is never computed
                pruned += 1
                continue
            m = global_batch // layout.data_parallel // layout.microbatch
            chosen: Recompute | None = None
            for rc in recomputes:
                need = reserve + sum(
                    train_memory_parts(
                        spec, layout.dp, layout.fsdp, layout.tp, layout.pp, layout.cp, layout.ep,
                        layout.vp, layout.microbatch, rc, seq_len, m, precision,
                        method=model.training.method, lora_params=model.lora_params,
                        etp=layout.etp, maxtext=offload, states=st,
                        end_slots=layout.end_slots,
                    )
                )  # fmt: skip
                if least is None or need < least[0]:
                    least = (need, replace(layout, recompute=rc, states=st))
                if st not in least_of or need < least_of[st]:
                    least_of[st] = need
                if need <= limit:
                    chosen = rc
                    break
            if chosen is None:
                continue
            plan = replace(layout, states=st, recompute=chosen)
            if second is not None:
                bound = model.lower_bound_s(plan, seq_len=seq_len, global_batch=global_batch)
                if bound >= second.step_time_s:
                    fitting += 1  # fits, and provably not among the two fastest
                    continue
            try:
                pred = model.train(plan, seq_len=seq_len, global_batch=global_batch)
            except PlanError as err:
                blocked = f"{plan}: {err}"  # fits in memory, but cannot run (network, sizes)
                continue
            fitting += 1
            if best is None or pred.step_time_s < best.step_time_s:
                best, second = pred, best
            elif second is None or pred.step_time_s < second.step_time_s:
                second = pred
        if best is not None or blocked:
            break
    if best is None and blocked:
        raise PlanError(
            f"no plan of {chips} x {model.chip.id} can run {model.spec.name}: the layouts that "
            f"fit in memory cannot run, e.g. {blocked}"
        )
    if best is None:
        if least is None:
            raise PlanError(_no_layout(model, chips, global_batch, fixed))
        if allow_unfit:
            pred = model.train(least[1], seq_len=seq_len, global_batch=global_batch)
            return TrainChoice(prediction=pred, candidates=candidates, fitting=0,
                               runner_up=None, fixed=fixed)  # fmt: skip
        raise DoesNotFitError(
            f"{model.spec.name} does not fit on {chips} x {model.chip.id} "
            f"({format_bytes(capacity)} each) under any plan: the least-memory plan "
            f"{least[1]} needs {format_bytes(least[0])} per chip; use more chips, a chip "
            f"with more memory, or a smaller batch/sequence",
            needed_bytes=least[0],
            capacity_bytes=capacity,
        )
    return TrainChoice(
        prediction=best,
        candidates=candidates,
        fitting=fitting,
        runner_up=second,
        fixed=fixed,
        pruned=pruned,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeChoice:
    prediction: InferPrediction
    candidates: int
    fitting: int
    fixed: Mapping[str, int | str]

    @property
    def reason(self) -> str:
        p = self.prediction
        return (
            f"planner chose {p.plan} as the highest-throughput of {self.fitting} fitting "
            f"serving plans ({self.candidates} considered); memory "
            f"{format_bytes(p.memory.total_bytes)} of {format_bytes(p.capacity_bytes)}"
            + ("" if p.fits else "; NO PLAN FITS: least-memory plan shown")
        )


def plan_serving(
    model: ServeModel,
    *,
    chips: int,
    batch: int,
    input_len: int,
    output_len: int,
    fixed: Mapping[str, int | str] | None = None,
    allow_unfit: bool = False,
) -> ServeChoice:
    """The serving plan (tp x pp x dp replicas) with the most output tokens/s that fits."""
    fixed = dict(fixed or {})
    adp = int(fixed.get("adp", 0))
    spec, chip = model.spec, model.chip
    domain = domain_chips(chip, chips)
    best: InferPrediction | None = None
    least: InferPrediction | None = None
    candidates = fitting = 0
    for tp in divisors(chips):
        if not _serving_tp(tp, spec, domain, fixed):
            continue
        for pp in divisors(chips // tp):
            if pp > spec.n_layers or ("pp" in fixed and fixed["pp"] != pp):
                continue
            dp = chips // (tp * pp)
            if ("dp" in fixed and fixed["dp"] != dp) or dp > batch:
                continue
            plan = Plan(dp=dp, tp=tp, pp=pp, adp=adp)
            candidates += 1
            pred = model.serve(plan, batch=batch, input_len=input_len, output_len=output_len)
            if least is None or pred.memory.total_bytes < least.memory.total_bytes:
                least = pred
            if not pred.fits:
                continue
            fitting += 1
            if best is None or pred.output_tokens_per_s > best.output_tokens_per_s:
                best = pred
    if best is None:
        if least is not None and allow_unfit:
            return ServeChoice(prediction=least, candidates=candidates, fitting=0, fixed=fixed)
        if least is None:
            raise PlanError(_no_serving_plan(spec, chip, chips, fixed))
        need = least.memory.total_bytes
        raise DoesNotFitError(
            f"{spec.name} serving batch {batch} x {input_len + output_len} tokens does not fit "
            f"on {chips} x {chip.id} ({format_bytes(chip.hbm_capacity_bytes)} each) under any "
            f"plan (least needs {format_bytes(need)} per chip); use more chips, a smaller "
            f"batch or a lower --precision",
            needed_bytes=need,
            capacity_bytes=chip.hbm_capacity_bytes,
        )
    return ServeChoice(prediction=best, candidates=candidates, fitting=fitting, fixed=fixed)


def plan_engine(
    model: ServeModel,
    phase: Inference,
    *,
    chips: int,
    fixed: Mapping[str, int | str] | None = None,
    allow_unfit: bool = False,
) -> ServeChoice:
    """The serving plan (tp x ep x dp replicas) for a continuous-batching load: the most
    output tokens/s; under an rps load (every plan serves the same rate) the lowest p99
    TPOT among plans that keep up. Weights must leave room for some KV cache."""
    fixed = dict(fixed or {})
    adp = int(fixed.get("adp", 0))
    spec, chip = model.spec, model.chip
    domain = domain_chips(chip, chips)
    best: InferPrediction | None = None
    best_key: tuple[float, float] = (math.inf, math.inf)
    least: InferPrediction | None = None
    candidates = fitting = 0
    plan_error = ""
    for tp in divisors(chips):
        if not _serving_tp(tp, spec, domain, fixed):
            continue
        pp = int(fixed.get("pp", 1))
        if (chips // tp) % pp:
            continue
        dp = chips // (tp * pp)
        if "dp" in fixed and fixed["dp"] != dp:
            continue
        eps = [int(fixed["ep"])] if "ep" in fixed else _engine_eps(spec, tp)
        for ep in eps:
            plan = Plan(dp=dp, tp=tp, pp=pp, ep=ep, adp=adp)
            try:
                pred = model.serve_engine(plan, phase)
            except PlanError as err:
                plan_error = str(err)  # e.g. a group the network cannot carry
                continue
            candidates += 1
            eng = pred.engine
            assert eng is not None
            if least is None or pred.memory.weights_bytes < least.memory.weights_bytes:
                least = pred
            if eng.max_seqs_per_replica < 1:
                continue
            fitting += 1
            key = (
                (float(eng.saturated), eng.tpot_p99_s)
                if phase.load == "rps"
                else (0.0, -pred.output_tokens_per_s)
            )
            if best is None or key < best_key:
                best, best_key = pred, key
    if best is None:
        if least is not None and allow_unfit:
            return ServeChoice(prediction=least, candidates=candidates, fitting=0, fixed=fixed)
        if least is None:
            raise PlanError(plan_error or _no_serving_plan(spec, chip, chips, fixed))
        need = least.memory.weights_bytes
        raise DoesNotFitError(
            f"{spec.name} leaves no room for a KV cache on {chips} x {chip.id} "
            f"({format_bytes(chip.hbm_capacity_bytes)} each) under any plan (weights alone "
            f"need {format_bytes(need)} per chip); use more chips, a lower --precision or a "
            "larger --memory-fraction",
            needed_bytes=need,
            capacity_bytes=chip.hbm_capacity_bytes,
        )
    return ServeChoice(prediction=best, candidates=candidates, fitting=fitting, fixed=fixed)


def _no_layout(model: StepModel, chips: int, global_batch: int,
               fixed: Mapping[str, int | str]) -> str:  # fmt: skip
    """Why no training layout was tried: the given plan's own fault when it has one (an
    expert axis on a dense model, a tp that does not divide the heads), else the batch."""
    spec = model.spec
    axes = {k: int(v) for k, v in fixed.items() if k in (*LAYOUT_KEYS, "etp")}
    if axes:
        try:
            check_plan(Plan(**axes), chips, model.chip, spec)  # type: ignore[arg-type]
        except PlanError as err:
            return str(err)
    data = axes.get("dp", 1) * axes.get("fsdp", 1) if "dp" in axes else None
    ranks = f"its {data:,} data-parallel ranks" if data else "the data-parallel ranks"
    return (
        f"no parallel layout of {chips} chips can run {spec.name} with global batch "
        f"{global_batch} (constraints: {dict(fixed) or 'none'}): the batch must be a multiple "
        f"of {ranks}; use a larger --global-batch, fewer chips or fewer fixed plan keys"
    )


def _serving_tp(
    tp: int, spec: TransformerSpec, domain: int, fixed: Mapping[str, int | str]
) -> bool:
    """Whether a serving search tries ``tp``: a given tp is kept as given (the network
    model prices, or refuses, a group beyond the scale-up domain); otherwise tp stays within
    one domain and ``MAX_TP``. It must divide the attention heads either way."""
    if spec.n_heads % tp:
        return False
    if "tp" in fixed:
        return int(fixed["tp"]) == tp
    return tp <= min(domain, MAX_TP)


def _no_serving_plan(spec: TransformerSpec, chip: Chip, chips: int,
                     fixed: Mapping[str, int | str]) -> str:  # fmt: skip
    """Why a serving search found no plan to try at all."""
    given = ", ".join(f"{k}={v}" for k, v in fixed.items())
    return (
        f"no serving plan of {spec.name} on {chips} x {chip.id}"
        + (f" with {given}" if given else "")
        + f" (tensor parallelism must divide the {spec.n_heads} heads and {chips} chips, and "
        f"stay within a scale-up domain of {domain_chips(chip, chips)} unless given)"
    )


def _engine_eps(spec: TransformerSpec, tp: int) -> list[int]:
    """Expert-parallel degrees to try within a tp group: 1 and tp (vLLM/SGLang's
    --enable-expert-parallel spreads experts over the tensor-parallel ranks)."""
    if not spec.is_moe:
        return [1]
    return sorted({1, tp} & {d for d in divisors(spec.n_experts)})


@dataclass(frozen=True, slots=True, kw_only=True)
class SloChoice:
    """The most requests/s one group of chips serves within p99 TTFT and TPOT targets.

    ``plan`` is the chosen plan, ``capacity_rps`` its requests/s (``None`` when no rate
    meets the targets; ``missed`` then says which target, by how much, at the lightest
    load). The plan is not timed at that rate here: callers time it at the load they
    serve (``ServeModel.serve_engine``)."""

    plan: Plan | None
    capacity_rps: float
    missed: str = ""
    candidates: int = 0


# The arrival rates an SLO search tries: ``SLO_RATE_POINTS`` points spaced evenly in log
# rate over ``SLO_RATE_OCTAVES`` octaves below the engine's max-throughput rate (steps of
# 0.7 %, finer than the model's error); the search finds the highest that meets the targets.
SLO_RATE_OCTAVES = 10
SLO_RATE_POINTS = 1024


def _slo_miss(pred: InferPrediction, ttft_p99_s: float | None, tpot_p99_s: float | None) -> str:
    eng = pred.engine
    assert eng is not None
    if eng.saturated:
        return "saturated"
    if tpot_p99_s is not None and eng.tpot_p99_s > tpot_p99_s:
        return f"TPOT p99 {eng.tpot_p99_s * 1e3:.3g} ms > {tpot_p99_s * 1e3:.3g} ms"
    if ttft_p99_s is not None and eng.ttft_p99_s > ttft_p99_s:
        return f"TTFT p99 {eng.ttft_p99_s * 1e3:,.0f} ms > {ttft_p99_s * 1e3:.3g} ms"
    return ""


def plan_slo(
    model: ServeModel,
    phase: Inference,
    *,
    chips: int,
    ttft_p99_s: float | None,
    tpot_p99_s: float | None,
    fixed: Mapping[str, int | str] | None = None,
) -> SloChoice:
    """For each serving plan of ``chips`` chips (``dp`` replicas of ``tp`` x ``ep``), the
    highest Poisson arrival rate whose p99 TTFT and TPOT meet the targets; the plan with the
    highest rate wins. One replica's rate is found by bisection (latency rises with the rate)
    and cached on ``model``, so a search over chip counts solves each replica shape once.
    ``phase`` gives lengths and engine knobs (its load is replaced by an rps load)."""
    fixed = dict(fixed or {})
    adp = int(fixed.get("adp", 0))
    spec, chip = model.spec, model.chip
    domain = domain_chips(chip, chips)
    best: tuple[float, Plan] | None = None
    missed = ""
    candidates = 0
    for tp in divisors(chips):
        if not _serving_tp(tp, spec, domain, fixed):
            continue
        eps = [int(fixed["ep"])] if "ep" in fixed else _engine_eps(spec, tp)
        for ep in eps:
            try:
                rate, why = _replica_capacity(model, phase, Plan(tp=tp, ep=ep, adp=adp),
                                              ttft_p99_s, tpot_p99_s,
                                              replicas=chips // tp)  # fmt: skip
            except PlanError as err:
                missed = missed or str(err)
                continue
            candidates += 1
            if why:
                missed = missed or why
                continue
            dp = chips // tp
            if best is None or rate * dp > best[0]:
                best = (rate * dp, Plan(dp=dp, tp=tp, ep=ep, adp=adp))
    if best is None:
        if not candidates:
            missed = missed or _no_serving_plan(spec, chip, chips, fixed)
        return SloChoice(plan=None, capacity_rps=0.0, missed=missed,
                         candidates=candidates)  # fmt: skip
    rate, plan = best
    return SloChoice(plan=plan, capacity_rps=rate, candidates=candidates)


def _replica_capacity(
    model: ServeModel,
    phase: Inference,
    plan: Plan,
    ttft_p99_s: float | None,
    tpot_p99_s: float | None,
    replicas: int = 1,
) -> tuple[float, str]:
    """(requests/s one replica under ``plan`` serves within the targets, '' or why none).
    A harness that bunches arrivals over the deployment's ``replicas`` (``Inference.harness``,
    ``HARNESS_ARRIVAL_WINDOWS``) is timed with all of them: its bunches grow with their
    number, as is a decode pool beside a prefill pool of its own (``Inference.prefill_pool``:
    the pools' sizes set each decode replica's share of prefill); otherwise one replica
    stands for all."""
    if phase.harness not in HARNESS_ARRIVAL_WINDOWS and phase.prefill_pool is None:
        replicas = 1
    cache: dict[tuple[object, ...], tuple[float, str]] = model.__dict__.setdefault(
        "_slo_capacity", {}
    )
    key = (plan, phase, ttft_p99_s, tpot_p99_s, replicas)
    hit = cache.get(key)
    if hit is not None:
        return hit
    # The rate ceiling: the engine at its own batch limit, the one the rps loads below run
    # under (``ServeModel.batch_defaults``: by engine, release and GPU). A 256 ceiling for
    # every engine stopped MLPerf Server runs on TensorRT-LLM at the throughput of 256 sequences.
    online = model.batch_defaults(phase, load="rps")
    top = replace(
        phase, load="max_throughput", rps=0.0, concurrency=0,
        max_num_seqs=phase.max_num_seqs or online.max_num_seqs,
        max_num_tokens=phase.max_num_tokens or online.max_num_tokens,
    )  # fmt: skip
    # the whole decode pool when a prefill pool of its own shares the prompts out
    whole = replace(plan, dp=replicas) if phase.prefill_pool is not None else plan
    eng = model.serve_engine(whole, top).engine
    assert eng is not None
    if eng.max_seqs_per_replica < 1:
        cache[key] = out = (0.0, "no room for a KV cache after the weights")
        return out
    top_rps = eng.requests_per_s / whole.dp

    def rate(point: int) -> float:
        return top_rps * _rate_share(point, SLO_RATE_POINTS, SLO_RATE_OCTAVES)

    def probe(point: int) -> tuple[str, float]:
        load = replace(phase, load="rps", rps=rate(point) * replicas)
        pred = model.serve_engine(replace(plan, dp=replicas), load)
        return _slo_miss(pred, ttft_p99_s, tpot_p99_s), _slo_margin(pred, ttft_p99_s, tpot_p99_s)

    point, why = _highest_passing(probe, SLO_RATE_POINTS, SLO_RATE_OCTAVES)
    cache[key] = out = (rate(point), "") if point >= 0 else (0.0, why)
    return out


def _slo_margin(pred: InferPrediction, ttft_p99_s: float | None, tpot_p99_s: float | None) -> float:
    """The larger of p99 TTFT / its target and p99 TPOT / its target (> 1: a miss; infinite
    when saturated): how far a load is from the targets, which steers the rate search."""
    eng = pred.engine
    assert eng is not None
    if eng.saturated:
        return math.inf
    ttft = eng.ttft_p99_s / ttft_p99_s if ttft_p99_s else 0.0
    tpot = eng.tpot_p99_s / tpot_p99_s if tpot_p99_s else 0.0
    return max(ttft, tpot)


def _rate_share(point: int, points: int, octaves: int) -> float:
    """The share of the top rate at ``point`` of a grid of ``points`` points spaced evenly in
    log rate over ``octaves`` octaves below it (``points``: the top itself)."""
    return math.pow(2.0, octaves * (point / points - 1.0))


def _highest_passing(
    probe: Callable[[int], tuple[str, float]], points: int, octaves: int
) -> tuple[int, str]:
    """(the highest point in [0, ``points``) that ``probe`` passes, -1 when none; the miss
    at point 0 then). ``probe(point)`` gives '' or why it misses, and the margin (> 1: a
    miss), both monotone in the rate ``2^(octaves (point / points - 1))`` of the top's.

    The answer bisection over the points gives, in ~4-5 probes instead of 11: regula falsi
    on g = 1 - 1 / margin against the rate with the Illinois rule (the end kept twice
    counts half; Dowell and Jarratt, BIT 11, 1971), because a queue's latency grows as
    1 / (1 - rate / capacity), which makes g linear in the rate; the top rate saturates
    (g = 1). Whenever three probes fail to halve the bracket it bisects (or, when nothing
    has passed yet, probes the lowest rate)."""

    def rate(point: int) -> float:
        return _rate_share(point, points, octaves)

    def nearest_below(x: float) -> int:
        return math.floor(points + points / octaves * math.log2(x)) if x > 0 else 0

    lo, hi = -1, points  # lo passes (-1: none known), hi misses
    g_lo: float | None = None
    g_hi = 1.0
    widths = [hi - lo]
    kept = 0  # +1: the last probe missed, -1: it passed
    miss_at_zero = ""
    point = points - points // octaves  # half the top rate
    while True:
        why, margin = probe(point)
        g = 1.0 - 1.0 / margin if margin > 0 else -math.inf
        if why:
            if point == 0:
                miss_at_zero = why
            if kept == 1 and g_lo is not None:
                g_lo /= 2
            hi, g_hi, kept = point, g, 1
        else:
            if kept == -1:
                g_hi /= 2
            lo, g_lo, kept = point, g, -1
        widths.append(hi - lo)
        if hi - lo <= 1:
            return lo, miss_at_zero
        if len(widths) >= 4 and widths[-1] > widths[-4] / 2:
            # stalled: bisect, or, when nothing passes yet, ask whether the lowest rate does
            point = (lo + hi) // 2 if lo >= 0 else 0
        elif g_lo is None:
            # nothing passes yet: where the line through this miss and the top crosses 0
            x = rate(hi) - g_hi * (1.0 - rate(hi)) / max(1e-9, 1.0 - g_hi)
            point = nearest_below(x)
        elif math.isfinite(g_lo) and g_hi > g_lo:
            x = rate(lo) + (rate(hi) - rate(lo)) * -g_lo / (g_hi - g_lo)
            point = nearest_below(x)
        else:
            point = (lo + hi) // 2
        point = min(max(point, lo + 1), hi - 1)
