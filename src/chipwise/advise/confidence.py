"""A confidence band for predictions, from the validation error against published measurements."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from chipwise.errors import ChipwiseError


@dataclass(frozen=True, slots=True, kw_only=True)
class Confidence:
    """Absolute relative error of training-throughput predictions on published measurements."""

    kind: str  # gpu | tpu | all
    rows: int
    median_abs_error: float
    p90_abs_error: float
    source: str = "chipwise validate (published measurements)"

    def band(self, value: float) -> tuple[float, float]:
        """The p90 band around a predicted value: [v / (1 + p90), v * (1 + p90)]."""
        return value / (1 + self.p90_abs_error), value * (1 + self.p90_abs_error)


@cache
def training_confidence() -> dict[str, Confidence]:
    """Per chip kind ("gpu", "tpu", "all"); empty when no validation data can be found."""
    try:
        from chipwise.perf.validation import run_validation

        report = run_validation("train")
    except (ChipwiseError, OSError):
        return {}
    out: dict[str, Confidence] = {}
    for kind, group in (("all", "train"), ("gpu", "train-gpu"), ("tpu", "train-tpu")):
        stats = report.stats(group)
        if stats is not None:
            out[kind] = Confidence(
                kind=kind,
                rows=stats.rows,
                median_abs_error=stats.median_abs_error,
                p90_abs_error=stats.p90_abs_error,
            )
    return out
