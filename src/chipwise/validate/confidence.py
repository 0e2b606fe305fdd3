"""The confidence table: validation errors computed once, shipped as package data.

``advise`` quotes how far the model's predictions were from published measurements. It
does not run the validation at run time: ``benchmarks/validate.py --write-confidence``
predicts every row and writes ``data/confidence.json`` (versioned: schema, chipwise
version, date), and ``load_confidence`` reads it, the same in a source checkout and a
wheel install. ``tests/validate/test_confidence.py`` recomputes it, so a model change that
moves the figures without rewriting the table fails a test instead of going stale.

An entry is the error of one *group* of rows: a phase (train, finetune, infer,
microbench), a scope (``all``, a kind such as ``gpu``, a vendor as ``vendor:nvidia``, or a
chip id), a subset (``all`` or a named slice of the rows, ``row_subsets``) and a basis:

* ``packaged`` - every row, predicted by the model as shipped. Some of its constants were
  read off or fitted to some of these rows (``lopo.in_sample_of``), so it is partly an
  in-sample figure;
* ``out_of_sample`` - training rows predicted leave-one-publication-out (the fitted
  ``sustained_tensor_fraction`` refitted without the row's publication, ``lopo``), other
  rows only when no constant used them. This is the figure to quote as accuracy.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import date
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from chipwise._version import __version__
from chipwise.errors import ChipwiseError
from chipwise.hardware.catalog import chip as find_chip
from chipwise.validate.lopo import Lopo, in_sample_of
from chipwise.validate.run import SCALE_CHIPS, Report, Result, load_model
from chipwise.workload.ir import TransformerSpec

CONFIDENCE_FILE = "confidence.json"
CONFIDENCE_SCHEMA_VERSION = 1
Basis = Literal["packaged", "out_of_sample"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfidenceEntry:
    """The absolute relative error of one group of validation rows."""

    phase: str  # train | finetune | infer | microbench
    scope: str  # all | a kind (gpu) | vendor:<name> | a chip id
    kind: str  # gpu | tpu | asic, or all when the rows mix kinds
    subset: str  # all | a named slice (row_subsets)
    basis: Basis
    out_of_sample: bool  # False: some constant may have been read off or fitted to these rows
    rows: int
    median_abs_error: float
    p90_abs_error: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfidenceTable:
    schema_version: int
    chipwise_version: str
    date: str  # ISO date the table was computed
    source: str  # the command that wrote it
    entries: tuple[ConfidenceEntry, ...]
    # sustained_tensor_fraction per chip group fitted without each publication (the
    # out-of-sample training entries use them), and on every row under ALL_ROWS
    lopo_fits: dict[str, dict[str, float]] = field(default_factory=dict)
    # each training row's prediction with the value fitted without its publication
    lopo_predicted: dict[str, float] = field(default_factory=dict)

    def lopo_results(self, report: Report) -> dict[str, Result]:
        """``report``'s training rows with their stored out-of-sample predictions."""
        return {
            r.case.id: dataclasses.replace(r, predicted=self.lopo_predicted[r.case.id])
            for r in report.results
            if r.case.phase == "train" and r.case.id in self.lopo_predicted
        }

    def find(
        self, phase: str, scope: str, *, subset: str = "all", basis: Basis = "out_of_sample"
    ) -> ConfidenceEntry | None:
        for e in self.entries:
            if (e.phase, e.scope, e.subset, e.basis) == (phase, scope, subset, basis):
                return e
        return None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _EntryFile(_Frozen):
    phase: str
    scope: str
    kind: str
    subset: str
    basis: Basis
    out_of_sample: bool
    rows: int
    median_abs_error: float
    p90_abs_error: float


class _TableFile(_Frozen):
    schema_version: int
    chipwise_version: str
    date: str
    source: str
    entries: list[_EntryFile]
    lopo_fits: dict[str, dict[str, float]] = {}
    lopo_predicted: dict[str, float] = {}


