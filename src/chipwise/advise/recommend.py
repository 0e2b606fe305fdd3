"""Rank, prune and explain: the advisor's answer for one request.

``recommend(request)`` searches chips x counts (``candidates.search_chip``), keeps what fits
and what the constraints allow, ranks by the objective and returns the best GPU option, the
best TPU option and the overall pick, with the article's situations as reasons
(``situations``) and a confidence band from the validation error on the picked chip
(``confidence``). Chips the project's code cannot run on are excluded before any planning.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, replace

from chipwise.advise.candidates import ChipSearch, search_chip
from chipwise.advise.confidence import Confidence, confidence_for_chip, latency_confidence
from chipwise.advise.nonml import NonMLOption, non_ml_options, work_of
from chipwise.advise.nonml import bottleneck as bottleneck_of
from chipwise.advise.option import Option, best_option, objective_key
from chipwise.advise.ownership import OwnershipAdvice, ownership_advice
from chipwise.advise.porting import as_is_exclusion, choose_pick
from chipwise.advise.request import AdviseRequest, Platform, ProjectFacts, platform_of
from chipwise.advise.single_card import SingleCard, single_card_verdict
from chipwise.advise.situations import (
    Context,
    Reason,
    is_workstation_card,
    non_ml_reason,
    reasons_for,
)
from chipwise.hardware import Catalog, Chip, default_catalog
from chipwise.hardware.schema import FEATURES
from chipwise.pool import run_tasks
from chipwise.workload.ir import Inference, NonMLKind, Training

Progress = Callable[[str, int, int], None]  # (chip id, index, total)

# Which software platform a chip needs, for the compatibility verdicts of a scanned project.


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
    options: tuple[NonMLOption, ...] = ()  # time and cost per capable chip, best first
    work: str = ""  # the job that was timed


@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendation:
    """The answer: every chip's best option, the best GPU, the best TPU, the pick, and why."""

    request: AdviseRequest
    options: tuple[Option, ...]  # each chip's best allowed option, best first
    excluded: tuple[Excluded, ...]
    best_gpu: Option | None  # best non-TPU option (GPUs and other accelerators)
    best_tpu: Option | None
    pick: Option | None
    reasons: tuple[Reason, ...]
    confidence: Confidence | None  # validation error on the picked chip (or its kind)
    notes: tuple[str, ...] = ()
    non_ml: NonMLAnswer | None = None
    considered: tuple[Option, ...] = ()  # every allowed chip x count that was planned
    smallest_gpu: Option | None = None  # the least-memory single GPU the job fits on
    ownership: OwnershipAdvice | None = None  # --own-hardware: what to buy, payback
    single_card: SingleCard | None = None  # LoRA/QLoRA: the best one-card run, picked or why not
    # serving sized by p99 targets: the TTFT and TPOT bands of the picked chip, where the
    # confidence table has latency rows
    latency_confidence: tuple[Confidence, ...] = ()


def _blockers(proj: ProjectFacts, platform: Platform) -> str:
    """'name (file:line, ...)' for each finding that stops the project on ``platform``."""
    where: dict[str, list[str]] = {}
    for f in proj.findings:
        if f.platform == platform and f.verdict == "does-not-run":
            where.setdefault(f.name, []).append(f.where)
    return "; ".join(f"{name} ({', '.join(locs)})" for name, locs in where.items())


def project_exclusion(chip: Chip, request: AdviseRequest) -> str:
    """Why the code (``--framework`` or the scanned project) cannot run on ``chip``, or ''."""
    proj = request.project
    if request.framework is not None and request.framework not in chip.software:
        return f"{request.framework} is not supported on this chip (catalog software list)"
    if proj is None:
        return ""
    platform = platform_of(chip)
    if platform is None:
        if proj.cuda_specific:
            return f"the project needs CUDA-specific code ({', '.join(proj.cuda_titles)})"
        return ""
    if proj.blocks(platform):
        blockers = _blockers(proj, platform) or "see 'chipwise scan'"
        port = "needs a port" if platform == "google-tpu" else "does not run as is"
        return f"the project {port} on {platform}: {blockers}"
    missing = [fw for fw in proj.frameworks if fw in _FRAMEWORKS and fw not in chip.software]
    if missing:
        return f"the project uses {', '.join(missing)}, which this chip does not support"
    return ""


