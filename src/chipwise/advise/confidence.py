"""A confidence band for predictions, from the validation error against published measurements.

The band is computed on demand for the chip the advisor recommends, from the training rows
of the validation data (``perf.validation``: the shared public cases plus chipwise's own
measurements), narrowest scope first:

1. the rows measured on that chip, when there are at least ``MIN_ROWS`` of them;
2. else the rows of its kind (gpu | tpu | asic);
3. else every training row.

Only the rows of the chosen scope are predicted (the whole validation takes seconds, one
chip's rows a fraction of that), and each scope is computed once per process.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from chipwise.errors import ChipwiseError
from chipwise.hardware import Chip
from chipwise.hardware.catalog import chip as find_chip
from chipwise.validate import Case, load_cases, run_validation

# Fewer measured rows than this give no 90th percentile worth quoting (with 5 rows the p90 is
# already interpolated between the two worst); below it the band widens to the chip's kind.
MIN_ROWS = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Confidence:
    """Absolute relative error of training-throughput predictions on published measurements."""

    kind: str  # gpu | tpu | asic | all: the kind of chip the rows were measured on
    rows: int
    median_abs_error: float
    p90_abs_error: float
    source: str = "chipwise validate (published measurements)"
    scope: str = ""  # what the rows cover: a chip id, a kind, or "all"

    def band(self, value: float) -> tuple[float, float]:
        """The p90 band around a predicted value: [v / (1 + p90), v * (1 + p90)]."""
        return value / (1 + self.p90_abs_error), value * (1 + self.p90_abs_error)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Row:
    chip_id: str
    kind: str
    index: int  # position in the loaded cases


@cache
def _training_rows() -> tuple[_Row, ...]:
    """Usable training rows whose chip is in the catalog (no prediction yet)."""
    rows: list[_Row] = []
    for i, case in enumerate(_cases()):
        if case.phase != "train" or not case.usable:
            continue
        try:
            c = find_chip(case.chip)
        except ChipwiseError:
            continue
        rows.append(_Row(chip_id=c.id, kind=c.kind, index=i))
    return tuple(rows)


@cache
def _cases() -> tuple[Case, ...]:
    try:
        return tuple(load_cases())
    except (ChipwiseError, OSError):
        return ()


@cache
def confidence_for_scope(scope: str) -> Confidence | None:
    """The band from the training rows of ``scope`` (a chip id, a kind, or "all");
    None when no row of that scope could be predicted."""
    rows = [r for r in _training_rows() if scope in ("all", r.chip_id, r.kind)]
    cases = _cases()
    chosen = [cases[r.index] for r in rows]
    if not chosen:
        return None
    try:
        stats = run_validation("train", cases=chosen).stats("train")
    except (ChipwiseError, OSError):
        return None
    if stats is None:
        return None
    kinds = {r.kind for r in rows}
    return Confidence(
        kind=kinds.pop() if len(kinds) == 1 else "all",
        rows=stats.rows,
        median_abs_error=stats.median_abs_error,
        p90_abs_error=stats.p90_abs_error,
        scope=scope,
    )


def confidence_for_chip(chip: Chip) -> Confidence | None:
    """The narrowest band with at least ``MIN_ROWS`` predicted rows: the chip, its kind, all."""
    fallback: Confidence | None = None
    for scope in (chip.id, chip.kind, "all"):
        conf = confidence_for_scope(scope)
        if conf is None:
            continue
        if conf.rows >= MIN_ROWS:
            return conf
        fallback = fallback or conf
    return fallback


def training_confidence() -> dict[str, Confidence]:
    """Per chip kind ("gpu", "tpu", "all"); empty when no validation data can be found.

    Predicts every training row: use ``confidence_for_chip`` when one chip matters.
    """
    out: dict[str, Confidence] = {}
    for kind in ("all", "gpu", "tpu"):
        conf = confidence_for_scope(kind)
        if conf is not None:
            out[kind] = conf
    return out
