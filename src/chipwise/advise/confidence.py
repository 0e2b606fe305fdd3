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

When the band is not the chip's own, ``Confidence.note`` says why: how many rows each
narrower scope has. Training advice quotes the training rows; serving advice the
serving-throughput rows (phase ``infer``, subset ``throughput``) and, for advice sized by
p99 targets, the TTFT and TPOT rows (subsets ``ttft``, ``tpot``) where the table has them
(``latency_confidence``). The table is data (``benchmarks/validate.py
--write-confidence``): rows added for a vendor narrow its band without a code change.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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
    what: str = "training-throughput"  # or serving-throughput, serving-TTFT, serving-TPOT
    note: str = ""  # why the band is not the chip's own (too few rows closer to it)

    def band(self, value: float) -> tuple[float, float]:
        """The p90 band around a predicted value: [v / (1 + p90), v * (1 + p90)]."""
        return value / (1 + self.p90_abs_error), value * (1 + self.p90_abs_error)


SERVING_PHASE = "infer"
SERVING_SUBSET = "throughput"  # the band quotes serving-throughput rows
# Latency rows of serving (published p99/mean TTFT and TPOT), for advice sized by targets.
LATENCY_SUBSETS = (("ttft", "serving-TTFT"), ("tpot", "serving-TPOT"))
_WHAT = {"throughput": "serving-throughput", "ttft": "serving-TTFT", "tpot": "serving-TPOT"}


def _entry(scope: str, phase: str = PHASE, subset: str | None = None) -> ConfidenceEntry | None:
    try:
        table = load_confidence()
    except ChipwiseError:
        return None
    if subset is None:
        subset = SERVING_SUBSET if phase == SERVING_PHASE else "all"
    # out of sample (leave one publication out) when the table has it, else as shipped
    return table.find(phase, scope, subset=subset) or table.find(
        phase, scope, subset=subset, basis="packaged"
    )


def confidence_for_scope(
    scope: str, phase: str = PHASE, subset: str | None = None
) -> Confidence | None:
    """The band from the rows of ``phase`` (train, or infer: its throughput rows, or the
    ``subset`` named) in ``scope`` (a chip id, vendor:<name>, a kind, or "all"); None when
    the table has none."""
    e = _entry(scope, phase, subset)
    if e is None:
        return None
    what = "training-throughput"
    if phase == SERVING_PHASE:
        what = _WHAT.get(subset or SERVING_SUBSET, f"serving-{subset}")
    return Confidence(
        kind=e.kind,
        rows=e.rows,
        median_abs_error=e.median_abs_error,
        p90_abs_error=e.p90_abs_error,
        scope=scope,
        what=what,
    )


_VENDOR_WORDS = {"nvidia": "NVIDIA", "amd": "AMD", "google": "Google", "intel": "Intel",
                 "aws": "AWS"}  # fmt: skip


def _scope_words(scope: str, chip: Chip | None) -> str:
    """'on tpu-v6e', 'on Google chips', 'on TPUs': where a count of rows was measured."""
    if chip is not None and scope == chip.id:
        return f"on {chip.id}"
    if scope.startswith("vendor:"):
        vendor = scope.removeprefix("vendor:")
        return f"on {_VENDOR_WORDS.get(vendor, vendor)} chips"
    if scope == "all":
        return "in all"
    if scope in ("gpu", "tpu"):
        return f"on {scope.upper()}s"
    return f"on {scope} chips" if scope == "asic" else f"on {scope}"


def confidence_for_chip(
    chip: Chip, phase: str = PHASE, subset: str | None = None
) -> Confidence | None:
    """The narrowest band with at least ``MIN_ROWS`` predicted rows of ``phase`` (and
    ``subset``): the chip, (serving) its vendor, its kind, all. A wider band than the
    chip's own carries a note naming the row counts that were too few."""
    fallback: Confidence | None = None
    scopes: tuple[str, ...] = (chip.id, f"vendor:{chip.vendor.lower()}", chip.kind, "all")
    if phase != SERVING_PHASE:
        scopes = (chip.id, chip.kind, "all")
    fewer: list[str] = []
    for scope in scopes:
        conf = confidence_for_scope(scope, phase, subset)
        if conf is not None and conf.rows >= MIN_ROWS:
            return replace(conf, note=_note(conf, fewer, phase, subset)) if fewer else conf
        fewer.append(f"{conf.rows if conf else 0} {_scope_words(scope, chip)}")
        if conf is not None:
            fallback = fallback or conf
    if fallback is None:
        return None
    return replace(fallback, note=f"only {', '.join(fewer)}: fewer than {MIN_ROWS} rows anywhere")


def _note(conf: Confidence, fewer: list[str], phase: str, subset: str | None) -> str:
    """'from all 69 serving-throughput rows (59 of them on NVIDIA chips): too few closer
    to the chip (1 on tpu-v6e, ...; 5 needed)'."""
    mostly = ""
    if not conf.scope.startswith("vendor:"):
        counts = {v: e.rows for v in _VENDOR_WORDS if (e := _entry(f"vendor:{v}", phase, subset))}
        top = max(counts, key=lambda v: counts[v], default=None)
        if top is not None and counts[top] < conf.rows:
            mostly = f" ({counts[top]} of them on {_VENDOR_WORDS[top]} chips)"
    rows = f"{conf.rows} {conf.what} rows"
    source = (
        f"all {rows}" if conf.scope == "all" else f"the {rows} {_scope_words(conf.scope, None)}"
    )
    return (
        f"from {source}{mostly}: too few closer to the chip ({', '.join(fewer)}; {MIN_ROWS} needed)"
    )


def latency_confidence(chip: Chip) -> tuple[Confidence, ...]:
    """The serving TTFT and TPOT bands for ``chip`` (each by ``confidence_for_chip``'s
    rule), those the table has."""
    out = []
    for subset, _ in LATENCY_SUBSETS:
        conf = confidence_for_chip(chip, SERVING_PHASE, subset)
        if conf is not None:
            out.append(conf)
    return tuple(out)


def training_confidence() -> dict[str, Confidence]:
    """Per chip kind ("gpu", "tpu", "all"); empty when the table has none."""
    out: dict[str, Confidence] = {}
    for kind in ("all", "gpu", "tpu"):
        conf = confidence_for_scope(kind)
        if conf is not None:
            out[kind] = conf
    return out
