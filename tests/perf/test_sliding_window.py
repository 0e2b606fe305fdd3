"""Sliding-window attention: the per-layer pattern from configs, and what it costs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from chipwise.errors import WorkloadError
from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.layers import (
    Shard,
    block_overcount,
    block_pairs,
    decode_layer_ops,
    layer_ops,
)
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.memory import serve_memory, stage_layer_kinds
from chipwise.perf.plan.parallel import Network
from chipwise.perf.step.train import StepModel
from chipwise.workload.accounting import model_flops_per_token
from chipwise.workload.config import load_config
from chipwise.workload.ir import OpKind, TransformerSpec
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
BASE = TransformerSpec(
    name="swa", n_layers=12, d_model=1024, n_heads=16, n_kv_heads=4, head_dim=64,
    d_ff=4096, vocab_size=32000, sliding_window=512, sliding_window_pattern=3,
)  # fmt: skip


def _write(tmp_path: Path, **extra: object) -> Path:
    cfg = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4,
           "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 4096,
           "vocab_size": 32000, **extra}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


def test_the_pattern_marks_every_nth_layer_global() -> None:
    assert [BASE.is_sliding_layer(i) for i in range(6)] == [True, True, False] * 2
    assert BASE.n_sliding_layers == 8
    assert replace(BASE, sliding_window_pattern=0).n_sliding_layers == 12  # Mistral: all
    assert replace(BASE, sliding_window=0).n_sliding_layers == 0


@pytest.mark.parametrize(
    ("name", "pattern", "sliding"),
    [("gpt-oss-120b", 2, 18), ("gemma3-12b", 6, 40), ("mistral-7b", 0, 32), ("llama3-8b", 0, 0)],
)
def test_zoo_configs_carry_their_pattern(name: str, pattern: int, sliding: int) -> None:
    spec = load_preset(name)
    assert (spec.sliding_window_pattern, spec.n_sliding_layers) == (pattern, sliding)


def test_layer_types_become_a_pattern(tmp_path: Path) -> None:
    types = ["sliding_attention", "full_attention"] * 2
    spec = load_config(_write(tmp_path, sliding_window=128, layer_types=types), reader="builtin")
    assert spec.sliding_window == 128 and spec.sliding_window_pattern == 2
    assert [spec.is_sliding_layer(i) for i in range(4)] == [True, False, True, False]


def test_an_irregular_layer_types_list_is_refused(tmp_path: Path) -> None:
    types = ["full_attention", "sliding_attention", "sliding_attention", "full_attention"]
    path = _write(tmp_path, sliding_window=128, layer_types=types)
    with pytest.raises(WorkloadError, match="not 'every n-th"):
        load_config(path, reader="builtin")
    # linear-attention layers (Gated DeltaNet) without their sizes: refused, naming them
    path = _write(tmp_path, sliding_window=128, layer_types=["linear_attention"] * 4)
    with pytest.raises(WorkloadError, match="linear attention needs linear_num_key_heads"):
        load_config(path, reader="builtin")


def test_gemma3_pattern_key_is_read(tmp_path: Path) -> None:
    path = _write(tmp_path, sliding_window=1024, sliding_window_pattern=2)
    assert load_config(path, reader="builtin").sliding_window_pattern == 2


def test_windowed_layers_attend_to_min_seq_window_keys() -> None:
    kw = {"b": 1, "seq_len": 4096, "shard": Shard(), "precision": "bf16", "moe": False}
    full = next(o for o in layer_ops(BASE, sliding=False, **kw) if o.kind is OpKind.ATTENTION)
    local = next(o for o in layer_ops(BASE, sliding=True, **kw) if o.kind is OpKind.ATTENTION)
    # causal: S^2/2 pairs vs S*w - w^2/2
    assert full.flops == pytest.approx(2 * 16 * 4096**2 / 2 * 128)
    assert local.flops == pytest.approx(2 * 16 * (4096 * 512 - 512**2 / 2) * 128)
    short = {**kw, "seq_len": 256}
    a = next(o for o in layer_ops(BASE, sliding=True, **short) if o.kind is OpKind.ATTENTION)
    b = next(o for o in layer_ops(BASE, sliding=False, **short) if o.kind is OpKind.ATTENTION)
    assert a.flops == b.flops  # a window longer than the sequence changes nothing


def test_flash_tiles_cover_the_diagonal_and_the_band_of_a_window() -> None:
    # causal, 4 tiles of 128 a side: the 10 tiles on or below the diagonal, whole
    assert block_pairs(512, causal=True, window=0, block_q=128, block_kv=128) == 10 * 128**2
    # a window of 128 crosses two 128-key tiles per query tile (the first has one)
    assert block_pairs(512, causal=True, window=128, block_q=128, block_kv=128) == 7 * 128**2
    # no mask: every tile, a partial last one counted whole
    assert block_pairs(300, causal=False, window=0, block_q=128, block_kv=128) == 300 * 384


def test_a_narrow_window_costs_whole_splash_blocks_on_tpu() -> None:
    kw = {"b": 1, "seq_len": 8192, "shard": Shard(), "precision": "bf16", "moe": False}
    spec = replace(BASE, sliding_window=128)
    local = next(o for o in layer_ops(spec, sliding=True, **kw) if o.kind is OpKind.ATTENTION)
    full = next(o for o in layer_ops(spec, sliding=False, **kw) if o.kind is OpKind.ATTENTION)
    assert (local.window, local.causal, full.window) == (128, True, 0)
    # 512-key blocks: each query block needs its own and the previous one, 1024 keys for
    # a window of 128 (~8x the pairs)
    logical = 8192 * 128 - 128**2 / 2
    assert block_overcount(local, 512) == pytest.approx((1 + 2 * 15) * 512**2 / logical)
    # global attention: its diagonal tiles are inside the measured attention efficiency
    assert block_overcount(full, 512) == 1.0
    assert block_overcount(local, 128) == pytest.approx((1 + 2 * 63) * 128**2 / logical)
    v7 = chip("tpu-v7")
    t = model_for(v7).op_time(local)
    assert t.seconds > model_for(v7).op_time(replace(local, window=0, causal=False)).seconds / 4
    # decode (one query) and other shapes are left alone
    assert block_overcount(replace(local, mnk=(1, 8192, 64)), 512) == 1.0


def test_decode_reads_only_the_window_of_a_sliding_layer() -> None:
    kw = {"batch": 4, "context": 8192, "shard": Shard(), "precision": "bf16",
          "kv_dtype": "bf16", "moe": False}  # fmt: skip
    g = next(o for o in decode_layer_ops(BASE, sliding=False, **kw) if o.kind is OpKind.ATTENTION)
    s = next(o for o in decode_layer_ops(BASE, sliding=True, **kw) if o.kind is OpKind.ATTENTION)
    assert s.bytes_read < g.bytes_read / 8


def test_kv_cache_keeps_the_window_in_sliding_layers() -> None:
    kw = {"batch": 8, "context": 8192, "precision": "bf16", "kv_dtype": "bf16",
          "prefill_tokens": 8192, "chip": H100}  # fmt: skip
    mixed = serve_memory(BASE, Plan(), **kw).kv_cache_bytes
    dense = serve_memory(replace(BASE, sliding_window=0), Plan(), **kw).kv_cache_bytes
    # 4 of 12 layers keep 8192 tokens, 8 keep 512
    assert mixed == pytest.approx(dense * (4 * 8192 + 8 * 512) / (12 * 8192))


def test_the_busiest_stage_gets_its_global_layers_rounded_up() -> None:
    assert stage_layer_kinds(BASE, 12, 1) == ((False, False, 4), (False, True, 8))
    assert stage_layer_kinds(BASE, 3, 4) == ((False, False, 1), (False, True, 2))
    dense = replace(BASE, sliding_window=0)
    assert stage_layer_kinds(dense, 12, 1) == ((False, False, 12),)


def test_a_step_with_the_pattern_sits_between_all_global_and_all_local() -> None:
    def step(spec: TransformerSpec) -> float:
        m = StepModel(spec, H100, "bf16", model_for(H100), Network(H100))
        return m.train(Plan(), seq_len=8192, global_batch=2).step_time_s

    mixed, glob = step(BASE), step(replace(BASE, sliding_window=0))
    local = step(replace(BASE, sliding_window_pattern=0))
    assert local < mixed < glob


def test_the_validation_flop_convention_still_counts_full_attention() -> None:
    dense = replace(BASE, sliding_window=0)
    assert model_flops_per_token(BASE, 8192) == model_flops_per_token(dense, 8192)


def test_splash_backward_blocks_are_the_recipes_2048_capped_at_causal() -> None:
    """The backward's 2048-key tiles (the Ironwood MaxText recipes' sa_block_*_dkv) cost a
    128-token window two of them per query tile; a window as wide as the tiles costs no
    more than causal attention over the sequence."""
    from chipwise.perf.ops.tpu import SPLASH_BWD_BLOCK, causal_ceiling

    kw = {"b": 1, "seq_len": 8192, "shard": Shard(), "precision": "bf16", "moe": False}
    local = next(o for o in layer_ops(replace(BASE, sliding_window=128), sliding=True, **kw)
                 if o.kind is OpKind.ATTENTION)  # fmt: skip
    bwd = replace(local, name="attention_bwd", backward=True)
    v7 = model_for(chip("tpu-v7"))
    fwd_t, bwd_t = v7.op_time(local), v7.op_time(bwd)
    # 2048-key tiles: (1 + 2 * 3) of them over 4 query tiles, against 512-key ones forward
    assert block_overcount(bwd, SPLASH_BWD_BLOCK) / block_overcount(local, 512) == pytest.approx(
        7 * 2048**2 / ((1 + 2 * 15) * 512**2)
    )
    assert any("splash blocks of 2048" in n for n in bwd_t.notes)
    assert bwd_t.seconds > 3 * fwd_t.seconds
    # Mistral-7B's 4096-token window at 8192 tokens: 9 tiles of 2048, more than causal's
    # logical pairs, so it costs what causal attention does
    spec = replace(BASE, sliding_window=4096)
    wide, causal = (
        replace(next(o for o in layer_ops(spec, sliding=s, **kw) if o.kind is OpKind.ATTENTION),
                backward=True)
        for s in (True, False)
    )  # fmt: skip
    assert causal_ceiling(wide) == pytest.approx(8192**2 / 2 / (8192 * 4096 - 4096**2 / 2))
    assert v7.op_time(wide).seconds == pytest.approx(v7.op_time(causal).seconds)
    assert causal_ceiling(causal) == float("inf")
