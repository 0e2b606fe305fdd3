import pytest
from hypothesis import given
from hypothesis import strategies as st

from chipwise.cost.assumptions import Assumptions, CostError, default_assumptions
from chipwise.cost.energy import (
    activity,
    chip_power,
    energy_of_run,
    energy_of_serving,
    perf_per_watt,
    power_w,
)
from chipwise.cost.pricing import ServingLoad, TrainingRun
from chipwise.perf.base import Breakdown
from tests.cost.factories import infer_pred, make_chip, train_pred

J_PER_KWH = 3.6e6


@pytest.mark.parametrize(
    ("tdp_w", "idle_fraction", "utilisation", "watts"),
    [
        (700.0, 0.15, 0.0, 105.0),
        (700.0, 0.15, 1.0, 700.0),
        (700.0, 0.15, 0.5, 105.0 + 0.5 * 595.0),  # 402.5
        (192.0, 0.47, 0.5, 0.47 * 192 + 0.5 * 0.53 * 192),  # TPU v4-like
        (400.0, 0.0, 0.25, 100.0),
    ],
)
def test_power_is_linear_between_idle_and_tdp(
    tdp_w: float, idle_fraction: float, utilisation: float, watts: float
) -> None:
    assert power_w(tdp_w, idle_fraction, utilisation) == pytest.approx(watts)


def test_utilisation_outside_unit_interval_is_an_error() -> None:
    with pytest.raises(CostError, match="utilisation"):
        power_w(700.0, 0.1, 1.5)


@pytest.mark.parametrize(
    ("breakdown", "utilisation"),
    [
        (Breakdown(compute_s=2.0), 1.0),
        (Breakdown(compute_s=1.6, memory_s=0.2, communication_s=0.2), 0.9),
        (Breakdown(compute_s=1.0, bubble_s=0.5, overhead_s=0.5), 0.5),
        (Breakdown(memory_s=1.0, communication_s=1.0), 0.5),
    ],
)
def test_training_activity_is_the_busy_share_of_the_breakdown(
    breakdown: Breakdown, utilisation: float
) -> None:
    act = activity(train_pred(breakdown=breakdown), make_chip())
    assert act.basis == "breakdown"
    assert act.utilisation == pytest.approx(utilisation)


def test_training_without_breakdown_falls_back_to_mfu_and_says_so(
    simple_assumptions: Assumptions,
) -> None:
    # 1e6 tokens / 2 s / 8 chips = 62,500 tok/s/chip x 6e9 FLOP = 3.75e14 = 37.5% of 1e15.
    pred = train_pred(breakdown=Breakdown(), model_flops_per_token=6e9)
    act = activity(pred, make_chip(bf16_flops_per_s=1e15), simple_assumptions)
    assert act.basis == "mfu"
    assert act.utilisation == pytest.approx(0.375 / 0.75)
    power = chip_power(pred, make_chip(), simple_assumptions)
    assert any(a.name == "mfu_at_full_power" for a in power.assumptions)


def test_serving_activity_weights_prefill_and_decode_by_time() -> None:
    pred = infer_pred(
        ttft_s=0.4,
        tpot_s=0.02,
        output_len=200,
        prefill=Breakdown(compute_s=0.3, communication_s=0.1),  # busy 0.75 for 0.4 s
        decode=Breakdown(memory_s=0.01, overhead_s=0.01),  # busy 0.5 for 4.0 s
    )
    act = activity(pred, make_chip())
    assert act.utilisation == pytest.approx((0.4 * 0.75 + 4.0 * 0.5) / 4.4)


def test_serving_without_breakdowns_is_an_upper_bound_at_tdp() -> None:
    pred = infer_pred(prefill=Breakdown(), decode=Breakdown())
    act = activity(pred, make_chip())
    assert (act.basis, act.utilisation) == ("tdp-upper-bound", 1.0)


def test_run_energy_and_carbon_by_hand(simple_assumptions: Assumptions) -> None:
    # u = 0.9 -> P = 70 + 0.9 x 630 = 637 W; 3 steps x 2 s on 8 chips.
    pred = train_pred(
        step_time_s=2.0,
        chips=8,
        breakdown=Breakdown(compute_s=1.6, memory_s=0.2, communication_s=0.2),
    )
    e = energy_of_run(pred, make_chip(), TrainingRun(tokens=3e6), simple_assumptions)
    chip_kwh = 637.0 * 8 * 6.0 / J_PER_KWH
    assert e.power.power_w == pytest.approx(637.0)
    assert e.seconds == pytest.approx(6.0)
    assert e.chip_kwh == pytest.approx(chip_kwh)
    assert e.it_kwh == pytest.approx(chip_kwh * 1.5)
    assert e.facility_kwh == pytest.approx(chip_kwh * 1.5 * 1.2)
    assert e.kg_co2e == pytest.approx(chip_kwh * 1.5 * 1.2 * 0.5)
    assert e.usd_electricity == pytest.approx(chip_kwh * 1.5 * 1.2 * 0.10)
    assert e.tokens_per_facility_kwh == pytest.approx(3e6 / (chip_kwh * 1.8))
    names = {a.name for a in e.assumptions}
    assert names >= {"idle_fraction_gpu", "host_power_factor_gpu", "pue_cloud"}
    assert names >= {"grid_kg_co2e_per_kwh", "usd_per_kwh"}


