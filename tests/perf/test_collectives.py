"""Collectives: alpha-beta per algorithm, NVLS, hierarchical, ICI torus, bus-byte convention."""

from __future__ import annotations

import dataclasses

import pytest

from chipwise.errors import PlanError
from chipwise.hardware import chip
from chipwise.hardware.chip import Chip, Interconnect
from chipwise.perf.comm.collectives import (
    GroupLayout,
    bus_bytes,
    collective_time,
    default_torus_axes,
    exposed,
)
from chipwise.perf.efficiency import Efficiency


def pinned(chip_id: str, up_bytes_per_s: float, out_bytes_per_s: float) -> Chip:
    """A catalog chip with its link rates pinned, so the hand arithmetic below stays valid."""
    c = chip(chip_id)
    up = dataclasses.replace(c.scale_up, bytes_per_s_per_chip=up_bytes_per_s)
    out = Interconnect(name="scale-out", bytes_per_s_per_chip=out_bytes_per_s)
    return dataclasses.replace(c, scale_up=up, scale_out=out)


A100 = pinned("a100-sxm-80gb", 300e9, 25e9)  # NVLink 3 switch, 8 GPUs, no NVLS
H100 = pinned("h100-sxm", 450e9, 50e9)  # NVLink 4 switch, 8 GPUs, NVLS
V6E = pinned("tpu-v6e", 400e9, 12.5e9)  # 2D torus, 4 links, 16x16 pod, DCN
V5P = pinned("tpu-v5p", 600e9, 6.25e9)  # 3D torus, 6 links

EFF = Efficiency(
    gemm_peak_fraction=0.8,
    attention_peak_fraction=0.7,
    hbm_fraction=0.9,
    launch_overhead_s=2e-6,
    scale_up_fraction=0.8,
    scale_out_fraction=0.5,
    collective_latency_s=1e-6,
)
GB = 1e9


@pytest.mark.parametrize(
    ("kind", "factor"),
    [("all-reduce", 2 * 7 / 8), ("all-gather", 7 / 8), ("reduce-scatter", 7 / 8),
     ("all-to-all", 7 / 8)],
)  # fmt: skip
def test_bus_bytes_follow_nccl(kind: str, factor: float) -> None:
    assert bus_bytes(kind, 1e9, 8) == pytest.approx(factor * 1e9)


def test_ring_all_reduce_on_a100_by_hand() -> None:
    # 8 GPUs: 2 x 7 steps of 1 us, plus 2 x 7/8 x 1 GB at 0.8 x 300 GB/s.
    t = collective_time("all-reduce", GB, 8, A100, efficiency=EFF)
    assert t.algorithm == "ring"
    assert t.latency_s == pytest.approx(14e-6)
    assert t.bandwidth_s == pytest.approx(2 * 7 / 8 * GB / (0.8 * 300e9))
    assert t.bus_bytes_per_s == pytest.approx(0.8 * 300e9, rel=0.01)


def test_all_gather_is_half_an_all_reduce_on_a_ring() -> None:
    ag = collective_time("all-gather", GB, 8, A100, efficiency=EFF)
    ar = collective_time("all-reduce", GB, 8, A100, efficiency=EFF)
    assert ag.bandwidth_s == pytest.approx(ar.bandwidth_s / 2)


def test_small_all_reduce_prefers_the_tree() -> None:
    t = collective_time("all-reduce", 1e3, 8, A100, efficiency=EFF)
    assert t.algorithm == "tree"
    assert t.latency_s == pytest.approx(2 * 3 * 1e-6)


def test_nvls_bus_bandwidth_exceeds_the_link_rate_on_h100() -> None:
    eff = dataclasses.replace(EFF, nvls_fraction=0.6)
    t = collective_time("all-reduce", 8 * GB, 8, H100, efficiency=eff)
    assert t.algorithm == "nvls"
    assert t.alg_bytes_per_s == pytest.approx(0.6 * 450e9, rel=0.01)
    assert t.bus_bytes_per_s > 450e9  # the switch reduces: busBw is not wire bandwidth


def test_a_group_of_one_costs_nothing() -> None:
    assert collective_time("all-reduce", GB, 1, H100, efficiency=EFF).seconds == 0.0


