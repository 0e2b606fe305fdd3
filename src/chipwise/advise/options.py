"""What a user states, turned into an ``AdviseRequest``: one place for the defaults.

``chipwise advise`` (the CLI) and ``chipwise.advise`` (the library) both fill an
``AdviseOptions`` with the user's words and numbers, and ``build_request`` derives the rest:
the token budget (``defaults.default_tokens``), the fine-tuning method
(``defaults.default_method``), the global batch (``defaults.training_batch``), the serving
load, and the porting rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chipwise.advise.defaults import (
    DEFAULT_WORKLOAD,
    default_method,
    default_tokens,
    training_batch,
)
from chipwise.advise.request import (
    KV_DTYPES,
    AdviseError,
    AdviseRequest,
    Cloud,
    Framework,
    Objective,
    Pricing,
)
from chipwise.cost import Assumptions, default_assumptions
from chipwise.workload.ir import (
    LORA_DEFAULT_RANK,
    LORA_TARGETS,
    Inference,
    Model,
    Training,
    TransformerSpec,
    Workload,
)
from chipwise.workload.load import load_workload_model

# Serving load when none is given: requests per day.
DEFAULT_REQUESTS_PER_DAY = 1e5
SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True, slots=True, kw_only=True)
class AdviseOptions:
    """The advisor's inputs as a user gives them (the CLI's options, in their units)."""

    workload: str | Model = DEFAULT_WORKLOAD
    phase: str = "train"  # train | infer
    tokens: float | None = None  # train: tokens to train on (None: the default)
    work: float | None = None  # non-ML: work in the kind's unit
    requests_per_day: float | None = None  # infer
    rps: float | None = None  # infer: requests per second instead of per day
    ttft_ms: float | None = None  # infer: p99 time-to-first-token limit
    tpot_ms: float | None = None  # infer: p99 time-per-output-token limit
    kv_dtype: str = "auto"  # infer, engine: KV-cache dtype (auto: from the precision)
    disaggregation: bool = True  # infer, engine: may the search pick prefill/decode pools
    project: Path | None = None  # a folder to scan (read, never run)
    allow_porting: bool = False
    as_is: bool = False
    cloud: Cloud = "any"
    pricing: Pricing = "on-demand"
    own_hardware: bool = False
    budget_usd: float | None = None
    deadline_days: float | None = None
    objective: Objective = "cost"
    framework: Framework | None = None
    precision: str = "bf16"
    seq_len: int = 4096
    global_batch: int | None = None
    batch_tokens: float | None = None
    method: str | None = None  # full | lora | qlora (None: the default)
    lora_rank: int = LORA_DEFAULT_RANK
    lora_targets: tuple[str, ...] = LORA_TARGETS
    batch: int = 64
    input_len: int = 1024
    output_len: int = 256
    chips: tuple[str, ...] = ()  # only these chip ids or aliases (): the whole catalog
    max_chips: int | None = None
    utilization: float | None = None  # owned hardware's duty cycle
    assumptions: Assumptions | None = None  # cost assumptions (e.g. your energy prices)


def check_options(o: AdviseOptions) -> None:
    """Options that contradict each other, or that the phase does not use, are errors (not
    silently ignored); checked before the workload is read."""
    if o.phase not in ("train", "infer"):
        raise AdviseError(f"phase {o.phase!r} is not one of train, infer")
    if o.phase == "infer" and o.tokens is not None:
        raise AdviseError(
            "--tokens is for training; serving is sized by --requests-per-day (drop --tokens, "
            "or use --phase train)"
        )
    if o.phase == "train" and o.requests_per_day is not None:
        raise AdviseError(
            "--requests-per-day is for serving; training is sized by --tokens (drop "
            "--requests-per-day, or use --phase infer)"
        )
    if o.rps is not None and o.requests_per_day is not None:
        raise AdviseError("--rps and --requests-per-day both give the load; give one")
    if o.kv_dtype not in KV_DTYPES:
        raise AdviseError(
            f"unknown --kv-dtype {o.kv_dtype!r}; choose one of {', '.join(KV_DTYPES)}"
        )
    if o.kv_dtype != "auto" and (o.phase != "infer" or not _engine_load(o)):
        raise AdviseError(
            f"--kv-dtype {o.kv_dtype} sets the continuous-batching engine's KV cache: give "
            "--phase infer with --rps, --ttft or --tpot (the static-batch answer keeps the KV "
            "cache in the precision's dtype)"
        )
    if not o.disaggregation and (o.phase != "infer" or not _engine_load(o)):
        raise AdviseError(
            "--no-disaggregation narrows the SLO search: give --phase infer with --rps, "
            "--ttft or --tpot (the static-batch answer never disaggregates)"
        )
    if o.allow_porting and o.as_is:
        raise AdviseError("--allow-porting and --as-is contradict each other; give one")
    if o.global_batch is not None and o.batch_tokens is not None:
        raise AdviseError("give --global-batch or --batch-tokens, not both")


def _engine_load(o: AdviseOptions) -> bool:
    """Whether serving is sized by the continuous-batching engine (an arrival rate or a p99
    target given)."""
    return any(v is not None for v in (o.rps, o.ttft_ms, o.tpot_ms))


def build_request(options: AdviseOptions, model: Model | None = None) -> AdviseRequest:
    """The request ``options`` describe (``model``: the workload already read)."""
    o = options
    check_options(o)
    if model is None:
        model = o.workload if not isinstance(o.workload, str) else load_workload_model(o.workload)
    n_tokens = o.tokens
    if n_tokens is None and isinstance(model, TransformerSpec):
        n_tokens = default_tokens(model)
    batch_note = ""
    if o.phase == "train":
        how = o.method or "full"
        if o.method is None and isinstance(model, TransformerSpec):
            how = default_method(model, tokens_given=o.tokens is not None)
        global_batch, batch_note = training_batch(
            model, n_tokens, o.seq_len, o.global_batch, o.batch_tokens
        )
        wl = Workload(
            model=model,
            phase=Training(seq_len=o.seq_len, global_batch=global_batch, method=how,
                           lora_rank=o.lora_rank, lora_targets=o.lora_targets),
        )  # fmt: skip
    else:
        wl = Workload(
            model=model,
            phase=Inference(batch=o.batch, input_len=o.input_len, output_len=o.output_len,
                            kv_dtype="" if o.kv_dtype == "auto" else o.kv_dtype),
        )  # fmt: skip
    facts = None
    if o.project is not None:
        from chipwise.advise.project import scan_facts

        facts = scan_facts(o.project)
    per_day = None
    if o.phase == "infer":
        per_day = o.rps * SECONDS_PER_DAY if o.rps else o.requests_per_day
        per_day = per_day or DEFAULT_REQUESTS_PER_DAY
    return AdviseRequest(
        workload=wl,
        tokens=n_tokens if o.phase == "train" else None,
        requests_per_day=per_day,
        rps=o.rps or None,
        ttft_p99_s=o.ttft_ms / 1e3 if o.ttft_ms else None,
        tpot_p99_s=o.tpot_ms / 1e3 if o.tpot_ms else None,
        disaggregation=o.disaggregation,
        cloud=o.cloud,
        pricing=o.pricing,
        own_hardware=o.own_hardware,
        budget_usd=o.budget_usd,
        deadline_days=o.deadline_days,
        objective=o.objective,
        framework=o.framework,
        project=facts,
        precision=o.precision,
        chip_ids=o.chips,
        max_chips=o.max_chips,
        porting="allow" if o.allow_porting else "as-is" if o.as_is else "auto",
        work=o.work,
        assumptions=_with_utilization(o.assumptions, o.utilization),
        batch_note=batch_note,
    )


def _with_utilization(
    assumptions: Assumptions | None, utilization: float | None
) -> Assumptions | None:
    """``utilization`` overrides the owned duty cycle (``owned_duty_cycle``)."""
    if utilization is None:
        return assumptions
    base = default_assumptions() if assumptions is None else assumptions
    return base.override(owned_duty_cycle=utilization)
