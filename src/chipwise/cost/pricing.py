"""What a run costs on a cloud offer: $/step, $/Mtoken, $ for a whole run, $ per serving day.

Counting conventions:
- A training run is ``tokens`` to train. It takes ``steps = ceil(tokens / tokens_per_step)``
  whole steps, so the tokens actually processed are ``steps x tokens_per_step``.
- One step on ``chips`` chips costs ``step_time_s x chips x usd_per_chip_hour / 3600``.
- Serving: one *replica* is the prediction's ``chips`` chips serving ``batch`` requests at a
  time; it completes ``batch / request_time_s`` requests per second. A daily load needs
  ``replicas = ceil(load / capacity_per_replica)``, billed for all 24 hours (capacity is
  reserved, not per request). ``$/Mtoken`` at load divides that daily bill by the tokens
  actually served; ``... _at_capacity`` is the floor reached when every replica is full.
- Cloud filter: ``gcp``, ``aws``, ``azure`` match that provider only; ``any`` also includes
  neoclouds (Lambda, RunPod, ...) and other hyperscalers (OCI).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeVar, get_args

from chipwise.cost.assumptions import CostError
from chipwise.hardware.catalog import Catalog
from chipwise.hardware.chip import PriceOffer
from chipwise.perf import InferPrediction, TrainPrediction
from chipwise.units import MEGA, SECONDS_PER_DAY, SECONDS_PER_HOUR

Cloud = Literal["gcp", "aws", "azure", "any"]
CLOUDS: tuple[Cloud, ...] = get_args(Cloud)
Pricing = Literal["on-demand", "spot", "committed-1y", "committed-3y", "capacity-block"]
PRICINGS: tuple[Pricing, ...] = get_args(Pricing)


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingRun:
    """A training job: ``tokens`` to train (e.g. ``15e12`` for a Llama-3-scale pre-train)."""

    tokens: float

    def __post_init__(self) -> None:
        if not (self.tokens > 0 and math.isfinite(self.tokens)):
            raise CostError(f"training run: tokens must be > 0, got {self.tokens!r}")

    def steps(self, pred: TrainPrediction) -> int:
        """Whole optimizer steps needed to see ``tokens`` at the prediction's batch."""
        return math.ceil(self.tokens / pred.tokens_per_step)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingLoad:
    """A serving load per day: give ``requests_per_day`` or ``output_tokens_per_day``."""

    requests_per_day: float | None = None
    output_tokens_per_day: float | None = None

    def __post_init__(self) -> None:
        given = [v for v in (self.requests_per_day, self.output_tokens_per_day) if v is not None]
        if len(given) != 1:
            raise CostError(
                "serving load: give exactly one of requests_per_day or output_tokens_per_day"
            )
        if not (given[0] > 0 and math.isfinite(given[0])):
            raise CostError(f"serving load: the daily load must be > 0, got {given[0]!r}")

    def requests_per_day_for(self, pred: InferPrediction) -> float:
        """Requests per day, converting output tokens with the prediction's output length."""
        if self.requests_per_day is not None:
            return self.requests_per_day
        assert self.output_tokens_per_day is not None
        if pred.output_len <= 0:
            raise CostError(
                f"serving load in output tokens needs output_len > 0 ({pred.workload} has "
                f"{pred.output_len}); give requests_per_day instead"
            )
        return self.output_tokens_per_day / pred.output_len


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCost:
    """A training run priced on one offer. ``offer`` carries provider, pricing, region,
    instance, source and date of the price."""

    chip_id: str
    chips: int
    offer: PriceOffer
    steps: int
    tokens: float  # steps x tokens_per_step: what the run actually processes
    wall_clock_s: float
    chip_hours: float
    usd_per_step: float
    usd_per_million_tokens: float
    usd_total: float

    @property
    def days(self) -> float:
        return self.wall_clock_s / SECONDS_PER_DAY


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingCost:
    """A daily serving load priced on one offer (capacity reserved all day)."""

    chip_id: str
    offer: PriceOffer
    chips_per_replica: int
    replicas: int
    requests_per_day: float
    capacity_requests_per_day: float  # replicas x per-replica throughput
    output_tokens_per_day: float
    tokens_per_day: float  # input + output
    usd_per_day: float
    usd_per_million_output_tokens: float | None  # at this load; None if no output tokens
    usd_per_million_tokens: float  # input + output, at this load
    usd_per_million_output_tokens_at_capacity: float | None  # replicas full

    @property
    def chips(self) -> int:
        return self.replicas * self.chips_per_replica

    @property
    def load_fraction(self) -> float:
        """Share of provisioned capacity the load uses (0 < f <= 1)."""
        return self.requests_per_day / self.capacity_requests_per_day

    @property
    def usd_per_hour(self) -> float:
        return self.usd_per_day / 24.0


