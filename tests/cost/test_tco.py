import pytest
from hypothesis import given
from hypothesis import strategies as st

from chipwise.cost.assumptions import Assumptions, CostError, default_assumptions
from chipwise.cost.pricing import TrainingRun, cost_of_run
from chipwise.cost.tco import NotPurchasable, OwnedCost, break_even, owned_cost, owned_cost_of_run
from chipwise.perf.base import Breakdown
from tests.cost.factories import make_catalog, make_chip, make_offer, make_purchase, train_pred

HOURS_PER_YEAR = 8766.0


def _owned(result: OwnedCost | NotPurchasable) -> OwnedCost:
    assert isinstance(result, OwnedCost), result
    return result


def test_owned_cost_per_hour_by_hand(simple_assumptions: Assumptions) -> None:
    # $25k chip x (1 + 0.6 + 0.2) = $45k over 4 years; TDP 700 W busy, 70 W idle,
    # x 1.5 host x 1.2 PUE; duty cycle 0.5; $0.10/kWh.
    chip = make_chip(tdp_w=700.0)
    owned = _owned(
        owned_cost(
            chip, make_catalog(purchases=(make_purchase(25_000.0),)), assumptions=simple_assumptions
        )
    )
    capex_h = 45_000.0 / (4 * HOURS_PER_YEAR)
    busy_w, idle_w = 700.0 * 1.8, 70.0 * 1.8
    power_h = (0.5 * busy_w + 0.5 * idle_w) / 1000 * 0.10
    assert owned.capex_usd == pytest.approx(45_000.0)
    assert owned.capex_usd_per_hour == pytest.approx(capex_h)
    assert owned.busy_facility_w == pytest.approx(busy_w)
    assert owned.idle_facility_w == pytest.approx(idle_w)
    assert owned.power_usd_per_hour == pytest.approx(power_h)
    assert owned.usd_per_calendar_hour == pytest.approx(capex_h + power_h)
    assert owned.usd_per_chip_hour_owned == pytest.approx((capex_h + power_h) / 0.5)
    assert owned.power.basis == "tdp-upper-bound"
    assert owned.purchase.source == "test fixture"
    names = {a.name for a in owned.assumptions}
    assert {"amortisation_years", "hosting_fraction_of_chip_price", "owned_duty_cycle"} <= names


def test_break_even_by_hand(simple_assumptions: Assumptions) -> None:
    catalog = make_catalog(purchases=(make_purchase(25_000.0),))
    owned = _owned(owned_cost(make_chip(), catalog, assumptions=simple_assumptions))
    be = break_even(owned, make_offer(3.0), simple_assumptions)
    e_idle, e_busy = 126.0 / 1000 * 0.10, 1260.0 / 1000 * 0.10
    fixed = 45_000.0 / (4 * HOURS_PER_YEAR) + e_idle
    assert be.utilisation == pytest.approx(fixed / (3.0 - (e_busy - e_idle)))  # ~0.449
    assert be.owning_is_cheaper  # at d = 0.5 > 0.449


def test_owning_never_breaks_even_against_a_very_cheap_offer(
    simple_assumptions: Assumptions,
) -> None:
    catalog = make_catalog(purchases=(make_purchase(25_000.0),))
    owned = _owned(owned_cost(make_chip(), catalog, assumptions=simple_assumptions))
    be = break_even(owned, make_offer(0.50), simple_assumptions)
    assert be.utilisation is None
    assert not be.owning_is_cheaper


def test_busy_power_comes_from_the_prediction(simple_assumptions: Assumptions) -> None:
    catalog = make_catalog(purchases=(make_purchase(),))
    pred = train_pred(breakdown=Breakdown(compute_s=1.0, communication_s=1.0))  # u = 0.5
    owned = _owned(owned_cost(make_chip(), catalog, pred=pred, assumptions=simple_assumptions))
    assert owned.power.basis == "breakdown"
    assert owned.busy_facility_w == pytest.approx((70.0 + 0.5 * 630.0) * 1.8)


