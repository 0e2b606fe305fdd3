"""Render a ``Recommendation`` for the terminal: the options table, the pick and its reasons,
the trade-off and what was excluded (JSON is ``report.advice_json``)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from chipwise.advise.defaults import DEADLINE_SOURCE
from chipwise.advise.display import format_energy, format_run_time, format_usd
from chipwise.advise.option import Option
from chipwise.advise.recommend import Recommendation
from chipwise.advise.situations import describe, is_workstation_card
from chipwise.perf import InferPrediction, TrainPrediction
from chipwise.report.advice_json import option_mfu
from chipwise.units import GB, format_seconds
from chipwise.workload.finetune import lora_params
from chipwise.workload.ir import LORA_TARGETS, Training, TransformerSpec

METHOD_WORDS = {
    "full": "full training (every weight)",
    "lora": "LoRA fine-tune",
    "qlora": "QLoRA fine-tune (4-bit base)",
}


def _short_count(n: float) -> str:
    """41.9e6 -> '41.9M', 1e9 -> '1B' (the way model cards write counts)."""
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.3g}"


def job_line(rec: Recommendation) -> str:
    """One line saying what job was sized, so a default answer names its assumptions."""
    wl = rec.request.workload
    phase = wl.phase
    if not isinstance(phase, Training):
        return ""
    what = METHOD_WORDS.get(phase.method, phase.method)
    if phase.adapters and isinstance(wl.model, TransformerSpec):
        targets = (
            "all attention and MLP projections"
            if set(phase.lora_targets) == set(LORA_TARGETS)
            else ", ".join(phase.lora_targets)
        )
        n = _short_count(lora_params(wl.model, phase))
        what += f", rank {phase.lora_rank} on {targets} ({n} trainable parameters)"
    tokens = f"{_short_count(rec.request.tokens)} tokens, " if rec.request.tokens else ""
    other = [m for m in ("full", "lora", "qlora") if m != phase.method]
    return (
        f"Job: {wl.name} {what}; {tokens}{phase.seq_len}-token sequences, "
        f"{phase.global_batch} per step (--method {'|'.join(other)} to compare)"
    )


def _years(y: float) -> str:
    return f"{y * 12:.0f} months" if y < 1 else f"{y:.1f} years"


def ownership_lines(rec: Recommendation) -> list[str]:
    """--own-hardware: the purchase in whole units, payback and break-even against renting."""
    adv = rec.ownership
    if adv is None:
        return []
    own = adv.ownership
    unit = own.unit
    what = (
        f"{own.units} × {own.chip_id} card{'s' if own.units > 1 else ''}"
        if unit.chips == 1
        else f"{own.units} × {own.chip_id} {unit.label}{'s' if own.units > 1 else ''}"
    )
    share = (
        f"; this job uses {own.chips_used} of the {own.chips_bought} for "
        f"{format_run_time(own.job_hours / 24)}"
        if own.chips_used < own.chips_bought
        else ""
    )
    buy = (
        f"buy: {what}, {format_usd(own.capex_usd)} up front ({own.chips_bought} × "
        f"{format_usd(own.chip_usd)} + server and network share){share}"
    )
    r = adv.rent
    took = format_run_time(r.days) if r.days is not None else ""
    rent = (
        f"the same job rented: {format_usd(own.rent_usd)} on {r.chip.id} ×{r.total_chips} "
        f"for {took} (cheapest {adv.pricing})"
    )
    if own.payback_years is None:
        pays = f"at {own.duty_cycle:.0%} utilization the purchase never pays back against renting"
    else:
        pays = (
            f"kept {own.duty_cycle:.0%} busy with work like this, it pays back in "
            f"{_years(own.payback_years)}"
        )
    if own.break_even_utilisation is None:
        even = "owning never beats renting this work, even at 100% utilization"
    else:
        even = (
            f"owning beats renting above {own.break_even_utilisation:.0%} utilization "
            f"(over {own.amortisation_years:g} years)"
        )
    return [buy, rent, f"{pays}; {even}"]


def smallest_gpu_line(rec: Recommendation) -> str:
    """For LoRA/QLoRA: the smallest single GPU the job fits on, with its memory (the reason
    to fine-tune with adapters is to fit on one small GPU)."""
    phase = rec.request.workload.phase
    s = rec.smallest_gpu
    if not isinstance(phase, Training) or not phase.adapters or s is None:
        return ""
    if rec.pick is not None and s.chip.id == rec.pick.chip.id and rec.pick.total_chips == 1:
        return ""
    p = s.prediction
    mem = f"{p.memory.total_bytes / GB:,.1f} of {p.capacity_bytes / GB:,.0f} GB"
    where = "on one workstation card" if is_workstation_card(s.chip) else "smallest GPU it fits on"
    return f"{where}: {s.chip.name} ({mem}): {describe(s)}"


def single_card_line(rec: Recommendation) -> str:
    """For LoRA/QLoRA: the best single workstation card and why it is or is not the pick."""
    one = rec.single_card
    if one is None or one.why == "the best option is already one card":
        return ""
    small = rec.smallest_gpu
    if smallest_gpu_line(rec) and small is not None and small.chip.id == one.option.chip.id:
        return f"that card: {one.why}"  # the line above already describes it
    return f"one card: {describe(one.option)}; {one.why}"


def _time(o: Option) -> str:
    """Training: the run's wall clock; serving: one request's latency."""
    if o.days is None:
        p = o.prediction
        return format_seconds(p.request_time_s) if isinstance(p, InferPrediction) else "—"
    return format_run_time(o.days)


def _prices(rec: Recommendation) -> str:
    req = rec.request
    if req.own_hardware:
        return "owned (TCO)"
    where = "any cloud" if req.cloud == "any" else req.cloud
    pricing = "cheapest of any pricing" if req.pricing == "any" else req.pricing
    return f"{pricing} prices, {where}"


def options_table(rec: Recommendation, limit: int = 12) -> Table:
    """Each chip's best option, best first (at most ``limit`` rows)."""
    training = isinstance(rec.request.workload.phase, Training)
    title = f"Best option per chip (objective: {rec.request.objective}; {_prices(rec)})"
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("chip")
    table.add_column("×n", justify="right")
    if training:
        table.add_column("run", justify="right")
        table.add_column("tok/s/chip", justify="right")
        table.add_column("MFU", justify="right")
    else:
        table.add_column("TTFT p99", justify="right")
        table.add_column("TPOT p99", justify="right")
        table.add_column("tok/s/chip", justify="right")
        table.add_column("$/1M out", justify="right")
    table.add_column("cost" if training else "cost/day", justify="right")
    table.add_column("energy" if training else "energy/day", justify="right")
    for i, o in enumerate(rec.options[:limit], 1):
        p = o.prediction
        if isinstance(p, TrainPrediction):
            mfu = option_mfu(o)
            mid = [_time(o), f"{p.tokens_per_s_per_chip:,.0f}", f"{mfu:.0%}" if mfu else "—"]
        else:
            assert isinstance(p, InferPrediction)
            per_m = getattr(o.cost, "usd_per_million_output_tokens", None)
            mid = [
                format_seconds(p.ttft_p99_s) if p.ttft_p99_s != float("inf") else "∞",
                format_seconds(p.tpot_p99_s),
                f"{p.output_tokens_per_s_per_chip:,.0f}",
                f"${per_m:,.2f}" if per_m is not None else "—",
            ]
        energy = format_energy(o.kwh) if o.kwh is not None else "—"
        usd = format_usd(o.usd) if o.usd is not None else "—"
        chip = o.chip.id + (" ★" if o is rec.pick else "")
        count = f"{o.total_chips} P/D" if o.disaggregated else str(o.total_chips)
        table.add_row(str(i), chip, count, *mid, usd, energy)
    if any(o.disaggregated for o in rec.options[:limit]):
        table.caption = "P/D: disaggregated, separate prefill and decode replicas"
        table.caption_justify = "left"
    return table


