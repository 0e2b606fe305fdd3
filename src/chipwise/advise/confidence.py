"""A confidence band for predictions, from the validation error against published measurements.

The figures come from the confidence table shipped with the package
(``chipwise.validate.load_confidence``: computed by ``benchmarks/validate.py
--write-confidence`` from the training rows of ``chipwise validate``), never from running
the validation at run time. For the chip the advisor recommends, narrowest scope first:

1. the rows measured on that chip, when there are at least ``MIN_ROWS`` of them;
2. else the rows of its kind (gpu | tpu | asic);
3. else every training row.
"""

from __future__ import annotations

from dataclasses import dataclass

from chipwise.errors import ChipwiseError
from chipwise.hardware import Chip
from chipwise.validate import ConfidenceEntry, load_confidence

# Fewer measured rows than this give no 90th percentile worth quoting (with 5 rows the p90 is
# already interpolated between the two worst); below it the band widens to the chip's kind.
MIN_ROWS = 5
PHASE = "train"  # the band quotes training-throughput rows


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


def _entry(scope: str) -> ConfidenceEntry | None:
    try:
        table = load_confidence()
    except ChipwiseError:
        return None
    return table.find(PHASE, scope)


def confidence_for_scope(scope: str) -> Confidence | None:
    """The band from the training rows of ``scope`` (a chip id, a kind, or "all");
    None when the table has no row of that scope."""
    e = _entry(scope)
    if e is None:
        return None
    return Confidence(
        kind=e.kind,
        rows=e.rows,
        median_abs_error=e.median_abs_error,
        p90_abs_error=e.p90_abs_error,
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
    """Per chip kind ("gpu", "tpu", "all"); empty when the table has none."""
    out: dict[str, Confidence] = {}
    for kind in ("all", "gpu", "tpu"):
        conf = confidence_for_scope(kind)
        if conf is not None:
            out[kind] = conf
    return out
