"""Buying in the units sold, payback against renting the same work, break-even utilization."""

from __future__ import annotations

import pytest

from chipwise.cost.assumptions import Assumptions
from chipwise.cost.tco import OwnedCost, owned_cost, ownership, purchase_unit
from chipwise.hardware.catalog import chip as find_chip
from tests.cost.factories import make_catalog, make_chip, make_purchase

HOURS_PER_YEAR = 8766.0


@pytest.mark.parametrize(
    ("chip_id", "chips", "word"),
    [("h100-sxm", 8, "server"), ("mi300x", 8, "server"), ("l40s", 1, "card"),
     ("rtx-4090", 1, "card"), ("gb200", 72, "rack")],
)  # fmt: skip
def test_gpus_are_bought_as_cards_or_whole_baseboards(chip_id: str, chips: int, word: str) -> None:
    unit = purchase_unit(find_chip(chip_id))
    assert unit.chips == chips and word in unit.label


def _owned(simple_assumptions: Assumptions) -> OwnedCost:
    chip = make_chip(tdp_w=700.0)
    owned = owned_cost(
        chip, make_catalog(purchases=(make_purchase(25_000.0),)), assumptions=simple_assumptions
    )
    assert isinstance(owned, OwnedCost)
    return owned


def test_payback_and_break_even_by_hand(simple_assumptions: Assumptions) -> None:
    # $45k per chip (25k x 1.8) over 4 years; busy 1260 W, idle 126 W at $0.10/kWh; d = 0.5.
    owned = _owned(simple_assumptions)
    chip = make_chip(tdp_w=700.0)
    own = ownership(
        owned, chip, chips_used=2, job_hours=10.0, rent_usd=60.0, assumptions=simple_assumptions
    )
    r = 60.0 / 20.0  # $3 per owned chip-hour of the job
    e_busy, e_idle = 1.26 * 0.10, 0.126 * 0.10
    net = 0.5 * r - (e_idle + 0.5 * (e_busy - e_idle))
    assert own.payback_years == pytest.approx(45_000.0 / net / HOURS_PER_YEAR)
    fixed = 45_000.0 / (4 * HOURS_PER_YEAR) + e_idle
    assert own.break_even_utilisation == pytest.approx(fixed / (r - (e_busy - e_idle)))
    assert own.units * own.unit.chips >= 2


def test_at_break_even_owning_and_renting_cost_the_same_over_the_period(
    simple_assumptions: Assumptions,
) -> None:
    owned = _owned(simple_assumptions)
    own = ownership(owned, make_chip(tdp_w=700.0), chips_used=1, job_hours=5.0, rent_usd=12.0,
                    assumptions=simple_assumptions)  # fmt: skip
    d = own.break_even_utilisation
    assert d is not None
    hours = 4 * HOURS_PER_YEAR
    e_busy, e_idle = 1.26 * 0.10, 0.126 * 0.10
    owning = 45_000.0 + hours * (e_idle + d * (e_busy - e_idle))
    renting = hours * d * own.rent_usd_per_chip_hour
    assert owning == pytest.approx(renting)


def test_rent_cheaper_than_power_never_pays_back(simple_assumptions: Assumptions) -> None:
    owned = _owned(simple_assumptions)
    own = ownership(owned, make_chip(tdp_w=700.0), chips_used=1, job_hours=10.0, rent_usd=0.5,
                    assumptions=simple_assumptions)  # fmt: skip
    assert own.payback_years is None and own.break_even_utilisation is None
