"""Expert-parallel all-to-all (MoE dispatch and combine) with the EP group's real placement.

Legend: n = ranks in the expert-parallel group, d = of them in one scale-up domain (an
NVLink node or NVL72 rack, a TPU ICI slice), m = n / d domains; T = tokens one rank routes,
k = experts per token, E = routed experts, b = bytes per token copy (D x dtype bytes).

With balanced routing (the benchmarks force-balance; DeepSeek-V3's bias-based balancing
keeps experts within a few per cent) each rank sends T k b bytes spread evenly over the n
ranks: 1/n stays on the rank, (d - 1)/n goes over the scale-up fabric, (n - d)/n leaves the
domain. The two fabrics are separate links, so the in-domain and cross-domain parts run
concurrently: time = max(scale-up part, scale-out part) + latency, not their sum.

Cross-domain de-duplication: DeepEP's internode kernels (and Megatron's flex dispatcher
built on DeepEP/HybridEP, which Megatron-Core recommends for expert parallelism across
nodes) send a token ONCE to each remote domain that holds any of its k experts and forward
it inside that domain over NVLink (DeepSeek-V3 report §3.2.2; github:deepseek-ai/DeepEP
README, "normal kernels ... forwarding from NVLink to RDMA"). A token's k experts, uniform
over E experts on m domains, touch on average m (1 - C(E - E/m, k) / C(E, k)) domains
(the chance that a domain holds none of them is the hypergeometric zero term).
Group-limited routing narrows that: DeepSeek-V3 picks a token's experts from at most 4 of
8 expert groups, so a token reaches at most 4 nodes (report §2.1.2, "node-limited
routing"; its config's ``n_group``/``topk_group``): ``remote_domains_per_token``.

In-domain de-duplication (GPUs): DeepEP's dispatch (and HybridEP's, built on it) first
computes the layout ``num_tokens_per_rank`` / ``is_token_in_rank`` and sends a token once to
each rank that holds any of its k experts, not once per expert (github:deepseek-ai/DeepEP
README, ``Buffer.get_dispatch_layout`` then ``Buffer.dispatch``; the combine returns one
reduced copy per rank). A token's k experts touch on average n (1 - C(E - E/n, k) / C(E, k))
of the n ranks (the same hypergeometric term, over ranks), e.g. 5.3 of 8 for Qwen3-30B-A3B
(E = 128, k = 8, ep = 8) where a per-expert all-to-all sends 8 copies. MaxText's ragged
all-to-all on TPUs sends one copy per (token, expert): no in-domain de-duplication there.

Megatron's plain ``alltoall`` dispatcher (``moe_token_dispatcher_type=alltoall``,
MoEAlltoAllTokenDispatcher in megatron/core/transformer/moe/token_dispatcher.py) permutes
the tokens by expert and exchanges ``tokens_per_expert`` counts: one copy per (token,
selected expert), the copies for local experts staying on the rank, with neither
de-duplication (``dedup=False``; plan ``dispatcher=alltoall``). Megatron-Bridge's
performance recipes run it for e.g. Qwen3 on B200/B300/H100 and gpt-oss at df0289c180
(scripts/performance/configs/qwen/qwen3_llm_pretrain.py sets it explicitly; the gpt-oss
recipe leaves the provider's default ``alltoall``) and ``flex`` (DeepEP/HybridEP) for
DeepSeek-V3 and for Qwen3 on GB200/GB300.

TPU ICI torus: inside a slice the all-to-all is bisection-limited
(``collectives._torus``); across slices the DCN is the scale-out network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from chipwise.errors import PlanError
from chipwise.hardware.chip import Chip
from chipwise.perf.comm.collectives import (
    SCALE_OUT_EXTRA_LATENCY_S,
    GroupLayout,
    collective_time,
)
from chipwise.perf.efficiency import Efficiency, efficiency_for

# Whether cross-domain dispatch sends each token once per remote domain (DeepEP / HybridEP
# internode mode) rather than once per expert copy (NCCL all-to-all). Megatron-Core's MoE
# guide recommends the flex dispatcher with DeepEP for cross-node expert parallelism, and
# DeepSeek-V3 trained with it (report §3.2.2). True = de-duplicate: the model's default
# where a plan does not state its dispatcher (``Plan.dispatcher``).
CROSS_DOMAIN_DEDUP = True


@dataclass(frozen=True, slots=True, kw_only=True)
class AllToAllTime:
    """One dispatch (or combine) all-to-all: seconds and where the bytes went."""

    seconds: float
    scale_up_s: float
    scale_out_s: float
    latency_s: float
    scale_up_bytes: float  # bytes one rank sends over the scale-up fabric
    scale_out_bytes: float  # bytes one rank sends over the scale-out network


def _touched(experts: int, k: int, domains: float) -> float:
    """Expected domains (of ``domains``, each holding ``experts / domains`` of the experts)
    that hold at least one of a token's ``k`` experts, chosen uniformly: the hypergeometric
    zero term C(E - E/m, k) / C(E, k) is the chance a given domain holds none."""
    if domains <= 1:
        return 1.0
    per = experts / domains
    none = math.comb(int(experts - per), k) / math.comb(experts, k) if k <= experts else 0.0
    return domains * (1.0 - none)


def remote_domains_per_token(
    experts: int, k: int, domains: int, groups: int = 0, groups_per_token: int = 0
) -> float:
    """Expected number of OTHER domains a token's ``k`` experts fall in, with ``experts``
    spread evenly (contiguously, as expert parallelism places them) over ``domains``
    domains, the token's own domain excluded (it is any domain with equal chance).

    Group-limited routing (``groups`` contiguous groups of experts, a token's experts from
    at most ``groups_per_token`` of them: DeepSeek-V3's node-limited routing, 8 groups, at
    most 4 per token, so "each token will be sent to at most 4 nodes", report §2.1.2)
    narrows the domains a token can reach: when each group spans whole domains, its experts
    come from ``groups_per_token`` groups' domains; when a domain holds whole groups, it
    touches at most the domains of its ``groups_per_token`` groups."""
    if domains <= 1 or experts <= 0 or k <= 0:
        return 0.0
    touched = _touched(experts, k, domains)
    if 0 < groups_per_token < groups:
        if domains % groups == 0:  # a group spans domains / groups domains
            pool = experts * groups_per_token // groups
            touched = min(touched, _touched(pool, k, domains * groups_per_token / groups))
        elif groups % domains == 0:  # a domain holds groups / domains whole groups
            touched = min(touched, _touched(groups, groups_per_token, domains))
    return touched * (domains - 1) / domains


def alltoall_time(
    chip: Chip,
    *,
    tokens: float,
    k: int,
    bytes_per_copy: float,
    group_size: int,
    in_domain: int,
    experts: int,
    efficiency: Efficiency | None = None,
    dedup: bool = CROSS_DOMAIN_DEDUP,
    groups: int = 0,
    groups_per_token: int = 0,
) -> AllToAllTime:
    """Time of one dispatch (or combine) over an expert-parallel group of ``group_size``
    ranks, ``in_domain`` of them per scale-up domain; each rank routes ``tokens`` tokens to
    ``k`` experts of ``experts``, ``bytes_per_copy`` bytes each (``groups`` and
    ``groups_per_token``: group-limited routing, see ``remote_domains_per_token``)."""
    n, d = group_size, max(1, min(in_domain, group_size))
    if n <= 1 or tokens <= 0:
        return AllToAllTime(seconds=0.0, scale_up_s=0.0, scale_out_s=0.0, latency_s=0.0,
                            scale_up_bytes=0.0, scale_out_bytes=0.0)  # fmt: skip
    eff = efficiency if efficiency is not None else efficiency_for(chip)
    m = max(1, n // d)
    sent = tokens * k * bytes_per_copy
    up_bytes = sent * (d - 1) / n
    if dedup and d > 1 and chip.kind == "gpu":
        # one copy per other in-domain rank that holds any of the token's k experts (DeepEP
        # dispatch layout), never more than the per-expert copies
        ranks = remote_domains_per_token(experts, k, n, groups, groups_per_token)
        up_bytes = tokens * bytes_per_copy * min(ranks * (d - 1) / (n - 1), k * (d - 1) / n)
    if m > 1 and dedup:
        remote = remote_domains_per_token(experts, k, m, groups, groups_per_token)
        out_bytes = tokens * bytes_per_copy * min(remote, k * (n - d) / n)
    else:
        out_bytes = sent * (n - d) / n
    alpha = eff.collective_latency_s
    # in-domain part: the collectives model's all-to-all on the d in-domain ranks (switch:
    # pairwise over NVLink; torus: bisection-limited), on the bytes that stay in the domain
    up_s = 0.0
    if d > 1:
        inner = collective_time(
            "all-to-all", up_bytes * d / (d - 1), d, chip, efficiency=eff,
            spans_domains=GroupLayout(chips_per_domain=d),
        )  # fmt: skip
        up_s = inner.bandwidth_s
    out_s = 0.0
    latency = alpha if d > 1 else 0.0
    if m > 1:
        tier = chip.scale_out
        if tier is None:
            raise PlanError(
                f"{chip.id}: an expert-parallel group of {n} spans {m} scale-up domains, but "
                f"the catalog lists no scale-out network for it; keep ep within {d} chips"
            )
        out_s = out_bytes / (tier.bytes_per_s_per_chip * eff.scale_out_fraction)
        latency += alpha + SCALE_OUT_EXTRA_LATENCY_S
    return AllToAllTime(
        seconds=latency + max(up_s, out_s),
        scale_up_s=up_s,
        scale_out_s=out_s,
        latency_s=latency,
        scale_up_bytes=up_bytes,
        scale_out_bytes=out_bytes,
    )


__all__ = ["CROSS_DOMAIN_DEDUP", "AllToAllTime", "alltoall_time", "remote_domains_per_token"]