def _indented(text: str | Text, indent: int, marker: str = "", style: str = "") -> Padding:
    """``text`` indented by ``indent`` columns (after ``marker``, if any), so that its
    wrapped lines stay under it on a narrow terminal instead of starting at column 0."""
    body = Text(text, style=style) if isinstance(text, str) else text
    if not marker:
        return Padding(body, (0, 0, 0, indent), expand=False)
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True)
    grid.add_column()
    grid.add_row(Text(marker, style=style), body)
    return Padding(grid, (0, 0, 0, indent), expand=False)


# What the default (one-screen) answer shows; --verbose shows everything.
SHORT_OPTION_ROWS = 8
SHORT_EVIDENCE_LINES = 2
SHORT_EXCLUDED_CHIPS = 6


def render_recommendation(rec: Recommendation, *, verbose: bool = False) -> RenderableType:
    """The whole advise answer for the terminal: one screen by default, everything with
    ``verbose`` (plan, price source, every evidence line and exclusion reason)."""
    parts: list[RenderableType] = []
    if rec.non_ml is not None:
        parts.append(Text(f"{rec.non_ml.workload.title}: not an ML workload.", style="bold"))
        for r in rec.reasons:
            parts.append(_indented(r.text, 0, "•"))
        if rec.non_ml.options:
            parts.extend(_non_ml_options(rec, verbose=verbose))
            count = len(rec.non_ml.capable)
            parts.append(Text(f"{count} chips can run it ({rec.non_ml.basis})."))
        else:
            capable = ", ".join(rec.non_ml.capable[:8]) or "none of the chips considered"
            extra = len(rec.non_ml.capable) - 8
            more = f" (+{extra} more)" if extra > 0 else ""
            parts.append(Text(f"Chips that can run it ({rec.non_ml.basis}): {capable}{more}"))
        parts.extend(_excluded(rec, verbose=verbose))
        return Group(*parts)
    job = job_line(rec)
    if job:
        parts.append(Text(job))
    if rec.options:
        parts.append(options_table(rec, limit=50 if verbose else SHORT_OPTION_ROWS))
    if rec.pick is None:
        parts.append(Text("No chip qualifies.", style="bold red"))
    else:
        o = rec.pick
        p = o.prediction
        mem = f"{p.memory.total_bytes / GB:,.1f}/{p.capacity_bytes / GB:,.0f} GB per chip"
        parts.append(
            Text.assemble(
                ("Recommendation: ", "bold"),
                (f"{o.chip.name} ×{o.total_chips}", "bold green"),
                f"  ({describe(o)})",
            )
        )
        parts.append(_indented(f"plan {p.plan}; {mem}" if verbose else mem, 2))
        for small in (smallest_gpu_line(rec), single_card_line(rec)):
            if small:
                parts.append(_indented(small, 2))
        for line in ownership_lines(rec):
            parts.append(_indented(line, 2))
        if verbose:
            parts.append(_indented(f"price: {o.price_label}", 2))
        for label, best in (("best GPU", rec.best_gpu), ("best TPU", rec.best_tpu)):
            if best is not None:
                parts.append(_indented(f"{label}: {describe(best)}", 2))
    parts.extend(_run_terms(rec))
    parts.extend(_tradeoff(rec))
    if rec.confidence is not None:
        parts.extend(Text(line) for line in confidence_lines(rec))
    if rec.reasons:
        parts.append(Text("Why:", style="bold"))
        for r in rec.reasons:
            parts.append(_indented(f"{r.situation}: {r.text}", 0, "•"))
            shown = r.evidence if verbose else r.evidence[:SHORT_EVIDENCE_LINES]
            for e in shown:
                parts.append(_indented(e, 4, "–"))
            if len(shown) < len(r.evidence):
                parts.append(_indented(f"(+{len(r.evidence) - len(shown)} more with --verbose)", 4))
    parts.extend(_excluded(rec, verbose=verbose))
    for n in rec.notes:
        parts.append(_indented(n, 0, "Note:", style="yellow"))
    return Group(*parts)


