import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chipwise.cost.assumptions import CostError
from chipwise.cost.pricing import (
    ServingLoad,
    TrainingRun,
    cheapest,
    cost_of_run,
    costs_of_run,
    offers_in,
    price_serving,
    price_step,
    replicas_for,
    serving_costs,
)
from tests.cost.factories import infer_pred, make_catalog, make_offer, train_pred

# ---------------------------------------------------------------- hand-computed cases


@pytest.mark.parametrize(
    ("step_time_s", "chips", "usd_per_chip_hour", "usd_per_step"),
    [
        (2.0, 8, 3.00, 2.0 * 8 * 3.00 / 3600),  # 0.01333...
        (0.5, 256, 1.20, 0.5 * 256 * 1.20 / 3600),  # 0.042666...
        (10.0, 1, 36.0, 0.1),
        (3600.0, 4, 2.5, 10.0),  # one hour on four chips
    ],
)
def test_price_step_is_step_time_times_chips_times_hourly_price(
    step_time_s: float, chips: int, usd_per_chip_hour: float, usd_per_step: float
) -> None:
    pred = train_pred(step_time_s=step_time_s, chips=chips)
    assert price_step(pred, make_offer(usd_per_chip_hour)) == pytest.approx(usd_per_step)


def test_llama3_scale_run_cost_by_hand() -> None:
    # 1e6 tokens/step, 15e12 tokens -> 15e6 steps of 2 s on 8 chips at $3/chip-h.
    pred = train_pred(step_time_s=2.0, chips=8, seq_len=1000, global_batch=1000)
    cost = cost_of_run(pred, make_offer(3.0), TrainingRun(tokens=15e12))
    assert cost.steps == 15_000_000
    assert cost.tokens == 15e12
    assert cost.wall_clock_s == pytest.approx(30e6)
    assert cost.days == pytest.approx(30e6 / 86400)
    assert cost.chip_hours == pytest.approx(30e6 * 8 / 3600)
    assert cost.usd_per_step == pytest.approx(2 * 8 * 3 / 3600)
    assert cost.usd_total == pytest.approx(200_000.0)
    assert cost.usd_per_million_tokens == pytest.approx(200_000.0 / 15e6)
    assert cost.offer.source == "test fixture" and cost.offer.date == "2026-01-01"


@pytest.mark.parametrize(
    ("tokens", "steps"),
    [(1e6, 1), (1e6 + 1, 2), (2.5e6, 3), (1.0, 1)],
)
def test_a_run_takes_whole_steps(tokens: float, steps: int) -> None:
    pred = train_pred(seq_len=1000, global_batch=1000)
    assert TrainingRun(tokens=tokens).steps(pred) == steps


def test_serving_cost_by_hand() -> None:
    # request = 0.5 + 200 x 0.02 = 4.5 s; 8 per batch -> 8/4.5 req/s = 153,600 req/day/replica.
    pred = infer_pred(chips=2, batch=8, input_len=1000, output_len=200, ttft_s=0.5, tpot_s=0.02)
    cost = price_serving(pred, make_offer(2.0), ServingLoad(requests_per_day=1e6))
    assert cost.replicas == 7  # ceil(1e6 / 153,600) = ceil(6.51)
    assert cost.chips == 14
    assert cost.capacity_requests_per_day == pytest.approx(7 * 153_600)
    assert cost.usd_per_day == pytest.approx(7 * 2 * 2.0 * 24)  # 672
    assert cost.output_tokens_per_day == pytest.approx(2e8)
    assert cost.usd_per_million_output_tokens == pytest.approx(672 / 200)
    assert cost.usd_per_million_tokens == pytest.approx(672 / 1200)
    # A full replica: $4/h over 8 x 200 / 4.5 output tokens/s.
    assert cost.usd_per_million_output_tokens_at_capacity == pytest.approx(3.125)
    assert cost.load_fraction == pytest.approx(1e6 / (7 * 153_600))


