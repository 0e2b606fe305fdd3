"""Enumerate chips x counts, predict each with the planner, price it and keep what is allowed.

For each chip in the catalog (or the ones asked for), ``search_chip``

1. rules the chip out before any planning when no count could qualify: a precision it has
   no rate for; no price in the catalog (for the cloud and pricing asked) when the objective
   is cost or a budget is set; not for sale under ``--own-hardware``; a budget below what the
   run costs even at peak FLOP/s;
2. walks chip counts 1, 2, 4, ... up to ``request.max_chips``, by default the largest job
   the catalog records for the chip (tried too when not a power of two),
   skipping counts that cannot fit by a memory floor or cannot meet the run-length limit
   even at peak FLOP/s (``Predictor.memory_floor_bytes``, ``Predictor.step_floor_s``: lower
   bounds, so nothing that could qualify is skipped);
3. plans each remaining count with one ``perf.Predictor`` per chip, which reuses its step
   or serving model, so per-shape op timings are computed once per chip;
4. stops once two doublings in a row stop paying (``STOP_GAIN``, ``TIE_TOLERANCE``). The
   curve of cost or energy against chips is flat past the efficient point, so this plans a
   few counts instead of all of them; the pick can differ from planning every count only
   between options within ``TIE_TOLERANCE`` of each other (tested against the exhaustive
   search).

A chip's *option* is its best count for the objective under the constraints
(``option.best_option``); ``pricing`` prices each planned count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from chipwise.advise.disaggregation import DisaggregatedSearch, replicas_below
from chipwise.advise.option import TIE_TOLERANCE, Option, objective_key, time_s
from chipwise.advise.pricing import (
    deadline_words,
    needs_price,
    no_price_reason,
    priced_serving,
    priced_training,
    pricing_filter,
)
from chipwise.advise.request import AdviseRequest, max_chips_for
from chipwise.cost import NotPurchasable, offers_in, owned_cost
from chipwise.errors import ChipwiseError, DoesNotFitError
from chipwise.hardware import Catalog, Chip
from chipwise.perf import (
    InferPrediction,
    Predictor,
    TrainPrediction,
    compute_dtype,
)
from chipwise.units import GB, SECONDS_PER_DAY, SECONDS_PER_HOUR
from chipwise.workload.ir import Inference, Training

Prediction = TrainPrediction | InferPrediction


@dataclass(frozen=True, slots=True, kw_only=True)
class ChipSearch:
    """What the search found for one chip: the counts it priced, or why it has none."""

    chip: Chip
    options: tuple[Option, ...]  # every planned count, allowed or not, fewest chips first
    why_none: str = ""  # set when ``options`` is empty
    counts_planned: int = 0


def chip_counts(chip: Chip, max_chips: int | None) -> tuple[int, ...]:
    """Powers of two from 1 up to the chip's limit (``request.max_chips_for``: --max-chips,
    else the largest job the catalog records); that job is included when it is not a power
    of two."""
    limit = max_chips_for(chip, max_chips)
    counts = [2**i for i in range(int(math.log2(max(limit, 1))) + 1)]
    if limit == chip.largest_job_chips and counts[-1] != limit:
        counts.append(limit)  # the recorded job itself (6,144 v5p, 3,072 A100, ...)
    return tuple(counts)


# Counts are tried in doubling order, and the search for a chip stops after two doublings in
# a row that do not pay. For cost and energy a doubling pays when it beats the best so far by
# more than ``TIE_TOLERANCE``, or ties with it and is ``STOP_GAIN`` faster (ties go to the
# faster run);
# past the efficient point more chips add communication, not work, so the curve is flat or
# rising. For time a doubling pays when it gains at least ``STOP_GAIN``: nobody doubles a
# cluster for a few per cent. Counts excluded for taking too long never stop the search (more
# chips are the cure).
STOP_STRIKES = 2
STOP_GAIN = 0.05


def _predict(predictor: Predictor, chips: int) -> Prediction:
    """The planner's best plan on ``chips`` chips (reusing ``predictor``'s timings)."""
    pred = predictor.predict(chips)
    if not isinstance(pred, TrainPrediction | InferPrediction):
        raise ChipwiseError(f"{predictor.workload.model.name}: not a workload the advisor can plan")
    return pred


def _precheck(predictor: Predictor, request: AdviseRequest, catalog: Catalog) -> str:
    """Why no count of the chip can qualify, decided without planning; '' if some may."""
    chip = predictor.chip
    # weight-only int4/w8a16 run their math in bf16; so does fp4 served on a chip with no
    # fp4 rate (the predictor's served precision)
    dtype = compute_dtype(predictor.precision)
    if not chip.supports(dtype):
        have = ", ".join(chip.dense_flops_per_s) or "none"
        return f"no {dtype} rate in the catalog (it has: {have})"
    if request.own_hardware:
        owned = owned_cost(chip, catalog)
        if isinstance(owned, NotPurchasable):
            if not chip.purchasable and chip.clouds:
                return f"cloud only: {owned.reason}"
            return f"cannot be owned: {owned.reason}"
        return ""
    offers = offers_in(catalog, chip.id, cloud=request.cloud, pricing=pricing_filter(request))
    if request.cloud != "any" and not offers and request.cloud not in chip.clouds:
        return f"not offered on {request.cloud} (catalog availability and offers)"
    if not offers and needs_price(request):
        unpriced = catalog.no_price_for(chip.id)
        return f"no public price: {unpriced.why}" if unpriced else no_price_reason(request)
    phase, budget = request.workload.phase, request.budget_usd
    if offers and budget is not None and request.tokens and isinstance(phase, Training):
        floor_s = predictor.step_floor_s(1)  # None: no bound for this workload
        if floor_s is None:
            return ""
        # chip-seconds at peak do not depend on the count: steps x step FLOPs / peak
        steps = math.ceil(request.tokens / (phase.seq_len * phase.global_batch))
        usd = steps * floor_s / SECONDS_PER_HOUR * min(o.usd_per_chip_hour for o in offers)
        if usd > budget:
            return (
                f"costs at least ${usd:,.0f} even at peak FLOP/s, over the budget (${budget:,.0f})"
            )
    return ""


def _count_floor(predictor: Predictor, n: int, request: AdviseRequest) -> str:
    """Why ``n`` chips cannot qualify by a lower bound ('' if they may)."""
    chip, phase = predictor.chip, request.workload.phase
    need = predictor.memory_floor_bytes(n)
    if need is None:
        return ""
    if need > chip.hbm_capacity_bytes:
        return (
            f"does not fit: needs at least {need / GB:,.0f} GB per chip on {n} "
            f"chip{'s' if n > 1 else ''} "
            f"(has {chip.hbm_capacity_bytes / GB:,.0f} GB)"
        )
    floor_s = predictor.step_floor_s(n)
    if isinstance(phase, Training) and request.tokens and floor_s is not None:
        steps = math.ceil(request.tokens / (phase.seq_len * phase.global_batch))
        days = steps * floor_s / SECONDS_PER_DAY
        if days > request.deadline_limit_days:
            return (
                f"takes at least {days:,.0f} days on {n} chips even at peak FLOP/s, beyond "
                f"{deadline_words(request)}"
            )
    return ""


def search_chip(chip: Chip, request: AdviseRequest, catalog: Catalog) -> ChipSearch:
    """Plan and price the counts of ``chip`` that could qualify (see the module docstring)."""
    predictor = Predictor(request.workload, chip, request.precision)
    why = _precheck(predictor, request, catalog)
    if why:
        return ChipSearch(chip=chip, options=(), why_none=why)
    phase = request.workload.phase
    counts = chip_counts(chip, request.max_chips)
    domain_cut = ""
    if isinstance(phase, Inference):
        # serve within one scale-up domain; more load takes more replicas, not bigger ones
        domain = max(chip.scale_up.domain_chips, 1)
        if counts[-1] > domain:
            domain_cut = (
                f"; a replica is sized within one scale-up domain ({domain} chip"
                f"{'s' if domain > 1 else ''} of {chip.id} on {chip.scale_up.name})"
            )
        counts = tuple(n for n in counts if n <= domain)
    key = objective_key(request)
    out: list[Option] = []
    last_why = ""
    best: float | None = None
    fastest = math.inf
    strikes = planned = 0
    if isinstance(phase, Inference) and request.serving_slo:
        return _search_slo(predictor, chip, counts, request, catalog, domain_cut)
    for n in counts:
        floor_why = _count_floor(predictor, n, request)
        if floor_why:
            last_why = floor_why
            continue
        planned += 1
        try:
            pred = _predict(predictor, n)
        except DoesNotFitError as err:
            last_why = (
                f"does not fit: the least-memory plan on {n} chips needs "
                f"{err.needed_bytes / GB:,.0f} GB per chip (has {err.capacity_bytes / GB:,.0f} GB)"
            )
            continue
        except ChipwiseError as err:
            last_why = str(err)  # no layout of n chips, or a figure the model lacks
            continue
        if isinstance(pred, TrainPrediction):
            option = priced_training(pred, chip, request, catalog)
        else:
            option = priced_serving(pred, chip, request, catalog)
        out.append(option)
        value = key(option)[0]
        if not math.isfinite(value) or _too_slow(option, request):
            continue  # more chips may still bring it within the limit
        seconds = time_s(option)
        if best is None:
            best, fastest = value, seconds
            continue
        if request.objective == "time":
            pays = value < best * (1 - STOP_GAIN)
        else:
            # cheaper, or as cheap (a tie) and clearly faster: ties go to the faster run
            # (not when buying: a tie bought with more servers is more capital to sink)
            pays = value < best * (1 - TIE_TOLERANCE) or (
                not request.own_hardware
                and value <= best * (1 + TIE_TOLERANCE)
                and seconds < fastest * (1 - STOP_GAIN)
            )
        best = min(best, value)
        if value <= best * (1 + TIE_TOLERANCE):
            fastest = min(fastest, seconds)
        strikes = 0 if pays else strikes + 1
        if strikes >= STOP_STRIKES:
            break
    if not out:
        return ChipSearch(
            chip=chip,
            options=(),
            why_none=_none_reason(last_why, chip, request) + domain_cut,
            counts_planned=planned,
        )
    return ChipSearch(chip=chip, options=tuple(out), counts_planned=planned)


def _search_slo(
    predictor: Predictor,
    chip: Chip,
    counts: tuple[int, ...],
    request: AdviseRequest,
    catalog: Catalog,
    domain_cut: str = "",
) -> ChipSearch:
    """Serving sized by an arrival rate and p99 targets: for each replica size (chips per
    replica, within one scale-up domain), as many replicas as keep every replica within the
    targets (``Predictor.serve_slo``); then, for each size, the fewest replicas of a
    disaggregated deployment (separate prefill and decode pools, ``advise.disaggregation``)
    that meets them with fewer chips than the best so far. A chip that cannot meet the
    targets either way is excluded with the figure that missed."""
    out: list[Option] = []
    missed = ""
    planned = 0
    sizes: list[int] = []
    floor_why = ""
    for n in counts:
        why_not = _count_floor(predictor, n, request)
        if why_not:
            floor_why = why_not
            continue
        sizes.append(n)
        planned += 1
        try:
            ans = predictor.serve_slo(
                n, rps=request.serving_rps, ttft_p99_s=request.ttft_p99_s,
                tpot_p99_s=request.tpot_p99_s,
            )  # fmt: skip
        except ChipwiseError as err:
            missed = missed or str(err)
            continue
        if ans.prediction is None:
            figure = _slo_figure(predictor, n, request, ans.missed)
            missed = f"misses the SLO on {n} chip(s) per replica: {figure}"
            continue
        out.append(priced_serving(ans.prediction, chip, request, catalog))
    found: list[Option] = []
    dis_missed = ""
    if request.disaggregation:
        found, dis_missed = _disaggregated(predictor, sizes, request, catalog, out)
        planned += len(sizes)
    out.extend(found)
    if not out:
        why = missed or (floor_why + domain_cut if floor_why else _none_reason("", chip, request))
        if dis_missed:
            why += f"; disaggregated, {dis_missed}"
        return ChipSearch(chip=chip, options=(), why_none=why, counts_planned=planned)
    return ChipSearch(chip=chip, options=tuple(out), counts_planned=planned)


def _has_figure(why: str) -> bool:
    """Whether a miss names a latency figure or saturation (not a plan that does not fit)."""
    return any(w in why for w in ("TTFT p99", "TPOT p99", "saturat"))


def _slo_figure(predictor: Predictor, n: int, request: AdviseRequest, missed: str) -> str:
    """The figure a replica of ``n`` chips misses by: the planner's first miss may be a plan
    with no room for a KV cache (tensor parallelism below ``n``); one tensor-parallel group
    over all ``n`` chips says which target it misses, and by how much."""
    if _has_figure(missed):
        return missed
    try:
        whole = predictor.serve_slo(n, rps=request.serving_rps, ttft_p99_s=request.ttft_p99_s,
                                    tpot_p99_s=request.tpot_p99_s, plan_keys={"tp": n})  # fmt: skip
    except ChipwiseError:
        return missed
    return whole.missed if _has_figure(whole.missed) else missed


def _disaggregated(
    predictor: Predictor,
    sizes: list[int],
    request: AdviseRequest,
    catalog: Catalog,
    colocated: list[Option],
) -> tuple[list[Option], str]:
    """Disaggregated deployments of ``chip`` that need fewer chips than any option found so
    far (``colocated`` first), one per replica size; and, when none meets the targets, the
    figure that missed at the largest size tried."""
    chip = predictor.chip
    search = DisaggregatedSearch(predictor, rps=request.serving_rps,
                                 ttft_p99_s=request.ttft_p99_s,
                                 tpot_p99_s=request.tpot_p99_s)  # fmt: skip
    bound = min((o.total_chips for o in colocated if o.allowed), default=None)
    out: list[Option] = []
    missed = ""
    for n in sorted(sizes, reverse=True):  # big replicas need few: the bound tightens fast
        limit = replicas_below(bound, n)
        if limit < 2:
            continue
        dis, why = search.fewest(n, limit)
        if dis is None:
            # the first (largest) size's figure; a plan error only when no size has one
            figure = _has_figure(why) and not _has_figure(missed)
            if why and (figure or not missed):
                missed = f"up to {limit} replicas of {n}: {why}"
            continue
        option = priced_serving(dis.prediction, chip, request, catalog)
        option = replace(option, chips=n, replicas=dis.replicas,
                         prefill_replicas=max(1, dis.prefill_replicas))  # fmt: skip
        out.append(option)
        if option.allowed:
            bound = min(bound or option.total_chips, option.total_chips)
    return sorted(out, key=lambda o: o.chips), missed


def _too_slow(option: Option, request: AdviseRequest) -> bool:
    return option.days is not None and option.days > request.deadline_limit_days


def _none_reason(last_why: str, chip: Chip, request: AdviseRequest) -> str:
    """Why a chip has no option: what stopped its largest count (a floor, the planner's
    memory answer, or an error the performance model raised)."""
    limit = max_chips_for(chip, request.max_chips)
    return last_why or f"does not fit in {limit:,} chips or fewer on any plan"


def options_for_chip(chip: Chip, request: AdviseRequest, catalog: Catalog) -> tuple[Option, ...]:
    """Counts of ``chip`` that fit, priced; empty if the chip cannot run it at all."""
    return search_chip(chip, request, catalog).options
