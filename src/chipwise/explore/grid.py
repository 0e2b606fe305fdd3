"""A grid of questions: workloads x chips x counts x precisions x phases x batch settings.

A grid file is TOML (every key optional but ``workloads``; lists multiply, scalars apply to
every point)::

    workloads = ["llama3-8b", "llama3-70b"]      # zoo ids or config.json paths
    chips = ["h100-sxm", "h100-sxm:hbm_bandwidth*1.5", "tpu-v5p"]   # ids, aliases, derived
    chip_files = ["mychip.toml"]                  # hypothetical chips, relative to the grid
    counts = [1, 2, 4, 8]
    precisions = ["bf16", "fp8"]
    phases = ["train", "infer"]
    seq_len = [4096]          # train: tokens per sequence
    global_batch = [256]      # train: sequences per step
    tokens = 1e9              # train: tokens of the run that is priced
    batch = [1, 64]           # infer: requests in a static batch (the "batch" load)
    loads = ["batch", "concurrency=64", "rps=5", "max_throughput"]   # infer: how requests come
    input_len = [1024]        # infer: prompt tokens
    output_len = [256]        # infer: generated tokens
    requests_per_day = 1e5    # infer: the daily load that is priced
    ttft_slo_s = 0.5          # infer, optional: rows say whether their p99 meets it
    tpot_slo_s = 0.05
    cloud = "any"             # gcp | aws | azure | any
    pricing = "on-demand"     # on-demand | spot | committed-1y | committed-3y | any

Training points vary ``seq_len`` x ``global_batch``; serving points vary ``loads`` x
``input_len`` x ``output_len``, and the "batch" load also ``batch`` (the other loads are the
continuous-batching engine's: a closed loop of N clients, Poisson arrivals at R requests/s, or
everything queued at once); each phase only multiplies by its own settings.
"""

from __future__ import annotations

import itertools
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chipwise import limits
from chipwise.errors import ChipwiseError
from chipwise.limits import read_user_file
from chipwise.workload.ir import Inference, Training

Phase = Literal["train", "infer"]
PricingChoice = Literal[
    "on-demand", "spot", "committed-1y", "committed-3y", "capacity-block", "any"
]
CloudChoice = Literal["gcp", "aws", "azure", "any"]
# The default --max-points: a grid this size runs in minutes on a laptop's cores (about
# 0.05 s per serving point, 0.3 s per training point on one core; benchmarks/explore.py).
DEFAULT_MAX_POINTS = 10_000
# The run and the daily load that price a point when the grid names none: the advisor's
# defaults (a 1B-token fine-tune; 100k requests a day).
DEFAULT_TOKENS = 1e9
DEFAULT_REQUESTS_PER_DAY = 1e5


class ExploreError(ChipwiseError):
    """A grid that cannot be explored as given."""


