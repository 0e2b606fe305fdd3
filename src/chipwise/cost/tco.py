"""Owned hardware: total cost of ownership per chip-hour, per run, and break-even against a cloud.

Per chip, per calendar hour (the chip is owned whether it works or not)::

    capex_usd       = purchase x (1 + hosting_fraction + network_fraction)
    capex per hour  = capex_usd / (amortisation_years x 8766 h)         straight line, no resale
    power per hour  = [d x P_busy + (1 - d) x P_idle] x host_power_factor x PUE_owned x $/kWh
    ops per hour    = ops_usd_per_chip_hour
    owned $/chip-h  = (capex + power + ops per hour) / d                per *used* chip-hour

``d`` is the duty cycle (share of calendar hours the chip does paid work). Break-even against
a cloud price ``p`` (per used chip-hour): owning costs ``fixed + d x (e_busy - e_idle)`` per
calendar hour, renting ``d x p``; they meet at ``d* = fixed / (p - (e_busy - e_idle))`` where
``fixed = capex + ops + e_idle`` per hour. ``d* > 1`` (or ``p`` below the marginal power cost)
means owning never breaks even at that price.

Chips that cannot be bought (TPUs are rent-only) or that have no purchase price give
``NotPurchasable``, a result, so a comparison over many chips never crashes on them.
"""

from __future__ import annotations

from dataclasses import dataclass

from chipwise.cost.assumptions import Assumptions, CostError, default_assumptions
from chipwise.cost.energy import Activity, ChipPower, activity, chip_power_at
from chipwise.cost.pricing import TrainingRun
from chipwise.hardware.catalog import Catalog
from chipwise.hardware.chip import Chip, PriceOffer, Purchase
from chipwise.perf import Assumption, InferPrediction, TrainPrediction
from chipwise.units import HOURS_PER_YEAR, KILO, MEGA, SECONDS_PER_HOUR


@dataclass(frozen=True, slots=True, kw_only=True)
class NotPurchasable:
    """No owned-hardware cost for this chip, and why (rent-only, or no price in the catalog)."""

    chip_id: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnedCost:
    """What one owned chip costs per hour, with every input it used."""

    chip_id: str
    purchase: Purchase  # usd, source, date of the chip price
    amortisation_years: float
    duty_cycle: float
    capex_usd: float  # chip + server share + network share
    capex_usd_per_hour: float  # per calendar hour
    ops_usd_per_hour: float
    busy_facility_w: float  # chip power when busy x host factor x PUE
    idle_facility_w: float
    power_usd_per_hour: float  # per calendar hour, at the duty cycle
    power: ChipPower  # the chip power model when busy
    assumptions: tuple[Assumption, ...]

    @property
    def usd_per_calendar_hour(self) -> float:
        return self.capex_usd_per_hour + self.ops_usd_per_hour + self.power_usd_per_hour

    @property
    def usd_per_chip_hour_owned(self) -> float:
        """Per *used* chip-hour: comparable with a cloud ``usd_per_chip_hour``."""
        return self.usd_per_calendar_hour / self.duty_cycle


@dataclass(frozen=True, slots=True, kw_only=True)
class BreakEven:
    """Duty cycle above which owning is cheaper than renting at ``offer``."""

    chip_id: str
    offer: PriceOffer
    utilisation: float | None  # None: owning never breaks even at this price
    owned_usd_per_chip_hour: float  # at the assumed duty cycle
    cloud_usd_per_chip_hour: float

    @property
    def owning_is_cheaper(self) -> bool:
        """At the assumed duty cycle."""
        return self.owned_usd_per_chip_hour < self.cloud_usd_per_chip_hour


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnedRunCost:
    """A training run on owned chips."""

    owned: OwnedCost
    chips: int
    steps: int
    tokens: float
    wall_clock_s: float
    chip_hours: float
    usd_per_step: float
    usd_per_million_tokens: float
    usd_total: float  # owned $/used chip-hour x chip-hours
    capex_usd_upfront: float  # buying ``chips`` chips with their share of servers and network


def _usd_per_hour(facility_w: float, a: Assumptions) -> float:
    return facility_w / KILO * a.usd_per_kwh


