"""``chipwise advise``: compare the catalog for a workload and recommend, with reasons."""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum
from pathlib import Path

import typer

from chipwise.cli.app import app
from chipwise.cli.defaults import (
    DEFAULT_MAX_CHIPS,
    DEFAULT_WORKLOAD,
    LORA_DEFAULT_RANK,
    LORA_TARGETS,
)
from chipwise.cli.output import (
    check_writable,
    console,
    err_console,
    print_json,
    progress_bar,
    quiet_option,
    refuse_other_phase_options,
    show_progress,
    spinner,
)
from chipwise.limits import (
    MAX_CHIPS,
    MAX_GLOBAL_BATCH,
    MAX_LATENCY_MS,
    MAX_RPS,
    MAX_SEQ_LEN,
    MAX_SERVE_BATCH,
    MAX_WIDTH,
    MAX_WORKERS,
    check_quantity,
)
from chipwise.pool import default_workers
from chipwise.units import parse_quantity


class KvDtypeChoice(StrEnum):
    auto = "auto"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"


class PhaseChoice(StrEnum):
    train = "train"
    infer = "infer"


class CloudChoice(StrEnum):
    gcp = "gcp"
    aws = "aws"
    azure = "azure"
    any = "any"


class PricingChoice(StrEnum):
    on_demand = "on-demand"
    spot = "spot"
    committed_1y = "committed-1y"
    committed_3y = "committed-3y"
    capacity_block = "capacity-block"
    any = "any"


class ObjectiveChoice(StrEnum):
    time = "time"
    cost = "cost"
    energy = "energy"


class MethodChoice(StrEnum):
    full = "full"
    lora = "lora"
    qlora = "qlora"


class FrameworkChoice(StrEnum):
    pytorch = "pytorch"
    jax = "jax"
    tensorflow = "tensorflow"


