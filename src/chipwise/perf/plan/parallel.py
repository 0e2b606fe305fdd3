"""Sharding a job over chips: plan checks, where each parallel group lives, collective times.

Rank layout (Megatron-LM's default order, innermost first): ``tp, cp, fsdp, dp, pp``
(``ep`` is carved out of the data-parallel ranks ``fsdp x dp``, innermost first; when the
experts' tensor parallelism ``etp`` is narrower than ``tp``, Megatron regroups a stage's
``tp x cp x dp`` ranks as ``etp x ep x edp``, innermost first, so ``ep`` folds over the
tensor-parallel ranks; ``edp``, the ranks that hold the same expert shard and reduce its
gradients together, sits outside ``ep``). An axis
whose ranks are consecutive stays inside one scale-up domain (an NVLink node, a TPU ICI
slice) as long as ``stride x size`` fits in it; otherwise the group spans domains and its
collectives are hierarchical: the in-domain part runs on the scale-up network, the
cross-domain part on the scale-out network (InfiniBand, DCN), one chip's share of the data
per NIC (NCCL runs one ring per NIC; Thakur et al. 2005 for the ring costs).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from chipwise.errors import PlanError
from chipwise.hardware.chip import Chip, Interconnect
from chipwise.perf.base import Plan
from chipwise.perf.comm.collectives import (
    PCIE_STEP_LATENCY_S,
    SCALE_OUT_EXTRA_LATENCY_S,
    TORUS_LINKS,
    GroupLayout,
    collective_time,
    pcie_bus_fraction,
)
from chipwise.perf.efficiency import Efficiency, efficiency_for
from chipwise.workload.ir import TransformerSpec

Collective = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p"]
# n_bytes conventions (NCCL's): the buffer on each chip for all_reduce, the gathered output
# for all_gather, each chip's input for reduce_scatter, each chip's send buffer for
# all_to_all and p2p.

AXES_INNER_FIRST: tuple[str, ...] = ("tp", "cp", "fsdp", "dp", "pp")

# Pipeline sends between stages in different domains of a chip without a scale-out network
# in the catalog (PCIe workstations): 100 Gb/s Ethernet per chip, assumed.
FALLBACK_SCALE_OUT = Interconnect(
    name="assumed 100 GbE", bytes_per_s_per_chip=12.5e9, topology="switch", domain_chips=1
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    """One parallel group as one chip sees it: ``size`` ranks, ``in_domain`` of them in the
    chip's scale-up domain, spread over ``domains`` domains."""

    axis: str
    size: int
    in_domain: int
    span_chips: int = 0  # chips from the group's first rank to its last (size x stride)

    @property
    def domains(self) -> int:
        return -(-self.size // self.in_domain)

    @property
    def crosses_domains(self) -> bool:
        return self.size > self.in_domain


def domain_chips(chip: Chip, chips: int) -> int:
    """Chips per scale-up domain for a job of ``chips`` (never more than the job): a TPU
    job is cut into slices no larger than the largest slice (``scale_up.max_chips``, e.g.
    6,144 of a v5p pod's 8,960), joined over DCN (multislice)."""
    up = chip.scale_up
    return max(
        1, min(up.domain_chips, up.max_chips if up.max_chips > 1 else up.domain_chips, chips)
    )


def groups(plan: Plan, chip: Chip) -> dict[str, Group]:
    """Every axis of ``plan`` as a ``Group``; ``ep`` is the innermost part of fsdp x dp."""
    domain = domain_chips(chip, plan.chips)
    out: dict[str, Group] = {}
    stride = 1
    for axis in AXES_INNER_FIRST:
        size = getattr(plan, axis)
        out[axis] = _group(axis, size, stride, domain)
        stride *= size
    dp_stride = plan.tp * plan.cp
    etp = plan.expert_tp
    ep_stride = dp_stride if etp == plan.tp else etp
    out["ep"] = _group("ep", plan.ep, ep_stride, domain)
    expert_ranks = plan.tp * plan.cp * plan.data_parallel
    out["edp"] = _group("edp", max(1, expert_ranks // (etp * plan.ep)), ep_stride * plan.ep, domain)
    out["data"] = _group("data", plan.data_parallel, dp_stride, domain)
    # Context-parallel ranks hold the same weights and reduce their gradients together, so
    # sharding groups span cp too: ZeRO-3 over cp x fsdp (torchtitan's FSDP mesh includes
    # cp), ZeRO-1 over cp x dp when there is no fsdp (Megatron's distributed optimizer).
    out["zero3"] = _group("zero3", plan.cp * plan.fsdp, plan.tp, domain)
    out["zero1"] = _group("zero1", plan.cp * plan.dp, plan.tp, domain)
    return out


def zero_shards(plan: Plan) -> tuple[int, int]:
    """(ways weights and gradients are sharded, ways optimizer states are sharded)."""
    weights = plan.fsdp * plan.cp if plan.fsdp > 1 else 1
    return weights, plan.fsdp * plan.dp * plan.cp


def _group(axis: str, size: int, stride: int, domain: int) -> Group:
    span = size * stride
    if stride >= domain:
        return Group(axis=axis, size=size, in_domain=1, span_chips=span)
    room = max(1, domain // stride)
    # the largest whole share of the group that fits in one domain (NVL72 holds 64 of 64)
    in_domain = max(d for d in range(1, min(size, room) + 1) if size % d == 0)
    return Group(axis=axis, size=size, in_domain=in_domain, span_chips=span)


def check_plan(plan: Plan, chips: int, chip: Chip, spec: TransformerSpec | None) -> None:
    """Raise ``PlanError`` naming the fix when ``plan`` cannot run ``spec`` on ``chips``."""
    if plan.chips != chips:
        raise PlanError(
            f"plan {plan} uses dp*fsdp*tp*pp*cp = {plan.chips} chips but --chips is {chips}; "
            f"make the product equal {chips} (or leave dp out and it fills the rest)"
        )
    if spec is not None and plan.ep > 1 and (not spec.is_moe or spec.n_experts % plan.ep):
        what = f"{spec.n_experts} experts" if spec.is_moe else "no experts (not an MoE)"
        raise PlanError(f"ep={plan.ep} needs experts divisible by it; {spec.name} has {what}")
    etp = plan.expert_tp
    expert_ranks = plan.tp * plan.cp * plan.data_parallel
    if plan.tp % etp:
        raise PlanError(f"etp={etp} must divide tp={plan.tp}; choose etp among the divisors")
    if etp == plan.tp and plan.data_parallel % plan.ep:
        raise PlanError(
            f"ep={plan.ep} must divide the data-parallel ranks dp*fsdp={plan.data_parallel}"
            f" (or set etp=1 to fold expert parallelism over the tensor-parallel ranks)"
        )
    if expert_ranks % (etp * plan.ep):
        raise PlanError(
            f"etp*ep={etp * plan.ep} must divide tp*cp*dp*fsdp={expert_ranks}, the ranks of "
            f"one pipeline stage; choose an ep that divides {expert_ranks // etp}"
        )
    if plan.vp > 1 and plan.pp == 1:
        raise PlanError("vp > 1 (interleaved pipeline) needs pp > 1")
    if spec is None:
        return
    if spec.n_heads % plan.tp:
        raise PlanError(f"tp={plan.tp} must divide {spec.name}'s {spec.n_heads} heads")
    if plan.pp * plan.vp > spec.n_layers + PIPELINE_END_SLOTS:
        raise PlanError(
            f"pp*vp={plan.pp * plan.vp} exceeds {spec.name}'s {spec.n_layers} layers plus the "
            f"embedding and loss stages ({spec.n_layers + PIPELINE_END_SLOTS}); use fewer "
            f"pipeline stages"
        )


# Megatron can count the embedding and the loss as one pipeline layer each
# (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split;
# megatron/training/arguments.py, Megatron-LM core_r0.12.0): the first virtual stage then
# holds the embedding in place of a decoder layer, the last the output layer and the loss.
# That is how a plan with more virtual stages than decoder layers runs, e.g. Qwen3-235B's
# 94 layers on PP32 x VPP3 = 96 virtual stages (Megatron-MoE-ModelZoo, best_practice/qwen3).
PIPELINE_END_SLOTS = 2


def ends_take_stage_slots(n_layers: int, pp: int, vp: int = 1, end_slots: int = -1) -> bool:
    """Whether the embedding and the loss each take a virtual stage's layer slot
    (``PIPELINE_END_SLOTS``): when the plan states it (``Plan.end_slots`` = 1, with a
    pipeline), and always when it has more virtual stages than decoder layers."""
    return pp * vp > n_layers or (end_slots == 1 and pp > 1)


def layers_per_stage(n_layers: int, pp: int, vp: int = 1, end_slots: int = -1) -> int:
    """Layers on the busiest pipeline stage (stages may be uneven: ceil, as Megatron's
    --decoder-first/last-pipeline-num-layers allow; the embedding and the loss take a slot
    each when ``ends_take_stage_slots``)."""
    ends = ends_take_stage_slots(n_layers, pp, vp, end_slots)
    slots = n_layers + (PIPELINE_END_SLOTS if ends else 0)
    return min(n_layers, vp * -(-slots // (pp * vp)))


def fill_plan(given: dict[str, int | str], chips: int) -> Plan:
    """A ``Plan`` from the keys a user gave; ``dp`` (if not given) takes the remaining chips."""
    values = dict(given)
    plan = Plan(**values)  # type: ignore[arg-type]
    if "dp" not in values and chips % plan.chips == 0:
        plan = replace(plan, dp=chips // plan.chips)
    return plan


# ---- collective times ---------------------------------------------------------------------

_KIND_NAMES: dict[str, str] = {
    "all_reduce": "all-reduce",
    "all_gather": "all-gather",
    "reduce_scatter": "reduce-scatter",
    "all_to_all": "all-to-all",
}


@dataclass(frozen=True, slots=True)
class Network:
    """Times collectives of a job on ``chip``: ``collectives.collective_time`` with the
    group's layout (chips per scale-up domain), and point-to-point sends on the tier the
    two stages share."""

    chip: Chip
    efficiency: Efficiency | None = None

    def time_s(self, kind: Collective, n_bytes: float, group: Group) -> float:
        """Seconds for one collective of ``n_bytes`` over ``group``."""
        if group.size <= 1 or n_bytes <= 0:
            return 0.0
        if kind == "p2p":
            return self._p2p(n_bytes, group)
        if self.chip.scale_out is None and group.crosses_domains:
            raise PlanError(
                f"{self.chip.id}: a {group.axis} group of {group.size} spans scale-up domains "
                f"of {self.chip.scale_up.domain_chips}, but the catalog lists no scale-out "
                f"network for it; keep parallel groups within "
                f"{self.chip.scale_up.domain_chips} chip"
                f"{'s' if self.chip.scale_up.domain_chips > 1 else ''}"
            )
        layout = GroupLayout(chips_per_domain=group.in_domain, span_chips=group.span_chips)
        return collective_time(
            _KIND_NAMES[kind], n_bytes, group.size, self.chip, efficiency=self.efficiency,
            spans_domains=layout,
        ).seconds  # fmt: skip

    def _p2p(self, n_bytes: float, group: Group) -> float:
        """One send to the neighbouring stage: one link of the tier the stages share."""
        eff = self.efficiency or efficiency_for(self.chip)
        up = self.chip.scale_up
        if group.crosses_domains:
            tier = self.chip.scale_out or FALLBACK_SCALE_OUT
            bw = tier.bytes_per_s_per_chip * eff.scale_out_fraction
            latency = eff.collective_latency_s + SCALE_OUT_EXTRA_LATENCY_S
        elif up.topology == "pcie":
            # one PCIe hop between two cards of a server: NCCL's measured share of a pair's
            # link, and one step's latency (collectives.PCIE_*)
            bw = up.bytes_per_s_per_chip * pcie_bus_fraction(2)
            latency = PCIE_STEP_LATENCY_S
        else:
            links = TORUS_LINKS.get(up.topology, 1)
            bw = up.bytes_per_s_per_chip / links * eff.scale_up_fraction
            latency = eff.collective_latency_s
        return latency + n_bytes / bw
