"""A confidence band for predictions, from the validation error against published measurements.

The figures come from the confidence table shipped with the package
(``chipwise.validate.load_confidence``: computed by ``benchmarks/validate.py
--write-confidence`` from the training rows of ``chipwise validate``), never from running
the validation at run time. They are out-of-sample figures: each training row predicted
with ``sustained_tensor_fraction`` refitted without the row's publication. For the chip the
advisor recommends, narrowest scope first:

1. the rows measured on that chip, when there are at least ``MIN_ROWS`` of them;
2. else (serving) the rows of its vendor;
3. else the rows of its kind (gpu | tpu | asic);
4. else every row of the phase.

Training advice quotes the training rows; serving advice the serving-throughput rows
(phase ``infer``, subset ``throughput``).
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
    scope: str = ""  # what the rows cover: a chip id, vendor:<name>, a kind, or "all"
    what: str = "training-throughput"  # or serving-throughput

    def band(self, value: float) -> tuple[float, float]:
        """The p90 band around a predicted value: [v / (1 + p90), v * (1 + p90)]."""
        return value / (1 + self.p90_abs_error), value * (1 + self.p90_abs_error)


SERVING_PHASE = "infer"
SERVING_SUBSET = "throughput"  # the band quotes serving-throughput rows


def _entry(scope: str, phase: str = PHASE) -> ConfidenceEntry | None:
    try:
        table = load_confidence()
    except ChipwiseError:
        return None
    subset = SERVING_SUBSET if phase == SERVING_PHASE else "all"
    # out of sample (leave one publication out) when the table has it, else as shipped
    return table.find(phase, scope, subset=subset) or table.find(
        phase, scope, subset=subset, basis="packaged"
    )


def confidence_for_scope(scope: str, phase: str = PHASE) -> Confidence | None:
    """The band from the rows of ``phase`` (train, or infer: its throughput rows) in
    ``scope`` (a chip id, vendor:<name>, a kind, or "all"); None when the table has none."""
    e = _entry(scope, phase)
    if e is None:
        return None
    return Confidence(
        kind=e.kind,
        rows=e.rows,
        median_abs_error=e.median_abs_error,
        p90_abs_error=e.p90_abs_error,
        scope=scope,
        what="serving-throughput" if phase == SERVING_PHASE else "training-throughput",
    )


def confidence_for_chip(chip: Chip, phase: str = PHASE) -> Confidence | None:
    """The narrowest band with at least ``MIN_ROWS`` predicted rows of ``phase``: the chip,
    (serving) its vendor, its kind, all."""
    fallback: Confidence | None = None
    scopes: tuple[str, ...] = (chip.id, f"vendor:{chip.vendor.lower()}", chip.kind, "all")
    if phase != SERVING_PHASE:
        scopes = (chip.id, chip.kind, "all")
    for scope in scopes:
        conf = confidence_for_scope(scope, phase)
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