def test_owned_run_cost_by_hand(simple_assumptions: Assumptions) -> None:
    catalog = make_catalog(purchases=(make_purchase(25_000.0),))
    pred = train_pred(step_time_s=2.0, chips=8, seq_len=1000, global_batch=1000)
    cost = owned_cost_of_run(
        pred, make_chip(), catalog, TrainingRun(tokens=15e12), assumptions=simple_assumptions
    )
    assert not isinstance(cost, NotPurchasable)
    per_h = cost.owned.usd_per_chip_hour_owned
    assert cost.chip_hours == pytest.approx(30e6 * 8 / 3600)
    assert cost.usd_total == pytest.approx(cost.chip_hours * per_h)
    assert cost.usd_per_step == pytest.approx(2.0 * 8 / 3600 * per_h)
    assert cost.capex_usd_upfront == pytest.approx(8 * 45_000.0)


def test_rent_only_chip_is_not_purchasable_and_says_why() -> None:
    tpu = make_chip("tpu-x", kind="tpu", purchasable=False)
    result = owned_cost(tpu, make_catalog(purchases=(make_purchase(chip_id="tpu-x"),)))
    assert isinstance(result, NotPurchasable)
    assert "rent-only (gcp)" in result.reason


def test_purchasable_chip_without_a_price_is_not_purchasable_and_says_where_to_add_it() -> None:
    result = owned_cost(make_chip(), make_catalog())
    assert isinstance(result, NotPurchasable)
    assert "purchase.toml" in result.reason


def test_comparison_over_mixed_chips_does_not_crash() -> None:
    chips = (make_chip("gpu-x"), make_chip("tpu-x", kind="tpu", purchasable=False))
    catalog = make_catalog(chips=chips, purchases=(make_purchase(chip_id="gpu-x"),))
    results = [
        owned_cost_of_run(train_pred(chip_id=c.id), c, catalog, TrainingRun(tokens=1e9))
        for c in chips
    ]
    assert [type(r).__name__ for r in results] == ["OwnedRunCost", "NotPurchasable"]


def test_duty_cycle_outside_unit_interval_is_an_error() -> None:
    catalog = make_catalog(purchases=(make_purchase(),))
    with pytest.raises(CostError, match="duty cycle"):
        owned_cost(make_chip(), catalog, duty_cycle=1.5)


def test_break_even_against_another_chips_offer_is_an_error() -> None:
    owned = _owned(owned_cost(make_chip(), make_catalog(purchases=(make_purchase(),))))
    with pytest.raises(CostError, match="offer is for 'other'"):
        break_even(owned, make_offer(chip_id="other"))


@given(
    years=st.floats(min_value=0.5, max_value=10.0),
    more=st.floats(min_value=0.1, max_value=10.0),
    usd=st.floats(min_value=100.0, max_value=1e6),
)
def test_owned_cost_per_hour_falls_with_longer_amortisation(
    years: float, more: float, usd: float
) -> None:
    catalog = make_catalog(purchases=(make_purchase(usd),))
    short = default_assumptions().override(amortisation_years=years)
    long = default_assumptions().override(amortisation_years=years + more)
    a = _owned(owned_cost(make_chip(), catalog, assumptions=short))
    b = _owned(owned_cost(make_chip(), catalog, assumptions=long))
    assert b.usd_per_chip_hour_owned < a.usd_per_chip_hour_owned


@given(
    price=st.floats(min_value=0.2, max_value=50.0),
    usd=st.floats(min_value=1_000.0, max_value=100_000.0),
)
def test_at_the_break_even_duty_cycle_owning_costs_the_cloud_price(
    price: float, usd: float
) -> None:
    catalog = make_catalog(purchases=(make_purchase(usd),))
    offer = make_offer(price)
    be = break_even(_owned(owned_cost(make_chip(), catalog)), offer)
    if be.utilisation is None:
        return
    at = _owned(owned_cost(make_chip(), catalog, duty_cycle=be.utilisation))
    assert at.usd_per_chip_hour_owned == pytest.approx(price, rel=1e-9)


@given(usd=st.floats(min_value=100.0, max_value=1e6), price=st.floats(min_value=0.1, max_value=50))
def test_owned_and_cloud_run_costs_use_the_same_chip_hours(usd: float, price: float) -> None:
    catalog = make_catalog(purchases=(make_purchase(usd),))
    pred, run = train_pred(), TrainingRun(tokens=1e10)
    owned = owned_cost_of_run(pred, make_chip(), catalog, run)
    cloud = cost_of_run(pred, make_offer(price), run)
    assert not isinstance(owned, NotPurchasable)
    assert owned.chip_hours == pytest.approx(cloud.chip_hours)
    ratio = owned.usd_total / cloud.usd_total
    assert ratio == pytest.approx(owned.owned.usd_per_chip_hour_owned / price)
