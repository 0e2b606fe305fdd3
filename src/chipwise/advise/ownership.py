"""Owning hardware: what to buy for the job, and when it pays back against renting it.

``--own-hardware`` ranks chips by their owned cost per run (TCO per used chip-hour, see
``cost.tco``). An owner also asks what to buy (whole 8-GPU servers or cards, not 1.3 GPUs),
how long the purchase takes to pay back against renting the same work, and at what
utilisation owning wins. The rental side is the cheapest rented option for the same job
(any chip, the request's clouds and pricing), planned like any other answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chipwise.advise.option import Option
from chipwise.advise.request import AdviseRequest
from chipwise.cost import OwnedRunCost, Ownership, ownership


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnershipAdvice:
    """The purchase for the owned pick, against the cheapest rental of the same job."""

    ownership: Ownership
    rent: Option  # the cheapest rented option for the same job
    pricing: str  # which cloud prices the rental used


def ownership_advice(
    pick: Option, rental: Sequence[Option], request: AdviseRequest
) -> OwnershipAdvice | None:
    """None for serving answers, an unpriced pick, or when nothing can be rented."""
    if pick.days is None or not isinstance(pick.cost, OwnedRunCost):
        return None
    priced = [o for o in rental if o.usd is not None and o.usd > 0]
    if not priced:
        return None
    rent = min(priced, key=lambda o: o.usd or 0.0)
    assert rent.usd is not None
    own = ownership(
        pick.cost.owned,
        pick.chip,
        chips_used=pick.total_chips,
        job_hours=pick.days * 24,
        rent_usd=rent.usd,
        assumptions=request.assumptions,
    )
    where = "any cloud" if request.cloud == "any" else request.cloud
    pricing = "cheapest of any pricing" if request.pricing == "any" else request.pricing
    return OwnershipAdvice(ownership=own, rent=rent, pricing=f"{pricing}, {where}")