def _check_offer(chip_id: str, offer: PriceOffer) -> None:
    if offer.chip_id != chip_id:
        raise CostError(
            f"offer is for {offer.chip_id!r} ({offer.provider}) but the prediction is for "
            f"{chip_id!r}; use catalog.offers_for({chip_id!r})"
        )


def price_step(pred: TrainPrediction, offer: PriceOffer) -> float:
    """USD of one training step: ``step_time_s x chips x usd_per_chip_hour / 3600``."""
    _check_offer(pred.chip_id, offer)
    return pred.step_time_s * pred.chips * offer.usd_per_chip_hour / SECONDS_PER_HOUR


def cost_of_run(pred: TrainPrediction, offer: PriceOffer, run: TrainingRun) -> RunCost:
    """Price a whole training run on one offer."""
    usd_per_step = price_step(pred, offer)
    steps = run.steps(pred)
    wall_clock_s = steps * pred.step_time_s
    return RunCost(
        chip_id=pred.chip_id,
        chips=pred.chips,
        offer=offer,
        steps=steps,
        tokens=steps * pred.tokens_per_step,
        wall_clock_s=wall_clock_s,
        chip_hours=wall_clock_s * pred.chips / SECONDS_PER_HOUR,
        usd_per_step=usd_per_step,
        usd_per_million_tokens=usd_per_step / pred.tokens_per_step * MEGA,
        usd_total=usd_per_step * steps,
    )


def requests_per_s_per_replica(pred: InferPrediction) -> float:
    """Requests one replica (``pred.chips`` chips) completes per second (under an engine
    load, the rate the engine model solved for)."""
    if pred.engine is not None:
        return pred.engine.requests_per_s
    return pred.batch / pred.request_time_s


def replicas_for(pred: InferPrediction, load: ServingLoad) -> int:
    """Replicas needed to carry ``load``: ``ceil(requests/s / per-replica requests/s)``."""
    need_rps = load.requests_per_day_for(pred) / SECONDS_PER_DAY
    # Round away float noise (1e-12 relative) so an exact fit does not add a replica.
    ratio = need_rps / requests_per_s_per_replica(pred)
    return max(1, math.ceil(ratio * (1 - 1e-12)))


def price_serving(pred: InferPrediction, offer: PriceOffer, load: ServingLoad) -> ServingCost:
    """Price a daily serving load on one offer."""
    _check_offer(pred.chip_id, offer)
    requests_per_day = load.requests_per_day_for(pred)
    replicas = replicas_for(pred, load)
    usd_per_day = replicas * pred.chips * offer.usd_per_chip_hour * 24.0
    output_tokens_per_day = requests_per_day * pred.output_len
    tokens_per_day = requests_per_day * (pred.input_len + pred.output_len)
    replica_usd_per_s = pred.chips * offer.usd_per_chip_hour / SECONDS_PER_HOUR
    out_tps = pred.output_tokens_per_s
    return ServingCost(
        chip_id=pred.chip_id,
        offer=offer,
        chips_per_replica=pred.chips,
        replicas=replicas,
        requests_per_day=requests_per_day,
        capacity_requests_per_day=replicas * requests_per_s_per_replica(pred) * SECONDS_PER_DAY,
        output_tokens_per_day=output_tokens_per_day,
        tokens_per_day=tokens_per_day,
        usd_per_day=usd_per_day,
        usd_per_million_output_tokens=(
            usd_per_day / output_tokens_per_day * MEGA if output_tokens_per_day > 0 else None
        ),
        usd_per_million_tokens=usd_per_day / tokens_per_day * MEGA,
        usd_per_million_output_tokens_at_capacity=(
            replica_usd_per_s / out_tps * MEGA if out_tps > 0 else None
        ),
    )