def confidence_lines(rec: Recommendation) -> list[str]:
    """'Confidence: serving-throughput predictions are within ±22% (median) and ...', the
    reason when the rows are not the chip's own, and the latency bands."""
    c = rec.confidence
    if c is None:
        return []
    on = c.scope or c.kind
    lines = [
        f"Confidence: {c.what} predictions are within ±{c.median_abs_error:.0%} (median) and "
        f"±{c.p90_abs_error:.0%} (90th percentile) of {c.rows} published measurements ({on})"
        + (f"; {c.note}." if c.note else ".")
    ]
    for lat in rec.latency_confidence:
        lines.append(
            f"  {lat.what}: ±{lat.median_abs_error:.0%} (median), ±{lat.p90_abs_error:.0%} "
            f"(p90) of {lat.rows} measurements ({lat.scope})"
            + (f"; {lat.note}" if lat.note else "")
        )
    return lines


def _rate_text(rate: float, unit: str) -> str:
    if unit == "bytes":
        return f"{rate / 1e12:,.2f} TB/s"
    return f"{rate / 1e12:,.1f} TFLOP/s"


def _non_ml_options(rec: Recommendation, *, verbose: bool) -> list[RenderableType]:
    """The non-ML job's time and cost on each capable chip, best first, and the pick."""
    answer = rec.non_ml
    assert answer is not None
    unit = "bytes" if "PB" in answer.work or "bytes" in answer.work else "flops"
    table = Table(title=f"Job: {answer.work}", title_justify="left")
    for col, just in (("#", "right"), ("chip", "left"), ("sustained", "right"),
                      ("time", "right"), ("cost", "right"), ("price", "left")):  # fmt: skip
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    rows = answer.options if verbose else answer.options[:SHORT_OPTION_ROWS]
    for i, o in enumerate(rows, 1):
        time = format_run_time(o.hours / 24) + (" ≥" if o.lower_bound else "")
        table.add_row(
            str(i),
            o.chip.id + (" ★" if i == 1 else ""),
            _rate_text(o.rate_per_s, unit),
            time,
            format_usd(o.usd) if o.usd is not None else "—",
            o.price_label,
        )
    best = answer.options[0]
    cost = f", {format_usd(best.usd)} ({best.price_label})" if best.usd is not None else ""
    lines: list[RenderableType] = [
        table,
        Text.assemble(
            ("Recommendation: ", "bold"),
            (best.chip.name, "bold green"),
            f"  ({format_run_time(best.hours / 24)}{cost})",
        ),
    ]
    if any(o.lower_bound for o in answer.options):
        lines.append(
            _indented(
                "≥: timed at the peak fp32 rate (no sourced sustained share): a lower bound", 2
            )
        )
    return lines


