"""The candidate search: chip counts, lower bounds that never prune a real option, the early
stop, pricing and the wording of exclusions."""

from __future__ import annotations

from functools import cache

import pytest

from chipwise.advise.candidates import chip_counts, search_chip
from chipwise.advise.option import TIE_TOLERANCE, Option, best_option, objective_key
from chipwise.advise.pricing import priced_training
from chipwise.errors import ChipwiseError, DoesNotFitError, PlanError
from chipwise.hardware import default_catalog
from chipwise.perf import (
    InferPrediction,
    TrainPrediction,
    memory_floor_bytes,
    predict,
    step_floor_s,
)
from chipwise.workload.ir import Inference, Training, TransformerSpec, Workload
from chipwise.workload.load import load_workload_model

from .factories import serving, training

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

CAT = default_catalog()


def test_gpu_counts_are_powers_of_two_up_to_max_chips() -> None:
    assert chip_counts(CAT.chip("h100-sxm"), 100) == (1, 2, 4, 8, 16, 32, 64)
    # without --max-chips: up to the largest job the catalog records (100k H100 on a fabric)
    assert chip_counts(CAT.chip("h100-sxm"), None)[-2:] == (65536, 100_000)


def test_tpu_counts_stop_at_the_largest_job_and_include_it() -> None:
    chip = CAT.chip("tpu-v5p")
    job = chip.largest_job_chips  # multislice over DCN: 3 x 6,144
    assert job is not None and job > chip.scale_up.max_chips
    assert chip_counts(chip, None)[-1] == job
    counts = chip_counts(chip, 100_000)
    assert counts[-1] == job
    assert all(n <= job for n in counts)
    assert chip_counts(chip, 64)[-1] == 64


# Lower bounds: for every case the planner can run, the floor is below what it predicts, and
# a count whose memory floor exceeds the chip does not fit under any plan.
FLOOR_CASES = [
    ("llama3-8b", "h100-sxm"),
    ("llama3-8b", "tpu-v5e"),
    ("llama3-70b", "mi300x"),
    ("mixtral-8x7b", "tpu-v6e"),
    ("gpt2", "rtx-4090"),
]


@pytest.mark.parametrize(("model", "chip_id"), FLOOR_CASES)
@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_training_floors_never_exceed_the_prediction(
    model: str, chip_id: str, precision: str
) -> None:
    chip = CAT.chip(chip_id)
    if not chip.supports(precision):
        pytest.skip(f"{chip_id} has no {precision}")
    spec = load_workload_model(model)
    assert isinstance(spec, TransformerSpec)
    phase = Training(seq_len=4096, global_batch=64)
    wl = Workload(model=spec, phase=phase)
    for n in (1, 2, 4, 8, 16):
        need = memory_floor_bytes(spec, chip, n, precision, training=True)
        try:
            pred = predict(wl, chip, n, precision)
        except PlanError:  # does not fit, or no layout runs (no scale-out network)
            continue
        assert isinstance(pred, TrainPrediction)
        assert need <= pred.memory.total_bytes
        assert step_floor_s(spec, phase, chip, n, precision) <= pred.step_time_s
        if need > chip.hbm_capacity_bytes:
            pytest.fail(f"{n} x {chip_id}: floor {need:g} above capacity but a plan fits")


@pytest.mark.parametrize(("model", "chip_id"), FLOOR_CASES)
def test_serving_memory_floor_never_exceeds_the_prediction(model: str, chip_id: str) -> None:
    chip = CAT.chip(chip_id)
    spec = load_workload_model(model)
    assert isinstance(spec, TransformerSpec)
    wl = Workload(model=spec, phase=Inference(batch=8, input_len=512, output_len=128))
    for n in (1, 2, 4, 8):
        try:
            pred = predict(wl, chip, n, "bf16")
        except ChipwiseError:
            continue
        assert isinstance(pred, InferPrediction)
        assert memory_floor_bytes(spec, chip, n, "bf16", training=False) <= pred.memory.total_bytes


@cache
def _every_count(chip_id: str) -> tuple[TrainPrediction, ...]:
    """The workload planned at every count up to 256 chips: the objective prices and ranks
    the predictions but does not change them, so the three objectives share one planning."""
    req = training(chips=(chip_id,), max_chips=256)
    chip = CAT.chip(chip_id)
    preds = []
    for n in chip_counts(chip, req.max_chips):
        try:
            pred = predict(req.workload, chip, n, req.precision)
        except ChipwiseError:
            continue
        assert isinstance(pred, TrainPrediction)
        preds.append(pred)
    return tuple(preds)


def _exhaustive_options(chip_id: str, objective: str) -> list[Option]:
    req = training(chips=(chip_id,), max_chips=256, objective=objective)
    chip = CAT.chip(chip_id)
    return [priced_training(pred, chip, req, CAT) for pred in _every_count(chip_id)]


@pytest.mark.parametrize("chip_id", ["h100-sxm", "tpu-v5e", "mi300x"])
@pytest.mark.parametrize("objective", ["cost", "energy", "time"])
def test_the_early_stop_picks_a_tie_of_the_exhaustive_search(chip_id: str, objective: str) -> None:
    """Stopping early may settle on another count, but never one measurably worse: within
    TIE_TOLERANCE of what planning every count would pick (ties at the model's resolution)."""
    req = training(chips=(chip_id,), max_chips=256, objective=objective)
    found = search_chip(CAT.chip(chip_id), req, CAT)
    everything = _exhaustive_options(chip_id, objective)
    key = objective_key(req)
    got, want = best_option(found.options, req), best_option(everything, req)
    assert got is not None and want is not None
    assert key(got)[0] <= key(want)[0] * (1 + TIE_TOLERANCE)