def test_owned_facility_uses_the_owned_pue(simple_assumptions: Assumptions) -> None:
    a = simple_assumptions.override(pue_owned=1.5)
    run = TrainingRun(tokens=3e6)
    cloud = energy_of_run(train_pred(), make_chip(), run, a)
    owned = energy_of_run(train_pred(), make_chip(), run, a, facility="owned")
    assert owned.facility_kwh == pytest.approx(cloud.facility_kwh * 1.5 / 1.2)


def test_tpu_uses_its_own_idle_fraction_and_host_factor(simple_assumptions: Assumptions) -> None:
    a = simple_assumptions.override(idle_fraction_tpu=0.47, host_power_factor_tpu=1.56)
    tpu = make_chip("tpu-x", kind="tpu", tdp_w=192.0, typical_w=170.0)
    pred = train_pred(chip_id="tpu-x", breakdown=Breakdown(compute_s=1.0, communication_s=1.0))
    e = energy_of_run(pred, tpu, TrainingRun(tokens=1e6), a)
    assert e.power.idle_w == pytest.approx(0.47 * 192)
    assert e.power.power_w == pytest.approx(0.47 * 192 + 0.5 * 0.53 * 192)
    assert e.power.typical_w == 170.0
    assert e.host_power_factor == 1.56


def test_serving_day_energy_by_hand(simple_assumptions: Assumptions) -> None:
    # 7 replicas x 2 chips, load fraction 1e6 / (7 x 153,600); decode/prefill fully busy.
    pred = infer_pred(chips=2, batch=8, ttft_s=0.5, tpot_s=0.02, output_len=200)
    e = energy_of_serving(pred, make_chip(), ServingLoad(requests_per_day=1e6), simple_assumptions)
    u = 1e6 / (7 * 153_600)
    watts = 70.0 + u * 630.0
    assert e.chips == 14
    assert e.power.utilisation == pytest.approx(u)
    assert e.power.basis == "breakdown"
    assert e.chip_kwh == pytest.approx(watts * 14 * 86_400 / J_PER_KWH)
    assert e.tokens == pytest.approx(1e6 * 1200)


def test_perf_per_watt_by_hand(simple_assumptions: Assumptions) -> None:
    pred = train_pred(step_time_s=2.0, chips=8, model_flops_per_token=6e9)  # u = 1
    ppw = perf_per_watt(pred, make_chip(tdp_w=700.0, bf16_flops_per_s=1e15), simple_assumptions)
    assert ppw.power_w == pytest.approx(700.0)
    assert ppw.tokens_per_joule == pytest.approx(5e5 / (700.0 * 8))
    assert ppw.facility_tokens_per_joule == pytest.approx(5e5 / (700.0 * 8 * 1.5 * 1.2))
    assert ppw.achieved_flops_per_s_per_w == pytest.approx(3.75e14 / 700.0)
    assert ppw.peak_flops_per_s_per_w == pytest.approx(1e15 / 700.0)


def test_perf_per_watt_shows_the_efficiency_gap_either_way() -> None:
    # Same tokens/s; the chip drawing less power has more tokens per joule.
    pred_gpu = train_pred(chip_id="gpu-x")
    pred_tpu = train_pred(chip_id="tpu-x")
    gpu = perf_per_watt(pred_gpu, make_chip("gpu-x", tdp_w=700.0))
    tpu = perf_per_watt(pred_tpu, make_chip("tpu-x", kind="tpu", tdp_w=300.0))
    assert tpu.tokens_per_joule > gpu.tokens_per_joule
    heavy = perf_per_watt(pred_tpu, make_chip("tpu-x", kind="tpu", tdp_w=2000.0))
    assert heavy.tokens_per_joule < gpu.tokens_per_joule


def test_inference_perf_per_watt_has_no_achieved_flops() -> None:
    ppw = perf_per_watt(infer_pred(), make_chip())
    assert ppw.achieved_flops_per_s_per_w is None
    assert ppw.tokens_per_joule > 0


def test_chip_that_is_not_the_predictions_is_an_error() -> None:
    with pytest.raises(CostError, match="prediction is for 'gpu-x' but chip 'gpu-y'"):
        chip_power(train_pred(), make_chip("gpu-y"))


@given(
    u1=st.floats(min_value=0.0, max_value=1.0),
    u2=st.floats(min_value=0.0, max_value=1.0),
    idle=st.floats(min_value=0.0, max_value=0.99),
    tdp_w=st.floats(min_value=10.0, max_value=2000.0),
)
def test_energy_grows_with_utilisation(u1: float, u2: float, idle: float, tdp_w: float) -> None:
    lo, hi = sorted((u1, u2))
    a = default_assumptions().override(idle_fraction_gpu=idle)
    chip = make_chip(tdp_w=tdp_w)
    run = TrainingRun(tokens=1e7)
    e_lo = energy_of_run(train_pred(), chip, run, a, utilisation=lo)
    e_hi = energy_of_run(train_pred(), chip, run, a, utilisation=hi)
    assert e_lo.facility_kwh <= e_hi.facility_kwh
    assert e_lo.kg_co2e <= e_hi.kg_co2e
    assert e_lo.power.idle_w <= e_lo.power.power_w <= tdp_w * (1 + 1e-12)


@given(rpd1=st.floats(min_value=1.0, max_value=1e7), k=st.floats(min_value=1.0, max_value=10.0))
def test_more_serving_load_never_uses_less_energy(rpd1: float, k: float) -> None:
    pred = infer_pred()
    small = energy_of_serving(pred, make_chip(), ServingLoad(requests_per_day=rpd1))
    large = energy_of_serving(pred, make_chip(), ServingLoad(requests_per_day=rpd1 * k))
    assert large.chip_kwh >= small.chip_kwh * (1 - 1e-9)
