"""A self-contained HTML report of a ``Recommendation``: one file, opens without a network.

``render_html(rec)`` returns the page; ``write_html_report(rec, path)`` writes it
(``chipwise advise --html report.html``). plotly.js is inlined once per page; each chart's
figure is a ``<script type="application/json" data-chart="ID">`` block next to its
``<div id="ID">`` (ids from ``charts.charts_for``), drawn by a few lines of script at the end.

Sections: the answer (pick, best GPU, best TPU), the confidence band, the charts (roofline per
chip of interest, time and cost, the Pareto plot, memory), every chip's best option, the
reasons with their evidence, the compatibility findings of a scanned project, excluded chips,
and every price's source and date. Every string is HTML-escaped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from chipwise._version import __version__
from chipwise.advise.option import Option
from chipwise.advise.recommend import Recommendation
from chipwise.cost import OwnedRunCost, RunCost, ServingCost
from chipwise.perf import InferPrediction, TrainPrediction
from chipwise.report.advice import (
    job_line,
    ownership_lines,
    single_card_line,
    smallest_gpu_line,
)
from chipwise.report.charts import (
    WEB_EXTRA_HINT,
    Chart,
    ReportError,
    charts_for,
    esc,
    figure_json,
    is_training,
    plan_text,
    require_plotly,
)
from chipwise.report.svg import svg_charts_section
from chipwise.units import GB, format_seconds

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1d1d1f; background: #fafafa; }
main { max-width: 1200px; margin: 0 auto; padding: 24px; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.sub { color: #555; margin-top: 0; }
.answer { background: #fff; border-left: 6px solid #d62728; padding: 12px 16px;
          box-shadow: 0 1px 3px rgba(0,0,0,.08); }
.answer .pick { font-size: 1.3em; font-weight: 600; }
.chart-box { margin: 0; background: #fff; box-shadow: 0 1px 3px rgba(0,0,0,.08); overflow: hidden; }
.chart-box figcaption { padding: 0 12px 8px; }
.chart { min-height: 420px; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 12px; }
table { border-collapse: collapse; background: #fff; width: 100%; font-size: 0.92em; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eee; vertical-align: top;
         overflow-wrap: break-word; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.pick td { font-weight: 600; background: #fff4f4; }
.reason { background: #fff; padding: 8px 12px; margin: 8px 0;
          box-shadow: 0 1px 3px rgba(0,0,0,.08); }
.reason .tag { font-size: 0.8em; padding: 1px 6px; border-radius: 8px; background: #eee; }
.tag.agrees { background: #dff0d8; } .tag.contradicts { background: #f8d7da; }
.verdict-runs { color: #2e7d32; } .verdict-runs-with-changes { color: #b26a00; }
.verdict-does-not-run { color: #c62828; }
.muted { color: #666; font-size: 0.9em; }
footer { color: #777; font-size: 0.85em; margin-top: 2em; }
"""

DRAW_SCRIPT = """
document.querySelectorAll('script[type="application/json"][data-chart]').forEach(function (el) {
  var fig = JSON.parse(el.textContent);
  Plotly.newPlot(el.getAttribute('data-chart'), fig.data, fig.layout,
                 {responsive: true, displaylogo: false});
});
"""


@cache
def plotly_js() -> str:
    """The plotly.js bundle that ships with the python package (no network, no CDN)."""
    require_plotly()
    from plotly.offline import get_plotlyjs

    js: str = get_plotlyjs()
    return js


