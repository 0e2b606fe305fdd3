"""What the user asked: the workload, the scale of the job, constraints and the objective."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, get_args

from chipwise.advise.defaults import DEFAULT_DEADLINE_DAYS
from chipwise.cost import Assumptions
from chipwise.errors import ChipwiseError
from chipwise.hardware.chip import Chip
from chipwise.limits import (
    MAX_CHIPS,
    MAX_DAYS,
    MAX_LATENCY_MS,
    MAX_REQUESTS_PER_DAY,
    MAX_RPS,
    MAX_TOKENS,
    MAX_USD,
    MAX_WORK,
    check_number,
    check_whole,
)
from chipwise.perf import PRECISIONS
from chipwise.workload.ir import Primitive, Workload

Objective = Literal["time", "cost", "energy"]
OBJECTIVES: tuple[Objective, ...] = ("time", "cost", "energy")
Cloud = Literal["gcp", "aws", "azure", "any"]
CLOUDS: tuple[Cloud, ...] = get_args(Cloud)
# Which cloud prices rank the options: one pricing model, or the cheapest of all ("any").
# On-demand is the default: spot can be reclaimed mid-run and committed prices need a 1-3
# year contract, so neither is what a first answer should assume.
Pricing = Literal["on-demand", "spot", "committed-1y", "committed-3y", "capacity-block", "any"]
PRICINGS: tuple[Pricing, ...] = get_args(Pricing)
Framework = Literal["pytorch", "jax", "tensorflow"]
Porting = Literal["auto", "allow", "as-is"]
PORTINGS: tuple[Porting, ...] = get_args(Porting)
# KV-cache dtypes of the serving engine (vLLM --kv-cache-dtype); auto: from the precision.
KvDtype = Literal["auto", "bf16", "fp16", "fp8"]
KV_DTYPES: tuple[KvDtype, ...] = get_args(KvDtype)
Platform = Literal["nvidia-cuda", "amd-rocm", "intel-xpu", "google-tpu"]

# A training run that takes longer than this is not a plan anyone would choose; candidates
# beyond it are dropped unless the user sets --deadline-days (sourced in advise.defaults).
MAX_PRACTICAL_DAYS = DEFAULT_DEADLINE_DAYS
# Without --max-chips each chip is sized up to the largest job the catalog records for it
# (``Chip.largest_job_chips``: 100,000 H100 on one fabric, 50,944 TPU v5e in one multislice
# job, ...); a chip with no recorded job stops here, the largest job the advisor sized before
# the catalog recorded any.
DEFAULT_MAX_CHIPS = 1024


def max_chips_for(chip: Chip, max_chips: int | None) -> int:
    """How many chips of ``chip`` the advisor may size: ``--max-chips`` when given (a TPU
    never beyond its largest job), else the catalog's largest job (``DEFAULT_MAX_CHIPS``
    when none is recorded)."""
    job = chip.largest_job_chips
    if max_chips is None:
        return job or DEFAULT_MAX_CHIPS
    if chip.kind == "tpu" and job is not None:
        return min(max_chips, job)
    return max_chips


class AdviseError(ChipwiseError):
    """An advise request that cannot be answered as given."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One compatibility finding the advisor cites (from ``chipwise scan``)."""

    name: str  # package or signal, e.g. "flash-attn", "custom CUDA kernel"
    where: str  # file:line
    key: str = ""  # the scan's rule id, e.g. "flash-attn", "cuda-kernel"
    platform: Platform
    verdict: str  # runs | runs-with-changes | does-not-run
    porting: str = ""  # e.g. "Pallas splash attention"
    effort: str = ""  # small | medium | large


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectFacts:
    """What a project scan tells the advisor; built from ``compat`` by ``advise.project``."""

    path: str
    frameworks: tuple[str, ...] = ()
    verdicts: dict[Platform, str] = field(default_factory=dict)  # platform -> verdict
    findings: tuple[Finding, ...] = ()
    cuda_specific: tuple[str, ...] = ()  # rule ids of CUDA-only libraries / kernels
    needs_fp64: bool = False
    needs_graphics: bool = False

    def blocks(self, platform: Platform) -> bool:
        return self.verdicts.get(platform) == "does-not-run"

    @property
    def cuda_titles(self) -> tuple[str, ...]:
        """Display names of the CUDA-specific libraries and kernels (rule ids as a fallback)."""
        titles = {f.key: f.name for f in self.findings if f.key}
        return tuple(titles.get(k, k) for k in self.cuda_specific)


