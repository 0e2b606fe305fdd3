"""Rank, prune and explain: the advisor's answer for one request.

``recommend(request)`` enumerates chips x counts (``candidates``), keeps what fits and what
the constraints allow, ranks by the objective and returns the best GPU option, the best TPU
option and the overall pick, with the article's situations as reasons (``situations``) and a
confidence band from the validation error (``confidence``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from chipwise.advise.candidates import Option, best_option, objective_key, options_for_chip
from chipwise.advise.confidence import Confidence, training_confidence
from chipwise.advise.request import AdviseRequest, Platform
from chipwise.advise.situations import Context, Reason, non_ml_reason, reasons_for
from chipwise.hardware import Catalog, Chip, default_catalog
from chipwise.workload.ir import NonMLKind

Progress = Callable[[str, int, int], None]  # (chip id, index, total)

# Which software platform a chip needs, for the compatibility verdicts of a scanned project.
_PLATFORM_BY_VENDOR: dict[str, Platform] = {
    "nvidia": "nvidia-cuda",
    "amd": "amd-rocm",
    "intel": "intel-xpu",
    "google": "google-tpu",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Excluded:
    chip_id: str
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NonMLAnswer:
    """For graphics, fp64 HPC, hashing, video: which chips can run it at all."""

    workload: NonMLKind
    capable: tuple[str, ...]  # chip ids that can run it, best first
    basis: str  # what the ranking used


@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendation:
    """The answer: every chip's best option, the best GPU, the best TPU, the pick, and why."""

    request: AdviseRequest
    options: tuple[Option, ...]  # each chip's best allowed option, best first
    excluded: tuple[Excluded, ...]
    best_gpu: Option | None
    best_tpu: Option | None
    pick: Option | None
    reasons: tuple[Reason, ...]
    confidence: Confidence | None
    notes: tuple[str, ...] = ()
    non_ml: NonMLAnswer | None = None


def platform_of(chip: Chip) -> Platform | None:
    """The software platform of a chip (Gaudi and Trainium have their own: None)."""
    if chip.kind == "asic":
        return None
    return _PLATFORM_BY_VENDOR.get(chip.vendor)


def _project_exclusion(chip: Chip, request: AdviseRequest) -> str:
    proj = request.project
    if request.framework == "tensorflow" and "tensorflow" not in chip.software:
        return "TensorFlow is not supported on this chip"
    if proj is None:
        return ""
    platform = platform_of(chip)
    if platform is None:
        if proj.cuda_specific:
            return f"the project needs CUDA-specific code ({', '.join(proj.cuda_specific)})"
        return ""
    if proj.blocks(platform):
        blockers = [
            f.name for f in proj.findings if f.platform == platform and f.verdict == "does-not-run"
        ]
        return f"the project does not run on {platform}: {', '.join(blockers) or 'see scan'}"
    if "tensorflow" in proj.frameworks and "tensorflow" not in chip.software:
        return "the project uses TensorFlow, which this chip does not support"
    return ""


def _non_ml(request: AdviseRequest, catalog: Catalog, model: NonMLKind) -> Recommendation:
    needs = {r.capability for r in model.requirements}
    capable = [c for c in catalog.chips if c.kind == "gpu"]
    basis = "GPUs (TPUs run only tensor math)"
    if "fp64" in needs:
        capable = sorted(
            (c for c in capable if c.supports("fp64")),
            key=lambda c: -c.peak_flops_per_s("fp64"),
        )
        basis = "dense fp64 FLOP/s (catalog)"
    elif "raster" in needs or "rt-cores" in needs or "media-encode" in needs:
        basis = "GPUs; check display/raster and media engines for the specific card"
    excluded = tuple(
        Excluded(chip_id=c.id, why="a TPU runs tensor math only")
        for c in catalog.chips
        if c.kind == "tpu"
    )
    return Recommendation(
        request=request,
        options=(),
        excluded=excluded,
        best_gpu=None,
        best_tpu=None,
        pick=None,
        reasons=(non_ml_reason(model),),
        confidence=None,
        non_ml=NonMLAnswer(workload=model, capable=tuple(c.id for c in capable), basis=basis),
    )


def recommend(
    request: AdviseRequest,
    catalog: Catalog | None = None,
    *,
    progress: Progress | None = None,
) -> Recommendation:
    """Compare the catalog for ``request`` and explain the choice."""
    cat = default_catalog() if catalog is None else catalog
    model = request.workload.model
    if isinstance(model, NonMLKind):
        return _non_ml(request, cat, model)
    chips = tuple(cat.chip(i) for i in request.chip_ids) if request.chip_ids else cat.chips
    best: list[Option] = []
    excluded: list[Excluded] = []
    single_gpu: list[Option] = []
    key = objective_key(request)
    for i, chip in enumerate(chips):
        if progress is not None:
            progress(chip.id, i, len(chips))
        why = _project_exclusion(chip, request)
        if why:
            excluded.append(Excluded(chip_id=chip.id, why=why))
            continue
        options = options_for_chip(chip, request, cat)
        if not options:
            excluded.append(Excluded(chip_id=chip.id, why=_no_option_reason(chip, request)))
            continue
        if chip.kind == "gpu" and chip.purchasable:
            single_gpu.extend(o for o in options if o.chips == 1 and o.allowed)
        choice = best_option(options, request)
        if choice is None:
            worst = min(options, key=key)
            excluded.append(Excluded(chip_id=chip.id, why=worst.excluded))
            continue
        best.append(choice)
    best.sort(key=key)
    best_gpu = next((o for o in best if o.chip.kind != "tpu"), None)
    best_tpu = next((o for o in best if o.chip.kind == "tpu"), None)
    pick = best[0] if best else None
    ctx = Context(
        request=request,
        best_gpu=best_gpu,
        best_tpu=best_tpu,
        pick=pick,
        single_chip_gpu=min(single_gpu, key=key, default=None),
    )
    conf = training_confidence()
    kind = "all" if pick is None else ("tpu" if pick.chip.kind == "tpu" else "gpu")
    notes = []
    if not best:
        notes.append("no chip in the catalog can run this under the given constraints")
    return Recommendation(
        request=request,
        options=tuple(best),
        excluded=tuple(excluded),
        best_gpu=best_gpu,
        best_tpu=best_tpu,
        pick=pick,
        reasons=reasons_for(ctx),
        confidence=conf.get(kind) or conf.get("all"),
        notes=tuple(notes),
    )


def _no_option_reason(chip: Chip, request: AdviseRequest) -> str:
    if not chip.supports(request.precision):
        return f"no {request.precision} support"
    return f"does not fit in {request.max_chips} chips or fewer on any plan"


def with_project(request: AdviseRequest, project: object) -> AdviseRequest:
    """Attach project facts (helper for callers that build the request in two steps)."""
    return replace(request, project=project)  # type: ignore[arg-type]