def owned_cost(
    chip: Chip,
    catalog: Catalog,
    *,
    pred: TrainPrediction | InferPrediction | None = None,
    assumptions: Assumptions | None = None,
    duty_cycle: float | None = None,
) -> OwnedCost | NotPurchasable:
    """TCO per chip-hour of owning ``chip``; busy power from ``pred`` (TDP without one)."""
    a = default_assumptions() if assumptions is None else assumptions
    if not chip.purchasable:
        if chip.clouds:
            why = f"{chip.id} cannot be bought: it is rent-only ({', '.join(chip.clouds)})"
        else:
            why = f"{chip.id} is not on sale in the catalog's markets, and no cloud lists it"
        return NotPurchasable(chip_id=chip.id, reason=why)
    purchase = catalog.purchase_for(chip.id)
    if purchase is None:
        return NotPurchasable(
            chip_id=chip.id,
            reason=f"no purchase price for {chip.id} in the catalog "
            "(add one to hardware/data/offers/purchase.toml)",
        )
    d = a.owned_duty_cycle if duty_cycle is None else duty_cycle
    if not 0 < d <= 1:
        raise CostError(f"duty cycle must be in (0, 1], got {d!r}")
    act = (
        Activity(utilisation=1.0, basis="tdp-upper-bound")
        if pred is None
        else activity(pred, chip, a)
    )
    power = chip_power_at(chip, act, a)
    host_name, host_factor = a.host_power_factor(chip.kind)
    to_facility = host_factor * a.pue_owned
    busy_w = power.power_w * to_facility
    idle_w = power.idle_w * to_facility
    capex = purchase.usd * (1 + a.hosting_fraction_of_chip_price + a.network_fraction_of_chip_price)
    avg_w = d * busy_w + (1 - d) * idle_w
    cited = a.cited(
        "amortisation_years",
        "hosting_fraction_of_chip_price",
        "network_fraction_of_chip_price",
        "ops_usd_per_chip_hour",
        host_name,
        "pue_owned",
        "usd_per_kwh",
    )
    if duty_cycle is None:
        cited += a.cited("owned_duty_cycle")
    else:
        cited += (Assumption(name="owned_duty_cycle", value=d, source="given by caller"),)
    return OwnedCost(
        chip_id=chip.id,
        purchase=purchase,
        amortisation_years=a.amortisation_years,
        duty_cycle=d,
        capex_usd=capex,
        capex_usd_per_hour=capex / (a.amortisation_years * HOURS_PER_YEAR),
        ops_usd_per_hour=a.ops_usd_per_chip_hour,
        busy_facility_w=busy_w,
        idle_facility_w=idle_w,
        power_usd_per_hour=_usd_per_hour(avg_w, a),
        power=power,
        assumptions=power.assumptions + cited,
    )


def break_even(
    owned: OwnedCost, offer: PriceOffer, assumptions: Assumptions | None = None
) -> BreakEven:
    """The duty cycle at which owning costs the same as renting at ``offer``."""
    a = default_assumptions() if assumptions is None else assumptions
    if offer.chip_id != owned.chip_id:
        raise CostError(
            f"offer is for {offer.chip_id!r} but the owned cost is for {owned.chip_id!r}"
        )
    e_idle = _usd_per_hour(owned.idle_facility_w, a)
    e_busy = _usd_per_hour(owned.busy_facility_w, a)
    fixed = owned.capex_usd_per_hour + owned.ops_usd_per_hour + e_idle
    margin = offer.usd_per_chip_hour - (e_busy - e_idle)
    d_star = fixed / margin if margin > 0 else None
    return BreakEven(
        chip_id=owned.chip_id,
        offer=offer,
        utilisation=d_star if d_star is not None and d_star <= 1 else None,
        owned_usd_per_chip_hour=owned.usd_per_chip_hour_owned,
        cloud_usd_per_chip_hour=offer.usd_per_chip_hour,
    )


def owned_cost_of_run(
    pred: TrainPrediction,
    chip: Chip,
    catalog: Catalog,
    run: TrainingRun,
    *,
    assumptions: Assumptions | None = None,
    duty_cycle: float | None = None,
) -> OwnedRunCost | NotPurchasable:
    """A training run on owned chips, at the owned cost per used chip-hour."""
    owned = owned_cost(chip, catalog, pred=pred, assumptions=assumptions, duty_cycle=duty_cycle)
    if isinstance(owned, NotPurchasable):
        return owned
    steps = run.steps(pred)
    wall_clock_s = steps * pred.step_time_s
    chip_hours = wall_clock_s * pred.chips / SECONDS_PER_HOUR
    usd_per_step = pred.step_time_s * pred.chips / SECONDS_PER_HOUR * owned.usd_per_chip_hour_owned
    return OwnedRunCost(
        owned=owned,
        chips=pred.chips,
        steps=steps,
        tokens=steps * pred.tokens_per_step,
        wall_clock_s=wall_clock_s,
        chip_hours=chip_hours,
        usd_per_step=usd_per_step,
        usd_per_million_tokens=usd_per_step / pred.tokens_per_step * MEGA,
        usd_total=usd_per_step * steps,
        capex_usd_upfront=owned.capex_usd * pred.chips,
    )


