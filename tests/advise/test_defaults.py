"""Defaults of an advise request, and small answers that must read right."""

from __future__ import annotations

import pytest

from chipwise.advise import AdviseRequest, recommend
from chipwise.advise.defaults import (
    CHINCHILLA_TOKENS_PER_PARAM,
    DEFAULT_FINETUNE_TOKENS,
    default_tokens,
)
from chipwise.advise.request import DEFAULT_MAX_CHIPS
from chipwise.cost import NotPurchasable, owned_cost
from chipwise.hardware import default_catalog
from chipwise.workload.accounting import params_total
from chipwise.workload.ir import TransformerSpec, Workload
from chipwise.workload.load import load_workload_model

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")


@pytest.mark.parametrize("name", ["llama3-8b", "llama3.1-8b", "Llama 3.1 8B"])
def test_the_default_model_gets_the_fine_tune_size_by_any_of_its_names(name: str) -> None:
    spec = load_workload_model(name)
    assert isinstance(spec, TransformerSpec)
    assert default_tokens(spec) == DEFAULT_FINETUNE_TOKENS


def test_other_models_default_to_a_compute_optimal_run() -> None:
    spec = load_workload_model("llama3-70b")
    assert isinstance(spec, TransformerSpec)
    assert default_tokens(spec) == CHINCHILLA_TOKENS_PER_PARAM * params_total(spec)


def test_the_library_and_the_cli_share_the_max_chips_default() -> None:
    import inspect

    from chipwise.advise.request import max_chips_for
    from chipwise.cli.advise import advise
    from chipwise.hardware import chip

    request = AdviseRequest(workload=Workload(model=load_workload_model("gpt2")))
    assert request.max_chips is None  # each chip's largest recorded job
    option = inspect.signature(advise).parameters["max_chips"].default
    assert option.default is None
    assert max_chips_for(chip("h100-sxm"), None) == chip("h100-sxm").largest_job_chips
    assert max_chips_for(chip("l40s"), None) == DEFAULT_MAX_CHIPS  # none recorded
    assert max_chips_for(chip("tpu-v6e"), 10**6) == chip("tpu-v6e").largest_job_chips


def test_a_stencil_is_ranked_by_memory_bandwidth_its_bottleneck() -> None:
    rec = recommend(AdviseRequest(workload=Workload(model=load_workload_model("stencil"))))
    assert rec.non_ml is not None
    cat = default_catalog()
    rates = [cat.chip(c).hbm_bytes_per_s for c in rec.non_ml.capable]
    assert rates == sorted(rates, reverse=True)
    assert "memory bandwidth" in rec.non_ml.basis


def test_a_chip_neither_sold_nor_rented_is_not_called_rent_only() -> None:
    cat = default_catalog()
    orphans = [c for c in cat.chips if not c.purchasable and not c.clouds]
    for chip in orphans:
        result = owned_cost(chip, cat)
        assert isinstance(result, NotPurchasable)
        assert "rent-only" not in result.reason


def test_the_default_batch_follows_the_deepseek_law_and_says_so() -> None:
    from chipwise.advise.defaults import default_global_batch, training_batch

    big = load_workload_model("llama3-405b")
    small = load_workload_model("llama3-8b")
    b_big, note = default_global_batch(big, 15e12, 8192)  # type: ignore[arg-type]
    b_small, _ = default_global_batch(small, 1e9, 4096)  # type: ignore[arg-type]
    assert b_big > b_small and b_big & (b_big - 1) == 0  # grows with compute; a power of 2
    # B_opt = 0.292 C^0.3271 tokens: within a factor sqrt(2) of the law (power-of-2 rounding)
    assert "2401.02954" in note and "--global-batch" in note
    assert training_batch(big, 15e12, 8192, 64) == (64, "")  # given: kept, no note
    assert training_batch(big, 15e12, 8192, None, 16e6)[0] == round(16e6 / 8192)
    # more tokens never give a smaller batch
    assert default_global_batch(big, 30e12, 8192)[0] >= b_big  # type: ignore[arg-type]
