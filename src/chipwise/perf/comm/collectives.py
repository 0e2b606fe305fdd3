"""Collective communication times: latency + bandwidth (alpha-beta) per algorithm and fabric.

Legend: n = chips in the group, S = ``n_bytes``, alpha = ``collective_latency_s`` per
algorithm step, B = achievable one-way bandwidth per chip (link rate x fraction).

Byte conventions (NCCL's, nccl-tests doc/PERFORMANCE.md): for an all-reduce S is the buffer
on each chip; for an all-gather the gathered output; for a reduce-scatter the input on each
chip; for an all-to-all each chip's send buffer. Bus bytes, which make bandwidth comparable
across n, are 2 (n-1)/n x S for all-reduce and (n-1)/n x S for the others.

Algorithms:

- **Ring** on a switch, a fully connected board or PCIe: all-reduce
  2(n-1) alpha + 2 (n-1)/n S / B; reduce-scatter and all-gather half of that. On PCIe
  (no NVLink) B and alpha are what NCCL measures through the host (``PCIE_*`` below), not
  the NVLink-calibrated efficiency parameters.
- **Tree** (NCCL double binary tree): all-reduce 2 log2(n) alpha + 2 S / B; wins for small S.
- **NVLS** (NVLink SHARP, in-switch reduction, Hopper and Blackwell NVSwitch): all-reduce
  2 alpha + S / (link rate x ``nvls_fraction``). Its bus bandwidth can exceed the link rate,
  since the switch does the reduction (busBw ~480 GB/s on 8 H100s over 450 GB/s links).
- **Hierarchical**, when the group spans scale-up domains (d chips per domain, m domains):
  reduce-scatter inside each domain, all-reduce of S/d across domains on the scale-out
  network (each chip has its own NIC), all-gather inside the domain. Across domains the ring's
  m - 1 latency steps give way to log2 m (tree, PAT) when that is faster: at 10k+ chips.
- **TPU ICI torus**: the group is a box over torus axes; each axis is a bidirectional ring
  over 2 links per chip (one each way) when it has wraparound, a line (half of that) when it
  has none. All axes work at once on different parts of the data (scaling-book,
  sharding.md), so the bandwidth term uses the sum of the axes' bandwidths and the latency
  term the sum of the axes' ring steps.
- **DCN** between TPU slices: hierarchical, with the DCN as the scale-out network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, get_args

from chipwise.errors import PlanError
from chipwise.hardware.chip import Chip
from chipwise.perf.base import Assumption
from chipwise.perf.efficiency import Efficiency, efficiency_for

CollectiveKind = Literal["all-reduce", "reduce-scatter", "all-gather", "all-to-all"]
COLLECTIVE_KINDS: tuple[str, ...] = get_args(CollectiveKind)

# Links per chip of each torus (hardware.md, ICI: 4 neighbours in 2D, 6 in 3D).
TORUS_LINKS = {"torus-2d": 4, "torus-3d": 6}
# Wraparound (hardware.md, ICI): only on full axes; 16-long on v5e/v6e 2D pods (the pod
# side, sqrt(domain_chips)); on v4/v5p (3D) any multiple of 4, i.e. whole 4x4x4 cubes joined
# through the optical switches.
TORUS_3D_CUBE = 4
# A scale-out hop adds NIC + switch latency over a scale-up hop (InfiniBand/RoCE port-to-port
# is ~1-2 us more than NVLink; nccl-tests small-message all-reduce over 2 nodes ~45 us, see
# NVIDIA/nccl issue #1244).
SCALE_OUT_EXTRA_LATENCY_S = 3e-6

# PCIe (no NVLink): the GPUs of one server talk through the PCIe switches and the CPUs' root
# complexes, so NCCL is bounded by what the host moves, not by the x16 link rate. "On PCI
# systems, the performance you get is usually determined by the bandwidth your CPU and memory
# can deliver" (NCCL maintainer sjeaugey, NVIDIA/nccl issue #1639, 2025-03-14). Measured there
# on 8 RTX 5090 over PCIe Gen5 x16 (63 GB/s per GPU, two Xeon 8480+): all-reduce busbw 35 GB/s
# on 4 GPUs and 28 GB/s on 8, whose ring crosses between the two sockets' halves of the server.
# These replace the NVLink-calibrated ``scale_up_fraction`` on topology "pcie". A PCIe Gen4
# card can come closer to its 31 GB/s (4 RTX 4090 with peer-to-peer enabled: busbw 25.9 GB/s,
# tinygrad/open-gpu-kernel-modules issue #36), so for Gen4 cards these are on the low side.
# They hold in serving too: vLLM turns its custom all-reduce off on "more than two PCIe-only
# GPUs" (vllm/distributed/device_communicators/custom_all_reduce.py), so TP runs on NCCL.
PCIE_LINK_BYTES_PER_S_MEASURED = 63e9
PCIE_BUS_FRACTION_SMALL_GROUP = 35e9 / PCIE_LINK_BYTES_PER_S_MEASURED  # 0.56, up to 4 GPUs
PCIE_BUS_FRACTION_LARGE_GROUP = 28e9 / PCIE_LINK_BYTES_PER_S_MEASURED  # 0.44, 5 to 8 GPUs
PCIE_SMALL_GROUP_CHIPS = 4
# Latency: an 8-byte all-reduce on 8 PCIe GPUs takes ~40-55 us in nccl-tests (8 RTX 4090:
# 42.1 us out-of-place, NVIDIA/nccl issue #1530; 40-55 us in NVIDIA/nccl-tests issues #269 and
# #270), against ~10-20 us on NVLink. ``_switch`` prices that size as the tree's 2 log2(8) = 6
# steps of alpha, so the per-step alpha on PCIe is 42 us / 6 = 7 us.
PCIE_ALL_REDUCE_8_BYTES_8_CHIPS_S = 42e-6
PCIE_STEP_LATENCY_S = PCIE_ALL_REDUCE_8_BYTES_8_CHIPS_S / (2 * math.log2(8))


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupLayout:
    """Where a collective's chips sit, when it is not one whole scale-up domain.

    Attributes:
        chips_per_domain: chips of the group in each scale-up domain (NVLink node, TPU
            slice); the group spans n / chips_per_domain domains.
        torus_axes: for a TPU, the group's extent along each ICI torus axis inside a slice,
            e.g. (16, 16) for a whole v6e-256 or (4, 4, 8) on v5p.
        wraparound: per axis, whether it has wraparound links; default: the full-axis rule.
        span_chips: how many chips the group's ranks are spread over (a data-parallel group
            strides over the model-parallel ranks); a group spread over more than the
            scale-out network's ``pod_chips`` crosses its oversubscribed tier.
    """

    chips_per_domain: int
    torus_axes: tuple[int, ...] = ()
    wraparound: tuple[bool, ...] = ()
    span_chips: int = 0  # chips the group's ranks are spread over (0: just the group)

    def __post_init__(self) -> None:
        if self.chips_per_domain < 1:
            raise PlanError(f"chips_per_domain must be >= 1, got {self.chips_per_domain}")
        if self.torus_axes and math.prod(self.torus_axes) != self.chips_per_domain:
            raise PlanError(
                f"torus axes {self.torus_axes} hold {math.prod(self.torus_axes)} chips, "
                f"not chips_per_domain={self.chips_per_domain}"
            )
        if self.wraparound and len(self.wraparound) != len(self.torus_axes):
            raise PlanError("give one wraparound flag per torus axis")


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectiveTime:
    """How long one collective takes, split into latency and bandwidth terms."""

    kind: str
    n_bytes: float
    group_size: int
    seconds: float
    latency_s: float
    bandwidth_s: float
    algorithm: str
    bus_bytes: float
    link_bytes_per_s: float  # one-way rate per chip of the slowest network it used
    notes: tuple[str, ...] = ()
    assumptions: tuple[Assumption, ...] = field(default=(), repr=False)

    @property
    def alg_bytes_per_s(self) -> float:
        """Algorithm bandwidth: S / time (nccl-tests 'algbw')."""
        return self.n_bytes / self.seconds if self.seconds else 0.0

    @property
    def bus_bytes_per_s(self) -> float:
        """Bus bandwidth: bus bytes / time (nccl-tests 'busbw')."""
        return self.bus_bytes / self.seconds if self.seconds else 0.0


def bus_bytes(kind: str, n_bytes: float, group_size: int) -> float:
    """NCCL bus bytes of a collective: 2(n-1)/n S for all-reduce, (n-1)/n S otherwise."""
    n = group_size
    factor = (n - 1) / n if n else 0.0
    return n_bytes * factor * (2.0 if kind == "all-reduce" else 1.0)


def exposed(comm_s: float, compute_s: float, overlap_fraction: float) -> float:
    """Communication time left on the critical path when part of it overlaps compute.

    Up to ``overlap_fraction`` of ``comm_s`` hides behind compute, but never more than
    ``compute_s`` of it.
    """
    if not 0.0 <= overlap_fraction <= 1.0:
        raise ValueError(f"overlap_fraction must be in [0, 1], got {overlap_fraction}")
    hidden = min(comm_s * overlap_fraction, compute_s)
    return comm_s - max(hidden, 0.0)


# ---- algorithms on one fabric (alpha, beta terms) -------------------------------------------


@dataclass(frozen=True, slots=True)
class _Cost:
    latency_s: float
    bandwidth_s: float
    algorithm: str

    @property
    def seconds(self) -> float:
        return self.latency_s + self.bandwidth_s


def _ring(kind: str, s: float, n: int, alpha: float, bw: float) -> _Cost:
    if n <= 1:
        return _Cost(0.0, 0.0, "none")
    steps = 2 * (n - 1) if kind == "all-reduce" else n - 1
    if kind == "all-to-all":
        # Pairwise exchange: every chip posts its n-1 sends at once.
        return _Cost(alpha, (n - 1) / n * s / bw, "pairwise")
    return _Cost(steps * alpha, bus_bytes(kind, s, n) / bw, "ring")


def _switch(kind: str, s: float, n: int, alpha: float, bw: float, nvls_bw: float) -> _Cost:
    """Best of ring, tree and (if the switch reduces) NVLS on one switched domain."""
    best = _ring(kind, s, n, alpha, bw)
    if kind == "all-reduce" and n > 2:
        tree = _Cost(2 * math.log2(n) * alpha, 2.0 * s / bw, "tree")
        best = min(best, tree, key=lambda c: c.seconds)
    if kind == "all-reduce" and nvls_bw > 0 and n > 1:
        nvls = _Cost(2 * alpha, s / nvls_bw, "nvls")
        best = min(best, nvls, key=lambda c: c.seconds)
    return best


def _across_domains(kind: str, s: float, m: int, alpha: float, bw: float) -> _Cost:
    """One chip per domain over the scale-out network: the ring, or, when its m - 1 latency
    steps cost more, the logarithmic algorithms NCCL uses at scale with one GPU per node -
    the double binary tree for all-reduce (2 log2 m steps, 2 S / B) and PAT for all-gather
    and reduce-scatter (log2 m steps, the ring's bytes; Jeaugey, "PAT: a new algorithm for
    all-gather and reduce-scatter operations at scale", arXiv 2506.20252, 2025), which are
    meant for small sizes: they are considered only when the ring is latency-bound. A DCN
    collective between TPU slices is costed the same way."""
    ring = _ring(kind, s, m, alpha, bw)
    if m <= 2 or kind == "all-to-all" or ring.latency_s <= ring.bandwidth_s:
        return ring  # bandwidth-bound: the ring (PAT and trees are for small sizes)
    steps = math.ceil(math.log2(m))
    if kind == "all-reduce":
        log = _Cost(2 * steps * alpha, 2.0 * s / bw, "tree")
    else:
        log = _Cost(steps * alpha, bus_bytes(kind, s, m) / bw, "PAT")
    return min(ring, log, key=lambda c: c.seconds)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def default_torus_axes(chip: Chip, n: int) -> tuple[int, ...]:
    """The most cube-like box of ``n`` chips on the chip's torus (how slices are shaped).

    v6e-256 -> (16, 16), v6e-8 -> (2, 4), v5p-128's 64 chips -> (4, 4, 4).
    """
    dims = 3 if chip.scale_up.topology == "torus-3d" else 2
    best: tuple[int, ...] = (n,)
    best_spread = float("inf")
    for a in _divisors(n):
        rest = n // a
        options = [(a, rest)] if dims == 2 else [(a, b, rest // b) for b in _divisors(rest)]
        for axes in options:
            spread = max(axes) / min(axes)
            if spread < best_spread:
                best, best_spread = tuple(sorted(axes)), spread
    return tuple(a for a in best if a > 1) or (1,)


def _full_axis(chip: Chip) -> int:
    """Length of a full axis of a 2D pod: sqrt(domain_chips) (16 on v5e/v6e, 32 on v3)."""
    return max(1, math.isqrt(chip.scale_up.domain_chips))


def _wraps(chip: Chip, axis: int) -> bool:
    if chip.scale_up.topology == "torus-3d":
        return axis % TORUS_3D_CUBE == 0
    return axis >= _full_axis(chip)


def _torus(
    kind: str,
    s: float,
    axes: tuple[int, ...],
    wrap: tuple[bool, ...],
    alpha: float,
    link_bw: float,
) -> _Cost:
    """All axes at once; each a bidirectional ring (2 links) or a line (half of that)."""
    n = math.prod(axes)
    if n <= 1:
        return _Cost(0.0, 0.0, "none")
    axis_bw = [2 * link_bw if w else link_bw for a, w in zip(axes, wrap, strict=True) if a > 1]
    steps = sum(a - 1 for a in axes if a > 1)
    if kind == "all-reduce":
        steps *= 2
    if kind == "all-to-all":
        # Bisection-limited: on a ring of a chips, a quarter of the traffic crosses each cut;
        # per chip, the data travels a/4 hops on average over the ring's links.
        hops = max(sum(a / 4 for a in axes if a > 1), 1.0)
        return _Cost(steps * alpha, (n - 1) / n * s * hops / sum(axis_bw), "torus all-to-all")
    shape = "x".join(str(a) for a in axes)
    return _Cost(steps * alpha, bus_bytes(kind, s, n) / sum(axis_bw), f"torus {shape} rings")


# ---- public entry point ---------------------------------------------------------------------


def collective_time(
    kind: str,
    n_bytes: float,
    group_size: int,
    chip: Chip,
    *,
    efficiency: Efficiency | None = None,
    spans_domains: bool | GroupLayout = False,
) -> CollectiveTime:
    """Time of one collective of ``n_bytes`` over ``group_size`` chips of ``chip``.

    Args:
        kind: all-reduce | reduce-scatter | all-gather | all-to-all.
        n_bytes: S, in NCCL's convention (see the module docstring).
        group_size: chips taking part.
        chip: the chip (its scale-up and scale-out networks).
        efficiency: overrides the packaged efficiency parameters.
        spans_domains: False: packed into as few scale-up domains as possible (one, if the
            group fits); True: one chip per domain (a data-parallel group across nodes whose
            other chips do tensor parallelism); or an explicit ``GroupLayout``.

    Raises:
        PlanError: unknown kind, bad sizes, or a group that needs a scale-out network the
            chip does not have.
    """
    if kind not in COLLECTIVE_KINDS:
        raise PlanError(f"unknown collective {kind!r}; use one of {', '.join(COLLECTIVE_KINDS)}")
    if group_size < 1 or n_bytes < 0:
        raise PlanError(f"collective needs group_size >= 1 and n_bytes >= 0, got {group_size}")
    eff = efficiency if efficiency is not None else efficiency_for(chip)
    up = chip.scale_up
    n = group_size
    layout = _layout(chip, n, spans_domains)
    d = layout.chips_per_domain
    m = n // d
    alpha = eff.collective_latency_s
    notes: list[str] = []
    link_bytes_per_s = up.bytes_per_s_per_chip
    torus = up.topology in TORUS_LINKS
    if torus:
        link_rate = up.bytes_per_s_per_chip / TORUS_LINKS[up.topology]
    elif up.topology == "all-to-all" and up.domain_chips > 1:
        # Point-to-point board (AMD xGMI): each peer has its own link, so a group of d uses
        # d - 1 of the domain_chips - 1 links (hardware.md: one peer gets one link's rate).
        link_rate = up.bytes_per_s_per_chip * (d - 1) / (up.domain_chips - 1)
    else:
        link_rate = up.bytes_per_s_per_chip
    bw_up, alpha_up = link_rate * eff.scale_up_fraction, alpha
    assumptions = eff.assumptions()
    if up.topology == "pcie" and d > 1:
        fraction = pcie_bus_fraction(d)
        bw_up, alpha_up = link_rate * fraction, PCIE_STEP_LATENCY_S
        notes.append(
            f"PCIe: NCCL reaches {fraction:.0%} of the link rate and {alpha_up * 1e6:.0f} us per "
            f"step (NVIDIA/nccl issues #1639, #1530)"
        )
        assumptions += (
            Assumption(
                name="pcie_bus_fraction",
                value=fraction,
                source="NVIDIA/nccl issue #1639: all-reduce busbw 35 (4 GPUs) and 28 GB/s "
                "(8 GPUs) over 63 GB/s PCIe Gen5 links",
            ),
            Assumption(
                name="pcie_step_latency_s",
                value=alpha_up,
                source="NVIDIA/nccl issue #1530: 8-byte all-reduce 42 us on 8 PCIe GPUs, over "
                "the tree's 6 steps",
            ),
        )

    def intra(k: str, size: float) -> _Cost:
        if torus:
            axes = layout.torus_axes or default_torus_axes(chip, d)
            wrap = layout.wraparound or tuple(_wraps(chip, a) for a in axes)
            return _torus(k, size, axes, wrap, alpha_up, bw_up)
        nvls = link_rate * eff.nvls_fraction if up.topology == "switch" else 0.0
        return _switch(k, size, d, alpha_up, bw_up, nvls)

    if m == 1:
        cost = intra(kind, n_bytes)
    else:
        out = chip.scale_out
        if out is None:
            raise PlanError(
                f"{chip.id}: a group of {n} spans {m} scale-up domains of {d}, but the chip "
                f"has no scale-out network in the catalog; keep the group within {d} chips"
            )
        bw_out = out.bytes_per_s_per_chip * eff.scale_out_fraction
        link_bytes_per_s = out.bytes_per_s_per_chip
        span = max(layout.span_chips, n)
        if out.oversubscription > 1 and 0 < out.pod_chips < span:
            # every group crosses the pods' uplinks at once: 1/oversubscription of the NIC
            bw_out /= out.oversubscription
            link_bytes_per_s /= out.oversubscription
            notes.append(
                f"spans {span:,} chips, beyond pods of {out.pod_chips:,}: "
                f"{out.oversubscription:g}:1 oversubscribed above them"
            )
        alpha_out = alpha + SCALE_OUT_EXTRA_LATENCY_S
        if kind == "all-to-all":
            local = intra(kind, n_bytes * d / n)
            remote = _Cost(alpha_out * (m - 1), (n - d) / n * n_bytes / bw_out, "pairwise")
            cost = _Cost(
                local.latency_s + remote.latency_s,
                local.bandwidth_s + remote.bandwidth_s,
                f"{local.algorithm} + scale-out pairwise",
            )
        else:
            # Inside the domain on S; across domains each chip handles its 1/d share.
            inner = intra("reduce-scatter" if kind != "all-gather" else "all-gather", n_bytes)
            outer = _across_domains(kind, n_bytes / d, m, alpha_out, bw_out)
            parts = [inner, outer]
            if kind == "all-reduce":
                parts.append(intra("all-gather", n_bytes))
            cost = _Cost(
                sum(p.latency_s for p in parts),
                sum(p.bandwidth_s for p in parts),
                f"hierarchical: {inner.algorithm} in {m} domains of {d}, "
                f"{outer.algorithm} over {out.name}",
            )
        notes.append(f"spans {m} scale-up domains of {d} chips")
    return CollectiveTime(
        kind=kind,
        n_bytes=n_bytes,
        group_size=n,
        seconds=cost.seconds,
        latency_s=cost.latency_s,
        bandwidth_s=cost.bandwidth_s,
        algorithm=cost.algorithm,
        bus_bytes=bus_bytes(kind, n_bytes, n),
        link_bytes_per_s=link_bytes_per_s,
        notes=tuple(notes),
        assumptions=assumptions,
    )


def pcie_bus_fraction(chips: int) -> float:
    """Share of the PCIe link rate an NCCL ring of ``chips`` GPUs reaches (nccl #1639)."""
    if chips <= PCIE_SMALL_GROUP_CHIPS:
        return PCIE_BUS_FRACTION_SMALL_GROUP
    return PCIE_BUS_FRACTION_LARGE_GROUP


def _layout(chip: Chip, n: int, spans: bool | GroupLayout) -> GroupLayout:
    """The group's layout: given; one chip per domain (True); or packed (False)."""
    domain = max(chip.scale_up.domain_chips, 1)
    if isinstance(spans, GroupLayout):
        if n % spans.chips_per_domain:
            raise PlanError(
                f"group of {n} is not a whole number of domains of {spans.chips_per_domain}"
            )
        if spans.chips_per_domain > domain:
            raise PlanError(
                f"{spans.chips_per_domain} chips per domain exceeds {chip.id}'s scale-up "
                f"domain of {domain}"
            )
        return spans
    if spans:
        return GroupLayout(chips_per_domain=1)
    return GroupLayout(chips_per_domain=n if n <= domain else math.gcd(n, domain))
