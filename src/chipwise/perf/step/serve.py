"""Serving: prefill (compute-bound) and decode (memory-bound), TTFT, TPOT and throughput.

A serving plan is ``dp`` replicas of a ``tp x pp`` model; each replica serves
``ceil(batch / dp)`` concurrent requests. Steady state of continuous batching with every
request ``input_len`` in and ``output_len`` out: per request slot, the replica spends one
prefill of its batch's prompts and ``output_len`` decode steps, so

    TTFT = prefill time of the replica's batch (b x input_len tokens, one forward)
    TPOT = one decode step at the mean context (input_len + output_len / 2)
    output tokens/s = batch x output_len / (TTFT + output_len x TPOT)

Decode reads every weight and the whole KV cache per step (the projections are GEMMs with
M = b, which the per-op model makes memory-bound). Tensor parallelism adds two all-reduces
of the activations per layer; at decode sizes these are latency-bound and not overlapped
(vLLM's and TensorRT-LLM's custom all-reduce run between the GEMMs). Pipeline stages run
one after another for a given token (PP adds capacity, not latency).
"""

from __future__ import annotations

from chipwise.errors import PlanError
from chipwise.perf.base import Assumption, Breakdown, InferPrediction, OpTime, Plan
from chipwise.perf.ops.layers import (
    Shard,
    decode_layer_ops,
    embedding_ops,
    head_ops,
    layer_ops,
)
from chipwise.perf.plan.memory import serve_memory, stage_layer_kinds
from chipwise.perf.plan.parallel import Group, check_plan, groups
from chipwise.perf.step.timing import Cost, StepTimer
from chipwise.perf.step.train import TP_OVERLAP
from chipwise.units import dtype_bytes
from chipwise.workload.ir import Op

# Host work per decode step (scheduling, sampling, detokenising, launching the step's
# graph). vLLM's V1 re-architecture blog (2025-01-27) reports CPU overhead as the
# bottleneck it removed; with CUDA graphs a step's fixed cost is ~1-3 ms in vLLM and
# TensorRT-LLM traces. 2 ms assumed.
DECODE_STEP_OVERHEAD_S = 2e-3
# Each prefill step pays the same fixed host cost.
PREFILL_STEP_OVERHEAD_S = 2e-3


def kv_dtype_for(precision: str) -> str:
    """KV cache dtype: fp8 with fp8 serving, fp32 with fp32, otherwise bf16."""
    if precision == "fp8":
        return "fp8"
    if precision == "fp32":
        return "fp32"
    if precision == "fp16":
        return "fp16"
    return "bf16"


def serve_assumptions() -> tuple[Assumption, ...]:
    return (
        Assumption(
            name="decode_step_overhead_s",
            value=DECODE_STEP_OVERHEAD_S,
            source="perf/step/serve.py (host cost per decode step, vLLM/TRT-LLM traces)",
        ),
        Assumption(
            name="serving_steady_state",
            value="continuous batching, prefill of the batch then output_len decode steps",
            source="perf/step/serve.py",
        ),
    )


