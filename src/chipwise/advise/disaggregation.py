"""Prefill/decode disaggregation as a serving deployment the SLO search may pick.

NVIDIA Dynamo (and AIConfigurator's "xPyD" configurations) run prompts on a pool of
prefill replicas and generation on a pool of decode replicas; each prompt's KV cache
crosses the network between them. Decode steps then carry no prefill chunks, so TPOT no
longer pays for other requests' prompts; the price is the transfer and a second pool to
size. It pays for long prompts under a tight TPOT target, and not for short ones.

The engine model (``chipwise.perf``: ``Inference(disaggregated=True)``) times one such
deployment of ``dp`` replicas of ``tp`` chips at a Poisson rate: every split of the
replicas into prefill and decode pools is tried, and the KV cache moves over the chip's
scale-out network (its scale-up link when it has none). This module sizes it: for each
replica size the SLO search tried, the fewest replicas whose deployment meets the p99
targets: the bound first, then bisection on the replica count (latency falls as replicas
are added). A deployment is only worth planning below the chips the best colocated
deployment of the same chip needs (the same price per chip-hour: more chips cost more),
so that count bounds the search; without a colocated answer ``MAX_REPLICAS`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from chipwise.errors import ChipwiseError
from chipwise.perf import InferPrediction, Predictor
from chipwise.workload.ir import Inference

# The most replicas one disaggregated deployment is sized to when no colocated deployment
# bounds it: Dynamo's published xPyD examples stay within a few dozen workers; beyond this
# many the engine model's every-split search is the cost, not the answer.
MAX_REPLICAS = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class Disaggregated:
    """One disaggregated deployment that meets the targets: ``replicas`` replicas of
    ``chips_per_replica`` chips, ``prefill_replicas`` of them prefilling. ``prediction`` is
    the whole deployment at the requested rate (its ``chips`` = every chip)."""

    prediction: InferPrediction
    chips_per_replica: int
    replicas: int
    prefill_replicas: int


def slo_miss(pred: InferPrediction, ttft_p99_s: float | None, tpot_p99_s: float | None) -> str:
    """Which p99 target ``pred`` misses, with the figure ('' when it meets both)."""
    eng = pred.engine
    if eng is None or eng.saturated:
        return "the load saturates it"
    if tpot_p99_s is not None and eng.tpot_p99_s > tpot_p99_s:
        return f"TPOT p99 {eng.tpot_p99_s * 1e3:.3g} ms > {tpot_p99_s * 1e3:.3g} ms"
    if ttft_p99_s is not None and eng.ttft_p99_s > ttft_p99_s:
        return f"TTFT p99 {eng.ttft_p99_s * 1e3:,.0f} ms > {ttft_p99_s * 1e3:.3g} ms"
    return ""


class DisaggregatedSearch:
    """Sizes disaggregated deployments of one chip for one request (a ``Predictor`` of the
    disaggregated phase, built on first use and reused for every replica size)."""

    def __init__(
        self,
        colocated: Predictor,
        *,
        rps: float,
        ttft_p99_s: float | None,
        tpot_p99_s: float | None,
    ) -> None:
        phase = colocated.workload.phase
        if not isinstance(phase, Inference):
            raise ChipwiseError("disaggregated serving sizes an inference workload")
        self.phase = replace(phase, load="rps", rps=rps, disaggregated=True)
        self.colocated = colocated
        self.chip = colocated.chip
        self.ttft_p99_s = ttft_p99_s
        self.tpot_p99_s = tpot_p99_s
        self._predictor: Predictor | None = None
        self.planned = 0  # deployments the engine model solved

    @property
    def predictor(self) -> Predictor:
        """The disaggregated phase's predictor, sharing the colocated one's cached op
        timings (built on first use)."""
        if self._predictor is None:
            self._predictor = self.colocated.for_phase(self.phase)
        return self._predictor

    def _try(self, n: int, replicas: int) -> tuple[InferPrediction | None, str]:
        """The deployment of ``replicas`` replicas of ``n`` chips (tensor-parallel over the
        replica, the planner's expert-parallel degree), or why there is none."""
        self.planned += 1
        try:
            pred = self.predictor.serve(n * replicas, plan_keys={"tp": n, "dp": replicas})
        except ChipwiseError as err:
            return None, str(err)
        return pred, slo_miss(pred, self.ttft_p99_s, self.tpot_p99_s)

    def fewest(self, n: int, max_replicas: int) -> tuple[Disaggregated | None, str]:
        """The fewest replicas (2 .. ``max_replicas``) of ``n`` chips whose deployment meets
        the targets, or why none does (the figure that missed at ``max_replicas``). The
        most replicas are tried first (most searches end there: no deployment within the
        bound), then bisection down to the fewest that still meet the targets."""
        if max_replicas < 2:
            return None, ""
        found, why = self._try(n, max_replicas)
        if found is None or why:
            return None, why
        lo, hi = 1, max_replicas  # lo misses (one replica cannot split), hi meets
        while hi - lo > 1:
            mid = (lo + hi) // 2
            pred, miss = self._try(n, mid)
            if pred is not None and not miss:
                hi, found = mid, pred
            else:
                lo = mid
        assert found is not None and found.engine is not None
        per_replica = found.plan.tp * found.plan.pp
        return Disaggregated(
            prediction=found,
            chips_per_replica=n,
            replicas=hi,
            prefill_replicas=found.engine.prefill_chips // max(1, per_replica),
        ), ""


def replicas_below(chips: int | None, n: int) -> int:
    """The most replicas of ``n`` chips that use fewer than ``chips`` chips in all (None:
    no bound, ``MAX_REPLICAS``)."""
    if chips is None:
        return MAX_REPLICAS
    return min(MAX_REPLICAS, math.ceil(chips / n) - 1)