def json_for_script(data: Any) -> str:
    """JSON safe inside a ``<script>`` element: ``<``, ``>`` and ``&`` become escapes."""
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    numeric: set[int],
    highlight: int | None = None,
) -> str:
    """An HTML table; cells are escaped here, columns in ``numeric`` right-aligned, the row
    at index ``highlight`` marked as the pick."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = []
    for r, row in enumerate(rows):
        cells = "".join(
            f'<td class="num">{esc(c)}</td>' if i in numeric else f"<td>{esc(c)}</td>"
            for i, c in enumerate(row)
        )
        body.append(f'<tr class="pick">{cells}</tr>' if r == highlight else f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _days(o: Option) -> str:
    if o.days is not None:
        return f"{o.days:,.2f}" if o.days < 10 else f"{o.days:,.0f}"
    p = o.prediction
    return format_seconds(p.request_time_s) if isinstance(p, InferPrediction) else "—"


def _mfu(o: Option) -> str:
    p = o.prediction
    if not isinstance(p, TrainPrediction):
        return "—"
    return f"{p.achieved_flops_per_s_per_chip / o.chip.peak_flops_per_s(p.precision):.0%}"


def options_section(rec: Recommendation) -> str:
    """Every chip's best option, best first; the pick's row highlighted."""
    training = is_training(rec)
    header = ["#", "chip", "×n", "plan"]
    header += (
        ["days", "tok/s/chip", "MFU"]
        if training
        else ["TTFT p99", "TPOT p99", "out tok/s/chip", "$/1M out"]
    )
    header += ["$ total" if training else "$/day", "kWh" if training else "kWh/day", "price"]
    rows = []
    for i, o in enumerate(rec.options, 1):
        p = o.prediction
        if isinstance(p, TrainPrediction):
            mid = [_days(o), f"{p.tokens_per_s_per_chip:,.0f}", _mfu(o)]
        else:
            assert isinstance(p, InferPrediction)
            per_m = getattr(o.cost, "usd_per_million_output_tokens", None)
            mid = [
                format_seconds(p.ttft_p99_s) if p.ttft_p99_s != float("inf") else "∞",
                format_seconds(p.tpot_p99_s),
                f"{p.output_tokens_per_s_per_chip:,.0f}",
                f"${per_m:,.2f}" if per_m is not None else "—",
            ]
        count = str(o.total_chips)
        if o.disaggregated:  # P prefill + D decode replicas of n chips
            count += f" ({o.prefill_replicas}P+{o.replicas - o.prefill_replicas}D ×{o.chips})"
        rows.append(
            [
                str(i),
                o.chip.id + (" ★" if o is rec.pick else ""),
                count,
                plan_text(p.plan),
                *mid,
                f"{o.usd:,.0f}" if o.usd is not None else "—",
                f"{o.kwh:,.0f}" if o.kwh is not None else "—",
                o.price_label,
            ]
        )
    pick = next((i for i, o in enumerate(rec.options) if o is rec.pick), None)
    numeric = {0, 2, 4, 5, 6, 7, 8} if training else {0, 2, 4, 5, 6, 7, 8, 9}
    table = _table(header, rows, numeric=numeric, highlight=pick)
    return f'<h2>Every chip\'s best option</h2><section id="options">{table}</section>'


def _option_line(label: str, o: Option) -> str:
    p = o.prediction
    parts = [f"{o.chip.name} ×{o.total_chips}", f"plan {plan_text(p.plan)}"]
    if o.days is not None:
        parts.append(f"{_days(o)} days")
    elif isinstance(p, InferPrediction):
        parts.append(f"{format_seconds(p.request_time_s)} per request")
    if o.usd is not None:
        parts.append(f"${o.usd:,.0f}" + ("" if o.days is not None else "/day"))
    mem = f"{p.memory.total_bytes / GB:,.0f}/{p.capacity_bytes / GB:,.0f} GB per chip"
    parts.append(mem)
    return f"<div><b>{esc(label)}:</b> {esc('; '.join(parts))}</div>"


def answer_section(rec: Recommendation) -> str:
    """The pick, the best GPU and the best TPU, and the confidence band."""
    out = ['<section class="answer" id="answer">']
    job = job_line(rec)
    if job:
        out.append(f'<div class="muted" id="job">{esc(job)}</div>')
    if rec.non_ml is not None:
        n = rec.non_ml
        out.append(f'<div class="pick">{esc(n.workload.title)}: not an ML workload.</div>')
        out.append(
            f"<div>Chips that can run it ({esc(n.basis)}): {esc(', '.join(n.capable))}</div>"
        )
    elif rec.pick is None:
        out.append('<div class="pick">No chip qualifies.</div>')
    else:
        o = rec.pick
        out.append(
            f'<div class="pick" id="pick">Recommendation: {esc(o.chip.name)} ×{o.total_chips}</div>'
        )
        out.append(f'<div class="muted">price: {esc(o.price_label)}</div>')
        for label, best in (("pick", o), ("best GPU", rec.best_gpu), ("best TPU", rec.best_tpu)):
            if best is not None:
                out.append(_option_line(label, best))
        extra = [*ownership_lines(rec), smallest_gpu_line(rec), single_card_line(rec)]
        out.extend(f'<div class="extra">{esc(line)}</div>' for line in extra if line)
    out.append(confidence_html(rec))
    out.append("</section>")
    return "".join(out)


def confidence_html(rec: Recommendation) -> str:
    """The validation error of the model, and the band it puts around the pick's numbers."""
    c = rec.confidence
    if c is None:
        return (
            '<div id="confidence" class="muted">Confidence: no validation data was found, so '
            "no band is given.</div>"
        )
    text = (
        f"Confidence: {c.what} predictions are within ±{c.median_abs_error:.0%} "
        f"(median) and ±{c.p90_abs_error:.0%} (90th percentile) of {c.rows} published "
        f"measurements ({c.scope or c.kind}; {c.source})."
    )
    if c.note:
        text += f" The band is {c.note}."
    for lat in rec.latency_confidence:
        text += (
            f" {lat.what}: ±{lat.median_abs_error:.0%} (median), ±{lat.p90_abs_error:.0%} "
            f"(p90) of {lat.rows} measurements ({lat.scope})."
        )
    o = rec.pick
    if o is not None:
        bands = []
        if o.days is not None:
            lo, hi = c.band(o.days)
            bands.append(f"{lo:,.2f} to {hi:,.2f} days")
        if o.usd is not None:
            lo, hi = c.band(o.usd)
            bands.append(f"${lo:,.0f} to ${hi:,.0f}" + ("" if o.days is not None else "/day"))
        if bands:
            text += f" For the pick that is {' and '.join(bands)} (p90 band)."
    return f'<div id="confidence">{esc(text)}</div>'


