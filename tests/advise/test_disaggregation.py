"""Prefill/decode disaggregation in the SLO search: picked for long prompts under a tight
TPOT target, not where a colocated deployment needs fewer chips; sized to the fewest
replicas that meet the targets."""

from __future__ import annotations

from dataclasses import replace

from chipwise.advise import AdviseRequest, recommend
from chipwise.advise.candidates import search_chip
from chipwise.advise.disaggregation import DisaggregatedSearch, replicas_below
from chipwise.advise.situations import describe
from chipwise.hardware import default_catalog
from chipwise.perf import InferPrediction, Predictor
from chipwise.report.advice_json import option_to_dict
from chipwise.report.html import options_section
from chipwise.workload.ir import Inference, Workload
from chipwise.workload.load import load_workload_model

H100 = ("h100-sxm",)


def _request(input_len: int, output_len: int, *, rps: float, ttft_s: float, tpot_s: float,
             model: str = "llama3-70b") -> AdviseRequest:  # fmt: skip
    phase = Inference(input_len=input_len, output_len=output_len)
    return AdviseRequest(
        workload=Workload(model=load_workload_model(model), phase=phase),
        rps=rps,
        ttft_p99_s=ttft_s,
        tpot_p99_s=tpot_s,
        chip_ids=H100,
    )


def _search(request: AdviseRequest) -> DisaggregatedSearch:
    colocated = Predictor(request.workload, "h100-sxm", request.precision)
    return DisaggregatedSearch(
        colocated,
        rps=request.serving_rps,
        ttft_p99_s=request.ttft_p99_s,
        tpot_p99_s=request.tpot_p99_s,
    )


def test_long_prompts_under_a_tight_tpot_are_served_disaggregated() -> None:
    # 8k-token prompts: a colocated replica's decode steps carry 8k-token prefill chunks, so
    # a 20 ms p99 TPOT needs many lightly loaded replicas; separate pools do not
    request = _request(8192, 256, rps=10.0, ttft_s=2.0, tpot_s=0.02)
    catalog = default_catalog()
    found = search_chip(catalog.chip("h100-sxm"), request, catalog).options
    colocated = [o for o in found if not o.disaggregated]
    assert colocated and any(o.disaggregated for o in found)
    rec = recommend(request)
    pick = rec.pick
    assert pick is not None and pick.disaggregated
    why = next(r for r in rec.reasons if r.rule == "disaggregated-serving")
    colocated_chips = min(o.total_chips for o in colocated)
    assert f"on {pick.total_chips} chips instead of {colocated_chips} colocated" in why.text
    assert any(e.startswith("colocated: ") for e in why.evidence)
    assert pick.usd is not None and all(o.usd is not None for o in colocated)
    assert pick.usd < min(o.usd for o in colocated if o.usd is not None)
    assert pick.total_chips < min(o.total_chips for o in colocated)
    pred = pick.prediction
    assert isinstance(pred, InferPrediction) and pred.engine is not None
    assert pred.ttft_p99_s <= 2.0 and pred.tpot_p99_s <= 0.02 and not pred.engine.saturated
    assert 0 < pick.prefill_replicas < pick.replicas
    assert pred.engine.prefill_chips == pick.prefill_replicas * pick.chips
    assert "prefill +" in describe(pick) and "decode replicas of" in describe(pick)
    shown = option_to_dict(pick)["disaggregated"]
    assert shown["prefill_chips"] + shown["decode_chips"] == pick.total_chips
    html = options_section(rec)
    decode = pick.replicas - pick.prefill_replicas
    assert f"{pick.total_chips} ({pick.prefill_replicas}P+{decode}D ×{pick.chips})" in html
    assert "TTFT p99" in html and "$/1M out" in html


def test_short_prompts_stay_colocated_because_disaggregation_needs_more_chips() -> None:
    request = _request(128, 512, rps=20.0, ttft_s=2.0, tpot_s=0.05)
    rec = recommend(request)
    pick = rec.pick
    assert pick is not None and not pick.disaggregated
    assert all(r.rule != "disaggregated-serving" for r in rec.reasons)
    # not ignored: the best disaggregated deployment of that replica size, unbounded, needs
    # no fewer chips than the colocated pick (a tie keeps the simpler colocated one)
    dis, why = _search(request).fewest(pick.chips, 64)
    assert dis is not None, why
    assert dis.replicas * dis.chips_per_replica >= pick.total_chips


def test_the_deployment_is_the_fewest_replicas_that_meet_the_targets() -> None:
    request = _request(8192, 256, rps=10.0, ttft_s=2.0, tpot_s=0.03)
    search = _search(request)
    dis, _ = search.fewest(8, 64)
    assert dis is not None and dis.replicas > 2
    fewer, why = search.fewest(8, dis.replicas - 1)
    assert fewer is None and ("TTFT p99" in why or "TPOT p99" in why or "saturates" in why)


def test_a_target_nothing_meets_is_excluded_with_the_disaggregated_figure_too() -> None:
    rec = recommend(_request(8192, 256, rps=10.0, ttft_s=2.0, tpot_s=0.002))
    assert rec.pick is None
    why = " ".join(e.why for e in rec.excluded)
    assert "TPOT p99" in why and "> 2 ms" in why and "disaggregated, up to" in why


def test_the_replica_bound_keeps_disaggregation_below_the_colocated_chips() -> None:
    assert replicas_below(16, 4) == 3  # 12 chips < 16
    assert replicas_below(17, 4) == 4
    assert replicas_below(4, 4) == 0 and replicas_below(None, 8) > 2


def test_no_disaggregation_keeps_every_option_colocated() -> None:
    """The case above with disaggregation off: only colocated options, the same ones."""
    request = _request(8192, 256, rps=10.0, ttft_s=2.0, tpot_s=0.02)
    catalog = default_catalog()
    off = replace(request, disaggregation=False)
    found = search_chip(catalog.chip("h100-sxm"), off, catalog).options
    assert found and not any(o.disaggregated for o in found)
    both = search_chip(catalog.chip("h100-sxm"), request, catalog).options
    assert [o.total_chips for o in found] == [o.total_chips for o in both if not o.disaggregated]