class ServeModel(StepTimer):
    """Times serving of one model on one chip type, caching op times."""

    def _time(self, ops: tuple[Op, ...], *, sustained: bool = True) -> Cost:
        return self.cost(ops, sustained=sustained)

    def _layers(self, ops_for: dict[tuple[bool, bool], tuple[Op, ...]], *, sustained: bool) -> Cost:
        """All decoder layers (a token passes every stage in turn), by (moe, sliding) kind."""
        total = Cost()
        for moe, sliding, count in stage_layer_kinds(self.spec, self.spec.n_layers, 1):
            total = total + self._time(ops_for[moe, sliding], sustained=sustained).scaled(count)
        return total

    def serve(self, plan: Plan, *, batch: int, input_len: int, output_len: int) -> InferPrediction:
        spec, chip = self.spec, self.chip
        if plan.fsdp > 1 or plan.cp > 1 or plan.vp > 1:
            raise PlanError("serving plans use tp, pp, dp (replicas) and ep only")
        check_plan(plan, plan.chips, chip, spec)
        g = groups(plan, chip)
        b = -(-batch // plan.dp)  # requests per replica
        shard = Shard(tp=plan.tp, ep=plan.ep)
        act = dtype_bytes("fp32" if self.precision == "fp32" else "bf16")
        kv_dtype = kv_dtype_for(self.precision)
        kw = {"b": b, "seq_len": input_len, "shard": shard, "precision": self.precision}

        # prefill: one forward over b x input_len tokens
        kinds = [(moe, sliding) for moe, sliding, _ in stage_layer_kinds(spec, spec.n_layers, 1)]
        pre_ops = {
            (moe, sliding): layer_ops(spec, moe=moe, sliding=sliding, **kw)  # type: ignore[arg-type]
            for moe, sliding in kinds
        }
        pre = self._layers(pre_ops, sustained=True)
        ends = embedding_ops(spec, **kw) + head_ops(spec, loss=False, **kw)  # type: ignore[arg-type]
        pre = pre + self._time(ends)
        tokens = b * input_len
        comm_pre = self._comm(plan, g, tokens * spec.d_model * act) * (1 - TP_OVERLAP)
        ttft = pre.total_s + comm_pre + PREFILL_STEP_OVERHEAD_S

        # decode: one token for each of b requests at the mean context
        context = input_len + max(1, output_len) // 2
        dec_ops = {
            (moe, sliding): decode_layer_ops(spec, batch=b, context=context, shard=shard,
                                             precision=self.precision, kv_dtype=kv_dtype,
                                             moe=moe, sliding=sliding)
            for moe, sliding in kinds
        }  # fmt: skip
        dec = self._layers(dec_ops, sustained=False)
        kw1 = {"b": b, "seq_len": 1, "shard": shard, "precision": self.precision}
        dec = dec + self._time(
            embedding_ops(spec, **kw1) + head_ops(spec, loss=False, **kw1),  # type: ignore[arg-type]
            sustained=False,
        )
        comm_dec = self._comm(plan, g, b * spec.d_model * act)
        tpot = dec.total_s + comm_dec + DECODE_STEP_OVERHEAD_S

        memory = serve_memory(
            spec,
            plan,
            batch=b,
            context=input_len + output_len,
            precision=self.precision,
            kv_dtype=kv_dtype,
            prefill_tokens=tokens,
            chip=chip,
        )
        return InferPrediction(
            workload=spec.name,
            chip_id=chip.id,
            chips=plan.chips,
            precision=self.precision,
            plan=plan,
            batch=batch,
            input_len=input_len,
            output_len=output_len,
            ttft_s=ttft,
            tpot_s=tpot,
            memory=memory,
            capacity_bytes=chip.hbm_capacity_bytes,
            prefill=Breakdown(
                compute_s=pre.compute_s,
                memory_s=pre.memory_s,
                communication_s=comm_pre,
                overhead_s=pre.overhead_s + PREFILL_STEP_OVERHEAD_S,
            ),
            decode=Breakdown(
                compute_s=dec.compute_s,
                memory_s=dec.memory_s,
                communication_s=comm_dec,
                overhead_s=dec.overhead_s + DECODE_STEP_OVERHEAD_S,
            ),
            assumptions=serve_assumptions() + self.model_assumptions,
        )

    def layer_op_times(
        self, plan: Plan, *, batch: int, input_len: int, output_len: int
    ) -> tuple[tuple[OpTime, ...], tuple[OpTime, ...]]:
        """Per-op times of one typical prefill layer and one decode layer under ``plan``
        (an MoE model's typical layer is an MoE layer), for a roofline chart."""
        spec = self.spec
        shard = Shard(tp=plan.tp, ep=plan.ep)
        b = -(-batch // plan.dp)  # requests per replica, as ``serve`` counts them
        moe = spec.is_moe
        prefill = layer_ops(
            spec, b=b, seq_len=input_len, shard=shard, precision=self.precision, moe=moe
        )
        decode = decode_layer_ops(
            spec,
            batch=b,
            context=input_len + max(1, output_len) // 2,
            shard=shard,
            precision=self.precision,
            kv_dtype=kv_dtype_for(self.precision),
            moe=moe,
        )
        return tuple(self.time_ops(prefill)), tuple(self.time_ops(decode))

    def _comm(self, plan: Plan, g: dict[str, Group], n_bytes: float) -> float:
        """Per forward pass: 2 all-reduces per layer over tp, p2p between stages, and the
        all-to-alls of MoE layers over ep."""
        spec = self.spec
        t = 0.0
        if plan.tp > 1:
            t += 2 * spec.n_layers * self.network.time_s("all_reduce", n_bytes, g["tp"])
        if plan.pp > 1:
            t += (plan.pp - 1) * self.network.time_s("p2p", n_bytes / plan.tp, g["pp"])
        if spec.is_moe and plan.ep > 1:
            a2a = self.network.time_s("all_to_all", n_bytes * spec.experts_per_token, g["ep"])
            t += 2 * spec.n_moe_layers * a2a
        return t
