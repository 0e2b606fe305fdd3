"""LoRA/QLoRA: one workstation card when it ties the best option, else say why not."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipwise.advise import AdviseRequest
from chipwise.advise.recommend import recommend
from chipwise.advise.situations import is_workstation_card
from chipwise.hardware import default_catalog
from chipwise.report.advice import single_card_line, smallest_gpu_line
from chipwise.workload.ir import Training
from tests.advise.factories import training

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

CHIPS = ("rtx-4090", "mi300x")


def _qlora(**kw: object) -> AdviseRequest:
    req = training(chips=CHIPS, max_chips=16, **kw)
    phase = req.workload.phase
    assert isinstance(phase, Training)
    return replace(req, workload=replace(req.workload, phase=replace(phase, method="qlora")))


def test_a_card_behind_the_best_says_by_how_much_and_at_what_price_it_would_tie() -> None:
    cat = default_catalog()
    rec = recommend(_qlora(), cat)
    one = rec.single_card
    assert one is not None and is_workstation_card(one.option.chip)
    assert one.option.total_chips == 1 and one.option.usd and rec.pick is not None
    if one.picked:  # the card already ties at today's prices: nothing more to check here
        assert rec.pick is one.option and "picked: one card ties" in one.why
        return
    assert rec.pick is not one.option and "not picked" in one.why
    assert one.ties_below_usd_per_chip_hour is not None
    offer = one.option.cost.offer  # type: ignore[union-attr]
    assert one.ties_below_usd_per_chip_hour < offer.usd_per_chip_hour
    # at the tie price the card's run costs what the pick's does, so the card becomes the pick
    cheaper = replace(offer, usd_per_chip_hour=one.ties_below_usd_per_chip_hour)
    again = recommend(_qlora(), cat.with_offers([cheaper]))
    assert again.single_card is not None and again.single_card.picked
    assert again.pick is again.single_card.option and again.pick.chip.id == one.option.chip.id
    assert again.pick.usd is not None and rec.pick.usd is not None
    assert abs(again.pick.usd - rec.pick.usd) <= 0.05 * rec.pick.usd


def test_a_full_fine_tune_or_an_owner_gets_no_single_card_verdict() -> None:
    assert recommend(training(chips=CHIPS, max_chips=16)).single_card is None
    assert recommend(_qlora(own_hardware=True)).single_card is None


def test_the_text_says_why_the_card_is_not_picked_once() -> None:
    rec = recommend(_qlora())
    assert rec.single_card is not None and not rec.single_card.picked
    lines = [smallest_gpu_line(rec), single_card_line(rec)]
    assert " of 24 GB" in lines[0]  # the card and its memory
    assert "not picked" in lines[1] and "would tie at $" in lines[1]
    assert sum(line.count("rtx-4090 ×1") for line in lines) == 1  # described once