def _run_terms(rec: Recommendation) -> list[RenderableType]:
    """The batch and deadline the advisor assumed for a training run, and where from."""
    req = rec.request
    if not isinstance(req.workload.phase, Training):
        return []
    lines: list[RenderableType] = []
    if req.batch_note:
        lines.append(_indented(f"batch: {req.batch_note}", 2))
    limit = req.deadline_limit_days
    why = "--deadline-days" if req.deadline_days else DEADLINE_SOURCE
    lines.append(_indented(f"deadline: {limit:g} days ({why})", 2))
    return lines


# Points of the cost/time Pareto front shown in the terminal (the HTML plot shows them all).
MAX_TRADEOFF_POINTS = 5


def pareto_front(options: tuple[Option, ...]) -> list[Option]:
    """Allowed training options no other option beats on both cost and run time, fastest
    first (each one is cheaper than every faster one)."""
    runs = [o for o in options if o.allowed and o.days is not None and o.usd is not None]
    front: list[Option] = []
    for o in sorted(runs, key=lambda o: (o.days or 0.0, o.usd or 0.0)):
        if not front or (o.usd or 0.0) < (front[-1].usd or 0.0):
            front.append(o)
    return front


def _tradeoff(rec: Recommendation) -> list[RenderableType]:
    """A few points of the cost/time front: what a faster (or cheaper) run would take."""
    front = pareto_front(rec.considered or rec.options)
    if len(front) < 2:
        return []
    if len(front) > MAX_TRADEOFF_POINTS:
        step = (len(front) - 1) / (MAX_TRADEOFF_POINTS - 1)
        front = [front[round(i * step)] for i in range(MAX_TRADEOFF_POINTS)]
    lines: list[RenderableType] = [Text("Cost/time trade-off (Pareto front):", style="bold")]
    for o in front:
        star = (
            " ★"
            if rec.pick is not None
            and o.chip.id == rec.pick.chip.id
            and (o.total_chips == rec.pick.total_chips)
            else ""
        )
        lines.append(
            _indented(
                f"{o.chip.id} ×{o.total_chips:,}: {_time(o)}, {format_usd(o.usd or 0.0)}{star}",
                2,
                "–",
            )
        )
    return lines


def exclusion_cause(why: str) -> str:
    """The cause of an exclusion without its particulars: 'does not fit: needs 300 GB ...'
    -> 'does not fit'; 'no bf16 rate in the catalog (it has: ...)' -> 'no bf16 rate in the
    catalog'."""
    cut = len(why)
    for sep in (": ", " ("):
        i = why.find(sep)
        if 0 < i < cut:
            cut = i
    return why[:cut]


def _excluded(rec: Recommendation, *, verbose: bool = False) -> list[RenderableType]:
    """Excluded chips grouped by cause, with counts, most common first; ``verbose`` gives
    each full reason."""
    if not rec.excluded:
        return []
    by_why: dict[str, list[str]] = {}
    for e in rec.excluded:
        by_why.setdefault(e.why if verbose else exclusion_cause(e.why), []).append(e.chip_id)
    groups = sorted(by_why.items(), key=lambda kv: -len(kv[1]))
    n = len(rec.excluded)
    lines: list[RenderableType] = [
        Text(f"Excluded ({n} chip{'s' if n != 1 else ''}):", style="dim")
    ]
    for why, chips in groups:
        if verbose:
            lines.append(_indented(f"{', '.join(chips)}: {why}", 2, style="dim"))
            continue
        names = ", ".join(chips[:SHORT_EXCLUDED_CHIPS])
        if len(chips) > SHORT_EXCLUDED_CHIPS:
            names += f" +{len(chips) - SHORT_EXCLUDED_CHIPS}"
        lines.append(_indented(f"{why} ({len(chips)}): {names}", 2, style="dim"))
    return lines