@app.command("advise")
def advise(
    ctx: typer.Context,
    workload: str = typer.Argument(
        DEFAULT_WORKLOAD,
        metavar="[WORKLOAD]",
        help="Zoo id ('chipwise workload list'), config.json path, or non-ML kind (graphics, "
        "fp64-hpc, hashing, video-encode, ...). Default: Llama-3-8B fine-tuning on 1B tokens.",
        show_default=False,
    ),
    phase: PhaseChoice = typer.Option(
        PhaseChoice.train, "--phase", help="train (a training run) or infer (serving)."
    ),
    tokens: str | None = typer.Option(
        None,
        "--tokens",
        help="Train: tokens to train on, e.g. 15T, 300B or 2e9. Default: 1B for the default "
        "fine-tune, else 20 per parameter (Chinchilla).",
    ),
    work: str | None = typer.Option(
        None,
        "--work",
        help="Non-ML: how much work, in the kind's unit (fp64 FLOPs for fp64-hpc, bytes for "
        "stencil, fp32 FLOPs for graphics), e.g. 5e18. Default: a reference job.",
    ),
    requests_per_day: str | None = typer.Option(
        None,
        "--requests-per-day",
        help="Infer: requests per day to serve, e.g. 1M or 5e5. Default: 100k.",
    ),
    rps: float | None = typer.Option(
        None,
        "--rps",
        min=0.0,
        max=MAX_RPS,
        help="Infer: requests per second (Poisson arrivals); sizes replicas with the "
        "continuous-batching engine. Replaces --requests-per-day.",
    ),
    ttft: float | None = typer.Option(
        None,
        "--ttft",
        min=0.0,
        max=MAX_LATENCY_MS,
        help="Infer: p99 time-to-first-token target in ms.",
    ),
    tpot: float | None = typer.Option(
        None,
        "--tpot",
        min=0.0,
        max=MAX_LATENCY_MS,
        help="Infer: p99 time-per-output-token target in ms.",
    ),
    kv_dtype: KvDtypeChoice = typer.Option(
        KvDtypeChoice.auto,
        "--kv-dtype",
        help="Infer, with --rps/--ttft/--tpot: the engine's KV-cache dtype (fp8 halves the "
        "cache's bytes: more sequences per replica; auto: from --precision).",
    ),
    disaggregation: bool = typer.Option(
        True,
        "--disaggregation/--no-disaggregation",
        help="Infer, with --rps/--ttft/--tpot: may the search also size deployments with "
        "separate prefill and decode pools (NVIDIA Dynamo style)? --no-disaggregation keeps "
        "every replica colocated (engines without a disaggregated mode).",
    ),
    project: Path | None = typer.Option(
        None,
        "--project",
        help="A project folder to scan (read, never run); chips it cannot run on are excluded.",
    ),
    utilization: float | None = typer.Option(
        None,
        "--utilization",
        min=0.01,
        max=1.0,
        help="With --own-hardware: share of the hours the hardware does paid work (default "
        "0.61, a sourced assumption); sets its cost per used hour and the payback.",
    ),
    allow_porting: bool = typer.Option(
        False,
        "--allow-porting",
        help="With --project: rank by the numbers alone, even if the pick needs a port. "
        "Default: a chip that runs the project as is wins unless the port pays for itself.",
    ),
    as_is: bool = typer.Option(
        False, "--as-is", help="With --project: only chips that run the project as is."
    ),
    cloud: CloudChoice = typer.Option(
        CloudChoice.any, "--cloud", help="Which cloud's prices: gcp, aws, azure or any."
    ),
    pricing: PricingChoice = typer.Option(
        PricingChoice.on_demand,
        "--pricing",
        help="Which cloud prices to rank by; any = the cheapest of all.",
    ),
    own_hardware: bool = typer.Option(
        False,
        "--own-hardware",
        help="Buy instead of rent: GPUs priced by 4-year TCO; TPUs excluded (cloud only).",
    ),
    budget_usd: float | None = typer.Option(
        None,
        "--budget-usd",
        help="Spend limit in USD: the whole run (train) or one day (infer). Default: none.",
    ),
    deadline_days: float | None = typer.Option(
        None,
        "--deadline-days",
        help="Train: longest acceptable run, in days of wall clock. Default: 120 (about twice "
        "the ~54 days of Llama 3 405B and DeepSeek-V3 pre-training).",
    ),
    objective: ObjectiveChoice = typer.Option(
        ObjectiveChoice.cost,
        "--objective",
        help="Rank by cost (USD), time (wall clock) or energy (kWh); ties within 5% go to "
        "the faster run (the cheaper one for time).",
    ),
    framework: FrameworkChoice | None = typer.Option(
        None,
        "--framework",
        help="The framework the code is written in; chips without it are excluded. Default: any.",
    ),
    precision: str = typer.Option(
        "bf16",
        "--precision",
        help="Matmul precision: bf16, fp8, int8, fp16, fp32, fp4 (NVFP4/MXFP4), int4 or "
        "w8a16 (weight-only); any case, and as checkpoints name them (NVFP4, W4A16, AWQ).",
    ),
    seq_len: int = typer.Option(
        4096, "--seq-len", min=1, max=MAX_SEQ_LEN, help="Train: tokens per sequence."
    ),
    global_batch: int | None = typer.Option(
        None,
        "--global-batch",
        min=1,
        max=MAX_GLOBAL_BATCH,
        help="Train: sequences per optimizer step. Default: the DeepSeek LLM law for the "
        "run's compute, B = 0.292 x C^0.3271 tokens, to a power of two.",
    ),
    batch_tokens: str | None = typer.Option(
        None,
        "--batch-tokens",
        help="Train: tokens per optimizer step instead of --global-batch, e.g. 16M "
        "(divided by --seq-len).",
    ),
    method: MethodChoice | None = typer.Option(
        None,
        "--method",
        help="Train: full (every weight), lora (frozen bf16 base + adapters) or qlora (4-bit "
        "base + adapters). Default: lora for the default fine-tune, else full.",
    ),
    lora_rank: int = typer.Option(
        LORA_DEFAULT_RANK,
        "--lora-rank",
        min=1,
        max=MAX_WIDTH,
        help="Train, lora/qlora: adapter rank r.",
    ),
    lora_targets: str = typer.Option(
        ",".join(LORA_TARGETS),
        "--lora-targets",
        help="Train, lora/qlora: comma-separated projections to adapt (default: every "
        "attention and MLP projection).",
    ),
    batch: int = typer.Option(
        64, "--batch", min=1, max=MAX_SERVE_BATCH, help="Infer: concurrent requests."
    ),
    input_len: int = typer.Option(
        1024, "--input-len", min=1, max=MAX_SEQ_LEN, help="Infer: prompt tokens."
    ),
    output_len: int = typer.Option(
        256, "--output-len", min=0, max=MAX_SEQ_LEN, help="Infer: generated tokens per request."
    ),
    chips: str | None = typer.Option(
        None,
        "--chips",
        help="Only these chips, comma-separated ids or aliases (e.g. h100,v5p). "
        "Default: the whole catalog.",
    ),
    chip_files: list[Path] = typer.Option(
        [],
        "--chip-file",
        help="Also consider a hypothetical chip: a TOML file in the catalog's schema (sources "
        "optional, [price] optional); repeatable.",
    ),
    max_chips: int | None = typer.Option(
        None,
        "--max-chips",
        min=1,
        max=MAX_CHIPS,
        help="Largest chip count to consider (1, 2, 4, ...). Default: the largest job the "
        f"catalog records for each chip (e.g. 16k-100k GPUs, 50,944 TPU v5e); {DEFAULT_MAX_CHIPS} "
        "for a chip with none.",
    ),
    prices: Path | None = typer.Option(
        None,
        "--prices",
        help="Your own prices, TOML or CSV in the offers schema (see 'chipwise prices'): they "
        "replace the catalog's for the same chip, provider and pricing in this run, and the "
        "output names the file.",
    ),
    html: Path | None = typer.Option(
        None, "--html", help="Also write a self-contained HTML report to this file."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON (schema_version 1, documented in report/advice_json.py)."
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Everything: plan, price sources, all evidence and reasons."
    ),
    workers: int = typer.Option(
        0,
        "--workers",
        min=0,
        max=MAX_WORKERS,
        help="Processes that search the chips at once. Default (0): every core.",
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Compare every chip for WORKLOAD and recommend the best GPU, best TPU and overall pick.

    The reasons follow the article's "when to use which" table, each with the number or scan
    finding behind it.
    """
    from chipwise.advise import AdviseOptions, build_request, check_options, recommend
    from chipwise.cost import with_energy_prices
    from chipwise.hardware import load_chip_file, with_user_chips
    from chipwise.hardware.prices import run_catalog
    from chipwise.perf import precision_id
    from chipwise.report.advice import render_recommendation
    from chipwise.report.advice_json import recommendation_to_dict
    from chipwise.workload.load import load_workload_model

    if html is not None:
        check_writable(html, "--html")
    options = AdviseOptions(
        workload=workload,
        phase=phase.value,
        tokens=_quantity("--tokens", tokens) if tokens else None,
        work=_quantity("--work", work) if work else None,
        requests_per_day=(
            _quantity("--requests-per-day", requests_per_day) if requests_per_day else None
        ),
        rps=rps,
        ttft_ms=ttft,
        tpot_ms=tpot,
        kv_dtype=kv_dtype.value,
        disaggregation=disaggregation,
        project=project,
        allow_porting=allow_porting,
        as_is=as_is,
        cloud=cloud.value,
        pricing=pricing.value,
        own_hardware=own_hardware,
        budget_usd=budget_usd,
        deadline_days=deadline_days,
        objective=objective.value,
        framework=framework.value if framework else None,
        precision=precision_id(precision),
        seq_len=seq_len,
        global_batch=global_batch,
        batch_tokens=_quantity("--batch-tokens", batch_tokens) if batch_tokens else None,
        method=method.value if method else None,
        lora_rank=lora_rank,
        lora_targets=tuple(t.strip() for t in lora_targets.split(",") if t.strip()),
        batch=batch,
        input_len=input_len,
        output_len=output_len,
        chips=_chip_list(chips),
        max_chips=max_chips,
        utilization=utilization,
    )
    check_options(options)
    refuse_other_phase_options(ctx, phase.value)
    catalog, user_prices = run_catalog(prices)  # packaged, then cached, then --prices
    if chip_files:
        user = [load_chip_file(p) for p in chip_files]
        catalog = with_user_chips(catalog, user)
        if options.chips:  # --chips narrows the catalog; the user's chips are asked for too
            options = replace(options, chips=(*options.chips, *(u.chip.id for u in user)))
    options = replace(
        options, assumptions=with_energy_prices(user_prices.energy if user_prices else None)
    )
    with spinner(show_progress(quiet=quiet, as_json=as_json), f"reading {workload}"):
        model = load_workload_model(workload)
    request = build_request(options, model)
    with progress_bar(show_progress(quiet=quiet, as_json=as_json), "chips") as bar:
        task = bar.add_task("planning", total=None)

        def tick(chip_id: str, i: int, total: int) -> None:
            bar.update(task, description=f"planning {chip_id}", completed=i, total=total)

        rec = recommend(request, catalog, progress=tick, workers=workers or default_workers())
    if user_prices is not None:
        rec = replace(rec, notes=(*rec.notes, user_prices.note))
    if html is not None:
        from chipwise.report.html import write_html_report

        write_html_report(rec, html)
        if not (as_json or quiet):
            err_console.print(f"wrote {html}", soft_wrap=True, highlight=False)
    if as_json:
        print_json(recommendation_to_dict(rec))
        return
    console.print(render_recommendation(rec, verbose=verbose))


def _chip_list(text: str | None) -> tuple[str, ...]:
    """``--chips h100,v5p`` -> ids; a value that names no chip is an error, not 'all'."""
    from chipwise.advise import AdviseError

    if text is None:
        return ()
    ids = tuple(c.strip() for c in text.split(",") if c.strip())
    if not ids:
        raise AdviseError(
            f"--chips {text!r} names no chip; give comma-separated ids or aliases, e.g. "
            "--chips h100,v5p (see 'chipwise chips'), or leave it out for the whole catalog"
        )
    return ids


def _quantity(option: str, text: str) -> float:
    """A count such as 15T, 2e9 or 300B; a clear error instead of a traceback."""
    from chipwise.advise import AdviseError

    try:
        value = parse_quantity(text)
    except ValueError:
        raise AdviseError(
            f"{option} {text!r} is not a number; write e.g. 15T, 2.5e12, 300B or 1M"
        ) from None
    return check_quantity(option, value, error=AdviseError)
