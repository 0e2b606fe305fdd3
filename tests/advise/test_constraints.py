"""Constraints exclude with a reason, and every objective ranks consistently."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chipwise.advise import AdviseRequest, Recommendation, recommend
from chipwise.advise.candidates import search_chip
from chipwise.advise.option import best_option, objective_key
from chipwise.hardware import default_catalog

from .factories import serving, training

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

CAT = default_catalog()
CHIPS = ("h100-sxm", "mi300x", "b200", "tpu-v5e", "tpu-v6e")


@cache
def _recommend_64(objective: str) -> tuple[AdviseRequest, Recommendation]:
    """The five chips up to 64 each under ``objective``: one search per objective, shared by
    the tests that read it (pure, so each would compute the same recommendation)."""
    req = training(chips=CHIPS, max_chips=64, objective=objective)
    return req, recommend(req)


def _check_invariants(rec: Recommendation, req: AdviseRequest) -> None:
    """What every recommendation must satisfy, whatever the request."""
    key = objective_key(req)
    assert all(o.allowed for o in rec.options)
    assert [key(o) for o in rec.options] == sorted(key(o) for o in rec.options)
    if rec.options:
        assert rec.pick is rec.options[0]
        assert all(key(rec.pick)[0] <= key(o)[0] for o in rec.options)
    gpus = [o for o in rec.options if o.chip.kind != "tpu"]
    tpus = [o for o in rec.options if o.chip.kind == "tpu"]
    assert rec.best_gpu is (gpus[0] if gpus else None)
    assert rec.best_tpu is (tpus[0] if tpus else None)
    for o in rec.options:
        if req.budget_usd is not None:
            assert o.usd is not None and o.usd <= req.budget_usd
        if req.deadline_days is not None and o.days is not None:
            assert o.days <= req.deadline_days
        if req.cloud != "any" and not req.own_hardware:
            assert o.price_label.startswith(req.cloud) or o.usd is None
        assert o.prediction.fits
    shown = {o.chip.id for o in rec.options} | {e.chip_id for e in rec.excluded}
    assert shown == set(req.chip_ids)
    assert all(e.why for e in rec.excluded)


@pytest.mark.parametrize("objective", ["cost", "time", "energy"])
def test_the_pick_is_optimal_for_its_objective_among_allowed_options(objective: str) -> None:
    req, rec = _recommend_64(objective)
    _check_invariants(rec, req)
    # each chip's option is that chip's best under the objective
    for o in rec.options:
        assert best_option(search_chip(o.chip, req, CAT).options, req) == o


def test_objectives_rank_by_their_own_measure() -> None:
    recs = {obj: _recommend_64(obj)[1] for obj in ("cost", "time", "energy")}
    picks = {obj: r.pick for obj, r in recs.items()}
    assert all(p is not None for p in picks.values())
    fastest = min(o.days for r in recs.values() for o in r.options if o.days is not None)
    cheapest = min(o.usd for r in recs.values() for o in r.options if o.usd is not None)
    least = min(o.kwh for r in recs.values() for o in r.options if o.kwh is not None)
    # each pick is (within the tie tolerance) the best on its own measure across all runs
    assert picks["time"].days <= fastest * 1.05  # type: ignore[union-attr,operator]
    assert picks["cost"].usd <= cheapest * 1.05  # type: ignore[union-attr,operator]
    assert picks["energy"].kwh <= least * 1.05  # type: ignore[union-attr,operator]


def test_a_budget_excludes_dearer_options_with_the_reason() -> None:
    free = _recommend_64("cost")[1]  # the default objective
    costs = sorted(o.usd for o in free.options if o.usd is not None)
    assert len(costs) >= 2
    budget = (costs[0] + costs[-1]) / 2
    req = training(chips=CHIPS, max_chips=64, budget_usd=budget)
    rec = recommend(req)
    _check_invariants(rec, req)
    over = [o.chip.id for o in free.options if o.usd is not None and o.usd > budget]
    why = {e.chip_id: e.why for e in rec.excluded}
    for chip_id in over:
        if chip_id in why:  # else a cheaper count of it fits the budget
            assert "over the budget" in why[chip_id]
    assert any("over the budget" in w for w in why.values())


def test_a_deadline_excludes_chips_too_slow_at_any_count_with_the_reason() -> None:
    free = recommend(training(chips=CHIPS, max_chips=8, objective="time"))
    slowest = max(free.options, key=lambda o: o.days or 0.0)
    fastest = min(free.options, key=lambda o: o.days or 0.0)
    assert slowest.days is not None and fastest.days is not None
    deadline = slowest.days / 1.10  # below anything the slowest chip reaches on <= 8 chips
    assert deadline > fastest.days
    req = training(chips=CHIPS, max_chips=8, deadline_days=deadline)
    rec = recommend(req)
    _check_invariants(rec, req)
    why = {e.chip_id: e.why for e in rec.excluded}
    assert slowest.chip.id in why
    assert "the deadline" in why[slowest.chip.id] and f"({deadline:g} days)" in why[slowest.chip.id]


def test_an_impossible_budget_leaves_no_pick_and_says_so() -> None:
    rec = recommend(training(chips=CHIPS, max_chips=64, budget_usd=0.01))
    assert rec.pick is None and rec.options == ()
    assert rec.notes and "no chip" in rec.notes[0]
    assert all("budget" in e.why for e in rec.excluded)


@pytest.mark.parametrize("objective", ["cost", "time"])
def test_aws_never_yields_a_tpu(objective: str) -> None:
    req = training(chips=CHIPS, max_chips=16, cloud="aws", objective=objective)
    rec = recommend(req)
    assert rec.best_tpu is None
    why = {e.chip_id: e.why for e in rec.excluded}
    assert "not offered on aws" in why["tpu-v5e"] and "not offered on aws" in why["tpu-v6e"]
    _check_invariants(rec, req)


def test_serving_is_priced_per_day_within_the_budget() -> None:
    req = serving(chips=("h100-sxm", "tpu-v6e", "mi300x"), budget_usd=10_000)
    rec = recommend(req)
    _check_invariants(rec, req)
    assert rec.options and all(o.days is None for o in rec.options)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(
    chips=st.lists(st.sampled_from(CHIPS), min_size=1, max_size=3, unique=True),
    objective=st.sampled_from(["cost", "time", "energy"]),
    cloud=st.sampled_from(["any", "gcp", "aws"]),
    budget=st.one_of(st.none(), st.floats(min_value=20, max_value=500)),
    own=st.booleans(),
)
def test_every_recommendation_keeps_its_invariants(
    chips: list[str], objective: str, cloud: str, budget: float | None, own: bool
) -> None:
    req = replace(
        training(chips=tuple(chips), max_chips=16),
        objective=objective,  # type: ignore[arg-type]
        cloud=cloud,  # type: ignore[arg-type]
        budget_usd=budget,
        own_hardware=own,
    )
    rec = recommend(req)
    _check_invariants(rec, req)
    if own:
        assert rec.best_tpu is None
    if cloud == "aws":
        assert rec.best_tpu is None
