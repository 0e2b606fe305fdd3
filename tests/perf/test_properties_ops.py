"""Invariants of the per-op models and collectives, checked over random inputs (hypothesis)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipwise.errors import UnsupportedOpError
from chipwise.hardware import chip
from chipwise.hardware.chip import Chip
from chipwise.perf.comm.collectives import COLLECTIVE_KINDS, collective_time
from chipwise.perf.ops.models import model_for
from chipwise.perf.ops.roofline import RooflineModel
from chipwise.workload.ir import Op, OpKind

GPUS = [chip(c) for c in ("h100-sxm", "a100-sxm-80gb", "mi300x", "b200", "gaudi3")]
TPUS = [chip(c) for c in ("tpu-v5p", "tpu-v6e", "tpu-v5e")]
CHIPS = GPUS + TPUS

chips = st.sampled_from(CHIPS)
dims = st.integers(min_value=1, max_value=20_000)
sizes = st.floats(min_value=1.0, max_value=1e11)
memory_kinds = st.sampled_from(
    [OpKind.ELEMENTWISE, OpKind.COPY, OpKind.NORM, OpKind.GATHER, OpKind.SCATTER, OpKind.REDUCTION]
)
FAST = settings(max_examples=60, deadline=None)


def mm(m: int, n: int, k: int, batch: int = 1, dtype: str = "bf16") -> Op:
    return Op(name="mm", kind=OpKind.MATMUL, dtype=dtype, mnk=(m, n, k), batch=batch)


@FAST
@given(chips, memory_kinds, sizes, st.floats(min_value=1.0, max_value=10.0))
def test_more_hbm_bandwidth_never_slows_a_memory_op(
    c: Chip, kind: OpKind, n_bytes: float, factor: float
) -> None:
    op = Op(name="x", kind=kind, bytes_read=n_bytes, bytes_written=n_bytes / 2, flops=n_bytes / 4)
    faster = dataclasses.replace(c, hbm_bytes_per_s=c.hbm_bytes_per_s * factor)
    assert model_for(faster).op_time(op).seconds <= model_for(c).op_time(op).seconds * (1 + 1e-12)


@FAST
@given(chips, dims, dims, dims, st.floats(min_value=1.0, max_value=10.0))
def test_more_hbm_bandwidth_never_slows_a_matmul(
    c: Chip, m: int, n: int, k: int, factor: float
) -> None:
    faster = dataclasses.replace(c, hbm_bytes_per_s=c.hbm_bytes_per_s * factor)
    op = mm(m, n, k)
    assert model_for(faster).op_time(op).seconds <= model_for(c).op_time(op).seconds * (1 + 1e-12)


@FAST
@given(chips, dims, dims, dims, st.sampled_from([0, 1, 2]))
def test_more_work_is_never_faster(c: Chip, m: int, n: int, k: int, axis: int) -> None:
    # Padding and tile/wave quantisation make time a step function, never a falling one.
    grown = [m, n, k]
    grown[axis] += 1
    model = model_for(c)
    assert model.op_time(mm(*grown)).seconds >= model.op_time(mm(m, n, k)).seconds


@FAST
@given(chips, dims, dims, dims, st.integers(min_value=1, max_value=64))
def test_the_refined_model_is_never_faster_than_the_roofline(
    c: Chip, m: int, n: int, k: int, batch: int
) -> None:
    op = mm(m, n, k, batch)
    assert model_for(c).op_time(op).seconds >= RooflineModel(c).op_time(op).seconds


@FAST
@given(st.sampled_from(TPUS), st.sampled_from(list(OpKind)), sizes)
def test_fp64_on_any_tpu_raises(c: Chip, kind: OpKind, flops: float) -> None:
    op = Op(name="x", kind=kind, dtype="fp64", flops=flops, bytes_read=8.0)
    with pytest.raises(UnsupportedOpError, match="fp64"):
        model_for(c).op_time(op)


@FAST
@given(chips, st.sampled_from(["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4"]))
def test_a_tensor_op_in_an_unsupported_dtype_raises(c: Chip, dtype: str) -> None:
    op = mm(256, 256, 256, dtype=dtype)
    if c.supports(dtype) and not (c.kind == "tpu" and dtype == "fp64"):
        assert model_for(c).op_time(op).seconds > 0
    else:
        with pytest.raises(UnsupportedOpError):
            model_for(c).op_time(op)


groups = st.sampled_from([2, 4, 8, 16, 64, 256, 512])


@FAST
@given(chips, st.sampled_from(COLLECTIVE_KINDS), groups, sizes, st.floats(1.0, 100.0))
def test_collective_time_grows_with_bytes(
    c: Chip, kind: str, n: int, n_bytes: float, factor: float
) -> None:
    if c.scale_out is None and n > c.scale_up.domain_chips:
        return
    small = collective_time(kind, n_bytes, n, c).seconds
    big = collective_time(kind, n_bytes * factor, n, c).seconds
    assert big >= small


@FAST
@given(chips, st.sampled_from([2, 4, 8]), sizes)
def test_all_reduce_never_beats_the_link_rate(c: Chip, n: int, n_bytes: float) -> None:
    # Inside one scale-up domain: algorithm bandwidth (S / t) never exceeds the link rate,
    # and bus bandwidth does not either unless the switch itself reduces (NVLS).
    if n > c.scale_up.domain_chips:
        return
    t = collective_time("all-reduce", n_bytes, n, c)
    assert t.alg_bytes_per_s <= t.link_bytes_per_s
    if t.algorithm != "nvls":
        assert t.bus_bytes_per_s <= t.link_bytes_per_s
