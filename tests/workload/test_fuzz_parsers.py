"""Property-based fuzzing of every parser a user's text reaches (issue 14): config.json bytes
and objects, primitive specs, workload strings, ``--plan`` and ``--prefill-pool`` strings and
quantity strings.
Any input gives a result or a ``ChipwiseError`` (``ValueError`` for ``parse_quantity``,
whose callers turn it into one), never another exception, within the deadline."""

from __future__ import annotations

import contextlib
import json
import math
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chipwise.errors import ChipwiseError
from chipwise.limits import MAX_LAYERS, MAX_PRIMITIVE_BYTES
from chipwise.perf.base import Plan, parse_plan, plan_values
from chipwise.units import parse_quantity
from chipwise.workload.config import parse_config_bytes, spec_from_config
from chipwise.workload.ir import PrefillPool, TransformerSpec, parse_prefill_pool
from chipwise.workload.load import load_workload_model
from chipwise.workload.primitives import parse_primitive

# Generous per-example bound: each parse is milliseconds; the bound catches a hang or a
# loop over a user-given count, not a slow machine.
FUZZ = settings(
    max_examples=60,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow],
)

KEYS = (
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "intermediate_size", "vocab_size", "head_dim", "max_position_embeddings",
    "num_local_experts", "num_experts_per_tok", "moe_intermediate_size", "sliding_window",
    "sliding_window_pattern", "first_k_dense_replace", "moe_layer_freq", "kv_lora_rank",
    "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "n_shared_experts",
    "decoder_sparse_step", "interleave_moe_layer_step",
)  # fmt: skip
NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.integers(min_value=0, max_value=70_000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(max_size=8),
    st.none(),
)
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=40,
)
BASE: dict[str, Any] = {
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "intermediate_size": 14336, "vocab_size": 128256,
}  # fmt: skip


def _spec_or_error(raw: dict[str, Any]) -> None:
    try:
        spec = spec_from_config(raw, name="fuzz")
    except ChipwiseError:
        return
    assert isinstance(spec, TransformerSpec)
    assert 1 <= spec.n_layers <= MAX_LAYERS


@FUZZ
@given(st.binary(max_size=2000))
def test_any_bytes_are_a_config_or_one_error(data: bytes) -> None:
    try:
        raw = parse_config_bytes(data, "fuzz.json")
    except ChipwiseError as err:
        assert "\n" not in str(err)
        return
    _spec_or_error(raw)


@FUZZ
@given(st.dictionaries(st.sampled_from(KEYS), NUMBERS, max_size=8), st.booleans())
def test_any_numbers_in_a_config_are_a_spec_or_one_error(
    changes: dict[str, Any], nested: bool
) -> None:
    raw: dict[str, Any] = {**BASE, **changes}
    if nested:
        raw = {"model_type": "gemma3", "text_config": raw}
    text = json.dumps(raw, allow_nan=True).encode()
    try:
        parsed = parse_config_bytes(text, "fuzz.json")
    except ChipwiseError:
        return
    _spec_or_error(parsed)


@FUZZ
@given(st.dictionaries(st.text(max_size=12), JSON_VALUES, max_size=6))
def test_any_json_object_is_a_config_or_one_error(extra: dict[str, Any]) -> None:
    text = json.dumps({**BASE, **extra}, allow_nan=True).encode()
    try:
        parsed = parse_config_bytes(text, "fuzz.json")
    except ChipwiseError:
        return
    _spec_or_error(parsed)


STRUCTURE_KEYS = st.sampled_from(
    [
        "moe_layers", "mlp_only_layers", "layer_types", "text_config", "model_type",
        "use_sliding_window", "gated_mlp", "tie_word_embeddings", "hidden_act",
        "is_encoder_decoder", "multi_query", "_published_params", "feed_forward_proj",
        "num_decoder_layers", "shared_expert_intermediate_size", "intermediate_size_mlp",
    ]
)  # fmt: skip


@FUZZ
@given(
    st.dictionaries(STRUCTURE_KEYS, st.one_of(JSON_VALUES, NUMBERS), max_size=6),
    st.dictionaries(st.sampled_from(KEYS), NUMBERS, max_size=3),
    st.sampled_from(["llama", "qwen2_moe", "llama4", "deepseek_v3", "t5", "gpt2", "mystery"]),
)
def test_any_structure_keys_are_a_spec_or_one_error(
    structure: dict[str, Any], numbers: dict[str, Any], model_type: str
) -> None:
    raw = {**BASE, "model_type": model_type, "num_local_experts": 8, "num_experts_per_tok": 2}
    raw.update(numbers)
    raw.update(structure)
    try:
        parsed = parse_config_bytes(json.dumps(raw).encode(), "fuzz.json")
    except ChipwiseError:
        return
    _spec_or_error(parsed)


