"""Lower bounds no plan can beat: the bytes per chip every plan needs, and the seconds per
training step at peak FLOP/s. A search (``advise``) skips chip counts that fail a bound
before planning them; being lower bounds, they never skip a count that could qualify."""

from __future__ import annotations

from chipwise.hardware.chip import Chip
from chipwise.perf.plan.memory import frozen_bytes_per_param, offloads, reserve_bytes, slack_bytes
from chipwise.perf.step.train import training_flops_per_token
from chipwise.units import dtype_bytes
from chipwise.workload.accounting import matmul_params
from chipwise.workload.ir import Training, TransformerSpec


def memory_floor_bytes(
    spec: TransformerSpec,
    chip: Chip,
    chips: int,
    precision: str,
    *,
    training: bool,
    method: str = "full",
) -> float:
    """Bytes per chip that every plan on ``chips`` chips needs at least.

    Whatever the sharding, each matmul weight (and in training its gradient and optimizer
    state; ZeRO §3.1 bytes, as ``perf.plan.memory`` counts them) is stored at least once
    across the chips, so the fullest chip holds at least 1/``chips`` of it, plus the
    framework reserve every chip keeps. Embeddings, activations and the KV cache only add
    to this. Routed experts count too: ``perf.plan.memory.sharded_params`` never shards
    them more than ``chips`` ways. The reserve counts without its fragmentation allowance
    (a tight plan may use it) and TPU plans may keep bf16 states (``Plan.states``).
    """
    if training:  # LoRA/QLoRA: only the frozen base as stored (``method``)
        per_param = frozen_bytes_per_param(method, precision, bf16_states=offloads(chip))
    else:  # serving keeps weights in the serving precision (perf.plan.memory.serve_memory)
        per_param = 4.0 if precision == "fp32" else dtype_bytes(precision)
    params = matmul_params(spec)
    return params * per_param / chips + reserve_bytes(chip) - slack_bytes(chip)


def _floor_peak_flops_per_s(chip: Chip, precision: str) -> float:
    """The fastest rate any op of a ``precision`` step may run at: the precision's own, bf16
    (activations of fp8/int8 steps) or tf32 (fp32 matmuls on tensor cores)."""
    rates = [chip.dense_flops_per_s[d] for d in (precision, "bf16", "tf32") if chip.supports(d)]
    return max(rates)


def step_floor_s(
    spec: TransformerSpec, phase: Training, chip: Chip, chips: int, precision: str
) -> float:
    """Seconds per training step no plan can beat: the step's model FLOPs (causal attention
    halved, no recompute) at the chip's peak rate, perfectly spread over ``chips``."""
    flops = training_flops_per_token(spec, phase, causal_halving=True)
    tokens = phase.seq_len * phase.global_batch
    return flops * tokens / (chips * _floor_peak_flops_per_s(chip, precision))
