"""The validation summary: out-of-sample figures first, the in-sample ones beside them.

Groups come from each row's own data, so new rows land in them without a code change: every
row, each phase (train, finetune, infer, microbench), phase by chip kind (``train-gpu``),
and the named subsets of ``confidence.row_subsets`` (``train-1024+``, ``train-moe``,
``infer-ttft``, ...). Each group has two scores:

* out of sample: training rows predicted leave-one-publication-out, other rows only when no
  constant was read off them (``in_sample.toml``);
* as shipped: every row predicted by the packaged model (in-sample rows included).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from chipwise.validate.confidence import out_of_sample_results, row_subsets
from chipwise.validate.lopo import in_sample_of
from chipwise.validate.run import Report, Result, Stats, stats_of

PHASE_ORDER = ("train", "finetune", "infer", "microbench")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupScore:
    group: str
    out_of_sample: Stats | None
    as_shipped: Stats | None
    in_sample_rows: int  # rows of the group a constant was read off or fitted to


def groups_of(result: Result) -> tuple[str, ...]:
    """Every summary group ``result`` counts in: serving rows also by GPU vendor
    (``infer-nvidia``, ``infer-amd``; TPU rows are ``infer-tpu``)."""
    phase = result.case.phase
    kind = (f"{phase}-{result.kind}",) if result.kind else ()
    vendor = (
        (f"{phase}-{result.vendor.lower()}",)
        if phase == "infer" and result.kind == "gpu" and result.vendor
        else ()
    )
    return ("all", phase, *kind, *vendor, *(f"{phase}-{s}" for s in row_subsets(result)))


KINDS = ("gpu", "tpu", "asic")
VENDORS = ("nvidia", "amd", "intel")


def _order(group: str) -> tuple[int, int, str]:
    """all; then each phase, its chip kinds, its GPU vendors, its subsets."""
    if group == "all":
        return (-1, 0, "")
    phase, _, rest = group.partition("-")
    rank = PHASE_ORDER.index(phase) if phase in PHASE_ORDER else len(PHASE_ORDER)
    tier = 0 if not rest else (1 if rest in KINDS else (2 if rest in VENDORS else 3))
    return (rank, tier, rest)


def score_groups(report: Report, lopo: Mapping[str, Result]) -> tuple[GroupScore, ...]:
    """Both scores of every group with predicted rows; ``lopo``: the training rows predicted
    leave-one-publication-out, by row id."""
    oos = out_of_sample_results(report, lopo)
    by: dict[str, tuple[list[Result], list[Result]]] = {}
    for r in report.results:
        if r.error is None:
            continue
        for g in groups_of(r):
            by.setdefault(g, ([], []))[1].append(r)
    for r in oos:
        for g in groups_of(r):
            by.setdefault(g, ([], []))[0].append(r)
    out: list[GroupScore] = []
    for g in sorted(by, key=_order):
        held, shipped = by[g]
        out.append(
            GroupScore(
                group=g,
                out_of_sample=stats_of(held),
                as_shipped=stats_of(shipped),
                in_sample_rows=sum(1 for r in shipped if in_sample_of(r.case.id)),
            )
        )
    return tuple(out)