def test_serving_load_in_output_tokens_converts_with_output_length() -> None:
    pred = infer_pred(output_len=200)
    by_tokens = price_serving(pred, make_offer(), ServingLoad(output_tokens_per_day=2e8))
    by_requests = price_serving(pred, make_offer(), ServingLoad(requests_per_day=1e6))
    assert by_tokens == by_requests


def test_an_exact_fit_does_not_add_a_replica() -> None:
    pred = infer_pred(batch=8, ttft_s=0.5, tpot_s=0.02, output_len=200)
    assert replicas_for(pred, ServingLoad(requests_per_day=3 * 153_600)) == 3


def test_prefill_only_serving_has_no_output_token_price() -> None:
    pred = infer_pred(output_len=0, tpot_s=0.0)
    cost = price_serving(pred, make_offer(), ServingLoad(requests_per_day=1e5))
    assert cost.usd_per_million_output_tokens is None
    assert cost.usd_per_million_output_tokens_at_capacity is None
    assert cost.usd_per_million_tokens > 0


# ---------------------------------------------------------------- offers and filters

OFFERS = (
    make_offer(4.0, provider="gcp", pricing="on-demand"),
    make_offer(1.5, provider="gcp", pricing="spot"),
    make_offer(3.5, provider="aws", pricing="on-demand"),
    make_offer(2.2, provider="aws", pricing="committed-1y"),
    make_offer(2.0, provider="lambda", provider_kind="neocloud"),
    make_offer(3.0, provider="oci"),
    make_offer(1.0, chip_id="other-chip", provider="gcp"),
)


@pytest.mark.parametrize(
    ("cloud", "pricing", "expected"),
    [
        ("gcp", None, [4.0, 1.5]),
        ("aws", None, [3.5, 2.2]),
        ("azure", None, []),
        ("any", None, [4.0, 1.5, 3.5, 2.2, 2.0, 3.0]),
        ("any", ["on-demand"], [4.0, 3.5, 2.0, 3.0]),
        ("aws", ["committed-1y", "committed-3y"], [2.2]),
    ],
)
def test_cloud_filter_keeps_neoclouds_only_under_any(
    cloud: str, pricing: list[str] | None, expected: list[float]
) -> None:
    catalog = make_catalog(offers=OFFERS)
    got = offers_in(catalog, "gpu-x", cloud=cloud, pricing=pricing)
    assert [o.usd_per_chip_hour for o in got] == expected


def test_unknown_cloud_is_an_error_listing_the_choices() -> None:
    with pytest.raises(CostError, match="unknown cloud 'lambda'; choose one of gcp, aws"):
        offers_in(make_catalog(offers=OFFERS), "gpu-x", cloud="lambda")


def test_unknown_pricing_is_an_error() -> None:
    with pytest.raises(CostError, match="unknown pricing 'reserved'"):
        offers_in(make_catalog(offers=OFFERS), "gpu-x", pricing=["reserved"])


def test_costs_of_run_are_sorted_and_cheapest_is_the_spot_offer() -> None:
    costs = costs_of_run(train_pred(), make_catalog(offers=OFFERS), TrainingRun(tokens=1e9))
    totals = [c.usd_total for c in costs]
    assert totals == sorted(totals)
    best = cheapest(costs)
    assert best is not None
    assert (best.offer.provider, best.offer.pricing) == ("gcp", "spot")


def test_serving_costs_cheapest_on_aws() -> None:
    costs = serving_costs(
        infer_pred(), make_catalog(offers=OFFERS), ServingLoad(requests_per_day=1e6), cloud="aws"
    )
    best = cheapest(costs)
    assert best is not None and best.offer.pricing == "committed-1y"


def test_no_offer_means_no_costs_and_no_cheapest() -> None:
    costs = costs_of_run(
        train_pred(chip_id="nowhere"), make_catalog(offers=OFFERS), TrainingRun(tokens=1e9)
    )
    assert costs == ()
    assert cheapest(costs) is None


