"""The model zoo: every preset loads, matches its published size, and resolves by alias."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from chipwise.errors import WorkloadError
from chipwise.workload import accounting
from chipwise.workload.presets import (
    PRESETS,
    load_preset,
    preset_config,
    preset_ids,
    resolve_preset,
)

PARAMS_TOLERANCE = 0.02  # the acceptance bar: within 2 % of the published total


@pytest.mark.parametrize("preset_id", preset_ids())
def test_total_params_within_2_percent_of_published(preset_id: str) -> None:
    spec = load_preset(preset_id)
    assert spec.published_params > 0, "every zoo config carries _published_params"
    total = accounting.params_total(spec)
    error = total / spec.published_params - 1
    assert abs(error) <= PARAMS_TOLERANCE, f"{preset_id}: {total:.4g} vs {spec.published_params}"


@pytest.mark.parametrize("preset_id", preset_ids())
def test_every_preset_cites_its_source(preset_id: str) -> None:
    raw = preset_config(preset_id)
    assert "_source" in raw and ("huggingface.co" in raw["_source"] or "arXiv" in raw["_source"])
    assert load_preset(preset_id).source == raw["_source"]


# Published active parameters. ``without_input_embedding``: the publisher leaves the input
# embedding table out of its active count (OpenAI's gpt-oss model card does).
ACTIVE = [
    ("mixtral-8x7b", 12.9e9, False),
    ("mixtral-8x22b", 39e9, False),
    ("qwen3-235b-a22b", 22e9, False),
    ("deepseek-v3", 37e9, False),
    ("llama4-maverick", 17e9, False),
    ("gpt-oss-120b", 5.13e9, True),
    ("gpt-oss-20b", 3.61e9, True),
    ("qwen3-30b-a3b", 3.3e9, False),
    ("llama4-scout", 17e9, False),
    ("kimi-k2", 32.6e9, False),
    ("deepseek-v2", 21e9, False),
    ("qwen3-coder-480b", 35e9, False),
    ("qwen3-coder-30b", 3.3e9, False),
]


@pytest.mark.parametrize(("preset_id", "published", "without_input_embedding"), ACTIVE)
def test_moe_active_params_match_published(
    preset_id: str, published: float, without_input_embedding: bool
) -> None:
    spec = load_preset(preset_id)
    active = accounting.params_active(spec)
    if without_input_embedding:
        active -= accounting.embedding_params(spec)
    assert preset_config(preset_id)["_published_active_params"] == published
    assert active == pytest.approx(published, rel=PARAMS_TOLERANCE)
    assert accounting.params_active(spec) < accounting.params_total(spec)


@pytest.mark.parametrize(("preset_id", "published"), [("glm-4.5", 32e9), ("glm-4.5-air", 12e9)])
def test_glm45_active_params_match_without_the_embedding_tables(
    preset_id: str, published: float
) -> None:
    # Z.ai states 32B / 12B active without a convention; the count without the input
    # embedding and the untied LM head matches it (with them: 33.6B / 13.4B; see _notes)
    spec = load_preset(preset_id)
    assert not spec.tied_embeddings
    without_tables = accounting.params_active(spec) - 2 * accounting.embedding_params(spec)
    assert preset_config(preset_id)["_published_active_params"] == published
    assert without_tables == pytest.approx(published, rel=PARAMS_TOLERANCE)


def test_every_config_file_has_a_registry_entry_and_back() -> None:
    files = resources.files("chipwise.workload.presets").joinpath("configs").iterdir()
    stems = {f.name.removesuffix(".json") for f in files if f.name.endswith(".json")}
    assert stems == set(preset_ids())


@pytest.mark.parametrize(
    ("alias", "preset_id"),
    [
        ("llama3.1-8b", "llama3-8b"),
        ("LLAMA3.1-70B", "llama3-70b"),
        ("llama3.3-70b", "llama3-70b"),
        ("Llama 3.1 405B", "llama3-405b"),
        ("meta-llama/Llama-3.1-8B", "llama3-8b"),
        ("Mixtral", "mixtral-8x7b"),
        ("openai/gpt-oss-120b", "gpt-oss-120b"),
        ("DeepSeek-V3", "deepseek-v3"),
        ("gpt-3", "gpt3-175b"),
        ("deepseek-ai/DeepSeek-R1", "deepseek-v3"),
        ("DeepSeek-R1", "deepseek-v3"),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b"),
        ("Qwen2.5 7B Instruct", "qwen2.5-7b"),
        ("meta-llama/Llama-3.2-1B-Instruct", "llama3.2-1b"),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama4-scout"),
        ("openai/gpt-oss-20b", "gpt-oss-20b"),
        ("Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b"),
        ("google/gemma-2-27b-it", "gemma2-27b"),
        ("google/gemma-3-27b-it", "gemma3-27b"),
        ("mistralai/Mistral-Small-24B-Instruct-2501", "mistral-small-3"),
        ("mistralai/Mistral-Nemo-Instruct-2407", "mistral-nemo-12b"),
        ("microsoft/phi-4", "phi-4"),
        ("deepseek-ai/DeepSeek-V2-Lite", "deepseek-v2-lite"),
        ("deepseek-ai/DeepSeek-V2", "deepseek-v2"),
        ("Kimi-K2", "kimi-k2"),
        ("moonshotai/Kimi-K2-Instruct", "kimi-k2"),
        ("zai-org/GLM-4.5", "glm-4.5"),
        ("zai-org/GLM-4.5-Air", "glm-4.5-air"),
        ("Qwen/Qwen3-Coder-480B-A35B-Instruct", "qwen3-coder-480b"),
        ("qwen3-coder-480b-a35b", "qwen3-coder-480b"),
        ("mistralai/Mistral-Large-Instruct-2407", "mistral-large-2"),
        ("Qwen/Qwen2.5-32B-Instruct", "qwen2.5-32b"),
        ("Qwen/Qwen2.5-14B-Instruct", "qwen2.5-14b"),
        ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "llama3-70b"),
        ("google/gemma-2b", "gemma-2b"),
        ("google/gemma-7b", "gemma-7b"),
        ("google/gemma-2-2b-it", "gemma2-2b"),
        ("google/gemma-3-1b-it", "gemma3-1b"),
        ("google/gemma-3-4b-it", "gemma3-4b"),
        ("Qwen/Qwen3-0.6B", "qwen3-0.6b"),
        ("Qwen/Qwen3-1.7B", "qwen3-1.7b"),
        ("Qwen/Qwen3-4B", "qwen3-4b"),
        ("Qwen/QwQ-32B", "qwen2.5-32b"),
        ("qwq-32b", "qwen2.5-32b"),
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3-coder-30b"),
        ("qwen3-coder-30b-a3b", "qwen3-coder-30b"),
        ("microsoft/Phi-3-mini-4k-instruct", "phi-3-mini"),
        ("phi-3-mini", "phi-3-mini"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b-v0.3"),
        ("MiniMaxAI/MiniMax-M2", "minimax-m2"),
        ("zai-org/GLM-4.6", "glm-4.5"),
        ("glm-4.6", "glm-4.5"),
        ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3"),
        ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek-v3"),
        ("deepseek-ai/DeepSeek-V3-0324", "deepseek-v3"),  # by its date tag
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-v3"),
        ("moonshotai/Kimi-K2-Instruct-0905", "kimi-k2"),
        ("moonshotai/Kimi-K2-Thinking", "kimi-k2"),
        ("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF", "llama3-70b"),
    ],
)
def test_aliases_resolve_case_insensitively(alias: str, preset_id: str) -> None:
    assert resolve_preset(alias).id == preset_id
    assert load_preset(alias) is load_preset(preset_id)


def test_llama31_aliases_share_the_llama3_architecture() -> None:
    assert load_preset("llama3.1-70b") == load_preset("llama3.3-70b") == load_preset("llama3-70b")


def test_unknown_id_names_close_matches() -> None:
    with pytest.raises(WorkloadError) as err:
        resolve_preset("llama3-7b")
    message = str(err.value)
    assert "'llama3-7b'" in message
    assert "llama3-8b" in message and "llama3-70b" in message
    assert "chipwise workload list" in message


def test_aliases_do_not_collide() -> None:
    names = [name.lower() for p in PRESETS for name in (p.id, *p.aliases)]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    ("preset_id", "moe_layers", "first_dense", "step"),
    [
        ("deepseek-v3", 58, 3, 1),  # first_k_dense_replace = 3
        ("llama4-maverick", 24, 1, 2),  # layers 1, 3, 5, ... (interleave_moe_layer_step = 2)
        ("qwen3-235b-a22b", 94, 0, 1),
        ("mixtral-8x7b", 32, 0, 1),
        ("llama4-scout", 48, 0, 1),  # interleave_moe_layer_step = 1: every layer
        ("qwen3-30b-a3b", 48, 0, 1),
        ("gpt-oss-20b", 24, 0, 1),
        ("deepseek-v2-lite", 26, 1, 1),  # first_k_dense_replace = 1
        ("deepseek-v2", 59, 1, 1),
        ("kimi-k2", 60, 1, 1),  # one dense layer, then 60 MoE layers
        ("glm-4.5", 89, 3, 1),  # first_k_dense_replace = 3
        ("glm-4.5-air", 45, 1, 1),
        ("qwen3-coder-480b", 62, 0, 1),
        ("qwen3-coder-30b", 48, 0, 1),
    ],
)
def test_moe_layer_patterns(preset_id: str, moe_layers: int, first_dense: int, step: int) -> None:
    spec = load_preset(preset_id)
    assert (spec.n_moe_layers, spec.first_dense_layers, spec.moe_layer_step) == (
        moe_layers,
        first_dense,
        step,
    )


def test_architecture_flags_from_the_families() -> None:
    assert load_preset("deepseek-v3").uses_mla
    assert load_preset("deepseek-v3").head_dim == 128 + 64  # qk_nope + qk_rope
    assert not load_preset("bert-large").causal
    assert load_preset("t5-large").n_encoder_layers == 24
    assert not load_preset("t5-large").gated_mlp  # T5 v1.0: ReLU
    assert not load_preset("gpt3-175b").gated_mlp
    assert load_preset("gemma3-12b").tied_embeddings
    assert load_preset("llama4-maverick").n_shared_experts == 1
    assert load_preset("gpt2").learned_positions == 1024


def test_new_zoo_entries_read_their_family_features() -> None:
    # Llama 3.2 ties input and output embeddings (config: tie_word_embeddings true)
    assert load_preset("llama3.2-1b").tied_embeddings
    assert load_preset("llama3.2-3b").tied_embeddings
    assert not load_preset("qwen3-32b").tied_embeddings
    # Qwen2.5 ships sliding_window 131072 with use_sliding_window false: no window
    assert load_preset("qwen2.5-72b").sliding_window == 0
    # gpt-oss-20b: layer_types alternate 128-token windows and full attention
    spec = load_preset("gpt-oss-20b")
    assert (spec.sliding_window, spec.sliding_window_pattern) == (128, 2)
    # Llama 4 Scout: every layer MoE, 16 experts top-1, one shared expert
    scout = load_preset("llama4-scout")
    assert (scout.n_experts, scout.experts_per_token, scout.n_shared_experts) == (16, 1, 1)


def test_gemma_sliding_window_patterns() -> None:
    # Gemma 2: local and global layers alternate (global on odd layer indices)
    for preset_id in ("gemma2-9b", "gemma2-27b"):
        spec = load_preset(preset_id)
        assert (spec.sliding_window, spec.sliding_window_pattern) == (4096, 2)
        assert spec.tied_embeddings
    # Gemma 3: every 6th layer global, 1024-token windows elsewhere
    spec = load_preset("gemma3-27b")
    assert (spec.sliding_window, spec.sliding_window_pattern) == (1024, 6)
    # Mistral NeMo / Small 3 set sliding_window null: full attention everywhere
    assert load_preset("mistral-nemo-12b").sliding_window == 0
    assert load_preset("mistral-small-3").sliding_window == 0


def test_deepseek_v2_lite_mla_without_query_compression() -> None:
    spec = load_preset("deepseek-v2-lite")
    assert spec.uses_mla and spec.q_lora_rank == 0  # q_lora_rank null: a direct W_q
    assert (spec.n_experts, spec.experts_per_token, spec.n_shared_experts) == (64, 6, 2)
    # Active parameters counted by hand from arXiv 2405.04434 Appendix B: per-layer MLA
    # attention (W_q, W_kv_down incl. the rope key, W_kv_up, W_o), one dense MLP, 26 MoE
    # layers of 6 routed + 2 shared experts and a router, the LM head; no input embedding.
    d, h, layers = 2048, 16, 27
    attention = d * h * 192 + d * (512 + 64) + 512 * h * (128 + 128) + h * 128 * d
    expert = 3 * d * 1408
    by_hand = layers * attention + 3 * d * 10944 + 26 * (8 * expert + d * 64) + 102400 * d
    active = accounting.params_active(spec) - accounting.embedding_params(spec)
    assert active == pytest.approx(by_hand, rel=1e-3)
    # the paper states 2.4B to two significant figures
    assert round(active / 1e9, 1) in (2.4, 2.5)


def test_deepseek_v3_descendants_read_their_mla_and_routing() -> None:
    kimi = load_preset("kimi-k2")
    assert kimi.uses_mla and (kimi.n_heads, kimi.head_dim, kimi.q_lora_rank) == (64, 192, 1536)
    assert (kimi.n_experts, kimi.experts_per_token, kimi.n_shared_experts) == (384, 8, 1)
    assert kimi.expert_groups == 0  # n_group 1: no group-limited routing
    v2 = load_preset("deepseek-v2")
    assert v2.uses_mla and (v2.n_experts, v2.experts_per_token, v2.n_shared_experts) == (160, 6, 2)
    assert (v2.expert_groups, v2.expert_groups_per_token) == (8, 3)  # device-limited, M = 3


def test_glm45_is_gqa_with_a_shared_expert() -> None:
    glm = load_preset("glm-4.5")
    assert not glm.uses_mla and glm.gated_mlp
    assert (glm.n_heads, glm.n_kv_heads, glm.head_dim) == (96, 8, 128)  # head_dim key, not 5120/96
    assert (glm.n_experts, glm.experts_per_token, glm.n_shared_experts) == (160, 8, 1)
    assert (glm.d_ff, glm.moe_d_ff) == (12288, 1536)


def test_promoted_validation_config_matches_the_zoo() -> None:
    # the serving rows read configs/qwen3-coder-480b-a35b.json; the zoo copy must not drift
    data = resources.files("chipwise.validate").joinpath("data", "configs")
    text = data.joinpath("qwen3-coder-480b-a35b.json").read_text()
    assert json.loads(text) == preset_config("qwen3-coder-480b")


@pytest.mark.parametrize("preset_id", ["gemma-2b", "gemma-7b"])
def test_gemma_zoo_entries_match_the_validation_copies(preset_id: str) -> None:
    # the JetStream serving rows read configs/gemma-*.json; the zoo entry is the same model
    data = resources.files("chipwise.validate").joinpath("data", "configs")
    copy = json.loads(data.joinpath(f"{preset_id}.json").read_text())
    zoo = preset_config(preset_id)
    assert {k: v for k, v in copy.items() if not k.startswith("_")} == {
        k: v for k, v in zoo.items() if not k.startswith("_")
    }


def test_small_gemma_and_qwen3_entries_read_their_family_features() -> None:
    assert load_preset("gemma-2b").n_kv_heads == 1  # Gemma 1 2B: multi-query attention
    assert load_preset("gemma-7b").n_kv_heads == 16  # Gemma 1 7B: multi-head attention
    spec = load_preset("gemma2-2b")
    assert (spec.sliding_window, spec.sliding_window_pattern) == (4096, 2)
    assert (load_preset("gemma3-1b").sliding_window, load_preset("gemma3-4b").sliding_window) == (
        512,
        1024,
    )
    assert load_preset("gemma3-4b").sliding_window_pattern == 6
    for preset_id in ("qwen3-0.6b", "qwen3-1.7b", "qwen3-4b"):
        qwen = load_preset(preset_id)
        assert qwen.tied_embeddings and (qwen.n_kv_heads, qwen.head_dim) == (8, 128)
    assert load_preset("phi-3-mini").sliding_window == 2047  # the 4k config's window


def test_minimax_m2_is_gqa_moe_with_its_published_size() -> None:
    spec = load_preset("minimax-m2")
    assert not spec.uses_mla and (spec.n_heads, spec.n_kv_heads, spec.head_dim) == (48, 8, 128)
    assert (spec.n_experts, spec.experts_per_token, spec.n_shared_experts) == (256, 8, 0)
    assert (spec.n_moe_layers, spec.first_dense_layers, spec.moe_d_ff) == (62, 0, 1536)
    # MiniMax states "10 billion active" to one significant figure: chipwise counts 11.0B
    # with both embedding tables, 10.4B without the input one, 9.8B without either
    active = accounting.params_active(spec) - accounting.embedding_params(spec)
    assert preset_config("minimax-m2")["_published_active_params"] == 10e9
    assert round(active / 1e9) == 10


@pytest.mark.parametrize(
    ("name", "preset_id"),
    [
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", "qwen3-next-80b"),
        ("qwen3-next-80b-a3b", "qwen3-next-80b"),
        ("Qwen/Qwen3-Coder-Next", "qwen3-next-80b"),
        ("Qwen/Qwen3.5-397B-A17B-FP8", "qwen3.5-397b"),
        ("Qwen/Qwen3.5-35B-A3B-FP8", "qwen3.5-35b-a3b"),
    ],
)
def test_gated_deltanet_hybrids_resolve_to_their_own_entries(name: str, preset_id: str) -> None:
    # Qwen3-Next / Qwen3.5: Gated DeltaNet on 3 of every 4 layers, gated full attention on
    # the 4th; not an alias of a dense-attention Qwen3
    preset = resolve_preset(name)
    assert preset.id == preset_id
    spec = load_preset(preset_id)
    assert spec.uses_linear_attention and spec.attn_output_gate
    assert spec.n_local_layers == spec.n_layers * 3 // 4


@pytest.mark.parametrize(("preset_id", "published"), [("qwen3-next-80b", 3e9),
                                                      ("qwen3.5-397b", 17e9),
                                                      ("qwen3.5-35b-a3b", 3e9)])  # fmt: skip
def test_gated_deltanet_hybrids_active_params(preset_id: str, published: float) -> None:
    # Qwen3-Next's "3B activated" leaves the two embedding tables out (3.25B without them,
    # 3.87B with); Qwen3.5's "17B" keeps them (17.35B with, 15.3B without), as does its
    # 35B-A3B's "3B" (3.45B with, 2.44B without)
    spec = load_preset(preset_id)
    active = accounting.params_active(spec)
    assert preset_config(preset_id)["_published_active_params"] == published
    if preset_id == "qwen3-next-80b":
        active -= 2 * accounting.embedding_params(spec)
    # both stated in whole billions, like MiniMax-M2's (17.35B counted for Qwen3.5)
    assert round(active / 1e9) == round(published / 1e9)


def test_deepseek_v32_is_deepseek_v3_with_sparse_attention() -> None:
    # V3.2-Exp "builds upon V3.1-Terminus by introducing DeepSeek Sparse Attention": the
    # same MLA and MoE shapes, plus the indexer (inference/model.py ModelArgs)
    v32, v3 = load_preset("deepseek-v3.2"), load_preset("deepseek-v3")
    assert resolve_preset("deepseek-ai/DeepSeek-V3.2-Exp").id == "deepseek-v3.2"
    assert (v32.index_topk, v32.index_n_heads, v32.index_head_dim) == (2048, 64, 128)
    assert v32.uses_dsa and not v3.uses_dsa
    same = (
        "n_layers",
        "d_model",
        "n_heads",
        "n_experts",
        "experts_per_token",
        "moe_d_ff",
        "q_lora_rank",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "vocab_size",
    )
    assert all(getattr(v32, k) == getattr(v3, k) for k in same)
    # the indexer adds 61 x (1536 x 8192 + 7168 x 192) = 0.85B matmul weights
    extra = accounting.params_total(v32) - accounting.params_total(v3)
    assert extra == pytest.approx(61 * (1536 * 8192 + 7168 * 192))
