"""A ``Recommendation`` as JSON (``chipwise advise --json``, the web API).

JSON schema (``chipwise advise --json``), version 1::

    {"schema_version": 1, "workload", "phase", "objective",
     "training": {"method", "lora_rank", "lora_targets", "seq_len", "global_batch"} | null,
     "ownership": {"chip", "unit", "unit_chips", "units", "chips_bought", "chips_used",
                   "capex_usd", "rent_usd", "rent": OPTION, "utilization", "payback_years",
                   "break_even_utilization", "amortisation_years"} | null,
     "single_card": {"option": OPTION, "picked", "why", "ties_below_usd_per_chip_hour"}
                    | null,  (LoRA/QLoRA: the best one workstation card, picked or why not)
     "constraints": {"cloud", "pricing", "own_hardware", "budget_usd", "deadline_days",
                     "framework", "tokens", "requests_per_day", "rps", "ttft_p99_s",
                     "tpot_p99_s", "kv_dtype", "disaggregation", "precision", "chips",
                     "max_chips",
                     "deadline_limit_days",
                     "global_batch", "batch_note"},
     "pick": OPTION | null, "best_gpu": OPTION | null, "best_tpu": OPTION | null,
     "options": [OPTION, ...],            # each chip's best allowed option, best first
     "excluded": [{"chip", "why"}],
     "reasons": [{"rule", "situation", "favours", "text", "evidence", "agrees_with_article",
                  "break_even": {"side", "chip", "provider", "pricing", "usd_per_chip_hour",
                                 "today_usd_per_chip_hour", "rests_on"} | null}],
     "confidence": {"kind", "scope", "what", "rows", "median_abs_error", "p90_abs_error",
                    "note", "latency": [{"kind", "scope", "what", "rows",
                                         "median_abs_error", "p90_abs_error", "note"}]}
                   | null,  (what: training-throughput | serving-throughput | serving-TTFT
                             | serving-TPOT; note: why the rows are not the chip's own;
                             latency: TTFT/TPOT bands when sized by p99 targets)
     "notes": [...],
     "non_ml": {"workload", "capable_chips", "basis", "work",
                "options": [{"chip", "rate_per_s", "hours", "usd", "usd_per_chip_hour", "price",
                             "lower_bound"}]} | null}
    OPTION = {"chip", "kind", "chips", "replicas", "total_chips", "plan", "days", "usd",
              "price", "offer", "kwh", "kg_co2e", "memory_per_chip_bytes", "capacity_bytes",
              training: "tokens_per_s_per_chip", "step_time_s", "mfu";
              serving: "output_tokens_per_s", "output_tokens_per_s_per_chip", "ttft_s",
              "tpot_s", "ttft_p99_s", "tpot_p99_s", "load", "usd_per_day",
              "usd_per_million_output_tokens",
              "disaggregated": {"prefill_replicas", "decode_replicas", "prefill_chips",
                                "decode_chips"} | null}

``disaggregated`` (serving): the replicas split into a prefill pool and a decode pool
(``advise.disaggregation``); null when every replica prefills and decodes.
``offer`` is the cloud price the option is ranked with (``chipwise prices --json`` offer:
provider, pricing, usd_per_chip_hour, region, instance, source, date, note, confidence,
stale, age_days), null when owned or unpriced. ``days`` is the training run's wall clock
(null when serving); ``usd`` the whole run (training) or one day (serving), null without
a price; ``kwh`` facility energy of the run (training) or of one day (serving). Fields
are only ever added within a version.
"""

from __future__ import annotations

from typing import Any

from chipwise.advise import Option, Recommendation
from chipwise.advise.confidence import Confidence
from chipwise.advise.situations import BreakEven
from chipwise.hardware import PriceOffer
from chipwise.perf import InferPrediction, TrainPrediction
from chipwise.report.chips import offer_to_dict
from chipwise.workload.ir import Training

JSON_SCHEMA_VERSION = 1