# QLoRA's 4-bit NF4 layers come from bitsandbytes, which supports NVIDIA, AMD and Intel
# GPUs and Intel Gaudi, not TPUs or Trainium ("We provide official support for NVIDIA
# GPUs, AMD GPUs, Intel XPUs, Apple Silicon, and Intel Gaudi": bitsandbytes v0.50
# installation guide, huggingface.co/docs/bitsandbytes/v0.50.0/installation).
QLORA_VENDORS = ("nvidia", "amd", "intel")
QLORA_SOURCE = "bitsandbytes v0.50 installation guide"


def method_exclusion(chip: Chip, request: AdviseRequest) -> str:
    """Why the training method cannot run on ``chip`` (QLoRA needs bitsandbytes), or ''."""
    phase = request.workload.phase
    qlora = isinstance(phase, Training) and phase.method == "qlora"
    if qlora and chip.vendor not in QLORA_VENDORS:
        return (
            "QLoRA needs bitsandbytes' 4-bit kernels: NVIDIA, AMD and Intel only "
            f"({QLORA_SOURCE}); use --method lora"
        )
    return ""


# Frameworks whose support the catalog lists per chip (``software``).
_FRAMEWORKS = ("pytorch", "jax", "tensorflow")


_RANKABLE = ("fp64", "memory-bandwidth")


def _non_ml(
    request: AdviseRequest, chips: tuple[Chip, ...], model: NonMLKind, catalog: Catalog
) -> Recommendation:
    """Which chips can run a non-ML workload at all, and why a TPU cannot."""
    needs = {r.capability for r in model.requirements}
    # Capabilities the catalog records per chip (sourced); memory bandwidth is a figure.
    checked = sorted(needs & set(FEATURES))
    excluded: list[Excluded] = []
    capable: list[Chip] = []
    for c in chips:
        missing = [f for f in checked if not c.has_feature(f)]
        if c.kind == "tpu":
            excluded.append(Excluded(chip_id=c.id, why="a TPU runs tensor math (XLA) only"))
        elif c.kind != "gpu":
            excluded.append(
                Excluded(chip_id=c.id, why="an ML accelerator: runs framework graphs only")
            )
        elif missing:
            excluded.append(
                Excluded(chip_id=c.id, why=f"the catalog lists no {', '.join(missing)} for it")
            )
        elif request.own_hardware and not c.purchasable:
            excluded.append(Excluded(chip_id=c.id, why="cannot be bought"))
        elif not request.own_hardware and request.cloud != "any" and request.cloud not in c.clouds:
            excluded.append(Excluded(chip_id=c.id, why=f"not offered on {request.cloud}"))
        else:
            capable.append(c)
    basis = f"GPUs with {', '.join(checked)} (catalog capabilities)" if checked else "GPUs"
    # Rank by the workload's first-listed measurable need: its bottleneck (a stencil lists
    # memory bandwidth before fp64, HPL the other way round).
    bottleneck = next((r.capability for r in model.requirements if r.capability in _RANKABLE), None)
    if bottleneck == "fp64":
        capable.sort(key=lambda c: -c.peak_flops_per_s("fp64"))
        basis += "; ranked by dense fp64 FLOP/s"
    elif bottleneck == "memory-bandwidth":
        capable.sort(key=lambda c: -c.hbm_bytes_per_s)
        basis += "; ranked by memory bandwidth"
    else:
        capable.sort(key=lambda c: -c.vector_flops_per_s if c.vector_flops_per_s else 0.0)
        basis += "; ranked by fp32 vector FLOP/s"
    timed = non_ml_options(model, tuple(capable), request, catalog)
    work = work_of(model, request)
    if timed:
        basis += f"; timed on {bottleneck_of(model)}"
    return Recommendation(
        request=request,
        options=(),
        excluded=tuple(excluded),
        best_gpu=None,
        best_tpu=None,
        pick=None,
        reasons=(non_ml_reason(model),),
        confidence=None,
        non_ml=NonMLAnswer(
            workload=model,
            capable=tuple(c.id for c in capable),
            basis=basis,
            options=timed,
            work=work[2] if work else "",
        ),
    )