def test_the_search_skips_counts_that_cannot_fit_without_planning_them() -> None:
    req = training("llama3-70b", chips=("h100-sxm",), max_chips=64)
    found = search_chip(CAT.chip("h100-sxm"), req, CAT)
    smallest = min(o.chips for o in found.options)
    floor = memory_floor_bytes(
        req.workload.model,  # type: ignore[arg-type]
        CAT.chip("h100-sxm"),
        smallest // 2,
        "bf16",
        training=True,
    )
    assert floor > CAT.chip("h100-sxm").hbm_capacity_bytes
    assert found.counts_planned <= len(chip_counts(CAT.chip("h100-sxm"), 64))


def test_a_run_too_long_at_every_count_says_so_with_the_bound() -> None:
    req = training("llama3-405b", tokens=15e12, chips=("tpu-v6e",), max_chips=256)
    found = search_chip(CAT.chip("tpu-v6e"), req, CAT)
    assert not found.options
    assert found.why_none.startswith("takes at least")
    assert "peak FLOP/s" in found.why_none and "120 days" in found.why_none


def test_a_budget_below_the_peak_flops_cost_excludes_a_chip_before_planning() -> None:
    req = training("llama3-70b", tokens=1e12, chips=("h100-sxm",), max_chips=1024, budget_usd=10.0)
    found = search_chip(CAT.chip("h100-sxm"), req, CAT)
    assert found.counts_planned == 0
    assert (
        found.why_none.startswith("costs at least $") and "over the budget ($10)" in found.why_none
    )


def test_a_chip_without_a_price_says_no_cloud_price_in_the_catalog() -> None:
    chip = next(
        c
        for c in CAT.chips
        if not CAT.offers_for(c.id) and c.supports("bf16") and CAT.no_price_for(c.id) is None
    )
    found = search_chip(chip, training(chips=(chip.id,), max_chips=8), CAT)
    assert found.why_none == "no cloud price in the catalog (on-demand, any cloud)"


@pytest.mark.parametrize("chip_id", ["gb200", "mi355x"])
def test_a_chip_with_no_public_price_says_so_not_missing_from_the_catalog(chip_id: str) -> None:
    found = search_chip(CAT.chip(chip_id), training(chips=(chip_id,), max_chips=8), CAT)
    assert found.why_none is not None and found.why_none.startswith("no public price: "), found


def test_a_chip_without_a_price_is_still_ranked_on_time_with_no_cost() -> None:
    chip = next(
        c for c in CAT.chips if not CAT.offers_for(c.id) and c.kind == "gpu" and c.supports("bf16")
    )
    found = search_chip(chip, training(chips=(chip.id,), max_chips=8, objective="time"), CAT)
    assert found.options and all(o.usd is None and o.allowed for o in found.options)


@pytest.mark.parametrize("pricing", ["on-demand", "spot", "committed-1y"])
def test_prices_come_from_the_pricing_asked_for_and_the_label_says_which(pricing: str) -> None:
    chip = CAT.chip("tpu-v6e")  # the catalog has every pricing for it
    req = training(chips=("tpu-v6e",), max_chips=16, pricing=pricing)
    found = search_chip(chip, req, CAT)
    assert found.options
    for o in found.options:
        assert o.cost is not None and o.cost.offer.pricing == pricing  # type: ignore[union-attr]
        assert f" {pricing} " in o.price_label


def test_cost_ties_go_to_the_faster_run() -> None:
    """Two counts within TIE_TOLERANCE on cost: the pick is the one that finishes first (the
    issue's 64 H100s for 222 days vs 512 for 28 days at the same money)."""
    req = training("llama3-70b", tokens=2e12, chips=("h100-sxm",), max_chips=1024)
    found = search_chip(CAT.chip("h100-sxm"), req, CAT)
    pick = best_option(found.options, req)
    assert pick is not None and pick.days is not None and pick.usd is not None
    allowed = [o for o in found.options if o.allowed and o.usd is not None]
    ties = [o for o in allowed if o.usd <= min(a.usd for a in allowed) * (1 + TIE_TOLERANCE)]  # type: ignore[operator]
    assert pick.days == min(o.days for o in ties if o.days is not None)


def test_a_plan_stopped_by_the_network_says_so_not_that_it_does_not_fit() -> None:
    """llama3-70b on 1024 PCIe A100s fits in memory (a few GB of 80 per chip) but every
    layout's groups span PCIe cards with no scale-out network in the catalog: the error
    names that instead of 'does not fit: needs 20 GB per chip (has 80 GB)'."""
    req = training("llama3-70b", tokens=2e12, chips=("a100-pcie-80gb",))
    with pytest.raises(PlanError, match="scale-out network") as err:
        predict(req.workload, CAT.chip("a100-pcie-80gb"), 1024, "bf16")
    assert not isinstance(err.value, DoesNotFitError)


def test_serving_that_needs_more_than_one_domain_says_the_domain_rule() -> None:
    # A GeForce card is its own domain (a PCIe data-centre card's is the server's 4-8 GPUs).
    req = serving("llama3-70b", chips=("rtx-5090",), max_chips=8)
    found = search_chip(CAT.chip("rtx-5090"), req, CAT)
    assert not found.options
    assert "on 1 chip (" in found.why_none and "scale-up domain (1 chip of rtx-5090" in (
        found.why_none
    )


def test_serving_a_70b_model_on_pcie_cards_uses_tensor_parallelism_within_the_server() -> None:
    """8 L40S of an AWS g6e.48xlarge talk over PCIe: llama3-70b needs a tp group of them."""
    req = serving("llama3-70b", chips=("l40s",), max_chips=8)
    found = search_chip(CAT.chip("l40s"), req, CAT)
    assert found.options, found.why_none
    assert all(1 < o.chips <= 8 for o in found.options)