class GridFile(BaseModel):
    """The validated content of a grid file (or of the command line's options)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workloads: list[str] = Field(min_length=1)
    chips: list[str] = []
    chip_files: list[str] = []
    counts: list[int] = Field(default=[1], min_length=1)
    precisions: list[str] = Field(default=["bf16"], min_length=1)
    phases: list[Phase] = Field(default=["train"], min_length=1)
    seq_len: list[int] = Field(default=[Training().seq_len], min_length=1)
    global_batch: list[int] = Field(default=[Training().global_batch], min_length=1)
    tokens: float = Field(default=DEFAULT_TOKENS, gt=0)
    batch: list[int] = Field(default=[Inference().batch], min_length=1)
    input_len: list[int] = Field(default=[Inference().input_len], min_length=1)
    output_len: list[int] = Field(default=[Inference().output_len], min_length=1)
    loads: list[str] = Field(default=["batch"], min_length=1)
    requests_per_day: float = Field(default=DEFAULT_REQUESTS_PER_DAY, gt=0)
    ttft_slo_s: float | None = Field(default=None, gt=0)
    tpot_slo_s: float | None = Field(default=None, gt=0)
    cloud: CloudChoice = "any"
    pricing: PricingChoice = "on-demand"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """What prices and judges every point: the run, the load, the SLOs, the prices asked."""

    tokens: float
    requests_per_day: float
    ttft_slo_s: float | None
    tpot_slo_s: float | None
    cloud: str
    pricing: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """One question: a workload on ``chips`` x ``chip`` at a precision, in one phase."""

    index: int  # position in the grid's expansion (the table's row order)
    workload: str
    chip: str  # as the grid names it: a catalog id/alias, a derived spec, or a file's id
    chips: int
    precision: str
    phase: Phase
    seq_len: int | None = None  # train
    global_batch: int | None = None  # train
    batch: int | None = None  # infer
    input_len: int | None = None  # infer
    output_len: int | None = None  # infer
    load: str | None = None  # infer: batch | concurrency=N | rps=R | max_throughput


@dataclass(frozen=True, slots=True, kw_only=True)
class Grid:
    """A parsed grid: the axes, the chips as named, and the shared settings."""

    spec: GridFile
    base_dir: Path  # chip files and config.json paths are relative to it

    @property
    def settings(self) -> Settings:
        s = self.spec
        return Settings(
            tokens=s.tokens,
            requests_per_day=s.requests_per_day,
            ttft_slo_s=s.ttft_slo_s,
            tpot_slo_s=s.tpot_slo_s,
            cloud=s.cloud,
            pricing=s.pricing,
        )

    def phase_settings(self, phase: Phase) -> list[dict[str, int | str | None]]:
        """The point fields each phase varies, in order (see the module docstring)."""
        s = self.spec
        if phase == "train":
            return [
                {"seq_len": a, "global_batch": b}
                for a, b in itertools.product(s.seq_len, s.global_batch)
            ]
        out: list[dict[str, int | str | None]] = []
        for load in dict.fromkeys(parse_load(x) for x in s.loads):
            batches: list[int | None] = list(s.batch) if load == "batch" else [None]
            for b, i, o in itertools.product(batches, s.input_len, s.output_len):
                out.append({"batch": b, "input_len": i, "output_len": o, "load": load})
        return out

    def size(self, n_chips: int) -> int:
        """Points in the grid when it names ``n_chips`` chips (files included)."""
        s = self.spec
        per_phase = sum(len(self.phase_settings(p)) for p in dict.fromkeys(s.phases))
        return len(s.workloads) * n_chips * len(s.counts) * len(s.precisions) * per_phase

    def points(self, chip_names: Sequence[str]) -> Iterator[Point]:
        """Every point, in a fixed order: workload, chip, precision, phase, settings, count."""
        s = self.spec
        index = 0
        for workload, chip, precision in itertools.product(s.workloads, chip_names, s.precisions):
            for phase in dict.fromkeys(s.phases):
                for fields in self.phase_settings(phase):
                    for n in s.counts:
                        yield Point(index=index, workload=workload, chip=chip, chips=n,
                                    precision=precision, phase=phase,
                                    **fields)  # type: ignore[arg-type]  # fmt: skip
                        index += 1


LOAD_HELP = "batch, concurrency=N, rps=R or max_throughput"


def parse_load(text: str) -> str:
    """A serving load in its canonical form: ``batch``, ``concurrency=64``, ``rps=2.5`` or
    ``max_throughput`` (``max-throughput`` is accepted).

    Raises:
        ExploreError: anything else.
    """
    s = text.strip().lower().replace("-", "_").replace(" ", "")
    if s in ("batch", "max_throughput"):
        return s
    kind, _, value = s.partition("=")
    try:
        if kind == "concurrency" and int(value) >= 1:
            return f"concurrency={int(value)}"
        if kind == "rps" and 0 < float(value) <= limits.MAX_RPS:
            return f"rps={float(value):g}"
    except ValueError:
        pass
    raise ExploreError(f"serving load {text!r}: write one of {LOAD_HELP}")


# Each axis's range: chipwise.limits, as for the same options of predict and advise.
_RANGES = {
    "counts": (1, limits.MAX_CHIPS),
    "seq_len": (1, limits.MAX_SEQ_LEN),
    "global_batch": (1, limits.MAX_GLOBAL_BATCH),
    "batch": (1, limits.MAX_SERVE_BATCH),
    "input_len": (1, limits.MAX_SEQ_LEN),
    "output_len": (0, limits.MAX_SEQ_LEN),
}


def _check(spec: GridFile) -> GridFile:
    for name, (low, high) in _RANGES.items():
        for v in getattr(spec, name):
            if not low <= v <= high:
                raise ExploreError(f"grid {name} must be in {low}..{high:,}, got {v}")
    limits.check_number("grid tokens", spec.tokens, high=limits.MAX_TOKENS, error=ExploreError)
    limits.check_number(
        "grid requests_per_day",
        spec.requests_per_day,
        high=limits.MAX_REQUESTS_PER_DAY,
        error=ExploreError,
    )
    for load in spec.loads:
        parse_load(load)
    if not spec.chips and not spec.chip_files:
        raise ExploreError(
            'the grid names no chip; add chips = ["h100-sxm", ...] or chip_files '
            "(or --chip / --chip-file)"
        )
    return spec


def grid_from(data: dict[str, object], base_dir: Path | None = None, where: str = "grid") -> Grid:
    """A grid from a mapping (a parsed TOML file, or the CLI's options)."""
    try:
        spec = GridFile.model_validate(data)
    except ValidationError as err:
        parts = []
        for e in err.errors():
            loc = ".".join(str(p) for p in e["loc"]) or "grid"
            bad = e.get("input")
            got = f" (got {bad!r})" if isinstance(bad, str | int | float) else ""
            parts.append(f"{loc}: {e['msg']}{got}")
        raise ExploreError(f"{where}: {'; '.join(parts)}") from err
    return Grid(spec=_check(spec), base_dir=base_dir or Path.cwd())


def load_grid(path: Path) -> Grid:
    """Read a grid file: TOML, or YAML with the same keys (``.yaml``/``.yml``; PyYAML, the
    ``[explore]`` extra).

    Raises:
        ExploreError: a missing or malformed file, one clause per bad key.
    """
    p = Path(path)
    yaml_file = p.suffix.lower() in (".yaml", ".yml")
    try:
        if yaml_file:
            raw = _read_yaml(p)
        else:
            raw = tomllib.loads(
                read_user_file(p, what="grid file", error=ExploreError).decode("utf-8")
            )
    except FileNotFoundError:
        raise ExploreError(f"grid file {path} does not exist") from None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ExploreError(f"grid file {path}: not readable TOML: {err}") from err
    return grid_from(raw, p.resolve().parent, where=f"grid file {path}")


def _read_yaml(path: Path) -> dict[str, object]:
    try:
        import yaml
    except ImportError as err:
        raise ExploreError(
            f"grid file {path}: YAML needs PyYAML; pip install 'chipwise[explore]' (or write "
            "the grid as TOML)"
        ) from err
    try:
        data = yaml.safe_load(
            read_user_file(path, what="grid file", error=ExploreError).decode("utf-8")
        )
    except yaml.YAMLError as err:
        raise ExploreError(f"grid file {path}: not readable YAML: {err}") from err
    if not isinstance(data, dict):
        raise ExploreError(f"grid file {path}: the top level must be a mapping of grid keys")
    return data