@dataclass(frozen=True, slots=True, kw_only=True)
class AdviseRequest:
    """Everything ``recommend`` needs. Training needs ``tokens``; serving a daily load."""

    workload: Workload
    tokens: float | None = None  # training: tokens to train on
    requests_per_day: float | None = None  # serving
    # serving SLOs: Poisson arrivals per second and p99 latency targets (seconds); any of
    # them switches serving to the continuous-batching engine and an SLO search
    rps: float | None = None
    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None
    # whether the SLO search may also size prefill/decode-disaggregated deployments
    disaggregation: bool = True
    cloud: Cloud = "any"
    pricing: Pricing = "on-demand"
    own_hardware: bool = False
    budget_usd: float | None = None
    deadline_days: float | None = None
    objective: Objective = "cost"
    framework: Framework | None = None
    project: ProjectFacts | None = None
    precision: str = "bf16"
    chip_ids: tuple[str, ...] = ()  # empty: the whole catalog
    max_chips: int | None = None  # None: each chip's largest recorded job (max_chips_for)
    batch_note: str = ""  # where the global batch came from, when the advisor chose it
    # A scanned project's ports: auto = a chip that runs as is wins unless the port pays for
    # itself; allow = rank by the numbers alone; as-is = only chips that run as is.
    porting: Porting = "auto"
    work: float | None = None  # non-ML: amount of work in the kind's unit (advise.nonml)
    # Cost and energy assumptions (electricity price, grid intensity, PUE, ...); None: the
    # packaged defaults, with each cloud region's own grid and power price where known.
    assumptions: Assumptions | None = None

    @property
    def deadline_limit_days(self) -> float:
        """The longest run allowed: --deadline-days, else ``MAX_PRACTICAL_DAYS``."""
        return self.deadline_days or MAX_PRACTICAL_DAYS

    @property
    def serving_slo(self) -> bool:
        """Whether serving is sized by an arrival rate and latency targets (the engine)."""
        return any(v is not None for v in (self.rps, self.ttft_p99_s, self.tpot_p99_s))

    @property
    def serving_rps(self) -> float:
        """Requests per second to serve: ``rps``, else the daily load spread evenly."""
        if self.rps is not None:
            return self.rps
        return (self.requests_per_day or 1e5) / 86400.0

    def __post_init__(self) -> None:
        _one_of("objective", self.objective, OBJECTIVES)
        _one_of("cloud", self.cloud, CLOUDS)
        _one_of("pricing", self.pricing, PRICINGS)
        _one_of("precision", self.precision, PRECISIONS)
        _one_of("porting", self.porting, PORTINGS)
        for name, value, high in (
            ("--budget-usd", self.budget_usd, MAX_USD),
            ("--deadline-days", self.deadline_days, MAX_DAYS),
            ("--tokens", self.tokens, MAX_TOKENS),
            ("--requests-per-day", self.requests_per_day, MAX_REQUESTS_PER_DAY),
            ("--work", self.work, MAX_WORK),
            ("--rps", self.rps, MAX_RPS),
            ("--ttft", self.ttft_p99_s, MAX_LATENCY_MS / 1e3),
            ("--tpot", self.tpot_p99_s, MAX_LATENCY_MS / 1e3),
        ):
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise AdviseError(f"{name} must be a positive number, got {value:g}")
            if value is not None:
                check_number(name, value, high=high, error=AdviseError)
        if self.max_chips is not None:
            if self.max_chips < 1:
                raise AdviseError(f"--max-chips must be >= 1, got {self.max_chips}")
            check_whole("--max-chips", self.max_chips, low=1, high=MAX_CHIPS, error=AdviseError)
        if isinstance(self.workload.model, Primitive):
            raise AdviseError(
                f"{self.workload.name} is a primitive (one kernel), not a job to buy chips "
                "for; time it with 'chipwise predict' or give a model (see 'chipwise "
                "workload list')"
            )


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise AdviseError(f"unknown {name} {value!r}; choose one of {', '.join(allowed)}")


# Which software platform a chip needs, for the compatibility verdicts of a scanned project.
_PLATFORM_BY_VENDOR: dict[str, Platform] = {
    "nvidia": "nvidia-cuda",
    "amd": "amd-rocm",
    "intel": "intel-xpu",
    "google": "google-tpu",
}


def platform_of(chip: Chip) -> Platform | None:
    """The software platform of a chip (Gaudi and Trainium have their own: None)."""
    if chip.kind == "asic":
        return None
    return _PLATFORM_BY_VENDOR.get(chip.vendor)