def option_mfu(o: Option) -> float | None:
    """A training option's model FLOP utilisation (None when serving)."""
    p = o.prediction
    if not isinstance(p, TrainPrediction):
        return None
    peak = o.chip.peak_flops_per_s(p.precision)
    return p.achieved_flops_per_s_per_chip / peak


def _break_even(b: BreakEven | None) -> dict[str, Any] | None:
    if b is None:
        return None
    return {
        "side": b.side,
        "chip": b.chip_id,
        "provider": b.provider,
        "pricing": b.pricing,
        "usd_per_chip_hour": b.usd_per_chip_hour,
        "today_usd_per_chip_hour": b.today_usd_per_chip_hour,
        "rests_on": list(b.rests_on),
    }


def _offer(o: Option) -> dict[str, Any] | None:
    offer = getattr(o.cost, "offer", None)
    return None if not isinstance(offer, PriceOffer) else offer_to_dict(offer)


def option_to_dict(o: Option) -> dict[str, Any]:
    p = o.prediction
    out: dict[str, Any] = {
        "chip": o.chip.id,
        "kind": o.chip.kind,
        "chips": o.chips,
        "replicas": o.replicas,
        "total_chips": o.total_chips,
        "plan": str(p.plan),
        "days": o.days,
        "usd": o.usd,
        "price": o.price_label,
        "offer": _offer(o),
        "kwh": o.kwh,
        "kg_co2e": o.energy.kg_co2e if o.energy else None,
        "memory_per_chip_bytes": p.memory.total_bytes,
        "capacity_bytes": p.capacity_bytes,
    }
    if isinstance(p, TrainPrediction):
        out["tokens_per_s_per_chip"] = p.tokens_per_s_per_chip
        out["step_time_s"] = p.step_time_s
        out["mfu"] = option_mfu(o)
    elif isinstance(p, InferPrediction):
        out["output_tokens_per_s"] = p.output_tokens_per_s
        out["output_tokens_per_s_per_chip"] = p.output_tokens_per_s_per_chip
        out["ttft_s"] = p.ttft_s
        out["tpot_s"] = p.tpot_s
        out["ttft_p99_s"] = p.ttft_p99_s if p.ttft_p99_s != float("inf") else None
        out["tpot_p99_s"] = p.tpot_p99_s
        out["load"] = p.engine.load if p.engine is not None else "batch"
        out["usd_per_day"] = o.usd
        out["usd_per_million_output_tokens"] = getattr(
            o.cost, "usd_per_million_output_tokens", None
        )
        out["disaggregated"] = (
            {
                "prefill_replicas": o.prefill_replicas,
                "decode_replicas": o.replicas - o.prefill_replicas,
                "prefill_chips": o.prefill_replicas * o.chips,
                "decode_chips": (o.replicas - o.prefill_replicas) * o.chips,
            }
            if o.disaggregated
            else None
        )
    return out


def _confidence_dict(c: Confidence) -> dict[str, Any]:
    return {
        "kind": c.kind,
        "scope": c.scope,
        "what": c.what,
        "rows": c.rows,
        "median_abs_error": c.median_abs_error,
        "p90_abs_error": c.p90_abs_error,
        "note": c.note,
    }