class ConfidenceDataError(ChipwiseError):
    """The shipped confidence table is missing or malformed."""


def confidence_path() -> Path:
    """Where the table lives in the package data."""
    return Path(str(resources.files("chipwise.validate").joinpath("data", CONFIDENCE_FILE)))


def parse_confidence(text: str) -> ConfidenceTable:
    """A table from its JSON text (unknown keys and a foreign schema are errors)."""
    try:
        raw = _TableFile.model_validate_json(text)
    except ValidationError as err:
        raise ConfidenceDataError(
            f"{CONFIDENCE_FILE}: {err.error_count()} bad field(s): {err.errors()[0]['msg']}; "
            "rewrite it with 'python benchmarks/validate.py --write-confidence'"
        ) from err
    if raw.schema_version != CONFIDENCE_SCHEMA_VERSION:
        raise ConfidenceDataError(
            f"{CONFIDENCE_FILE}: schema_version {raw.schema_version}, this chipwise reads "
            f"{CONFIDENCE_SCHEMA_VERSION}; rewrite it with 'python benchmarks/validate.py "
            "--write-confidence'"
        )
    entries = tuple(ConfidenceEntry(**e.model_dump()) for e in raw.entries)
    return ConfidenceTable(
        schema_version=raw.schema_version,
        chipwise_version=raw.chipwise_version,
        date=raw.date,
        source=raw.source,
        entries=entries,
        lopo_fits={k: dict(v) for k, v in raw.lopo_fits.items()},
        lopo_predicted=dict(raw.lopo_predicted),
    )


@cache
def load_confidence() -> ConfidenceTable:
    """The shipped confidence table (package data; read once per process)."""
    try:
        text = (
            resources.files("chipwise.validate")
            .joinpath("data", CONFIDENCE_FILE)
            .read_text(encoding="utf-8")
        )
    except OSError as err:
        raise ConfidenceDataError(
            f"{CONFIDENCE_FILE} is missing from the package data ({err}); reinstall chipwise"
        ) from err
    return parse_confidence(text)


# ---- computing the table ------------------------------------------------------------------


SCALE_SUBSET = f"{SCALE_CHIPS}+"
MOE_SUBSET = "moe"
# Serving rows by what they measure: the three figures behave differently (throughput and
# TPOT are memory-bound decode, TTFT compute-bound prefill).
METRIC_SUBSETS = {
    "output_tokens_per_s": "throughput",
    "output_tokens_per_s_per_chip": "throughput",
    "tokens_per_s": "throughput",
    "requests_per_s": "throughput",
    "ttft_s": "ttft",
    "ttft_p50_s": "ttft",
    "ttft_p99_s": "ttft",
    "tpot_s": "tpot",
    "tpot_p50_s": "tpot",
    "tpot_p99_s": "tpot",
}


@cache
def _is_moe(workload: str, base_dir: Path) -> bool:
    try:
        model = load_model(workload, base_dir)
    except ChipwiseError:
        return False
    return isinstance(model, TransformerSpec) and model.is_moe


def row_subsets(result: Result) -> tuple[str, ...]:
    """The named slices a row belongs to besides ``all``, from the row's own data:
    training on >= ``SCALE_CHIPS`` chips, a mixture-of-experts workload, and serving rows
    by metric (``throughput``, ``ttft``, ``tpot``)."""
    case = result.case
    out: list[str] = []
    if case.phase == "train" and case.chips >= SCALE_CHIPS:
        out.append(SCALE_SUBSET)
    if case.phase in ("train", "finetune", "infer") and _is_moe(case.workload, case.base_dir):
        out.append(MOE_SUBSET)
    if case.phase == "infer" and case.metric in METRIC_SUBSETS:
        out.append(METRIC_SUBSETS[case.metric])
    return tuple(out)


def _scopes(result: Result) -> tuple[str, str, str, str] | None:
    """(all, kind, vendor:<v>, chip id) of the row's chip; None for a chip not in the
    catalog."""
    try:
        c = find_chip(result.case.chip)
    except ChipwiseError:
        return None
    return ("all", c.kind, f"vendor:{c.vendor.lower()}", c.id)