def test_a_group_past_the_nvlink_domain_goes_hierarchical() -> None:
    t = collective_time("all-reduce", GB, 16, A100, efficiency=EFF)
    assert t.algorithm.startswith("hierarchical")
    # Across 2 nodes, each GPU sends its 1/8 share over its own NIC (50 GB/s x 0.5).
    outer = GB / 8 / (25e9 * 0.5)
    inner = collective_time("all-reduce", GB, 8, A100, efficiency=EFF).bandwidth_s
    assert t.bandwidth_s == pytest.approx(inner + outer)


def test_one_chip_per_domain_uses_only_the_scale_out_network() -> None:
    t = collective_time("all-reduce", GB, 4, H100, efficiency=EFF, spans_domains=True)
    assert H100.scale_out is not None
    assert t.bandwidth_s == pytest.approx(
        2 * 3 / 4 * GB / (H100.scale_out.bytes_per_s_per_chip * 0.5)
    )


def test_spanning_without_a_scale_out_network_is_a_plan_error() -> None:
    lone = dataclasses.replace(A100, scale_out=None)
    with pytest.raises(PlanError, match="no scale-out network"):
        collective_time("all-reduce", GB, 16, lone, efficiency=EFF)


def test_unknown_kind_is_a_plan_error_naming_the_choices() -> None:
    with pytest.raises(PlanError, match="all-gather"):
        collective_time("allreduce", GB, 8, H100)


def test_v6e_pod_uses_both_axes_with_wraparound_by_hand() -> None:
    # 16 x 16 with wraparound: 2 axes x 2 links x (400/4 GB/s x 0.8) = 320 GB/s of bus rate.
    t = collective_time("all-reduce", GB, 256, V6E, efficiency=EFF)
    assert t.algorithm == "torus 16x16 rings"
    assert t.bandwidth_s == pytest.approx(2 * 255 / 256 * GB / (4 * 100e9 * 0.8))
    assert t.latency_s == pytest.approx(2 * (15 + 15) * 1e-6)


def test_partial_axes_have_no_wraparound_and_half_the_bandwidth() -> None:
    # A 4x4 sub-slice of a v6e pod: no wraparound on either axis (full axis is 16).
    wrapped = GroupLayout(chips_per_domain=16, torus_axes=(4, 4), wraparound=(True, True))
    sub = collective_time("all-gather", GB, 16, V6E, efficiency=EFF)
    full = collective_time("all-gather", GB, 16, V6E, efficiency=EFF, spans_domains=wrapped)
    assert sub.bandwidth_s == pytest.approx(2 * full.bandwidth_s)


def test_v5p_cube_axes_wrap() -> None:
    assert default_torus_axes(V5P, 64) == (4, 4, 4)
    t = collective_time("all-gather", GB, 64, V5P, efficiency=EFF)
    # 3 axes x 2 links x (600/6 GB/s x 0.8)
    assert t.bandwidth_s == pytest.approx(63 / 64 * GB / (6 * 100e9 * 0.8))


def test_tpu_slices_talk_over_dcn() -> None:
    t = collective_time("all-reduce", GB, 512, V6E, efficiency=EFF)
    assert "hierarchical" in t.algorithm and "scale-out" in t.algorithm


def test_bad_layout_is_a_plan_error() -> None:
    with pytest.raises(PlanError, match="torus axes"):
        GroupLayout(chips_per_domain=16, torus_axes=(4, 8))


@pytest.mark.parametrize(
    ("comm", "compute", "overlap", "left"),
    [
        (10.0, 100.0, 1.0, 0.0),
        (10.0, 100.0, 0.0, 10.0),
        (10.0, 4.0, 1.0, 6.0),
        (10.0, 100.0, 0.3, 7.0),
    ],
)
def test_exposed_communication(comm: float, compute: float, overlap: float, left: float) -> None:
    assert exposed(comm, compute, overlap) == pytest.approx(left)


def test_exposed_rejects_a_fraction_outside_0_1() -> None:
    with pytest.raises(ValueError, match="overlap_fraction"):
        exposed(1.0, 1.0, 1.5)


