"""The prefill (context) attention op against measured op times of TensorRT-LLM, vLLM and
SGLang on H200, B200 and A100 (NVIDIA AIConfigurator's kernel database, data/aiconfigurator-
context-attention.csv): causal self-attention of 1 or 8 prompts of 256-16384 tokens, 64/8
and 8/1 query/KV heads of 128. At long prompts the kernels run near the serving step's
attention rate (``attention_peak_fraction`` x the sustained share: B200 0.48 of the bf16
peak, H200 0.53); short prompts run far below it, which the per-query-tile fixed work
(``attention_tile_blocks``, efficiency.toml ATTN-TILE) accounts for: without it the op was
modelled 2-5x too fast at 256-1024 tokens. TensorRT-LLM's own op pays 1.6-4.5x the fixed work a
tile of FlashAttention/FlashInfer does (``trtllm_attention_tile_blocks``)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from chipwise.hardware.catalog import chip
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.step.timing import time_ops
from chipwise.workload.ir import Op
from tests.perf.aic_attention import context_attention, read_table

DATA = Path(__file__).parent / "data" / "aiconfigurator-context-attention.csv"


@dataclass(frozen=True, slots=True, kw_only=True)
class Measured:
    """One measured context-attention op time."""

    chip: str
    engine: str
    heads: int
    kv_heads: int
    batch: int
    isl: int
    us: float


@cache
def _rows() -> tuple[Measured, ...]:
    return tuple(
        Measured(
            chip=r["chip"],
            engine=r["engine"],
            heads=int(r["heads"]),
            kv_heads=int(r["kv_heads"]),
            batch=int(r["batch"]),
            isl=int(r["isl"]),
            us=float(r["ms"]) * 1e3,
        )
        for r in read_table(DATA)
    )


def _attention(m: Measured) -> Op:
    return context_attention(m.heads, m.kv_heads, m.batch, m.isl, "bf16")


def _model_us(m: Measured, *, tiles: bool = True) -> float:
    """The op as a serving step times it: compute-bound at the sustained tensor share."""
    c = chip(m.chip)
    eff = GpuModel(c).efficiency
    if not tiles:
        eff = replace(eff, attention_tile_blocks=0.0, trtllm_attention_tile_blocks=0.0)
    model = GpuModel(c, eff).for_engine(m.engine)
    (t,) = time_ops((_attention(m),), model, sustained=True, compute_bound_only=True)
    return t.seconds * 1e6


def _ratios(*, tiles: bool = True, chips: tuple[str, ...] = (), short: bool | None = None,
            ) -> list[float]:  # fmt: skip
    return [_model_us(m, tiles=tiles) / m.us for m in _rows()
            if (not chips or m.chip in chips)
            and (short is None or (m.isl <= 1024) == short)]  # fmt: skip


def test_the_extract_covers_three_generations_and_engines() -> None:
    rows = _rows()
    assert len(rows) == 144
    assert {m.chip for m in rows} == {"h200-sxm", "b200", "a100-sxm"}
    assert {m.engine for m in rows} == {"trtllm", "vllm", "sglang"}


def test_each_generation_is_centred_on_the_measured_ops() -> None:
    """Each generation's median model/measured within 0.8-1.25 of 1, with every row within
    0.4-1.6x (the fast end: ops of ~20 us at 256 tokens, where the op's 10-20 us of launches
    and KV append is not modelled; the slow end: SGLang's FA2 on A100 and vLLM's FA3 on
    H200 at 4K-16K tokens, above the serving step's attention rate)."""
    for chips in (("h200-sxm",), ("b200",), ("a100-sxm",)):
        ratios = _ratios(chips=chips)
        assert 0.8 <= statistics.median(ratios) <= 1.25, (chips, sorted(ratios))
        assert all(0.4 <= r <= 1.6 for r in ratios), (chips, sorted(ratios))


def test_each_engine_is_centred_on_its_own_kernels() -> None:
    """TensorRT-LLM's context attention (its FMHA with the fused QKV/RoPE/KV-append kernel)
    pays more fixed work per query tile than the FlashAttention/FlashInfer kernels vLLM and
    SGLang run (ATTN-TILE: Hopper 4.0 vs 2.5 key blocks, Blackwell 7.0 vs 3.0, Ampere 3.0 vs
    1.0): with one pooled value TRT-LLM's ops were a median 0.85-0.87 of its whole tables.
    Per engine, each generation's TRT-LLM median is within 0.85-1.15 here."""
    for c in ("h200-sxm", "b200", "a100-sxm"):
        eff = GpuModel(chip(c)).efficiency
        assert eff.trtllm_attention_tile_blocks > 1.5 * eff.attention_tile_blocks, c
        ratios = [_model_us(m) / m.us for m in _rows() if m.chip == c and m.engine == "trtllm"]
        assert 0.85 <= statistics.median(ratios) <= 1.15, (c, sorted(ratios))


def test_short_prompts_need_the_tile_cost() -> None:
    """Prompts of 256-1024 tokens: without the per-tile work the op was a median 0.2-0.55 of
    measured on Hopper and Blackwell (the kernels' fixed work per query tile is several key
    blocks); with it the median is within 0.6-1.3 (B200 0.65: a third of its short ops take
    under 30 us, where the unmodelled 10-20 us floor of launches and KV append dominates)."""
    for chips in (("h200-sxm",), ("b200",)):
        before = statistics.median(_ratios(tiles=False, chips=chips, short=True))
        after = statistics.median(_ratios(chips=chips, short=True))
        assert before < 0.55, (chips, before)
        assert 0.6 <= after <= 1.3, (chips, after)


def test_long_prompts_run_at_the_serving_attention_rate() -> None:
    """At 4K-16K tokens the kernels are near their saturated rate: the op's median within
    0.8-1.3 of measured with or without the tile work (it adds <= 20 % there)."""
    for chips in (("h200-sxm",), ("b200",), ("a100-sxm",)):
        for tiles in (True, False):
            ratios = _ratios(tiles=tiles, chips=chips, short=False)
            assert 0.75 <= statistics.median(ratios) <= 1.3, (chips, tiles, sorted(ratios))


def test_one_prompt_on_few_heads_takes_its_longest_tile() -> None:
    """One 1024-token prompt on 8 query heads (a 70B model under tp 8) has 64 query tiles,
    fewer than the SMs: the op takes its last tile's 8 key blocks and fixed work on one SM,
    not the FLOPs spread over all of them. Measured 20-59 us; the model 0.5-1.3 of each
    (0.17-0.37 spread over the SMs; B200's SGLang 0.54 and TRT-LLM 0.68, the fast end: ops of
    ~30 us whose unmodelled 10-20 us floor of launches and KV append dominates)."""
    rows = [m for m in _rows() if m.heads == 8 and m.batch == 1 and m.isl == 1024]
    assert len(rows) == 9
    for m in rows:
        r, before = _model_us(m) / m.us, _model_us(m, tiles=False) / m.us
        assert 0.5 <= r <= 1.3, (m, r)
        assert before < 0.4, (m, before)


def test_decode_and_backward_attention_pay_no_tile_cost() -> None:
    """The tile work is the prefill kernel's: a decode step's attention (one query token)
    and the training backward keep their own models."""
    from chipwise.perf.ops.gpu import attention_tile_flops

    m = _rows()[0]
    op = _attention(m)
    eff = GpuModel(chip("b200")).efficiency
    assert attention_tile_flops(op, eff) > 0
    assert attention_tile_flops(replace(op, backward=True), eff) == 0.0
    assert attention_tile_flops(replace(op, mnk=(1, m.isl, 128)), eff) == 0.0