def out_of_sample_results(report: Report, lopo: Lopo | Mapping[str, Result]) -> tuple[Result, ...]:
    """The rows no constant used: training rows as ``lopo`` predicted them (refitted without
    their publication; a ``Lopo`` or its results by row id), every other row as ``report``
    has it unless it is in-sample."""
    held = {r.case.id: r for r in lopo.results} if isinstance(lopo, Lopo) else dict(lopo)
    out: list[Result] = []
    for r in report.results:
        if r.case.phase == "train" and r.case.id in held:
            out.append(held[r.case.id])
        elif not in_sample_of(r.case.id) and r.case.phase != "train":
            out.append(r)
    return tuple(out)


def all_entries(report: Report, lopo: Lopo) -> tuple[ConfidenceEntry, ...]:
    """The whole table: ``packaged`` entries from ``report``, ``out_of_sample`` ones from
    ``lopo`` and the rows no constant used."""
    oos = Report(results=out_of_sample_results(report, lopo))
    return confidence_entries(report) + confidence_entries(
        oos, basis="out_of_sample", out_of_sample=True
    )


def confidence_entries(
    report: Report, *, basis: Basis = "packaged", out_of_sample: bool = False
) -> tuple[ConfidenceEntry, ...]:
    """One entry per (phase, scope, subset) that has predicted rows in ``report``."""
    groups: dict[tuple[str, str, str], list[tuple[float, str]]] = {}
    for r in report.results:
        if r.error is None:
            continue
        scopes = _scopes(r)
        if scopes is None:
            continue
        for scope in scopes:
            for subset in ("all", *row_subsets(r)):
                key = (r.case.phase, scope, subset)
                groups.setdefault(key, []).append((abs(r.error), r.kind))
    out: list[ConfidenceEntry] = []
    for (phase, scope, subset), rows in sorted(groups.items()):
        errs = [e for e, _ in rows]
        kinds = {k for _, k in rows}
        out.append(
            ConfidenceEntry(
                phase=phase,
                scope=scope,
                kind=kinds.pop() if len(kinds) == 1 else "all",
                subset=subset,
                basis=basis,
                out_of_sample=out_of_sample,
                rows=len(errs),
                median_abs_error=float(np.median(errs)),
                p90_abs_error=float(np.percentile(errs, 90)),
            )
        )
    return tuple(out)


ALL_ROWS = "(every publication)"


def lopo_fits(lopo: Lopo) -> dict[str, dict[str, float]]:
    """The fitted values of a leave-one-publication-out run, by publication left out."""
    out = {ALL_ROWS: dict(sorted(lopo.fitted_all.items()))}
    out.update({h.publication: dict(sorted(h.fitted.items())) for h in lopo.held_out})
    return out


def confidence_table(
    entries: Iterable[ConfidenceEntry],
    *,
    source: str,
    lopo: Lopo | None = None,
    on: date | None = None,
) -> ConfidenceTable:
    return ConfidenceTable(
        schema_version=CONFIDENCE_SCHEMA_VERSION,
        chipwise_version=__version__,
        date=(on or date.today()).isoformat(),
        source=source,
        entries=tuple(entries),
        lopo_fits=lopo_fits(lopo) if lopo else {},
        lopo_predicted={r.case.id: r.predicted for r in lopo.results if r.predicted is not None}
        if lopo
        else {},
    )


def confidence_json(table: ConfidenceTable) -> str:
    """The table as JSON text (stable: entries in their order, two-space indent)."""
    data = {
        "schema_version": table.schema_version,
        "chipwise_version": table.chipwise_version,
        "date": table.date,
        "source": table.source,
        "entries": [asdict(e) for e in table.entries],
        "lopo_fits": table.lopo_fits,
        "lopo_predicted": table.lopo_predicted,
    }
    return json.dumps(data, indent=2) + "\n"