def offers_in(
    catalog: Catalog,
    chip_id: str,
    *,
    cloud: str = "any",
    pricing: Iterable[str] | None = None,
) -> tuple[PriceOffer, ...]:
    """The chip's offers on ``cloud`` (gcp|aws|azure|any), optionally only some pricings."""
    if cloud not in CLOUDS:
        raise CostError(f"unknown cloud {cloud!r}; choose one of {', '.join(CLOUDS)}")
    wanted = None if pricing is None else tuple(pricing)
    if wanted is not None:
        bad = sorted(set(wanted) - set(PRICINGS))
        if bad:
            raise CostError(
                f"unknown pricing {', '.join(map(repr, bad))}; choose from {', '.join(PRICINGS)}"
            )
    return tuple(
        o
        for o in catalog.offers_for(chip_id)
        if (cloud == "any" or o.provider.lower() == cloud)
        and (wanted is None or o.pricing in wanted)
    )


def costs_of_run(
    pred: TrainPrediction,
    catalog: Catalog,
    run: TrainingRun,
    *,
    cloud: str = "any",
    pricing: Iterable[str] | None = None,
) -> tuple[RunCost, ...]:
    """The run priced on every matching offer of the chip, cheapest first.

    Empty when the catalog has no matching offer (that is an answer, not an error).
    """
    offers = offers_in(catalog, pred.chip_id, cloud=cloud, pricing=pricing)
    return tuple(sorted((cost_of_run(pred, o, run) for o in offers), key=_sort_key))


def serving_costs(
    pred: InferPrediction,
    catalog: Catalog,
    load: ServingLoad,
    *,
    cloud: str = "any",
    pricing: Iterable[str] | None = None,
) -> tuple[ServingCost, ...]:
    """The serving load priced on every matching offer of the chip, cheapest first."""
    offers = offers_in(catalog, pred.chip_id, cloud=cloud, pricing=pricing)
    return tuple(sorted((price_serving(pred, o, load) for o in offers), key=_sort_key))


_C = TypeVar("_C", RunCost, ServingCost)


def _sort_key(cost: RunCost | ServingCost) -> tuple[float, str, str]:
    usd = cost.usd_total if isinstance(cost, RunCost) else cost.usd_per_day
    return (usd, cost.offer.provider, cost.offer.pricing)


def cheapest(costs: Iterable[_C]) -> _C | None:
    """The lowest-cost entry (``usd_total`` of a run, ``usd_per_day`` of serving), or None."""
    return min(costs, key=_sort_key, default=None)


def cheapest_offer(offers: Iterable[PriceOffer]) -> PriceOffer | None:
    """The cheapest on-demand offer, else the cheapest of any pricing; None if there is none."""
    chosen = tuple(offers)
    on_demand = [o for o in chosen if o.pricing == "on-demand"]
    return min(on_demand or chosen, key=lambda o: o.usd_per_chip_hour, default=None)


def price_of_prediction(
    pred: TrainPrediction | InferPrediction, offer: PriceOffer
) -> dict[str, float]:
    """USD of one training step (``usd_per_step``) or per million output tokens with the
    replica full (``usd_per_million_output_tokens``) on ``offer``."""
    if isinstance(pred, TrainPrediction):
        return {"usd_per_step": price_step(pred, offer)}
    _check_offer(pred.chip_id, offer)
    usd_per_s = pred.chips * offer.usd_per_chip_hour / SECONDS_PER_HOUR
    tps = pred.output_tokens_per_s
    return {"usd_per_million_output_tokens": usd_per_s / tps * MEGA} if tps > 0 else {}
