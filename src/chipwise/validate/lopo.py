"""Out-of-sample scores: which rows a constant used, and leave one publication out.

Two things make a validation row *in-sample*: an efficiency constant read off the very
measurement the row holds (``data/in_sample.toml`` names them), and the fitted
``sustained_tensor_fraction``, the one parameter fitted to the published training rows.

``leave_one_publication_out`` scores the training rows out of sample: for each publication,
``sustained_tensor_fraction`` is refitted on the training rows of every *other* publication
(``fit_sustained``), and the publication's own rows are predicted with that value. This is
the headline training figure of ``chipwise validate``.

The fit (``benchmarks/validate.py --fit-sustained`` prints it for efficiency.toml) is the
fixed point of f <- round(f x median(measured / predicted), 3) per chip group, started from
the packaged value. A row's prediction depends only on its own group's value, so
predictions are cached by (row, value) across the fits of one run.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
from pydantic import BaseModel, ConfigDict

from chipwise.errors import ChipwiseError
from chipwise.hardware.catalog import chip as find_chip
from chipwise.hardware.chip import Chip
from chipwise.perf import Efficiency, efficiency_for
from chipwise.validate.run import Case, Result, run_case

IN_SAMPLE_FILE = "in_sample.toml"
# Rounds of the fixed-point iteration at most (it settles in two or three from the packaged
# value: values are kept to three decimals, as efficiency.toml records them).
FIT_ROUNDS = 6
SUSTAINED = "sustained_tensor_fraction"


# ---- rows a constant used -----------------------------------------------------------------


class _Constant(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    entry: str
    how: str
    rows: list[str]
    group: str = ""


class _InSampleFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    constant: list[_Constant]


@dataclass(frozen=True, slots=True, kw_only=True)
class InSample:
    """One constant of efficiency.toml and the validation rows it was taken from."""

    name: str  # the efficiency parameter
    entry: str  # where in efficiency.toml: kind.gpu, architecture.hopper, ...
    how: str  # read off / fitted, and from what
    rows: tuple[str, ...]


@cache
def in_sample_constants() -> tuple[InSample, ...]:
    """Every constant that used validation rows (package data ``in_sample.toml``)."""
    text = (
        resources.files("chipwise.validate")
        .joinpath("data", IN_SAMPLE_FILE)
        .read_text(encoding="utf-8")
    )
    raw = _InSampleFile.model_validate(tomllib.loads(text))
    return tuple(
        InSample(name=c.name, entry=c.entry, how=c.how, rows=tuple(c.rows)) for c in raw.constant
    )


@cache
def _by_row() -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for c in in_sample_constants():
        for row in c.rows:
            out.setdefault(row, []).append(f"{c.name} ({c.entry})")
    return {k: tuple(v) for k, v in out.items()}


def in_sample_of(case_id: str) -> tuple[str, ...]:
    """The constants (``name (entry)``) read off or fitted to row ``case_id``; () if none."""
    return _by_row().get(case_id, ())


# ---- the sustained fit and leave one publication out --------------------------------------


def sustained_group(chip: Chip) -> str:
    """The chip group that shares one sustained_tensor_fraction (see efficiency.toml)."""
    if chip.kind == "tpu":
        return "tpu-mxu256" if (chip.matrix_unit_dim or 128) >= 256 else "tpu-mxu128"
    return "gpu"


def publication(case: Case) -> str:
    """The publication a row comes from: the repository (not the commit) or the paper; the
    shared cases file is one."""
    if case.source.startswith("github:"):
        return case.source.split("@", 1)[0]
    return case.source.split()[0] if case.source.startswith("url:") else case.source


def with_sustained(values: dict[str, float]) -> Callable[[Chip], Efficiency | None]:
    """Per-chip efficiency with ``sustained_tensor_fraction`` of the chip's group replaced."""

    def eff(chip: Chip) -> Efficiency | None:
        f = values.get(sustained_group(chip))
        base = efficiency_for(chip)
        return base if f is None else dataclasses.replace(base, sustained_tensor_fraction=f)

    return eff


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldOut:
    """The rows of one publication, predicted with the value fitted on the others."""

    publication: str
    fitted: dict[str, float]  # group -> sustained_tensor_fraction fitted without it
    results: tuple[Result, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Lopo:
    """Leave-one-publication-out over the training rows."""

    fitted_all: dict[str, float]  # fitted on every row (what efficiency.toml should hold)
    held_out: tuple[HeldOut, ...]

    @property
    def results(self) -> tuple[Result, ...]:
        """Every training row, each predicted out of sample."""
        return tuple(r for h in self.held_out for r in h.results)


class SustainedFit:
    """Fits ``sustained_tensor_fraction`` per chip group on sets of training rows, caching
    each row's prediction by the value of its group."""

    def __init__(self, cases: Iterable[Case]) -> None:
        self.cases = tuple(c for c in cases if c.phase == "train" and c.usable)
        self._group: dict[str, str] = {}
        self._start: dict[str, float] = {}
        for c in self.cases:
            try:
                ch = find_chip(c.chip)
            except ChipwiseError:
                continue
            g = sustained_group(ch)
            self._group[c.id] = g
            self._start.setdefault(g, efficiency_for(ch).sustained_tensor_fraction)
        self._cache: dict[tuple[str, float], Result] = {}

    def group_of(self, case: Case) -> str:
        """The sustained group of ``case``'s chip ('' for a chip not in the catalog)."""
        return self._group.get(case.id, "")

    def predict(self, case: Case, value: float | None) -> Result:
        """``case`` predicted with its group's value (None: the packaged one)."""
        key = (case.id, value if value is not None else -1.0)
        r = self._cache.get(key)
        if r is None:
            g = self._group.get(case.id)
            values = {} if g is None or value is None else {g: value}
            r = run_case(case, with_sustained(values))
            self._cache[key] = r
        return r

    def fit(self, cases: Sequence[Case]) -> dict[str, float]:
        """The fixed point per group over ``cases`` (groups without rows are left out)."""
        values = {g: v for g, v in self._start.items()
                  if any(self._group.get(c.id) == g for c in cases)}  # fmt: skip
        for _ in range(FIT_ROUNDS):
            ratios: dict[str, list[float]] = {}
            for c in cases:
                g = self._group.get(c.id)
                if g is None:
                    continue
                r = self.predict(c, values[g])
                if r.predicted:
                    ratios.setdefault(g, []).append(c.value / r.predicted)
            new = {g: round(min(1.0, values[g] * float(np.median(x))), 3)
                   for g, x in ratios.items()}  # fmt: skip
            if new == values:
                break
            values = new
        return values

    def leave_one_publication_out(self) -> Lopo:
        every = self.fit(self.cases)
        held: list[HeldOut] = []
        for pub in sorted({publication(c) for c in self.cases}):
            test = [c for c in self.cases if publication(c) == pub]
            values = self.fit([c for c in self.cases if publication(c) != pub])
            results = tuple(self.predict(c, values.get(self.group_of(c))) for c in test)
            held.append(HeldOut(publication=pub, fitted=values, results=results))
        return Lopo(fitted_all=every, held_out=tuple(held))


def leave_one_publication_out(cases: Iterable[Case]) -> Lopo:
    """Score every usable training row of ``cases`` with ``sustained_tensor_fraction`` fitted
    without the row's publication."""
    return SustainedFit(cases).leave_one_publication_out()
