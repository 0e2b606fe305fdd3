"""Enumerate chips x counts, predict each with the planner, price it and keep what is allowed.

For every chip in the catalog (or the ones asked for), chip counts are powers of two from 1
up to ``request.max_chips`` (and the chip's largest job size, e.g. a TPU pod). Each count is
planned (``perf.predict`` finds the fastest plan that fits); counts where nothing fits are
skipped. A chip's *option* is its best count for the objective under the constraints.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from chipwise.advise.request import MAX_PRACTICAL_DAYS, AdviseRequest
from chipwise.cost import (
    NotPurchasable,
    OwnedRunCost,
    RunCost,
    RunEnergy,
    ServingCost,
    ServingLoad,
    TrainingRun,
    cheapest,
    costs_of_run,
    energy_of_run,
    energy_of_serving,
    owned_cost,
    serving_costs,
)
from chipwise.errors import ChipwiseError
from chipwise.hardware import Catalog, Chip
from chipwise.perf.base import InferPrediction, TrainPrediction
from chipwise.perf.predict import predict
from chipwise.units import SECONDS_PER_DAY
from chipwise.workload.ir import Inference, Training

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Option:
    """One chip at one count: the prediction, its best price and energy, and eligibility."""

    chip: Chip
    chips: int
    prediction: TrainPrediction | InferPrediction
    days: float | None  # training: wall clock of the run
    usd: float | None  # training: whole run; serving: per day. None: no price known
    price_label: str  # "gcp on-demand us-central1 ($4.20/chip-h; source, date)" or "owned"
    cost: RunCost | ServingCost | OwnedRunCost | None
    energy: RunEnergy | None
    kwh: float | None
    replicas: int = 1  # serving: replicas of ``chips`` chips
    excluded: str = ""  # why this option is not allowed; empty = allowed

    @property
    def allowed(self) -> bool:
        return not self.excluded

    @property
    def total_chips(self) -> int:
        return self.chips * self.replicas


def chip_counts(chip: Chip, max_chips: int) -> tuple[int, ...]:
    """Powers of two from 1 to the smaller of ``max_chips`` and the chip's largest job."""
    limit = min(max_chips, max(chip.scale_up.max_chips, chip.scale_up.domain_chips, 1))
    if chip.kind != "tpu":
        limit = max_chips  # GPUs scale out over the data-centre network
    return tuple(2**i for i in range(int(math.log2(max(limit, 1))) + 1))


def _priced_training(
    pred: TrainPrediction, chip: Chip, request: AdviseRequest, catalog: Catalog
) -> Option:
    run = TrainingRun(tokens=request.tokens or pred.tokens_per_step)
    energy = energy_of_run(pred, chip, run, facility="owned" if request.own_hardware else "cloud")
    days = run.steps(pred) * pred.step_time_s / SECONDS_PER_DAY
    excluded = ""
    cost: RunCost | OwnedRunCost | None
    if request.own_hardware:
        from chipwise.cost import owned_cost_of_run

        owned = owned_cost_of_run(pred, chip, catalog, run)
        if isinstance(owned, NotPurchasable):
            cost, usd, label = None, None, "not for sale"
            excluded = f"cannot be owned: {owned.reason}"
        else:
            cost, usd = owned, owned.usd_total
            label = (
                f"owned (${owned.owned.usd_per_chip_hour_owned:.2f}/chip-h; purchase "
                f"${owned.owned.purchase.usd:,.0f}, {owned.owned.purchase.source}, "
                f"{owned.owned.purchase.date})"
            )
    else:
        best = cheapest(costs_of_run(pred, catalog, run, cloud=request.cloud))
        if best is None:
            cost, usd, label = None, None, "no price"
            if request.objective == "cost" or request.budget_usd is not None:
                excluded = f"no cloud offer on {request.cloud} in the catalog"
        else:
            o = best.offer
            cost, usd = best, best.usd_total
            label = (
                f"{o.provider} {o.pricing} {o.region} (${o.usd_per_chip_hour:.2f}/chip-h; "
                f"{o.source}, {o.date})"
            )
    excluded = excluded or _constraints(days, usd, request)
    return Option(
        chip=chip,
        chips=pred.chips,
        prediction=pred,
        days=days,
        usd=usd,
        price_label=label,
        cost=cost,
        energy=energy,
        kwh=energy.facility_kwh,
        excluded=excluded,
    )


def _constraints(days: float | None, usd: float | None, request: AdviseRequest) -> str:
    limit = request.deadline_days or MAX_PRACTICAL_DAYS
    if days is not None and days > limit:
        what = "the deadline" if request.deadline_days else "a practical run length"
        return f"takes {days:,.1f} days, beyond {what} ({limit:g} days)"
    if request.budget_usd is not None and usd is not None and usd > request.budget_usd:
        return f"costs ${usd:,.0f}, over the budget (${request.budget_usd:,.0f})"
    return ""