def _smallest(single: list[Option], key: Callable[[Option], tuple[float, float]]) -> Option | None:
    """The single GPU with the least memory the job fits on, a workstation card (PCIe,
    <= 600 W, sold) when one fits: where a LoRA/QLoRA fine-tune can run on one desk."""
    cards = [o for o in single if is_workstation_card(o.chip)]
    return min(cards or single, key=lambda o: (o.chip.hbm_capacity_bytes, key(o)), default=None)


def _chips(request: AdviseRequest, catalog: Catalog) -> tuple[Chip, ...]:
    if not request.chip_ids:
        return catalog.chips
    chosen = (catalog.chip(i) for i in request.chip_ids)  # unknown ids raise, with suggestions
    return tuple({c.id: c for c in chosen}.values())


def _exclusion(chip: Chip, request: AdviseRequest) -> str:
    """Why ``chip`` is left out before any planning ('' if it is not)."""
    return (
        project_exclusion(chip, request)
        or method_exclusion(chip, request)
        or as_is_exclusion(chip, request)
    )


def _search_task(task: tuple[int, bytes]) -> tuple[int, ChipSearch]:
    """One chip's search in a worker: the ``i``-th of the pickled (chips, request, catalog),
    pickled once for all the tasks (the catalog's prices are most of its ~160 kB)."""
    i, shared = task
    chips, request, catalog = pickle.loads(shared)  # this run's own pickle
    return i, search_chip(chips[i], request, catalog)


def _search_chips(
    chips: tuple[Chip, ...],
    request: AdviseRequest,
    catalog: Catalog,
    workers: int,
    progress: Progress | None,
) -> dict[str, ChipSearch | str]:
    """Each chip's search, or why it is left out, by chip id: one after another here, or on
    ``workers`` processes, this one among them (``chipwise.pool``), when there are several
    chips to search (each search is pure, so the answer is the same bit for bit). Not
    ``run_tasks``' own one-worker loop: here ``progress`` runs before each chip (the web
    UI's deadline check between searches) and nothing is pickled."""
    out: dict[str, ChipSearch | str] = {}
    todo: list[Chip] = []
    for chip in chips:
        why = _exclusion(chip, request)
        if why:
            out[chip.id] = why
        else:
            todo.append(chip)
    done = len(out)
    if workers <= 1 or len(todo) < 2:
        for chip in todo:
            if progress is not None:
                progress(chip.id, done, len(chips))
            out[chip.id] = search_chip(chip, request, catalog)
            done += 1
    else:
        shared = pickle.dumps((tuple(todo), request, catalog))

        def finished(result: tuple[int, ChipSearch]) -> None:
            nonlocal done
            chip = todo[result[0]]
            out[chip.id] = result[1]
            done += 1
            if progress is not None:
                progress(chip.id, done, len(chips))

        def here(task: tuple[int, bytes]) -> tuple[int, ChipSearch]:
            return task[0], search_chip(todo[task[0]], request, catalog)  # nothing to unpickle

        tasks = [(i, shared) for i in range(len(todo))]
        run_tasks(_search_task, tasks, min(workers, len(todo)), finished,
                  preload="chipwise.advise.recommend", here=here)  # fmt: skip
    if progress is not None:
        progress("", len(chips), len(chips))
    return out