def charts_section(charts: Sequence[Chart]) -> str:
    """One ``<figure>`` per chart: the plot's div, its JSON and its caption."""
    if not charts:
        return ""
    blocks = []
    for chart in charts:
        caption = f'<figcaption class="muted">{esc(chart.caption)}</figcaption>'
        blocks.append(
            f'<figure class="chart-box"><div class="chart" id="{esc(chart.id)}"></div>'
            f'<script type="application/json" data-chart="{esc(chart.id)}">'
            f"{json_for_script(figure_json(chart.figure))}</script>"
            f"{caption if chart.caption else ''}</figure>"
        )
    return f'<h2>Charts</h2><section id="charts" class="grid">{"".join(blocks)}</section>'


def reasons_section(rec: Recommendation) -> str:
    if not rec.reasons:
        return (
            '<h2>Why</h2><section id="reasons"><p class="muted">No situation of the '
            "article's table applies to this request.</p></section>"
        )
    out = ['<h2>Why</h2><section id="reasons">']
    for r in rec.reasons:
        tag = {True: ("agrees", "agrees with the article"), False: ("contradicts",
               "contradicts the article"), None: ("", "")}[r.agrees_with_article]  # fmt: skip
        badge = f' <span class="tag {tag[0]}">{esc(tag[1])}</span>' if tag[1] else ""
        evidence = "".join(f"<li>{esc(e)}</li>" for e in r.evidence)
        out.append(
            f'<div class="reason" data-rule="{esc(r.rule)}"><div><b>{esc(r.situation)}</b>'
            f' <span class="tag">favours {esc(r.favours.upper())}</span>{badge}</div>'
            f"<div>{esc(r.text)}</div>" + (f"<ul>{evidence}</ul>" if evidence else "") + "</div>"
        )
    out.append("</section>")
    return "".join(out)


def compatibility_section(rec: Recommendation) -> str:
    """The scanned project's verdict per platform and the findings behind it."""
    proj = rec.request.project
    if proj is None:
        return ""
    out = [f'<h2>Compatibility of {esc(proj.path)}</h2><section id="compatibility">']
    flags = [
        f"frameworks: {', '.join(proj.frameworks) or 'none'}",
        f"CUDA-specific: {', '.join(proj.cuda_specific) or 'none'}",
        f"needs fp64: {'yes' if proj.needs_fp64 else 'no'}",
        f"needs graphics: {'yes' if proj.needs_graphics else 'no'}",
    ]
    out.append(f'<p class="muted">{esc("; ".join(flags))}</p>')
    platforms = list(dict.fromkeys([*proj.verdicts, *(f.platform for f in proj.findings)]))
    for platform in platforms:
        verdict = proj.verdicts.get(platform, "runs")
        out.append(
            f'<h3>{esc(platform)}: <span class="verdict-{esc(verdict)}">{esc(verdict)}</span></h3>'
        )
        rows = [
            [f.name, f.where, f.verdict, f.porting or "—", f.effort or "—"]
            for f in proj.findings
            if f.platform == platform
        ]
        if rows:
            out.append(
                _table(["what", "where", "verdict", "porting path", "effort"], rows, numeric=set())
            )
        else:
            out.append('<p class="muted">No findings on this platform.</p>')
    out.append("</section>")
    return "".join(out)


