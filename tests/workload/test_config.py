"""Reading Hugging Face-style config.json files into a TransformerSpec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chipwise.errors import WorkloadError
from chipwise.validate import public_cases_path
from chipwise.workload.config import load_config
from chipwise.workload.presets import preset_config, preset_ids

VALIDATION_CONFIGS = public_cases_path().parent / "configs"

LLAMA3_8B: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
}


def write(tmp_path: Path, config: dict[str, Any], name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return path


def test_llama_keys_map_to_the_spec(tmp_path: Path) -> None:
    spec = load_config(write(tmp_path, LLAMA3_8B), reader="builtin", name="l3")
    assert (spec.n_layers, spec.d_model, spec.n_heads, spec.n_kv_heads) == (32, 4096, 32, 8)
    assert (spec.head_dim, spec.d_ff, spec.vocab_size, spec.max_seq_len) == (
        128,
        14336,
        128256,
        8192,
    )
    assert spec.gated_mlp and not spec.tied_embeddings and spec.causal


def test_a_directory_reads_its_config_json(tmp_path: Path) -> None:
    write(tmp_path, LLAMA3_8B)
    spec = load_config(tmp_path, reader="builtin")
    assert spec.name == tmp_path.name and spec.d_model == 4096


@pytest.mark.parametrize("preset_id", preset_ids())
def test_autoconfig_and_builtin_reader_agree_on_every_zoo_config(
    preset_id: str, tmp_path: Path
) -> None:
    auto = pytest.importorskip("transformers.models.auto.configuration_auto")
    config = preset_config(preset_id)
    path = write(tmp_path, config, f"{preset_id}.json")
    builtin = load_config(path, reader="builtin")
    if config["model_type"] not in auto.CONFIG_MAPPING_NAMES:
        # e.g. kimi_k2 ships its config class as remote code: auto mode reads it built-in
        assert load_config(path) == builtin
        return
    via_hf = load_config(path, reader="transformers")
    assert via_hf == builtin


def test_autoconfig_fills_defaults_the_builtin_reader_cannot_know(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    minimal = {k: v for k, v in LLAMA3_8B.items() if k != "max_position_embeddings"}
    path = write(tmp_path, minimal)
    assert load_config(path, reader="transformers").max_seq_len == 2048  # LlamaConfig default
    assert load_config(path, reader="builtin").max_seq_len == 4096  # TransformerSpec default


def test_gpt2_style_keys(tmp_path: Path) -> None:
    config = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12}
    config |= {"n_positions": 1024, "n_inner": None, "vocab_size": 50257}
    spec = load_config(write(tmp_path, config), reader="builtin")
    assert (spec.d_model, spec.n_layers, spec.n_heads, spec.head_dim) == (768, 12, 12, 64)
    assert spec.d_ff == 4 * 768  # n_inner null = 4 x n_embd
    assert not spec.gated_mlp and spec.tied_embeddings and spec.learned_positions == 1024


def test_t5_style_keys(tmp_path: Path) -> None:
    config = {"model_type": "t5", "d_model": 512, "d_ff": 2048, "d_kv": 64, "num_heads": 8}
    config |= {"num_layers": 6, "vocab_size": 32128, "feed_forward_proj": "gated-gelu"}
    spec = load_config(write(tmp_path, config), reader="builtin")
    assert (spec.n_encoder_layers, spec.n_layers, spec.head_dim) == (6, 6, 64)
    assert spec.gated_mlp  # T5 v1.1's gated-gelu


def test_unknown_model_type_with_standard_keys_still_reads(tmp_path: Path) -> None:
    config = LLAMA3_8B | {"model_type": "my-new-model", "hidden_act": "silu"}
    spec = load_config(write(tmp_path, config))  # auto: transformers does not know it
    assert spec.d_model == 4096 and spec.gated_mlp  # SiLU ships as SwiGLU


@pytest.mark.parametrize("model_type", ["glm4_moe", "kimi_k2"])
def test_glm_and_kimi_families_are_gated_without_hidden_act(
    tmp_path: Path, model_type: str
) -> None:
    config = LLAMA3_8B | {"model_type": model_type}  # no hidden_act: the family decides
    assert load_config(write(tmp_path, config), reader="builtin").gated_mlp


def test_explicit_gated_mlp_key_wins(tmp_path: Path) -> None:
    spec = load_config(write(tmp_path, LLAMA3_8B | {"gated_mlp": False}), reader="builtin")
    assert not spec.gated_mlp


@pytest.mark.parametrize("model_type", ["llama", "unknown-arch"])
def test_missing_required_key_names_the_key_and_the_file(tmp_path: Path, model_type: str) -> None:
    # (transformers would fill a default for a known type; the built-in reader does not)
    config = {k: v for k, v in LLAMA3_8B.items() if k != "vocab_size"}
    path = write(tmp_path, config | {"model_type": model_type}, "broken.json")
    with pytest.raises(WorkloadError) as err:
        load_config(path, reader="builtin")
    assert "'vocab_size'" in str(err.value) and "broken.json" in str(err.value)


def test_unknown_model_type_missing_a_key_errors_in_auto_mode(tmp_path: Path) -> None:
    config = {k: v for k, v in LLAMA3_8B.items() if k != "num_attention_heads"}
    path = write(tmp_path, config | {"model_type": "unknown-arch"})
    with pytest.raises(WorkloadError, match="'num_attention_heads'"):
        load_config(path)


def test_missing_mlp_width_is_an_error(tmp_path: Path) -> None:
    config = {k: v for k, v in LLAMA3_8B.items() if k != "intermediate_size"}
    with pytest.raises(WorkloadError, match="'intermediate_size'"):
        load_config(write(tmp_path, config), reader="builtin")


def test_bad_json_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": 4096,,}')
    with pytest.raises(WorkloadError) as err:
        load_config(path)
    assert "not valid JSON" in str(err.value) and "\n" not in str(err.value)


def test_missing_file_is_a_workload_error(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="no such config file"):
        load_config(tmp_path / "nope.json")


def test_non_integer_value_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="'hidden_size' must be a whole number"):
        load_config(write(tmp_path, LLAMA3_8B | {"hidden_size": "4096"}), reader="builtin")


def test_irregular_moe_layer_pattern_is_refused(tmp_path: Path) -> None:
    config = LLAMA3_8B | {"model_type": "qwen3_moe", "num_experts": 8}
    config |= {"num_experts_per_tok": 2, "moe_intermediate_size": 512, "mlp_only_layers": [5]}
    with pytest.raises(WorkloadError, match="cannot represent"):
        load_config(write(tmp_path, config), reader="builtin")


@pytest.mark.skipif(not VALIDATION_CONFIGS.is_dir(), reason="shared validation data absent")
@pytest.mark.parametrize(
    "name",
    [
        "maxtext-synthetic-16b",
        "maxtext-synthetic-22b-v4",
        "maxtext-synthetic-32b",
        "megatron-gpt-1.7b",
        "megatron-gpt-70b",
    ],
)
def test_validation_configs_load(name: str) -> None:
    path = VALIDATION_CONFIGS / f"{name}.json"
    raw = json.loads(path.read_text())
    spec = load_config(path)
    assert spec.name == name and not spec.gated_mlp  # explicit "gated_mlp": false
    assert (spec.head_dim, spec.d_ff) == (raw["head_dim"], raw["intermediate_size"])
    assert spec.tied_embeddings == raw["tie_word_embeddings"]


def _dsa_config(**changes: Any) -> dict[str, Any]:
    config = dict(preset_config("deepseek-v3.2"))
    config.update(changes)
    return {k: v for k, v in config.items() if v is not None}


def test_sparse_attention_keys_map_to_the_spec(tmp_path: Path) -> None:
    spec = load_config(write(tmp_path, _dsa_config()), reader="builtin")
    assert (spec.index_topk, spec.index_n_heads, spec.index_head_dim) == (2048, 64, 128)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"index_head_dim": None}, "needs all of"),
        ({"kv_lora_rank": None, "q_lora_rank": None}, "needs MLA"),
        ({"index_topk_freq": 4}, "shared across layers"),
        ({"indexer_types": ["full", "shared"]}, "shared across layers"),
    ],
)
def test_sparse_attention_chipwise_cannot_express_is_one_clear_error(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    # a partial indexer, one without MLA, or GLM-5's indexer shared over layers
    with pytest.raises(WorkloadError, match=message):
        load_config(write(tmp_path, _dsa_config(**changes)), reader="builtin")