def recommendation_to_dict(rec: Recommendation) -> dict[str, Any]:
    req = rec.request
    phase = req.workload.phase
    is_infer = not hasattr(phase, "seq_len")
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "workload": req.workload.name,
        "phase": "train" if hasattr(phase, "seq_len") else "infer",
        "objective": req.objective,
        "constraints": {
            "cloud": req.cloud,
            "pricing": req.pricing,
            "own_hardware": req.own_hardware,
            "budget_usd": req.budget_usd,
            "deadline_days": req.deadline_days,
            "framework": req.framework,
            "tokens": req.tokens,
            "requests_per_day": req.requests_per_day,
            "rps": req.rps,
            "ttft_p99_s": req.ttft_p99_s,
            "tpot_p99_s": req.tpot_p99_s,
            # serving: the engine's KV-cache dtype ("auto": from the precision)
            "kv_dtype": (getattr(phase, "kv_dtype", "") or "auto") if is_infer else None,
            # serving SLO search: whether prefill/decode-disaggregated options were weighed
            "disaggregation": req.disaggregation if req.serving_slo else None,
            "precision": req.precision,
            "chips": list(req.chip_ids),
            "max_chips": req.max_chips,
            "deadline_limit_days": req.deadline_limit_days if hasattr(phase, "seq_len") else None,
            "global_batch": getattr(phase, "global_batch", None),
            "batch_note": req.batch_note,
        },
        "training": _training_dict(rec),
        "ownership": _ownership_dict(rec),
        "single_card": _single_card_dict(rec),
        "pick": option_to_dict(rec.pick) if rec.pick else None,
        "best_gpu": option_to_dict(rec.best_gpu) if rec.best_gpu else None,
        "best_tpu": option_to_dict(rec.best_tpu) if rec.best_tpu else None,
        "options": [option_to_dict(o) for o in rec.options],
        "excluded": [{"chip": e.chip_id, "why": e.why} for e in rec.excluded],
        "reasons": [
            {
                "rule": r.rule,
                "situation": r.situation,
                "favours": r.favours,
                "text": r.text,
                "evidence": list(r.evidence),
                "agrees_with_article": r.agrees_with_article,
                "break_even": _break_even(r.break_even),
            }
            for r in rec.reasons
        ],
        "confidence": None
        if rec.confidence is None
        else {
            **_confidence_dict(rec.confidence),
            "latency": [_confidence_dict(c) for c in rec.latency_confidence],
        },
        "notes": list(rec.notes),
        "non_ml": None
        if rec.non_ml is None
        else {
            "workload": rec.non_ml.workload.name,
            "capable_chips": list(rec.non_ml.capable),
            "basis": rec.non_ml.basis,
            "work": rec.non_ml.work,
            "options": [
                {
                    "chip": o.chip.id,
                    "rate_per_s": o.rate_per_s,
                    "hours": o.hours,
                    "usd": o.usd,
                    "usd_per_chip_hour": o.usd_per_chip_hour,
                    "price": o.price_label,
                    "lower_bound": o.lower_bound,
                }
                for o in rec.non_ml.options
            ],
        },
    }


def _ownership_dict(rec: Recommendation) -> dict[str, Any] | None:
    adv = rec.ownership
    if adv is None:
        return None
    own = adv.ownership
    return {
        "chip": own.chip_id,
        "unit": own.unit.label,
        "unit_chips": own.unit.chips,
        "units": own.units,
        "chips_bought": own.chips_bought,
        "chips_used": own.chips_used,
        "capex_usd": own.capex_usd,
        "rent_usd": own.rent_usd,
        "rent": option_to_dict(adv.rent),
        "utilization": own.duty_cycle,
        "payback_years": own.payback_years,
        "break_even_utilization": own.break_even_utilisation,
        "amortisation_years": own.amortisation_years,
    }


def _single_card_dict(rec: Recommendation) -> dict[str, Any] | None:
    one = rec.single_card
    if one is None:
        return None
    return {
        "option": option_to_dict(one.option),
        "picked": one.picked,
        "why": one.why,
        "ties_below_usd_per_chip_hour": one.ties_below_usd_per_chip_hour,
    }


def _training_dict(rec: Recommendation) -> dict[str, Any] | None:
    phase = rec.request.workload.phase
    if not isinstance(phase, Training):
        return None
    return {
        "method": phase.method,
        "lora_rank": phase.lora_rank if phase.adapters else None,
        "lora_targets": list(phase.lora_targets) if phase.adapters else None,
        "seq_len": phase.seq_len,
        "global_batch": phase.global_batch,
    }
