"""One card or the best option? The LoRA/QLoRA fine-tune question.

Adapters (LoRA, QLoRA's 4-bit base) exist so a fine-tune fits on one small GPU. When the best
single workstation card the job fits on scores within ``TIE_TOLERANCE`` of the best option on
the objective (a tie at the model's resolution), the card is the pick: one machine, no
interconnect, no cluster to book. Otherwise the answer says plainly why not: how far behind
the card is, and, on cost, the price per chip-hour at which it would tie (its run's cost
scales with its price; the best option's held fixed).
"""

from __future__ import annotations

from dataclasses import dataclass

from chipwise.advise.display import format_energy, format_run_time, format_usd
from chipwise.advise.option import TIE_TOLERANCE, Option, objective_key
from chipwise.advise.request import AdviseRequest
from chipwise.hardware import PriceOffer
from chipwise.workload.ir import Training


@dataclass(frozen=True, slots=True, kw_only=True)
class SingleCard:
    """The best single workstation card for an adapter fine-tune, and whether it is the pick."""

    option: Option
    picked: bool
    why: str  # plain words: why it is (or is not) the pick, with the two numbers
    ties_below_usd_per_chip_hour: float | None = None  # cost objective, card not picked


def _value(o: Option, objective: str) -> str:
    if objective == "time":
        return format_run_time(o.days) if o.days is not None else "?"
    if objective == "energy":
        return format_energy(o.kwh) if o.kwh is not None else "?"
    return format_usd(o.usd) if o.usd is not None else "?"


def single_card_verdict(
    card: Option | None, pick: Option | None, request: AdviseRequest
) -> SingleCard | None:
    """For a LoRA/QLoRA fine-tune rented in the cloud: is the best single card (``card``) the
    answer? None when the job is not an adapter fine-tune, no card fits, or nothing else
    was found."""
    phase = request.workload.phase
    if not isinstance(phase, Training) or not phase.adapters or request.own_hardware:
        return None
    if card is None or pick is None:
        return None
    if card is pick or (pick.total_chips == 1 and pick.chip.id == card.chip.id):
        return SingleCard(option=card, picked=True, why="the best option is already one card")
    key = objective_key(request)
    mine, best = key(card)[0], key(pick)[0]
    metric = {"time": "run time", "energy": "energy", "cost": "cost"}[request.objective]
    theirs = f"{pick.chip.id} ×{pick.total_chips}"
    numbers = f"{_value(card, request.objective)} vs {_value(pick, request.objective)}"
    if mine <= best * (1 + TIE_TOLERANCE):
        return SingleCard(
            option=card,
            picked=True,
            why=(
                f"picked: one card ties {theirs} within {TIE_TOLERANCE:.0%} on {metric} "
                f"({numbers}), and needs no cluster"
            ),
        )
    why = f"not picked: {mine / best:.1f}× the {metric} of {theirs} ({numbers})"
    ties_below = None
    offer = getattr(card.cost, "offer", None)
    if request.objective == "cost" and isinstance(offer, PriceOffer) and card.usd and pick.usd:
        ties_below = offer.usd_per_chip_hour * pick.usd / card.usd
        why += (
            f"; it would tie at ${ties_below:.2f}/chip-h "
            f"(today ${offer.usd_per_chip_hour:.2f}, {offer.provider} {offer.pricing})"
        )
    return SingleCard(option=card, picked=False, why=why, ties_below_usd_per_chip_hour=ties_below)