DIMS = st.one_of(st.integers(min_value=0, max_value=10**15).map(str), st.text(max_size=6))
PRIMITIVES = st.one_of(
    st.builds(
        lambda m, n, k, dtype: f"matmul:{m}x{n}x{k}{dtype}",
        DIMS, DIMS, DIMS,
        st.sampled_from(["", ":bf16", ":fp8", ":fp99", ":"]),
    ),
    st.builds(
        lambda kind, n, unit: f"{kind}:{n}{unit}",
        st.sampled_from(["copy", "allreduce", "COPY", "matmul"]),
        st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), DIMS),
        st.sampled_from(["", "B", "Gi", "GB", "Ti", "kb", "x"]),
    ),
    st.text(max_size=40).map(lambda t: "matmul:" + t),
)  # fmt: skip


@FUZZ
@given(PRIMITIVES)
def test_any_primitive_spec_is_bounded_or_one_error(text: str) -> None:
    try:
        primitive = parse_primitive(text)
    except ChipwiseError as err:
        assert "\n" not in str(err)
        return
    if primitive.kind == "matmul":
        m, n, k = primitive.mnk
        assert min(m, n, k) >= 1 and (m * k + k * n + m * n) <= MAX_PRIMITIVE_BYTES
    else:
        assert 1 <= primitive.n_bytes <= MAX_PRIMITIVE_BYTES


@FUZZ
@given(st.one_of(st.text(max_size=60), PRIMITIVES))
def test_any_workload_string_is_a_model_or_one_error(text: str) -> None:
    try:
        load_workload_model(text)
    except ChipwiseError as err:
        assert "\n" not in str(err).strip() or "\n" in text


PLAN_KEYS = st.sampled_from(
    ["dp", "fsdp", "tp", "pp", "cp", "ep", "etp", "vp", "microbatch", "recompute", "bogus"]
)
PLAN_VALUES = st.one_of(
    st.integers(min_value=-5, max_value=10**25).map(str),
    st.sampled_from(["none", "selective", "full", "0", "1e5", ""]),
    st.text(max_size=5),
)
PLANS = st.one_of(
    st.lists(st.builds(lambda k, v: f"{k}={v}", PLAN_KEYS, PLAN_VALUES), max_size=6).map(",".join),
    st.text(max_size=60),
)


@FUZZ
@given(PLANS)
def test_any_plan_string_is_a_plan_or_one_error(text: str) -> None:
    try:
        values = plan_values(text)
    except ChipwiseError as err:
        assert "\n" not in str(err)
        return
    for key, value in values.items():
        assert key == "recompute" or 1 <= int(value) <= 100_000_000
    with contextlib.suppress(ChipwiseError):
        assert isinstance(parse_plan(text), Plan)


POOL_KEYS = st.sampled_from(["instances", "tp", "ep", "adp", "max_num_tokens", "bogus", ""])
POOLS = st.one_of(
    st.lists(st.builds(lambda k, v: f"{k}={v}", POOL_KEYS, PLAN_VALUES), max_size=6).map(",".join),
    st.text(max_size=60),
)


@FUZZ
@given(POOLS)
def test_any_prefill_pool_string_is_a_pool_or_one_error(text: str) -> None:
    try:
        pool = parse_prefill_pool(text)
    except ChipwiseError as err:
        assert "\n" not in str(err)
        return
    assert isinstance(pool, PrefillPool)
    assert pool.chips >= 1 and pool.tp % pool.ep == 0
    assert parse_prefill_pool(str(pool)) == pool


QUANTITIES = st.one_of(
    st.text(max_size=20),
    st.builds(
        lambda number, unit: f"{number}{unit}",
        st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers().map(str)),
        st.sampled_from(["", "k", "M", "B", "G", "T", "P", "Ki", "Gi", "Ti", "x"]),
    ),
)


@FUZZ
@given(QUANTITIES)
def test_any_quantity_is_a_finite_number_or_value_error(text: str) -> None:
    try:
        value = parse_quantity(text)
    except ValueError:
        return
    assert math.isfinite(value)
