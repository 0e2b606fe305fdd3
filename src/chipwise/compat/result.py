"""The scan's result: findings with their places, and a verdict per platform.

    ScanReport
     ├── platforms: PlatformVerdict × 4 (NVIDIA CUDA, AMD ROCm, Intel XPU, Google TPU)
     │    └── issues: Issue (one per rule that lowers the verdict, with every location)
     ├── findings: Finding (one per rule per file:line)
     │    └── impacts: Impact × 4 (status, verdict, porting path, effort per platform)
     └── summary flags for the advisor: frameworks, uses_cuda_specific_libs, custom_kernels,
         needs_fp64, needs_graphics, tpu_ready_signals

A verdict reads the project *as it is*: ``runs``, ``runs-with-changes`` (the issues say what
to change and the effort), or ``does-not-run`` (something has no build or no equivalent on
that platform; the issues give the porting path).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from chipwise.compat.knowledge import Effort, Platform, Status, Verdict
from chipwise.errors import ScanError


@dataclass(frozen=True, slots=True, kw_only=True)
class Impact:
    """What one finding means on one platform."""

    platform: Platform
    status: Status  # the knowledge's support value
    verdict: Verdict  # the verdict that status alone gives
    counts: bool  # False: optional, a TPU path seen from a GPU, or already handled
    porting: str  # '' where it runs as is
    effort: Effort | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One package or code signal at one place in the project."""

    kind: Literal["package", "signal"]
    key: str  # rule id in data/packages.toml
    title: str  # the rule's display name
    subject: str  # what was seen: 'flash-attn>=2', 'torch.cuda.synchronize', 'kernel.cu'
    via: Literal["dist", "conda", "import", "signal"]  # how it was found
    file: str  # posix path relative to the scanned root
    line: int
    evidence: str  # the source line
    why: str
    optional: bool
    condition: str  # why it is optional ('' when required)
    tpu_path: bool  # a TPU route the project offers
    impacts: tuple[Impact, ...]  # one per platform, in PLATFORMS order

    def impact(self, platform: Platform) -> Impact:
        return next(i for i in self.impacts if i.platform == platform)

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Issue:
    """A rule that lowers one platform's verdict, with every place it was found."""

    key: str
    title: str
    status: Status
    verdict: Verdict
    why: str
    porting: str
    effort: Effort | None
    locations: tuple[str, ...]  # 'file:line', sorted


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformVerdict:
    """The verdict for one platform and what it rests on."""

    platform: Platform
    name: str  # 'Google TPU'
    verdict: Verdict
    effort: Effort | None  # the largest effort among the issues; None when it runs
    issues: tuple[Issue, ...]  # worst first
    notes: tuple[str, ...]  # caveats that do not change the verdict


@dataclass(frozen=True, slots=True, kw_only=True)
class ScanReport:
    """Everything ``scan_project`` found. JSON form: ``render.report_to_dict``."""

    root: str
    files_scanned: int
    dependency_files: tuple[str, ...]
    platforms: tuple[PlatformVerdict, ...]
    findings: tuple[Finding, ...]
    frameworks: tuple[str, ...]  # 'jax', 'keras', 'pytorch', 'tensorflow'
    uses_cuda_specific_libs: tuple[str, ...]  # required packages that run on NVIDIA, not TPU
    custom_kernels: tuple[str, ...]  # kernel signal ids: cuda-kernel, triton-kernel, ...
    needs_fp64: bool  # float64 on the accelerator (not NumPy on the host)
    needs_graphics: bool  # OpenGL / Vulkan / DirectX use
    tpu_ready_signals: tuple[str, ...]  # rule ids of TPU routes already present
    unclassified_packages: tuple[str, ...]  # declared but not in the knowledge file
    notes: tuple[str, ...]  # what was skipped or could not be read
    knowledge_last_checked: str

    def platform(self, platform: Platform) -> PlatformVerdict:
        """The verdict block of ``platform`` ('nvidia-cuda', 'amd-rocm', ...)."""
        for p in self.platforms:
            if p.platform == platform:
                return p
        known = ", ".join(p.platform for p in self.platforms)
        raise ScanError(f"unknown platform {platform!r}; use one of {known}")

    def verdict(self, platform: Platform) -> Verdict:
        return self.platform(platform).verdict