# ---- buying in the units sold, and paying back against renting ------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PurchaseUnit:
    """The smallest thing one buys: a PCIe card, or the baseboard of a scale-up domain."""

    chips: int
    label: str


def purchase_unit(chip: Chip) -> PurchaseUnit:
    """PCIe cards are sold one by one; SXM/OAM modules only on the baseboard that forms their
    scale-up domain (NVIDIA HGX: 8 GPUs; AMD Instinct platform: 8 OAM; Gaudi HLS: 8; GB200
    NVL72: a 72-GPU rack), which the catalog records as ``scale_up.domain_chips``."""
    if chip.scale_up.topology == "pcie" or chip.scale_up.domain_chips <= 1:
        return PurchaseUnit(chips=1, label="card")
    n = chip.scale_up.domain_chips
    kind = "rack" if n > 8 else "server"
    return PurchaseUnit(chips=n, label=f"{n}-{chip.kind.upper()} {kind}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Ownership:
    """Buying the chips a job needs, in whole units, against renting the same work.

    Per chip and calendar hour, at duty cycle ``d`` (share of hours doing work like this job,
    the rest of the bought chips running copies of it): owning costs ``capex/T + ops +
    e_idle + d (e_busy - e_idle)``; the work is worth ``d r`` at the rental rate ``r`` (the
    rented job's price per owned chip-hour of it). Payback = capex / (worth - running cost);
    break-even utilisation = the ``d`` at which the two meet over the amortisation period.
    """

    chip_id: str
    unit: PurchaseUnit
    units: int
    chips_used: int
    chip_usd: float  # one chip's purchase price
    capex_usd: float  # everything bought: chips, their server and network share
    job_hours: float  # the job's wall clock on the owned chips
    rent_usd: float  # the same job rented
    rent_usd_per_chip_hour: float  # r: per owned chip-hour of the job
    running_usd_per_chip_hour: float  # power + ops of a busy owned chip
    duty_cycle: float
    amortisation_years: float
    payback_years: float | None  # None: never pays back at this duty cycle
    break_even_utilisation: float | None  # None: never breaks even (even at 100%)
    assumptions: tuple[Assumption, ...]

    @property
    def chips_bought(self) -> int:
        return self.units * self.unit.chips


def ownership(
    owned: OwnedCost,
    chip: Chip,
    *,
    chips_used: int,
    job_hours: float,
    rent_usd: float,
    assumptions: Assumptions | None = None,
) -> Ownership:
    """Whole units to buy for a job on ``chips_used`` chips, and payback against renting it
    for ``rent_usd`` (see ``Ownership``)."""
    a = default_assumptions() if assumptions is None else assumptions
    if chips_used < 1 or job_hours <= 0 or rent_usd <= 0:
        raise CostError("ownership needs chips >= 1, a positive job time and a rental price")
    unit = purchase_unit(chip)
    units = -(-chips_used // unit.chips)
    e_idle = _usd_per_hour(owned.idle_facility_w, a)
    e_busy = _usd_per_hour(owned.busy_facility_w, a)
    r = rent_usd / (job_hours * chips_used)
    fixed = owned.capex_usd_per_hour + owned.ops_usd_per_hour + e_idle
    margin = r - (e_busy - e_idle)
    d_star = fixed / margin if margin > 0 else None
    d = owned.duty_cycle
    net = d * r - (owned.ops_usd_per_hour + e_idle + d * (e_busy - e_idle))
    payback = owned.capex_usd / net / HOURS_PER_YEAR if net > 0 else None
    return Ownership(
        chip_id=chip.id,
        unit=unit,
        units=units,
        chips_used=chips_used,
        chip_usd=owned.purchase.usd,
        capex_usd=owned.capex_usd * units * unit.chips,
        job_hours=job_hours,
        rent_usd=rent_usd,
        rent_usd_per_chip_hour=r,
        running_usd_per_chip_hour=e_busy + owned.ops_usd_per_hour,
        duty_cycle=d,
        amortisation_years=owned.amortisation_years,
        payback_years=payback,
        break_even_utilisation=d_star if d_star is not None and d_star <= 1 else None,
        assumptions=owned.assumptions,
    )