def test_small_collectives_across_thousands_of_nodes_take_logarithmic_steps() -> None:
    """Past a few hundred nodes a ring's latency steps dominate a small collective; NCCL's
    tree (all-reduce) and PAT (all-gather, reduce-scatter) take log2 m steps instead."""
    from chipwise.hardware import chip as find_chip
    from chipwise.perf.comm.collectives import GroupLayout, collective_time

    h100 = find_chip("h100-sxm")
    one_per_node = GroupLayout(chips_per_domain=1)
    small = collective_time("all-gather", 1e6, 4096, h100, spans_domains=one_per_node)
    assert ", PAT over" in small.algorithm
    assert small.latency_s < 4095 * 3e-6  # far below a ring's m - 1 steps
    big = collective_time("reduce-scatter", 1e11, 16, h100, spans_domains=one_per_node)
    assert "ring" in big.algorithm  # a few large steps: the ring's bytes win
    ar = collective_time("all-reduce", 1e6, 4096, h100, spans_domains=one_per_node)
    assert "tree" in ar.algorithm


def test_an_oversubscribed_tier_slows_only_groups_that_span_pods() -> None:
    """Meta's Llama 3 cluster (arXiv 2407.21783, section 3.3.1): 3,072-GPU pods at full
    bisection, 7:1 oversubscribed above. A data-parallel group spread over more than one pod
    crosses that tier; one inside a pod does not."""
    from dataclasses import replace

    from chipwise.hardware import chip as find_chip
    from chipwise.perf.comm.collectives import GroupLayout, collective_time

    h100 = find_chip("h100-sxm")
    assert h100.scale_out is not None
    meta = replace(h100, scale_out=replace(h100.scale_out, pod_chips=3072, oversubscription=7.0))
    inside = GroupLayout(chips_per_domain=1, span_chips=2048)
    across = GroupLayout(chips_per_domain=1, span_chips=16384)
    s = 4e9
    base = collective_time("reduce-scatter", s, 128, h100, spans_domains=across)
    near = collective_time("reduce-scatter", s, 128, meta, spans_domains=inside)
    far = collective_time("reduce-scatter", s, 128, meta, spans_domains=across)
    assert near.seconds == base.seconds  # inside a pod: the non-blocking fabric
    assert far.bandwidth_s > 6.5 * near.bandwidth_s  # ~7x: the uplinks are shared
    assert any("oversubscribed" in n for n in far.notes)


# ---- PCIe (no NVLink): host-bound NCCL rates (NVIDIA/nccl issues #1639, #1530) -------------


def test_pcie_all_reduce_is_slower_than_nvlink_at_the_same_link_rate() -> None:
    """The same 1 GB all-reduce over 8 GPUs: PCIe reaches 28 of 63 GB/s, NVLink 0.8 of it."""
    pcie = pinned("l40s", 63e9, 25e9)
    nvlink = dataclasses.replace(
        A100, scale_up=dataclasses.replace(A100.scale_up, bytes_per_s_per_chip=63e9)
    )
    t_pcie = collective_time("all-reduce", GB, 8, pcie, efficiency=EFF)
    t_nvlink = collective_time("all-reduce", GB, 8, nvlink, efficiency=EFF)
    assert t_pcie.seconds > t_nvlink.seconds
    assert t_pcie.bus_bytes_per_s == pytest.approx(28e9, rel=0.02)  # nccl #1639, 8 x RTX 5090


def test_pcie_bus_rate_drops_past_four_gpus() -> None:
    """nccl #1639: busbw 35 GB/s on 4 GPUs, 28 GB/s on 8, over 63 GB/s Gen5 links."""
    rtx = pinned("rtx-pro-6000", 63e9, 25e9)
    four = collective_time("all-reduce", 8 * GB, 4, rtx, efficiency=EFF)
    eight = collective_time("all-reduce", 8 * GB, 8, rtx, efficiency=EFF)
    assert four.bus_bytes_per_s == pytest.approx(35e9, rel=0.02)
    assert eight.bus_bytes_per_s == pytest.approx(28e9, rel=0.02)
    assert any("PCIe" in n for n in eight.notes)
    assert {a.name for a in eight.assumptions} >= {"pcie_bus_fraction", "pcie_step_latency_s"}


def test_pcie_small_all_reduce_has_the_measured_latency_floor() -> None:
    """An 8-byte all-reduce on 8 PCIe GPUs takes ~42 us in nccl-tests (nccl #1530), several
    times NVLink's; whatever the efficiency parameters say about NVLink."""
    l40s = chip("l40s")
    t = collective_time("all-reduce", 8, 8, l40s, efficiency=EFF)
    assert t.algorithm == "tree"
    assert t.seconds == pytest.approx(42e-6, rel=0.01)
    assert t.seconds > 3 * collective_time("all-reduce", 8, 8, A100, efficiency=EFF).seconds
