"""Price one prediction as an advice option: the cheapest matching offer (or the owned
TCO under ``--own-hardware``), its energy, and whether the deadline or budget excludes it."""

from __future__ import annotations

from chipwise.advise.option import Option
from chipwise.advise.request import AdviseRequest
from chipwise.cost import (
    NotPurchasable,
    OwnedRunCost,
    RunCost,
    ServingCost,
    ServingLoad,
    TrainingRun,
    cheapest,
    costs_of_run,
    energy_in_region,
    energy_of_run,
    energy_of_serving,
    owned_cost,
    owned_cost_of_run,
    replicas_for,
    serving_costs,
)
from chipwise.hardware import Catalog, Chip
from chipwise.hardware.chip import PriceOffer
from chipwise.perf import InferPrediction, TrainPrediction
from chipwise.units import SECONDS_PER_DAY


def pricing_filter(request: AdviseRequest) -> tuple[str, ...] | None:
    return None if request.pricing == "any" else (request.pricing,)


def offer_label(offer: PriceOffer) -> str:
    """'gcp on-demand us-central1 ($4.20/chip-h; source, date)': what the price is and where
    it comes from."""
    recorded = offer.region.strip() not in ("", "not recorded")
    region = offer.region if recorded else "region not recorded"
    return (
        f"{offer.provider} {offer.pricing} {region} (${offer.usd_per_chip_hour:.2f}/chip-h; "
        f"{offer.source}, {offer.date})"
    )


def priced_training(
    pred: TrainPrediction, chip: Chip, request: AdviseRequest, catalog: Catalog
) -> Option:
    run = TrainingRun(tokens=request.tokens or pred.tokens_per_step)
    energy = energy_of_run(
        pred, chip, run, request.assumptions, facility="owned" if request.own_hardware else "cloud"
    )
    days = run.steps(pred) * pred.step_time_s / SECONDS_PER_DAY
    excluded = ""
    cost: RunCost | OwnedRunCost | None
    if request.own_hardware:
        owned = owned_cost_of_run(pred, chip, catalog, run, assumptions=request.assumptions)
        if isinstance(owned, NotPurchasable):
            cost, usd, label = None, None, "not for sale"
            excluded = f"cannot be owned: {owned.reason}"
        else:
            cost, usd = owned, owned.usd_total
            label = (
                f"owned, TCO (${owned.owned.usd_per_chip_hour_owned:.2f}/chip-h; purchase "
                f"${owned.owned.purchase.usd:,.0f}, {owned.owned.purchase.source}, "
                f"{owned.owned.purchase.date})"
            )
    else:
        best = cheapest(
            costs_of_run(pred, catalog, run, cloud=request.cloud, pricing=pricing_filter(request))
        )
        if best is None:
            cost, usd, label = None, None, "no price"
            if needs_price(request):
                excluded = no_price_reason(request)
        else:
            cost, usd, label = best, best.usd_total, offer_label(best.offer)
            energy = energy_in_region(energy, best.offer, request.assumptions)
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


def needs_price(request: AdviseRequest) -> bool:
    """Whether an option without a price is excluded: ranking by cost, or a budget."""
    return request.objective == "cost" or request.budget_usd is not None


def no_price_reason(request: AdviseRequest) -> str:
    """Why a chip without a matching offer cannot be ranked on cost or held to a budget."""
    where = "any cloud" if request.cloud == "any" else request.cloud
    pricing = "any pricing" if request.pricing == "any" else request.pricing
    return f"no cloud price in the catalog ({pricing}, {where})"


def deadline_words(request: AdviseRequest) -> str:
    limit = request.deadline_limit_days
    if request.deadline_days:
        return f"the deadline ({limit:g} days)"
    return f"the default deadline ({limit:g} days; --deadline-days)"


def _constraints(days: float | None, usd: float | None, request: AdviseRequest) -> str:
    if days is not None and days > request.deadline_limit_days:
        return f"takes {days:,.1f} days, beyond {deadline_words(request)}"
    if request.budget_usd is not None and usd is not None and usd > request.budget_usd:
        return f"costs ${usd:,.0f}, over the budget (${request.budget_usd:,.0f})"
    return ""


def priced_serving(
    pred: InferPrediction, chip: Chip, request: AdviseRequest, catalog: Catalog
) -> Option:
    rpd = request.serving_rps * SECONDS_PER_DAY if request.serving_slo else None
    load = ServingLoad(requests_per_day=rpd or request.requests_per_day or 1.0)
    energy = energy_of_serving(
        pred, chip, load, request.assumptions, facility="owned" if request.own_hardware else "cloud"
    )
    excluded = ""
    usd: float | None
    cost: ServingCost | None = None
    replicas = replicas_for(pred, load)
    if request.own_hardware:
        owned = owned_cost(chip, catalog, pred=pred, assumptions=request.assumptions)
        if isinstance(owned, NotPurchasable):
            usd, label, excluded = None, "not for sale", f"cannot be owned: {owned.reason}"
        else:
            usd = owned.usd_per_calendar_hour * 24 * pred.chips * replicas
            label = f"owned, TCO (${owned.usd_per_calendar_hour:.2f}/chip-h all day)"
    else:
        cost = cheapest(
            serving_costs(pred, catalog, load, cloud=request.cloud, pricing=pricing_filter(request))
        )
        if cost is None:
            usd, label = None, "no price"
            if needs_price(request):
                excluded = no_price_reason(request)
        else:
            usd, label = cost.usd_per_day, offer_label(cost.offer)
            energy = energy_in_region(energy, cost.offer, request.assumptions)
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
