"""What the user asked: the workload, the scale of the job, constraints and the objective."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from chipwise.errors import ChipwiseError
from chipwise.workload.ir import Workload

Objective = Literal["time", "cost", "energy"]
OBJECTIVES: tuple[Objective, ...] = ("time", "cost", "energy")
Cloud = Literal["gcp", "aws", "azure", "any"]
Framework = Literal["pytorch", "jax", "tensorflow"]
Platform = Literal["nvidia-cuda", "amd-rocm", "intel-xpu", "google-tpu"]

# A run that takes longer than this is not a plan anyone would choose; candidates beyond it
# are dropped unless the user sets --deadline-days. (A year is the horizon at which the
# chips themselves are a generation old; see the article's "massive training" framing.)
MAX_PRACTICAL_DAYS = 365.0


class AdviseError(ChipwiseError):
    """An advise request that cannot be answered as given."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One compatibility finding the advisor cites (from ``chipwise scan``)."""

    name: str  # package or signal, e.g. "flash-attn", "custom CUDA kernel"
    where: str  # file:line
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
    cuda_specific: tuple[str, ...] = ()  # names of CUDA-only libraries / kernels
    needs_fp64: bool = False
    needs_graphics: bool = False

    def blocks(self, platform: Platform) -> bool:
        return self.verdicts.get(platform) == "does-not-run"


@dataclass(frozen=True, slots=True, kw_only=True)
class AdviseRequest:
    """Everything ``recommend`` needs. Training needs ``tokens``; serving a daily load."""

    workload: Workload
    tokens: float | None = None  # training: tokens to train on
    requests_per_day: float | None = None  # serving
    cloud: Cloud = "any"
    own_hardware: bool = False
    budget_usd: float | None = None
    deadline_days: float | None = None
    objective: Objective = "cost"
    framework: Framework | None = None
    project: ProjectFacts | None = None
    precision: str = "bf16"
    chip_ids: tuple[str, ...] = ()  # empty: the whole catalog
    max_chips: int = 4096

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise AdviseError(f"objective must be one of {', '.join(OBJECTIVES)}")
        if self.budget_usd is not None and self.budget_usd <= 0:
            raise AdviseError("--budget-usd must be positive")
        if self.deadline_days is not None and self.deadline_days <= 0:
            raise AdviseError("--deadline-days must be positive")
        if self.max_chips < 1:
            raise AdviseError("--max-chips must be >= 1")
