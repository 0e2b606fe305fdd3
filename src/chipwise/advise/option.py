"""One advice option (a chip at a count, predicted and priced) and how options are ranked.

``objective_key`` orders options by the objective (cost, time or energy) with the other as a
tie-break; ``best_option`` picks among options within ``TIE_TOLERANCE`` of the best, where
the model cannot tell them apart, the run a team would choose.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from chipwise.advise.request import AdviseRequest
from chipwise.cost import OwnedRunCost, RunCost, RunEnergy, ServingCost
from chipwise.hardware import Chip
from chipwise.perf import InferPrediction, TrainPrediction
from chipwise.units import SECONDS_PER_DAY

# Options whose objective is within this fraction of the best are ties at the model's
# resolution (its validation error is larger); among ties the faster run wins.
TIE_TOLERANCE = 0.05


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
    # serving, disaggregated (``advise.disaggregation``): of the replicas, how many only
    # prefill (the rest only decode); 0: every replica prefills and decodes
    prefill_replicas: int = 0
    excluded: str = ""  # why this option is not allowed; empty = allowed

    @property
    def allowed(self) -> bool:
        return not self.excluded

    @property
    def total_chips(self) -> int:
        return self.chips * self.replicas

    @property
    def disaggregated(self) -> bool:
        return self.prefill_replicas > 0


def objective_key(request: AdviseRequest) -> Callable[[Option], tuple[float, float]]:
    """Sort key for options: the objective first, then cost (or time, for cost) to break ties."""

    def key(o: Option) -> tuple[float, float]:
        inf = math.inf
        time_s = (o.days * SECONDS_PER_DAY if o.days is not None else serving_time_s(o)) or inf
        usd = o.usd if o.usd is not None else inf
        kwh = o.kwh if o.kwh is not None else inf
        if request.objective == "time":
            return (time_s, usd)
        if request.objective == "energy":
            return (kwh, usd)
        return (usd, time_s)

    return key


def time_s(o: Option) -> float:
    """Wall clock of the option: the training run, or one served request."""
    if o.days is not None:
        return o.days * SECONDS_PER_DAY
    return serving_time_s(o)


def serving_time_s(o: Option) -> float:
    """Wall clock of one served request."""
    pred = o.prediction
    assert isinstance(pred, InferPrediction)
    return pred.request_time_s


def best_option(options: Iterable[Option], request: AdviseRequest) -> Option | None:
    """The allowed option that scores best on the objective; within ``TIE_TOLERANCE`` of it
    (a tie at the model's resolution) the faster run, as a team would choose: the same money
    for a shorter run (for ``--objective time``, the cheaper of tied runs). When buying
    (``--own-hardware``) ties go to fewer chips: each extra server is capital up front, and a
    tie in amortised cost says the extra servers buy little."""
    allowed = [o for o in options if o.allowed]
    key = objective_key(request)
    top = min(allowed, key=key, default=None)
    if top is None:
        return None
    limit = key(top)[0] * (1 + TIE_TOLERANCE)
    ties = [o for o in allowed if key(o)[0] <= limit]
    if request.objective == "time":
        return min(ties, key=lambda o: (key(o)[1], o.total_chips))
    if request.own_hardware:
        return min(ties, key=lambda o: (o.total_chips, key(o)[0]))
    return min(ties, key=lambda o: (time_s(o), o.total_chips))
