"""A disaggregated deployment's prefill pool (``PrefillPool``): parsed from the string a
validation row or a user states, checked, and counted in chips."""

from __future__ import annotations

import pytest

from chipwise.errors import WorkloadError
from chipwise.workload import Inference, PrefillPool, parse_prefill_pool


def test_a_pool_parses_counts_its_chips_and_prints_back() -> None:
    pool = parse_prefill_pool("instances=2,tp=4,ep=4,adp=1,max_num_tokens=12288")
    assert pool == PrefillPool(instances=2, tp=4, ep=4, adp=1, max_num_tokens=12288)
    assert pool.chips == 8
    assert parse_prefill_pool(str(pool)) == pool


def test_experts_default_to_the_engines_chips() -> None:
    assert parse_prefill_pool("instances=4, tp=2, adp=1").ep == 2
    assert parse_prefill_pool("tp=8,ep=4").ep == 4


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("instances=2,tp=4,dp=3", "not one of"),
        ("instances=2,tp", "not one of"),
        ("tp=four", "whole number"),
        ("tp=4,ep=3", "must divide"),
        ("tp=4,adp=2", "adp must be"),
        ("instances=0,tp=4", "instances"),
        ("tp=4,max_num_tokens=-1", "max_num_tokens"),
    ],
)
def test_a_bad_pool_names_the_fault(text: str, match: str) -> None:
    with pytest.raises(WorkloadError, match=match):
        parse_prefill_pool(text)


def test_a_pool_belongs_to_a_disaggregated_load() -> None:
    pool = PrefillPool(instances=2, tp=4, ep=4, adp=1)
    with pytest.raises(WorkloadError, match="disaggregated"):
        Inference(load="rps", rps=1.0, prefill_pool=pool)
    phase = Inference(load="rps", rps=1.0, disaggregated=True, prefill_pool=pool)
    assert phase.prefill_pool is pool