def test_offer_for_another_chip_is_an_error() -> None:
    with pytest.raises(CostError, match="offer is for 'other-chip'"):
        price_step(train_pred(), make_offer(chip_id="other-chip"))


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"requests_per_day": 1.0, "output_tokens_per_day": 1.0}, {"requests_per_day": 0.0}],
)
def test_serving_load_needs_exactly_one_positive_number(kwargs: dict[str, float]) -> None:
    with pytest.raises(CostError, match="serving load"):
        ServingLoad(**kwargs)


@pytest.mark.parametrize("tokens", [0.0, -1.0, math.inf, math.nan])
def test_training_run_needs_positive_tokens(tokens: float) -> None:
    with pytest.raises(CostError, match="tokens must be > 0"):
        TrainingRun(tokens=tokens)


# ---------------------------------------------------------------- invariants

prices = st.floats(min_value=0.01, max_value=100.0)
factors = st.floats(min_value=0.1, max_value=100.0)
step_times = st.floats(min_value=1e-3, max_value=1e3)
chip_counts = st.integers(min_value=1, max_value=4096)


@given(price=prices, k=factors, step_time_s=step_times, chips=chip_counts)
def test_cost_scales_linearly_with_price(
    price: float, k: float, step_time_s: float, chips: int
) -> None:
    pred = train_pred(step_time_s=step_time_s, chips=chips)
    run = TrainingRun(tokens=1e9)
    base = cost_of_run(pred, make_offer(price), run)
    scaled = cost_of_run(pred, make_offer(price * k), run)
    assert scaled.usd_total == pytest.approx(k * base.usd_total, rel=1e-9)
    assert scaled.usd_per_million_tokens == pytest.approx(k * base.usd_per_million_tokens)


@given(price=prices, step_time_s=step_times, chips=chip_counts)
def test_doubling_chips_at_equal_step_time_doubles_cost(
    price: float, step_time_s: float, chips: int
) -> None:
    run = TrainingRun(tokens=1e9)
    one = cost_of_run(train_pred(step_time_s=step_time_s, chips=chips), make_offer(price), run)
    two = cost_of_run(train_pred(step_time_s=step_time_s, chips=2 * chips), make_offer(price), run)
    assert two.usd_total == pytest.approx(2 * one.usd_total, rel=1e-9)
    assert two.wall_clock_s == one.wall_clock_s


@given(steps=st.integers(min_value=1, max_value=10**7), k=st.integers(min_value=1, max_value=1000))
def test_more_tokens_cost_proportionally(steps: int, k: int) -> None:
    pred = train_pred(seq_len=1000, global_batch=1000)
    offer = make_offer(2.0)
    base = cost_of_run(pred, offer, TrainingRun(tokens=steps * 1e6))
    more = cost_of_run(pred, offer, TrainingRun(tokens=k * steps * 1e6))
    assert more.usd_total == pytest.approx(k * base.usd_total, rel=1e-9)


@given(
    requests_per_day=st.floats(min_value=1.0, max_value=1e9),
    batch=st.integers(min_value=1, max_value=512),
    tpot_s=st.floats(min_value=1e-3, max_value=0.2),
)
def test_replicas_carry_the_load_with_less_than_one_spare(
    requests_per_day: float, batch: int, tpot_s: float
) -> None:
    pred = infer_pred(batch=batch, tpot_s=tpot_s)
    cost = price_serving(pred, make_offer(), ServingLoad(requests_per_day=requests_per_day))
    per_replica = cost.capacity_requests_per_day / cost.replicas
    assert cost.capacity_requests_per_day >= requests_per_day * (1 - 1e-9)
    assert (cost.replicas - 1) * per_replica < requests_per_day
    assert 0 < cost.load_fraction <= 1 + 1e-9


@given(price=prices, k=factors, rpd=st.floats(min_value=1.0, max_value=1e8))
def test_serving_cost_scales_linearly_with_price(price: float, k: float, rpd: float) -> None:
    load = ServingLoad(requests_per_day=rpd)
    base = price_serving(infer_pred(), make_offer(price), load)
    scaled = price_serving(infer_pred(), make_offer(price * k), load)
    assert scaled.usd_per_day == pytest.approx(k * base.usd_per_day, rel=1e-9)
