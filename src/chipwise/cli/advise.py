"""``chipwise advise``: compare the catalog for a workload and recommend, with reasons."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer
from rich.progress import BarColumn, Progress, TextColumn

from chipwise.advise import AdviseError, AdviseRequest, recommend
from chipwise.advise.defaults import DEFAULT_WORKLOAD, default_tokens
from chipwise.cli.app import app
from chipwise.cli.output import console, err_console, print_json
from chipwise.report.advice import recommendation_to_dict, render_recommendation
from chipwise.units import parse_quantity
from chipwise.workload.ir import Inference, Training, TransformerSpec, Workload
from chipwise.workload.load import load_workload_model


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
    any = "any"


class ObjectiveChoice(StrEnum):
    time = "time"
    cost = "cost"
    energy = "energy"


class FrameworkChoice(StrEnum):
    pytorch = "pytorch"
    jax = "jax"
    tensorflow = "tensorflow"


@app.command("advise")
def advise(
    workload: str = typer.Argument(
        DEFAULT_WORKLOAD,
        help="Zoo id, config.json path, or non-ML kind (graphics, fp64-hpc, hashing, "
        "video-encode). Default: Llama-3-8B fine-tuning on 1B tokens.",
    ),
    phase: PhaseChoice = typer.Option(PhaseChoice.train, "--phase", help="train or infer."),
    tokens: str | None = typer.Option(
        None,
        "--tokens",
        help="Training tokens, e.g. 15T or 2e9. Default: 1B for the default "
        "fine-tune, else 20 tokens per parameter (Chinchilla).",
    ),
    requests_per_day: str | None = typer.Option(
        None, "--requests-per-day", help="Serving load (infer), e.g. 1M. Default 100k."
    ),
    project: Path | None = typer.Option(
        None, "--project", help="Scan this project (never executed) for compatibility."
    ),
    cloud: CloudChoice = typer.Option(CloudChoice.any, "--cloud", help="Where you rent."),
    pricing: PricingChoice = typer.Option(
        PricingChoice.on_demand,
        "--pricing",
        help="Which cloud prices to rank by: on-demand (default), spot, committed-1y, "
        "committed-3y, or any (the cheapest of all).",
    ),
    own_hardware: bool = typer.Option(
        False, "--own-hardware", help="Buy instead of rent (TCO; TPUs are cloud-only)."
    ),
    budget_usd: float | None = typer.Option(None, "--budget-usd", help="Spend limit (USD)."),
    deadline_days: float | None = typer.Option(
        None, "--deadline-days", help="Wall-clock limit for the run."
    ),
    objective: ObjectiveChoice = typer.Option(
        ObjectiveChoice.cost, "--objective", help="Rank by time, cost or energy."
    ),
    framework: FrameworkChoice | None = typer.Option(
        None, "--framework", help="The framework the code is written in."
    ),
    precision: str = typer.Option("bf16", "--precision", help="bf16, fp8, int8, fp16, fp32."),
    seq_len: int = typer.Option(4096, "--seq-len", help="Training sequence length."),
    global_batch: int = typer.Option(256, "--global-batch", help="Sequences per step."),
    batch: int = typer.Option(64, "--batch", help="Serving: concurrent requests."),
    input_len: int = typer.Option(1024, "--input-len", help="Serving: prompt tokens."),
    output_len: int = typer.Option(256, "--output-len", help="Serving: generated tokens."),
    chips: str | None = typer.Option(
        None, "--chips", help="Only these chips (comma-separated ids or aliases)."
    ),
    max_chips: int = typer.Option(1024, "--max-chips", help="Largest chip count to consider."),
    html: Path | None = typer.Option(None, "--html", help="Also write an HTML report here."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (documented, stable)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
) -> None:
    """Compare every chip for WORKLOAD and recommend the best GPU, best TPU and overall pick.

    The reasons follow the article's "when to use which" table, each with the number or scan
    finding behind it.
    """
    model = load_workload_model(workload)
    if phase is PhaseChoice.train:
        wl = Workload(model=model, phase=Training(seq_len=seq_len, global_batch=global_batch))
    else:
        wl = Workload(
            model=model,
            phase=Inference(batch=batch, input_len=input_len, output_len=output_len),
        )
    facts = None
    if project is not None:
        from chipwise.advise.project import scan_facts

        facts = scan_facts(project)
    n_tokens = _quantity("--tokens", tokens) if tokens else None
    if n_tokens is None and isinstance(model, TransformerSpec):
        n_tokens = default_tokens(model, is_default=workload == DEFAULT_WORKLOAD)
    request = AdviseRequest(
        workload=wl,
        tokens=n_tokens if phase is PhaseChoice.train else None,
        requests_per_day=(
            _quantity("--requests-per-day", requests_per_day) if requests_per_day else 1e5
        )
        if phase is PhaseChoice.infer
        else None,
        cloud=cloud.value,
        pricing=pricing.value,
        own_hardware=own_hardware,
        budget_usd=budget_usd,
        deadline_days=deadline_days,
        objective=objective.value,
        framework=framework.value if framework else None,
        project=facts,
        precision=precision,
        chip_ids=tuple(c.strip() for c in chips.split(",") if c.strip()) if chips else (),
        max_chips=max_chips,
    )
    show_progress = not (quiet or as_json)
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} chips"),
        console=err_console,
        transient=True,
        disable=not show_progress,
    ) as bar:
        task = bar.add_task("planning", total=None)

        def tick(chip_id: str, i: int, total: int) -> None:
            bar.update(task, description=f"planning {chip_id}", completed=i, total=total)

        rec = recommend(request, progress=tick)
    if html is not None:
        from chipwise.report.html import write_html_report

        write_html_report(rec, html)
        if not as_json:
            err_console.print(f"wrote {html}")
    if as_json:
        print_json(recommendation_to_dict(rec))
        return
    console.print(render_recommendation(rec))


def _quantity(option: str, text: str) -> float:
    """A count such as 15T, 2e9 or 300B; a clear error instead of a traceback."""
    try:
        return parse_quantity(text)
    except ValueError:
        raise AdviseError(
            f"{option} {text!r} is not a number; write e.g. 15T, 2.5e12, 300B or 1M"
        ) from None