def _price_row(o: Option) -> list[str]:
    cost = o.cost
    if isinstance(cost, RunCost | ServingCost):
        offer = cost.offer
        return [
            o.chip.id,
            f"{offer.provider} {offer.pricing}",
            offer.region,
            f"${offer.usd_per_chip_hour:,.2f}/chip-h",
            offer.source,
            offer.date,
        ]
    if isinstance(cost, OwnedRunCost):
        buy = cost.owned.purchase
        return [o.chip.id, "owned", "—", f"${buy.usd:,.0f} per chip", buy.source, buy.date]
    return [o.chip.id, o.price_label, "—", "—", "—", "—"]


def prices_section(rec: Recommendation) -> str:
    """Where every price in the report comes from, and when it was read."""
    if not rec.options:
        return ""
    rows = [_price_row(o) for o in rec.options]
    table = _table(["chip", "price", "region", "rate", "source", "date"], rows, numeric={3})
    return f'<h2>Prices: sources and dates</h2><section id="prices">{table}</section>'


def excluded_section(rec: Recommendation) -> str:
    if not rec.excluded and not rec.notes:
        return ""
    out = ['<h2>Excluded and notes</h2><section id="excluded">']
    if rec.excluded:
        out.append(
            _table(["chip", "why"], [[e.chip_id, e.why] for e in rec.excluded], numeric=set())
        )
    out += [f"<p>Note: {esc(n)}</p>" for n in rec.notes]
    out.append("</section>")
    return "".join(out)


def _constraints(rec: Recommendation) -> str:
    req = rec.request
    parts = [
        f"objective: {req.objective}",
        f"cloud: {req.cloud}",
        f"{req.pricing} prices",
        f"precision: {req.precision}",
    ]
    if req.tokens:
        parts.append(f"{req.tokens:,.3g} tokens")
    if req.requests_per_day:
        parts.append(f"{req.requests_per_day:,.0f} requests/day")
    if req.own_hardware:
        parts.append("own hardware")
    if req.budget_usd is not None:
        parts.append(f"budget ${req.budget_usd:,.0f}")
    if req.deadline_days is not None:
        parts.append(f"deadline {req.deadline_days:g} days")
    if req.framework:
        parts.append(f"framework: {req.framework}")
    if req.chip_ids:
        parts.append(f"chips: {', '.join(req.chip_ids)}")
    return "; ".join(parts)


def plotly_available() -> bool:
    """Whether the interactive charts can be drawn (plotly, the ``[web]`` extra)."""
    try:
        require_plotly()
    except ReportError:
        return False
    return True


def render_html(rec: Recommendation) -> str:
    """The whole report as one self-contained HTML page: plotly.js inlined once, or, without
    plotly, static SVG charts (``report.svg``) and a line saying how to get interactive ones.
    """
    if not plotly_available():
        return _page(
            rec,
            svg_charts_section(
                rec, f"Static charts: for interactive ones, {WEB_EXTRA_HINT} and re-run."
            ),
            head_script="",
        )
    return _page(
        rec, charts_section(charts_for(rec)), head_script=f"<script>{plotly_js()}</script>"
    )


def _page(rec: Recommendation, charts_html: str, *, head_script: str) -> str:
    phase = "training" if is_training(rec) else "serving"
    title = f"chipwise: {rec.request.workload.name} {phase}"
    body = "".join(
        [
            f"<h1>{esc(title)}</h1>",
            f'<p class="sub">{esc(_constraints(rec))}</p>',
            answer_section(rec),
            charts_html,
            options_section(rec) if rec.options else "",
            reasons_section(rec),
            compatibility_section(rec),
            excluded_section(rec),
            prices_section(rec),
            f"<footer>chipwise {esc(__version__)}: predictions from the per-architecture "
            "model, prices from the catalog (sources above).</footer>",
        ]
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style>"
        f"{head_script}</head>"
        f"<body><main>{body}</main>"
        f"{f'<script>{DRAW_SCRIPT}</script>' if head_script else ''}</body></html>\n"
    )


def write_html_report(rec: Recommendation, path: str | Path) -> Path:
    """Write ``render_html(rec)`` to ``path`` (UTF-8) and return the path.

    Raises:
        ReportError: the file cannot be written.
    """
    target = Path(path)
    page = render_html(rec)
    try:
        target.write_text(page, encoding="utf-8")
    except OSError as err:
        raise ReportError(
            f"cannot write the HTML report to {target}: {err.strerror}; choose another --html path"
        ) from err
    return target