def recommend(
    request: AdviseRequest,
    catalog: Catalog | None = None,
    *,
    progress: Progress | None = None,
    workers: int = 1,
) -> Recommendation:
    """Compare the catalog (or ``request.chip_ids``) for ``request`` and explain the choice;
    ``workers`` > 1 searches the chips on that many processes (``chipwise.pool``)."""
    cat = default_catalog() if catalog is None else catalog
    chips = _chips(request, cat)
    model = request.workload.model
    if isinstance(model, NonMLKind):
        return _non_ml(request, chips, model, cat)
    best: list[Option] = []
    excluded: list[Excluded] = []
    single_gpu: list[Option] = []
    considered: list[Option] = []
    key = objective_key(request)
    searches = _search_chips(chips, request, cat, workers, progress)
    for chip in chips:
        found = searches[chip.id]
        if isinstance(found, str):
            excluded.append(Excluded(chip_id=chip.id, why=found))
            continue
        if not found.options:
            excluded.append(Excluded(chip_id=chip.id, why=found.why_none))
            continue
        considered.extend(o for o in found.options if o.allowed)
        if chip.kind == "gpu" and chip.purchasable:
            single_gpu.extend(o for o in found.options if o.chips == 1 and o.allowed)
        choice = best_option(found.options, request)
        if choice is None:
            closest = min(found.options, key=key)
            excluded.append(Excluded(chip_id=chip.id, why=closest.excluded))
            continue
        best.append(choice)
    best.sort(key=key)
    best_gpu = next((o for o in best if o.chip.kind != "tpu"), None)
    best_tpu = next((o for o in best if o.chip.kind == "tpu"), None)
    pick, port_reason = choose_pick(best, request)
    cards = [o for o in single_gpu if is_workstation_card(o.chip)]
    single_card = single_card_verdict(min(cards, key=key, default=None), pick, request)
    if single_card is not None and single_card.picked:
        pick = single_card.option  # an adapter fine-tune on one card that ties the best
    if pick is not None and pick.chip.kind != "tpu":
        best_gpu = pick  # after weighing the port (advise.porting)
    ctx = Context(
        request=request,
        best_gpu=best_gpu,
        best_tpu=best_tpu,
        pick=pick,
        single_chip_gpu=min(single_gpu, key=key, default=None),
        catalog=cat,
        considered=tuple(considered),
    )
    owning = None
    if request.own_hardware and pick is not None and pick.days is not None:
        # the same job rented (any chip), to price the purchase against
        rented = recommend(replace(request, own_hardware=False), cat, workers=workers)
        owning = ownership_advice(pick, rented.options, request)
    notes = []
    if not best:
        which = "in the catalog" if not request.chip_ids else "of those asked for (--chips)"
        notes.append(f"no chip {which} can run this under the given constraints")
    notes += [
        f"{c.id} is {c.provenance}: its figures are the user's, not the catalog's cited ones"
        for c in chips
        if c.user_supplied
    ]
    return Recommendation(
        request=request,
        options=tuple(best),
        excluded=tuple(excluded),
        best_gpu=best_gpu,
        best_tpu=best_tpu,
        pick=pick,
        reasons=(port_reason, *reasons_for(ctx)) if port_reason else reasons_for(ctx),
        confidence=None
        if pick is None
        else confidence_for_chip(
            pick.chip, "infer" if isinstance(request.workload.phase, Inference) else "train"
        ),
        latency_confidence=latency_confidence(pick.chip)
        if pick is not None and request.serving_slo
        else (),
        notes=tuple(notes),
        considered=tuple(considered),
        ownership=owning,
        smallest_gpu=_smallest(single_gpu, key),
        single_card=single_card,
    )


def with_project(request: AdviseRequest, project: ProjectFacts) -> AdviseRequest:
    """Attach project facts (helper for callers that build the request in two steps)."""
    return replace(request, project=project)
