"""Projections a quantised checkpoint keeps out of its low precision (TransformerSpec
quant_exclude): read from the HF quantization_config's exclude list, run and stored in bf16."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipwise.errors import WorkloadError
from chipwise.hardware.catalog import chip as find_chip
from chipwise.limits import MAX_EXCLUDE_PATTERNS
from chipwise.perf.base import Plan
from chipwise.perf.ops.layers import Dtypes, Shard, attention_ops, excluded_params
from chipwise.perf.plan.memory import serve_memory
from chipwise.workload.config import spec_from_config
from chipwise.workload.ir import OpKind, TransformerSpec
from chipwise.workload.presets import load_preset

CONFIGS = Path(str(resources.files("chipwise.validate").joinpath("data", "configs")))
MLA = ("q_down", "q_up", "kv_down", "kv_up", "o_proj")
# every MLA op an exclude list can name: also q_proj, the query projection of an MLA model
# without q_lora_rank (DeepSeek-V2-Lite; workload/config.py _MLA_PROJECTIONS)
MLA_OPS = (*MLA, "q_proj")


def _spec(name: str) -> TransformerSpec:
    config = json.loads((CONFIGS / name).read_text())
    return spec_from_config(config, name=name)


def _dtypes(spec: TransformerSpec, precision: str = "fp4") -> dict[str, str]:
    ops = attention_ops(spec, b=4, s=128, shard=Shard(tp=8), dt=Dtypes.for_precision(precision))
    return {op.name: op.dtype for op in ops if op.kind is OpKind.MATMUL}


def test_deepseek_r1_fp4_keeps_every_mla_projection_in_bf16() -> None:
    spec = _spec("nvidia-deepseek-r1-fp4.json")
    assert set(MLA) <= set(spec.quant_exclude)
    assert all(_dtypes(spec)[name] == "bf16" for name in MLA)


def test_deepseek_r1_fp4_v2_quantises_o_proj_only() -> None:
    # the v2 model cards: "additionally quantizes the wo module in attention layers"; the
    # exclude list names TensorRT-LLM's fused_a (q_a_proj + kv_a_proj_with_mqa)
    spec = _spec("nvidia-deepseek-r1-fp4-v2.json")
    assert "o_proj" not in spec.quant_exclude
    dtypes = _dtypes(spec)
    assert dtypes["o_proj"] == "fp4"
    assert all(dtypes[name] == "bf16" for name in ("q_down", "q_up", "kv_down", "kv_up"))


def test_amd_quark_mxfp4_exclude_keeps_every_mla_projection_in_bf16() -> None:
    # amd/DeepSeek-R1-0528-MXFP4-Preview: quantize_quark.py --exclude_layers "*self_attn*
    # *mlp.gate.* *lm_head" (the model card); Quark's config names the list 'exclude'
    spec = _spec("amd-deepseek-r1-0528-mxfp4-preview.json")
    assert set(MLA) <= set(spec.quant_exclude)
    assert all(_dtypes(spec)[name] == "bf16" for name in MLA)


def test_the_zoo_architecture_runs_every_projection_at_the_precision() -> None:
    spec = load_preset("deepseek-v3")
    assert spec.quant_exclude == ()
    assert set(_dtypes(spec).values()) == {"fp4"}


def test_excluded_projections_follow_a_bf16_precision() -> None:
    spec = _spec("nvidia-deepseek-r1-fp4.json")
    assert set(_dtypes(spec, "bf16").values()) == {"bf16"}


def test_checkpoint_sizes_match_the_published_element_counts() -> None:
    # 187.1M weights per layer in MLA's projections, 69.7M of them outside o_proj
    # (validate/data/configs/*.json _source: 396.7B and 393.6B safetensors elements)
    assert excluded_params(_spec("nvidia-deepseek-r1-fp4.json")) / 1e6 == pytest.approx(
        187.1, abs=0.1
    )
    assert excluded_params(_spec("nvidia-deepseek-r1-fp4-v2.json")) / 1e6 == pytest.approx(
        69.7, abs=0.1
    )


def test_serving_memory_holds_the_excluded_weights_in_bf16() -> None:
    plan = Plan(tp=8, ep=8)
    chip = find_chip("b200")
    kwargs: dict[str, Any] = dict(
        batch=1, context=1024, precision="fp4", kv_dtype="fp8", prefill_tokens=1024, chip=chip
    )
    base = serve_memory(load_preset("deepseek-v3"), plan, **kwargs).weights_bytes
    kept = serve_memory(_spec("nvidia-deepseek-r1-fp4.json"), plan, **kwargs).weights_bytes
    extra = 61 * excluded_params(_spec("nvidia-deepseek-r1-fp4.json")) / 8 * (2 - 0.5625)
    assert kept - base == pytest.approx(extra, rel=1e-6)


def _with_exclude(patterns: list[str], key: str = "exclude_modules") -> TransformerSpec:
    config = json.loads((CONFIGS / "nvidia-deepseek-r1-fp4.json").read_text())
    config["quantization_config"] = {"quant_method": "modelopt", key: patterns}
    return spec_from_config(config, name="probe")


def test_exclude_lists_match_wildcards_regexes_and_parents() -> None:
    assert _with_exclude(["model.layers.*.self_attn.kv_b_proj"]).quant_exclude == ("kv_up",)
    assert _with_exclude(["re:.*self_attn\\.o_proj$"], key="ignore").quant_exclude == ("o_proj",)
    assert "q_up" in _with_exclude(["model.layers"]).quant_exclude  # a parent module


def test_a_projection_excluded_in_some_layers_only_stays_quantised() -> None:
    assert _with_exclude(["model.layers.0.self_attn*"]).quant_exclude == ()
    assert _with_exclude(["lm_head"]).quant_exclude == ()


def test_gqa_needs_q_k_and_v_excluded_for_the_fused_projection() -> None:
    config = json.loads(Path(str(resources.files("chipwise.workload.presets").joinpath(
        "configs", "llama3-8b.json"))).read_text())  # fmt: skip
    config["quantization_config"] = {"exclude_modules": ["model.layers.*.self_attn.q_proj"]}
    assert spec_from_config(config, name="probe").quant_exclude == ()
    config["quantization_config"] = {"exclude_modules": ["model.layers.*.self_attn*"]}
    assert spec_from_config(config, name="probe").quant_exclude == ("qkv_proj", "o_proj")


def test_a_regex_that_could_backtrack_for_long_is_refused_at_once() -> None:
    # "(.*.*)*X" takes minutes on one 45-character module name under Python's re; a config
    # is user input, so such a pattern (or > MAX_EXCLUDE_REGEX_REPEATS repeats) is an error
    for pattern in ("re:(.*.*)*X", "re:.*.*.*.*.*.*.*X", "re:(a|aa)+$"):
        with pytest.raises(WorkloadError, match="repeats"):
            _with_exclude([pattern], key="ignore")


def test_exclude_lists_beyond_the_bounds_are_errors() -> None:
    with pytest.raises(WorkloadError, match="at most"):
        _with_exclude(
            [f"model.layers.{i}.self_attn.o_proj" for i in range(MAX_EXCLUDE_PATTERNS + 1)]
        )
    with pytest.raises(WorkloadError, match="pattern-module pairs"):
        _with_exclude([f"re:.*layers\\.{i}\\..*" for i in range(2000)], key="ignore")


def test_per_layer_names_and_wildcards_mix() -> None:
    names = [f"model.layers.{i}.self_attn.kv_b_proj" for i in range(61)]
    assert _with_exclude(names).quant_exclude == ("kv_up",)
    assert _with_exclude([*names[:-1], "model.layers.6?.self_attn.kv_b_proj"]).quant_exclude == (
        "kv_up",
    )
    assert _with_exclude(names[:-1]).quant_exclude == ()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="re:.*+?()[]{}|\\^$0123456789aq_xselfatnproj", max_size=24),
                max_size=4))  # fmt: skip
def test_any_exclude_list_reads_or_is_one_clear_error(patterns: list[str]) -> None:
    try:
        spec = _with_exclude(patterns, key="ignore")
    except WorkloadError as err:
        assert "\n" not in str(err)
    else:
        assert set(spec.quant_exclude) <= set(MLA_OPS)
