"""Plan checks, where parallel groups live, and hierarchical collective times."""

from __future__ import annotations

import dataclasses

import pytest

from chipwise.errors import PlanError
from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.plan.parallel import (
    Group,
    Network,
    check_plan,
    fill_plan,
    groups,
    layers_per_stage,
)
from chipwise.perf.plan.planner import plan_constraints
from chipwise.workload.ir import TransformerSpec

H100 = chip("h100-sxm")  # 8 GPUs per NVLink domain, InfiniBand between nodes
SPEC = TransformerSpec(
    name="tiny", n_layers=8, d_model=1024, n_heads=16, n_kv_heads=4, head_dim=64,
    d_ff=4096, vocab_size=32000,
)  # fmt: skip


@pytest.mark.parametrize(
    ("plan", "axis", "size", "in_domain"),
    [
        (Plan(tp=8, dp=4), "tp", 8, 8),  # tp fills the node
        (Plan(tp=8, dp=4), "dp", 4, 1),  # each dp peer in another node
        (Plan(tp=2, fsdp=8), "fsdp", 8, 4),  # stride 2: 4 of the 8 in one node
        (Plan(fsdp=48), "fsdp", 48, 8),  # 6 nodes of 8
        (Plan(tp=4, pp=2), "pp", 2, 2),  # 8 chips, one node
    ],
)
def test_groups_place_consecutive_ranks_in_one_domain(plan, axis, size, in_domain) -> None:
    g = groups(plan, H100)[axis]
    assert (g.size, g.in_domain) == (size, in_domain)


def test_nvl72_keeps_a_group_of_64_in_one_domain() -> None:
    g = groups(Plan(dp=64, pp=4), chip("gb200"))["dp"]
    assert g.in_domain == 64 and not g.crosses_domains


@pytest.mark.parametrize(
    ("plan", "chips", "message"),
    [
        (Plan(tp=8), 16, "make the product equal 16"),
        (Plan(tp=3, dp=2), 6, "must divide tiny's 16 heads"),
        (Plan(ep=2, dp=2), 2, "experts"),
        (Plan(pp=16), 16, "exceeds tiny's 8 layers"),
        (Plan(vp=2, dp=2), 2, "needs pp > 1"),
    ],
)
def test_check_plan_names_the_problem(plan: Plan, chips: int, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        check_plan(plan, chips, H100, SPEC)


def test_uneven_pipeline_stages_take_the_ceiling() -> None:
    assert layers_per_stage(126, 16) == 8
    assert layers_per_stage(126, 8, vp=4) == 4 * 4  # 4 chunks of ceil(126/32) = 4


def test_more_virtual_stages_than_layers_give_the_embedding_and_loss_a_slot() -> None:
    # Megatron's --account-for-embedding/loss-in-pipeline-split: 94 layers on PP32 x VPP3
    assert layers_per_stage(94, 32, vp=3) == 3  # one slot per virtual stage
    assert layers_per_stage(8, 5, vp=2) == 2  # 10 slots for 8 layers and the two ends
    check_plan(Plan(pp=5, vp=2), 5, H100, SPEC)  # 8 + 2 slots
    with pytest.raises(PlanError, match="plus the embedding and loss stages"):
        check_plan(Plan(pp=11), 11, H100, SPEC)


def test_fill_plan_gives_the_leftover_chips_to_dp() -> None:
    assert fill_plan({"tp": 4, "pp": 2}, 64) == Plan(tp=4, pp=2, dp=8)


def test_plan_constraints_fix_every_axis_and_only_named_knobs() -> None:
    fixed = plan_constraints("tp=4,pp=8,vp=6,microbatch=2", 512)
    assert fixed["dp"] == 16 and fixed["fsdp"] == 1 and fixed["cp"] == 1
    assert fixed["microbatch"] == 2 and "recompute" not in fixed
    with pytest.raises(PlanError, match="does not divide"):
        plan_constraints("tp=3", 8)


def test_collectives_are_free_on_one_chip_and_grow_with_bytes() -> None:
    net = Network(H100)
    one = Group(axis="tp", size=1, in_domain=1)
    eight = Group(axis="tp", size=8, in_domain=8)
    assert net.time_s("all_reduce", 1e9, one) == 0.0
    assert 0 < net.time_s("all_reduce", 1e8, eight) < net.time_s("all_reduce", 1e9, eight)


def test_crossing_nodes_is_slower_than_staying_on_nvlink() -> None:
    net = Network(H100)
    inside = Group(axis="fsdp", size=8, in_domain=8)
    across = Group(axis="dp", size=8, in_domain=1)
    for kind in ("all_reduce", "all_gather", "p2p"):
        assert net.time_s(kind, 1e9, across) > net.time_s(kind, 1e9, inside)  # type: ignore[arg-type]


def test_p2p_uses_one_link_rate() -> None:
    pinned = dataclasses.replace(H100)
    net = Network(pinned)
    t = net.time_s("p2p", 1e9, Group(axis="pp", size=2, in_domain=2))
    # 1 GB over one NVLink port set at the scale-up fraction of 450 GB/s: a few ms
    assert 1e9 / 450e9 < t < 1e9 / 200e9


def test_a_pipeline_send_over_pcie_runs_at_what_nccl_measures_there() -> None:
    # two L40S in one server: one PCIe Gen4 link at NCCL's measured PCIe share, well below
    # the link rate, and slower than the same bytes over NVLink
    l40s = chip("l40s")
    t = Network(l40s).time_s("p2p", 1e9, Group(axis="pp", size=2, in_domain=2))
    assert t > 1e9 / (l40s.scale_up.bytes_per_s_per_chip * 0.6)
    assert t > Network(H100).time_s("p2p", 1e9, Group(axis="pp", size=2, in_domain=2))