def _priced_serving(
    pred: InferPrediction, chip: Chip, request: AdviseRequest, catalog: Catalog
) -> Option:
    load = ServingLoad(requests_per_day=request.requests_per_day or 1.0)
    energy = energy_of_serving(pred, chip, load)
    excluded = ""
    usd: float | None
    cost: ServingCost | None = None
    from chipwise.cost import replicas_for

    replicas = replicas_for(pred, load)
    if request.own_hardware:
        owned = owned_cost(chip, catalog, pred=pred)
        if isinstance(owned, NotPurchasable):
            usd, label, excluded = None, "not for sale", f"cannot be owned: {owned.reason}"
        else:
            usd = owned.usd_per_calendar_hour * 24 * pred.chips * replicas
            label = f"owned (${owned.usd_per_calendar_hour:.2f}/chip-h all day)"
    else:
        cost = cheapest(serving_costs(pred, catalog, load, cloud=request.cloud))
        if cost is None:
            usd, label = None, "no price"
            if request.objective == "cost" or request.budget_usd is not None:
                excluded = f"no cloud offer on {request.cloud} in the catalog"
        else:
            o = cost.offer
            usd = cost.usd_per_day
            label = (
                f"{o.provider} {o.pricing} {o.region} (${o.usd_per_chip_hour:.2f}/chip-h; "
                f"{o.source}, {o.date})"
            )
    if (
        not excluded
        and request.budget_usd is not None
        and usd is not None
        and usd > request.budget_usd
    ):
        excluded = f"costs ${usd:,.0f}/day, over the budget (${request.budget_usd:,.0f})"
    return Option(
        chip=chip,
        chips=pred.chips,
        prediction=pred,
        days=None,
        usd=usd,
        price_label=label,
        cost=cost,
        energy=energy,
        kwh=energy.facility_kwh,
        replicas=replicas,
        excluded=excluded,
    )


def objective_key(request: AdviseRequest) -> Callable[[Option], tuple[float, float]]:
    """Sort key for options: the objective first, then the other two as tie-breaks."""

    def key(o: Option) -> tuple[float, float]:
        inf = math.inf
        time_s = (o.days if o.days is not None else _serving_time(o)) or inf
        usd = o.usd if o.usd is not None else inf
        kwh = o.kwh if o.kwh is not None else inf
        if request.objective == "time":
            return (time_s, usd)
        if request.objective == "energy":
            return (kwh, usd)
        return (usd, time_s)

    return key


def _serving_time(o: Option) -> float:
    pred = o.prediction
    assert isinstance(pred, InferPrediction)
    return pred.request_time_s


# Counts are tried in doubling order. For cost and energy, the search stops once two
# doublings in a row are more than ``STOP_WORSE`` worse than the best so far (the curve is flat
# to rising past the efficient point: more chips add communication, not work). For time, it
# stops once two doublings in a row each gain less than ``STOP_GAIN``: nobody doubles a
# cluster for a few per cent.
STOP_WORSE = 0.10
STOP_GAIN = 0.05
# Options whose objective is within this fraction of the best are ties at the model's
# resolution (its validation error is larger); among ties the fewest chips win.
TIE_TOLERANCE = 0.05


def options_for_chip(chip: Chip, request: AdviseRequest, catalog: Catalog) -> tuple[Option, ...]:
    """Counts of ``chip`` that fit, priced; empty if the chip cannot run it at all."""
    phase = request.workload.phase
    out: list[Option] = []
    counts = chip_counts(chip, request.max_chips)
    if isinstance(phase, Inference):
        counts = tuple(n for n in counts if n <= max(chip.scale_up.domain_chips, 1))
    key = objective_key(request)
    best: float | None = None
    previous: float | None = None
    strikes = 0
    for n in counts:
        try:
            pred = predict(request.workload, chip, n, request.precision)
        except ChipwiseError:
            continue  # does not fit at this count, or a dtype the chip lacks
        if isinstance(pred, TrainPrediction) and isinstance(phase, Training):
            option = _priced_training(pred, chip, request, catalog)
        elif isinstance(pred, InferPrediction):
            option = _priced_serving(pred, chip, request, catalog)
        else:
            continue
        out.append(option)
        value = key(option)[0]
        if not option.allowed or not math.isfinite(value):
            continue
        if request.objective == "time":
            gain = 0.0 if previous is None else 1 - value / previous
            strikes = strikes + 1 if previous is not None and gain < STOP_GAIN else 0
        else:
            strikes = strikes + 1 if best is not None and value > best * (1 + STOP_WORSE) else 0
        best = value if best is None else min(best, value)
        previous = value
        if strikes >= 2:
            break
    return tuple(out)


def best_option(options: Iterable[Option], request: AdviseRequest) -> Option | None:
    """The allowed option that scores best on the objective."""
    allowed = [o for o in options if o.allowed]
    key = objective_key(request)
    top = min(allowed, key=key, default=None)
    if top is None:
        return None
    limit = key(top)[0] * (1 + TIE_TOLERANCE)
    ties = [o for o in allowed if key(o)[0] <= limit]
    return min(ties, key=lambda o: (o.total_chips, key(o)))
