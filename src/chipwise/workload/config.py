"""Read a Hugging Face-style ``config.json`` into a ``TransformerSpec``.

Two readers produce the same dictionary shape and share one mapping to ``TransformerSpec``:

* ``transformers``: ``AutoConfig.from_pretrained(path, local_files_only=True)`` when
  transformers is installed and knows the file's ``model_type``. It fills the defaults a
  file leaves out exactly as the model code would (no network, no ``trust_remote_code``).
* ``builtin``: the raw JSON with family defaults of our own (``_FAMILIES``), for unknown
  model types and installs without transformers.

Keys read (first present wins): width ``hidden_size | n_embd | d_model``; layers
``num_hidden_layers | n_layer | num_layers``; heads ``num_attention_heads | n_head |
num_heads``; KV heads ``num_key_value_heads | num_kv_heads | multi_query_group_num``
(default: = heads); head dim ``head_dim | d_kv | kv_channels`` (default: width / heads);
MLP width ``intermediate_size | n_inner | d_ff | ffn_hidden_size | ffn_dim``; vocabulary
``vocab_size``. Multimodal configs (Gemma 3, Llama 4) nest the text model in ``text_config``.
MoE: ``num_local_experts | num_experts | n_routed_experts``, ``num_experts_per_tok |
experts_per_token``, ``moe_intermediate_size``, ``n_shared_experts``, and the family's
layer pattern (``first_k_dense_replace``/``moe_layer_freq``, ``decoder_sparse_step``/
``mlp_only_layers``, ``interleave_moe_layer_step``/``moe_layers``), group-limited routing
``n_group``/``topk_group`` (DeepSeek-V2/V3). MLA: ``q_lora_rank``,
``kv_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``, ``v_head_dim``; DeepSeek
Sparse Attention (DeepSeek-V3.2) ``index_topk``, ``index_n_heads``, ``index_head_dim``.

Gated MLP (three matrices): an explicit ``"gated_mlp": true|false`` key wins; else the
family decides (Llama, Mistral, Mixtral, Qwen, Gemma, DeepSeek, Kimi K2, GLM-4.5 MoE,
gpt-oss: gated; GPT-2, GPT-J, BERT, Falcon: not; T5 by ``feed_forward_proj``); else an
unknown family is gated when ``hidden_act`` is SiLU/Swish, since that activation ships
almost only as SwiGLU.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import math
import os
import re
import stat
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from chipwise.errors import ExtractionError, WorkloadError
from chipwise.limits import (
    MAX_CONFIG_BYTES,
    MAX_EXCLUDE_PATTERNS,
    MAX_EXCLUDE_REGEX_CHECKS,
    MAX_EXCLUDE_REGEX_REPEATS,
    MAX_EXPERTS,
    MAX_FFN_WIDTH,
    MAX_HEAD_DIM,
    MAX_HEADS,
    MAX_JSON_DEPTH,
    MAX_LAYERS,
    MAX_PARAMS,
    MAX_POSITIONS,
    MAX_VOCAB,
    MAX_WIDTH,
    check_whole,
    json_all_finite,
    json_too_deep,
)
from chipwise.workload.ir import TransformerSpec

Reader = Literal["auto", "transformers", "builtin"]

_HIDDEN = ("hidden_size", "n_embd", "d_model")
_LAYERS = ("num_hidden_layers", "n_layer", "num_layers")
_HEADS = ("num_attention_heads", "n_head", "num_heads")
_KV_HEADS = ("num_key_value_heads", "num_kv_heads", "multi_query_group_num")
_HEAD_DIM = ("head_dim", "d_kv", "kv_channels")
_FFN = ("intermediate_size", "n_inner", "d_ff", "ffn_hidden_size", "ffn_dim")
_VOCAB = ("vocab_size", "padded_vocab_size")
_MAX_POS = ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length")
_EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
_TOP_K = ("num_experts_per_tok", "experts_per_token", "moe_top_k")
_SILU = frozenset({"silu", "swish", "swiglu"})


@dataclass(frozen=True, slots=True, kw_only=True)
class _Family:
    """Defaults a family's model code applies when its config leaves a key out."""

    gated: bool | None  # None: decide from hidden_act
    tied: bool = False
    ffn_4x: bool = False  # MLP width defaults to 4 x hidden (GPT-2 style)
    encoder_only: bool = False
    learned_positions: bool = False  # a learned absolute position table
    shared_experts: int = 0  # shared experts the model code always builds
    sliding_pattern: int = 0  # every n-th layer global when the config has a sliding window


_LLAMA_LIKE = _Family(gated=True)
# The Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5; ``_linear_attention``): llama-like, and
# their full-attention layers gate the output (modeling_qwen3_next Qwen3NextAttention's
# q_proj is 2 x heads x head_dim wide: queries and the gate); an explicit attn_output_gate
# key wins.
_GATED_ATTENTION_MODELS = frozenset(
    {"qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text"}
)
_GEMMA = _Family(gated=True, tied=True)
# Gemma 2 alternates local and global layers (modeling_gemma2: sliding on even layers);
# Gemma 3's default sliding_window_pattern is 6 (configuration_gemma3).
_GEMMA2 = _Family(gated=True, tied=True, sliding_pattern=2)
_GEMMA3 = _Family(gated=True, tied=True, sliding_pattern=6)
_BERT = _Family(gated=False, tied=True, encoder_only=True, learned_positions=True)
_FAMILIES: dict[str, _Family] = {
    **dict.fromkeys(
        (
            "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
            "deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe", "gpt_oss",
            "phi3", "olmo",
            "olmo2", "granite", *_GATED_ATTENTION_MODELS,
        ),
        _LLAMA_LIKE,
    ),
    "llama4": _Family(gated=True, shared_experts=1),
    "llama4_text": _Family(gated=True, shared_experts=1),
    "gemma": _GEMMA,
    "gemma2": _GEMMA2,
    **dict.fromkeys(("gemma3", "gemma3_text"), _GEMMA3),
    "gpt2": _Family(gated=False, tied=True, ffn_4x=True, learned_positions=True),
    "gptj": _Family(gated=False, ffn_4x=True),
    "gpt_neox": _Family(gated=False),
    "falcon": _Family(gated=False, tied=True, ffn_4x=True),
    "opt": _Family(gated=False, tied=True, learned_positions=True),
    **dict.fromkeys(("bert", "roberta", "xlm-roberta", "electra", "distilbert"), _BERT),
    "t5": _Family(gated=False, tied=True),
    "mt5": _Family(gated=False, tied=False),
}  # fmt: skip
_UNKNOWN = _Family(gated=None)


def read_config_file(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` (a file, or a directory holding ``config.json``).

    The file must be a regular file of at most ``MAX_CONFIG_BYTES`` of UTF-8 JSON, with
    finite numbers only (no ``NaN``/``Infinity``) and at most ``MAX_JSON_DEPTH`` levels of
    nesting; a FIFO, device or socket is refused without being opened for blocking reads.
    """
    file = path / "config.json" if path.is_dir() else path
    return parse_config_bytes(_read_capped(file), str(file))


def parse_config_bytes(data: bytes, where: str) -> dict[str, Any]:
    """The JSON object in ``data`` (a config.json's bytes), checked as ``read_config_file``
    checks a file: UTF-8, valid JSON, finite numbers, shallow, every read key in range.
    ``where`` names the file in error messages."""
    if len(data) > MAX_CONFIG_BYTES:
        raise WorkloadError(_too_big(where, len(data)))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise WorkloadError(
            f"config {where} is not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
            f"{err.start}); save it as UTF-8 JSON"
        ) from None
    try:
        loaded = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as err:
        raise WorkloadError(
            f"config {where} is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}"
        ) from err
    except RecursionError:
        raise WorkloadError(_too_deep(where)) from None
    except ValueError as err:  # NaN/Infinity, a number too long to convert
        raise WorkloadError(f"config {where}: {err}; a config.json holds finite numbers") from None
    if not isinstance(loaded, dict):
        raise WorkloadError(f"config {where} must hold a JSON object, not {type(loaded).__name__}")
    check_config_object(loaded, where)
    return loaded


def check_config_object(config: Mapping[str, Any], where: str) -> None:
    """A parsed config (from a file or a web body) nests at most ``MAX_JSON_DEPTH`` levels,
    holds finite numbers only, and every key chipwise reads is in range."""
    if json_too_deep(config):
        raise WorkloadError(_too_deep(where))
    if not json_all_finite(config):
        raise WorkloadError(
            f"config {where} holds NaN or Infinity; a config.json holds finite numbers"
        )
    check_config_numbers(config, where)


def _read_capped(file: Path) -> bytes:
    """The bytes of a regular file of at most ``MAX_CONFIG_BYTES``. Opened non-blocking and
    checked with ``fstat`` before any read, so a FIFO or a device never blocks the reader."""
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError as err:
        raise WorkloadError(f"no such config file: {file}") from err
    except OSError as err:
        raise WorkloadError(f"cannot read config {file}: {err.strerror}") from err
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO, device or socket"
            raise WorkloadError(f"config {file} is {what}, not a file; give a config.json file")
        if info.st_size > MAX_CONFIG_BYTES:
            raise WorkloadError(_too_big(file, info.st_size))
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_CONFIG_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise WorkloadError(f"cannot read config {file}: {err.strerror}") from err
    finally:
        os.close(fd)
    if size > MAX_CONFIG_BYTES:
        raise WorkloadError(_too_big(file, size))
    return b"".join(chunks)


def _too_big(file: Path | str, n_bytes: int) -> str:
    return (
        f"config {file} is {n_bytes:,}+ bytes; a config.json is at most "
        f"{MAX_CONFIG_BYTES // (1024 * 1024)} MiB (real ones are a few KiB): give the model's "
        "config.json"
    )


def _too_deep(file: Path | str) -> str:
    return (
        f"config {file} nests more than {MAX_JSON_DEPTH} levels of objects or arrays; a "
        "config.json nests a few: give the model's config.json"
    )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number chipwise reads")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} overflows to {value}")
    return value


# Physical range of each numeric key chipwise reads (see chipwise.limits for the reasons),
# checked on the file itself before any reader sees it and again on what a reader returns.
_POSITIVE_KEYS: dict[str, int] = {
    **dict.fromkeys(_HIDDEN, MAX_WIDTH),
    **dict.fromkeys((*_LAYERS, "num_decoder_layers"), MAX_LAYERS),
    **dict.fromkeys((*_HEADS, *_KV_HEADS), MAX_HEADS),
    **dict.fromkeys(_VOCAB, MAX_VOCAB),
}
_COUNT_KEYS: dict[str, int] = {  # 0 allowed: "none" for these
    **dict.fromkeys(_HEAD_DIM, MAX_HEAD_DIM),
    **dict.fromkeys(
        (
            *_FFN, "moe_intermediate_size", "shared_expert_intermediate_size",
            "intermediate_size_mlp",
        ),
        MAX_FFN_WIDTH,
    ),
    **dict.fromkeys(_MAX_POS, MAX_POSITIONS),
    **dict.fromkeys(
        (*_EXPERTS, *_TOP_K, "n_shared_experts", "num_shared_experts", "n_group",
         "topk_group"), MAX_EXPERTS
    ),
    **dict.fromkeys(("q_lora_rank", "kv_lora_rank"), MAX_WIDTH),
    **dict.fromkeys(("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"), MAX_HEAD_DIM),
    "index_topk": MAX_POSITIONS,
    **dict.fromkeys(("linear_num_key_heads", "linear_num_value_heads"), MAX_HEADS),
    **dict.fromkeys(
        ("linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim"),
        MAX_HEAD_DIM,
    ),
    "full_attention_interval": MAX_LAYERS,
    "index_n_heads": MAX_HEADS,
    "index_head_dim": MAX_HEAD_DIM,
    **dict.fromkeys(
        (
            "first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step",
            "interleave_moe_layer_step", "sliding_window_pattern",
        ),
        MAX_LAYERS,
    ),
    "sliding_window": MAX_POSITIONS,
}  # fmt: skip
_LAYER_LISTS = ("moe_layers", "mlp_only_layers")


def check_config_numbers(config: Mapping[str, Any], where: str) -> None:
    """Every numeric key chipwise reads (top level and ``text_config``) is a whole number in
    its physical range, and every layer list holds layer indices; else one-line
    ``WorkloadError``. Runs before transformers sees the file, so its errors never surface."""
    inner = config.get("text_config")
    for cfg in (config, inner) if isinstance(inner, Mapping) else (config,):
        for key, value in cfg.items():
            if value is not None and (key in _POSITIVE_KEYS or key in _COUNT_KEYS):
                _bounded(key, value, where)
        for key in _LAYER_LISTS:
            _layer_list(cfg, key, where)
        types = cfg.get("layer_types")
        if types is not None and not (isinstance(types, list) and len(types) <= MAX_LAYERS):
            raise WorkloadError(
                f"config {where}: 'layer_types' must be a list of at most {MAX_LAYERS} layer "
                "types; fix the file"
            )


def _bounded(key: str, value: Any, where: str) -> int:
    low, high = (1, _POSITIVE_KEYS[key]) if key in _POSITIVE_KEYS else (0, _COUNT_KEYS.get(key))
    return check_whole(
        f"config {where}: {key!r}",
        value,
        low=low,
        high=high if high is not None else MAX_POSITIONS,
        fix="fix the file",
        error=WorkloadError,
    )


def _layer_list(cfg: Mapping[str, Any], key: str, where: str) -> list[int]:
    """The layer indices in ``cfg[key]`` (an absent or null key is an empty list)."""
    value = cfg.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_LAYERS:
        raise WorkloadError(
            f"config {where}: {key!r} must be a list of at most {MAX_LAYERS} layer indices; "
            "fix the file"
        )
    return [
        check_whole(
            f"config {where}: an entry of {key!r}",
            i,
            low=0,
            high=MAX_LAYERS - 1,
            fix="fix the file",
            error=WorkloadError,
        )
        for i in value
    ]


def load_config(
    path: str | Path, *, reader: Reader = "auto", name: str | None = None
) -> TransformerSpec:
    """Read a ``config.json`` (or a directory holding one) into a ``TransformerSpec``.

    Args:
        path: the file, or a directory with ``config.json`` in it.
        reader: ``auto`` uses transformers when installed and it knows the ``model_type``,
            else the built-in reader; ``transformers`` and ``builtin`` force one.
        name: the spec's name (default: the file's stem, or the directory's name).

    Raises:
        WorkloadError: unreadable or invalid JSON, a missing or malformed key.
        ExtractionError: transformers was asked for and cannot read the file.
    """
    p = Path(path)
    file = p / "config.json" if p.is_dir() else p
    raw = read_config_file(p)
    label = name or (p.name if p.is_dir() else p.stem)
    config: Mapping[str, Any] = raw
    if reader != "builtin":
        via_hf = _transformers_dict(file, raw, required=reader == "transformers")
        if via_hf is not None:
            config = via_hf
    return spec_from_config(
        config,
        name=label,
        origin=str(file),
        source=_text(raw.get("_source")) or f"config file {file}",
        published_params=_published(raw, file),
    )


def spec_from_config(
    config: Mapping[str, Any],
    *,
    name: str,
    origin: str = "",
    source: str = "",
    published_params: float = 0.0,
) -> TransformerSpec:
    """Map a config dictionary (raw JSON or ``AutoConfig.to_dict()``) to a ``TransformerSpec``.

    ``origin`` names the file in error messages.
    """
    where = origin or name
    cfg = _text_model(config)
    model_type = _text(cfg.get("model_type")) or _text(config.get("model_type"))
    family = _FAMILIES.get(model_type, _UNKNOWN)

    d_model = _required_int(cfg, _HIDDEN, where)
    n_heads = _required_int(cfg, _HEADS, where)
    vocab = _required_int(cfg, _VOCAB, where)
    encoder_decoder = bool(cfg.get("is_encoder_decoder")) or model_type in ("t5", "mt5")
    first_stack = _required_int(cfg, _LAYERS, where)
    n_layers = first_stack
    n_encoder_layers = 0
    if encoder_decoder:
        n_encoder_layers = first_stack
        n_layers = _optional_int(cfg, ("num_decoder_layers",), where) or first_stack

    n_kv_heads = _optional_int(cfg, _KV_HEADS, where)
    if n_kv_heads is None:
        n_kv_heads = 1 if cfg.get("multi_query") is True else n_heads

    kv_lora_rank = _optional_int(cfg, ("kv_lora_rank",), where) or 0
    qk_rope = _optional_int(cfg, ("qk_rope_head_dim",), where) or 0
    qk_nope = _optional_int(cfg, ("qk_nope_head_dim",), where) or 0
    v_head_dim = _optional_int(cfg, ("v_head_dim",), where) or 0
    if kv_lora_rank:
        # MLA: a query/key head is nope + rope wide; transformers' DeepseekV3Config sets
        # head_dim = qk_rope_head_dim, so the head_dim key is not used here.
        if not (qk_rope and qk_nope and v_head_dim):
            raise WorkloadError(
                f"config {where}: MLA (kv_lora_rank) needs qk_rope_head_dim, "
                "qk_nope_head_dim and v_head_dim"
            )
        head_dim = qk_nope + qk_rope
    else:
        head_dim = _optional_int(cfg, _HEAD_DIM, where) or d_model // n_heads

    index = _sparse_attention(cfg, where)
    linear = _linear_attention(cfg, n_layers, where)
    moe = _moe_fields(cfg, model_type, family, n_layers, where)
    window, pattern = _sliding(cfg, family, n_layers, where)
    d_ff = _dense_width(cfg, family, d_model, moe, where)

    spec = TransformerSpec(
        name=name,
        n_layers=n_layers,
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        head_dim=head_dim,
        d_ff=d_ff,
        vocab_size=vocab,
        gated_mlp=_gated(cfg, config, model_type, family, where),
        tied_embeddings=_tied(cfg, config, family, where),
        n_experts=moe.n_experts,
        experts_per_token=moe.experts_per_token,
        n_shared_experts=moe.n_shared_experts,
        moe_d_ff=moe.moe_d_ff,
        first_dense_layers=moe.first_dense_layers,
        moe_layer_step=moe.moe_layer_step,
        expert_groups=moe.expert_groups,
        expert_groups_per_token=moe.expert_groups_per_token,
        q_lora_rank=_optional_int(cfg, ("q_lora_rank",), where) or 0,
        kv_lora_rank=kv_lora_rank,
        qk_rope_head_dim=qk_rope,
        qk_nope_head_dim=qk_nope,
        v_head_dim=v_head_dim,
        index_topk=index[0],
        index_n_heads=index[1],
        index_head_dim=index[2],
        n_encoder_layers=n_encoder_layers,
        causal=not family.encoder_only,
        sliding_window=window,
        sliding_window_pattern=pattern,
        source=source,
        published_params=published_params,
        learned_positions=_learned_positions(cfg, family, where),
        expert_quant=_expert_quant(config),
        fp8_weight_block=_fp8_weight_block(config),
        quant_exclude=_quant_exclude(config, n_layers, mla=bool(kv_lora_rank), where=where),
        glu_clamp=_glu_clamp(cfg, where),
        expert_bias=model_type in _EXPERT_BIAS_MODELS,
        qk_norm=_qk_norm(cfg, model_type, where),
        post_norms=model_type in _POST_NORM_MODELS,
        full_attention_interval=linear[0],
        linear_k_heads=linear[1],
        linear_v_heads=linear[2],
        linear_k_head_dim=linear[3],
        linear_v_head_dim=linear[4],
        linear_conv_kernel=linear[5],
        attn_output_gate=_attn_output_gate(cfg, model_type),
        linear_state_dtype=_STATE_DTYPES.get(str(cfg.get("mamba_ssm_dtype")), "")
        if linear[0]
        else "",
    )
    max_positions = _optional_int(cfg, _MAX_POS, where)
    return replace(spec, max_seq_len=max_positions) if max_positions else spec


# --- pieces of the mapping --------------------------------------------------------------


def _sparse_attention(cfg: Mapping[str, Any], where: str) -> tuple[int, int, int]:
    """DeepSeek Sparse Attention's (index_topk, index_n_heads, index_head_dim), or zeros.

    DeepSeek-V3.2 names them in config.json (deepseek-ai/DeepSeek-V3.2-Exp inference/
    model.py ModelArgs: 2048, 64, 128). An indexer shared across layers (GLM-5's
    ``index_topk_freq`` / ``indexer_types``) is another cost chipwise does not express."""
    keys = ("index_topk", "index_n_heads", "index_head_dim")
    values = tuple(_optional_int(cfg, (k,), where) or 0 for k in keys)
    if not any(values):
        return 0, 0, 0
    # a partial indexer, or one without MLA: TransformerSpec refuses them
    shared = cfg.get("index_topk_freq", 1)
    if cfg.get("indexer_types") is not None or shared not in (None, 1):
        raise WorkloadError(
            f"config {where}: an indexer shared across layers (index_topk_freq, "
            "indexer_types) is not modelled"
        )
    return values[0], values[1], values[2]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Moe:
    n_experts: int = 0
    experts_per_token: int = 0
    n_shared_experts: int = 0
    moe_d_ff: int = 0
    first_dense_layers: int = 0
    moe_layer_step: int = 1
    expert_groups: int = 0
    expert_groups_per_token: int = 0


def _moe_fields(
    cfg: Mapping[str, Any], model_type: str, family: _Family, n_layers: int, where: str
) -> _Moe:
    n_experts = _optional_int(cfg, _EXPERTS, where) or 0
    if n_experts <= 1:  # a single "expert" is a dense MLP
        return _Moe()
    top_k = _optional_int(cfg, _TOP_K, where)
    if top_k is None:
        raise WorkloadError(
            f"config {where}: {n_experts} experts but no 'num_experts_per_tok'; add it"
        )
    # Mixtral, gpt-oss and Llama 4 put the expert width in intermediate_size.
    moe_d_ff = _optional_int(cfg, ("moe_intermediate_size",), where) or _optional_int(
        cfg, _FFN, where
    )
    if not moe_d_ff:
        raise WorkloadError(f"config {where}: missing 'moe_intermediate_size'; add it")
    shared = _optional_int(cfg, ("n_shared_experts", "num_shared_experts"), where)
    shared_width = _optional_int(cfg, ("shared_expert_intermediate_size",), where) or 0
    if shared is None:
        # Qwen2-MoE: one shared expert of its own width, counted in expert-width units.
        shared = shared_width // moe_d_ff if shared_width else family.shared_experts
    first, step = _moe_pattern(_moe_layers(cfg, model_type, n_layers, where), n_layers, where)
    # group-limited routing (DeepSeek-V2 "device-limited", V3 "node-limited": n_group groups,
    # experts of at most topk_group of them per token); one group, or all, is no limit
    groups = _optional_int(cfg, ("n_group",), where) or 0
    per_token = _optional_int(cfg, ("topk_group",), where) or 0
    if groups <= 1 or not 0 < per_token < groups or n_experts % groups:
        groups = per_token = 0
    return _Moe(
        n_experts=n_experts,
        experts_per_token=top_k,
        n_shared_experts=shared,
        moe_d_ff=moe_d_ff,
        first_dense_layers=first,
        moe_layer_step=step,
        expert_groups=groups,
        expert_groups_per_token=per_token,
    )


def _moe_layers(cfg: Mapping[str, Any], model_type: str, n_layers: int, where: str) -> list[int]:
    """The 0-based MoE layer indices, by each family's rule in its transformers model code."""
    explicit = _layer_list(cfg, "moe_layers", where)
    if explicit:
        return sorted(set(explicit))
    if model_type in ("llama4", "llama4_text"):
        step = _optional_int(cfg, ("interleave_moe_layer_step",), where) or 1
        return list(range(step - 1, n_layers, step))
    if model_type in ("qwen2_moe", "qwen3_moe"):
        step = _optional_int(cfg, ("decoder_sparse_step",), where) or 1
        dense = set(_layer_list(cfg, "mlp_only_layers", where))
        return [i for i in range(n_layers) if i not in dense and (i + 1) % step == 0]
    # DeepSeek rule, also the generic one: layer >= first_k_dense_replace, every freq-th.
    first = _optional_int(cfg, ("first_k_dense_replace",), where) or 0
    freq = _optional_int(cfg, ("moe_layer_freq",), where) or 1
    return [i for i in range(n_layers) if i >= first and i % freq == 0]


def _moe_pattern(layers: list[int], n_layers: int, where: str) -> tuple[int, int]:
    """Express MoE layer indices as ``(first_dense_layers, moe_layer_step)``, or refuse."""
    if not layers:
        raise WorkloadError(f"config {where}: the expert settings leave no MoE layer")
    first = layers[0]
    step = layers[1] - layers[0] if len(layers) > 1 else n_layers
    expected = list(range(first, n_layers, step))
    if layers != expected:
        raise WorkloadError(
            f"config {where}: MoE layers {layers[:8]}... are not 'first k dense, then every "
            "n-th'; chipwise cannot represent this pattern yet"
        )
    return first, step


def _dense_width(
    cfg: Mapping[str, Any], family: _Family, d_model: int, moe: _Moe, where: str
) -> int:
    """Width of the dense (non-expert) MLPs."""
    mlp = _optional_int(cfg, ("intermediate_size_mlp",), where)  # Llama 4 dense layers
    if mlp:
        return mlp
    width = _optional_int(cfg, _FFN, where)
    if width:
        return width
    if family.ffn_4x:
        return 4 * d_model
    if moe.n_experts:
        return moe.moe_d_ff
    raise WorkloadError(f"config {where}: missing 'intermediate_size' (MLP width); add it")


def _gated(
    cfg: Mapping[str, Any],
    top: Mapping[str, Any],
    model_type: str,
    family: _Family,
    where: str,
) -> bool:
    for source in (cfg, top):
        explicit = source.get("gated_mlp")
        if explicit is not None:
            if not isinstance(explicit, bool):
                raise WorkloadError(
                    f"config {where}: 'gated_mlp' must be true or false, not {explicit!r}"
                )
            return explicit
    if model_type in ("t5", "mt5"):
        return _text(cfg.get("feed_forward_proj")).startswith("gated-")
    if family.gated is not None:
        return family.gated
    act = _text(cfg.get("hidden_act") or cfg.get("activation_function")).lower()
    return act in _SILU


def _tied(cfg: Mapping[str, Any], top: Mapping[str, Any], family: _Family, where: str) -> bool:
    for source in (cfg, top):
        value = source.get("tie_word_embeddings")
        if value is not None:
            if not isinstance(value, bool):
                raise WorkloadError(
                    f"config {where}: 'tie_word_embeddings' must be true or false, not {value!r}"
                )
            return value
    return family.tied


_SLIDING_TYPES = frozenset({"sliding_attention", "sliding", "local", "local_attention"})
_FULL_TYPES = frozenset({"full_attention", "full", "global", "global_attention"})


# Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5): HF Qwen3NextConfig / Qwen3_5 text configs
# name their layers in layer_types ("linear_attention" / "full_attention", default every
# full_attention_interval-th layer full) and size the linear layers with these keys.
_LINEAR_TYPES = frozenset({"linear_attention"})
_LINEAR_KEYS = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                "linear_value_head_dim", "linear_conv_kernel_dim")  # fmt: skip


# A hybrid's recurrent-state dtype as its config names it (Qwen3.5: mamba_ssm_dtype)
_STATE_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def _names_linear_layers(types: object) -> bool:
    """Whether a config's ``layer_types`` names Gated DeltaNet (linear-attention) layers."""
    return isinstance(types, list) and any(str(t) in _LINEAR_TYPES for t in types)


def _attn_output_gate(cfg: Mapping[str, Any], model_type: str) -> bool:
    flag = cfg.get("attn_output_gate")
    if isinstance(flag, bool):
        return flag
    return model_type in _GATED_ATTENTION_MODELS


def _linear_attention(cfg: Mapping[str, Any], n_layers: int, where: str) -> tuple[int, ...]:
    """(full_attention_interval, key heads, value heads, key dim, value dim, conv kernel) of
    a Gated DeltaNet hybrid, or zeros: from ``layer_types`` when it names linear layers,
    else from ``full_attention_interval`` beside the linear_* keys."""
    types = cfg.get("layer_types")
    named = _names_linear_layers(types)
    interval = _optional_int(cfg, ("full_attention_interval",), where) or 0
    if not named and not (interval and cfg.get("linear_num_value_heads") is not None):
        return (0, 0, 0, 0, 0, 0)
    if named and isinstance(types, list):
        # every layer linear: no full layer within the model's depth
        interval = _pattern_from_layer_types(types, n_layers, where, local=_LINEAR_TYPES,
                                             kind="linear") or n_layers + 1  # fmt: skip
    sizes = [_optional_int(cfg, (key,), where) for key in _LINEAR_KEYS]
    missing = [key for key, v in zip(_LINEAR_KEYS, sizes, strict=True) if not v]
    if missing:
        raise WorkloadError(
            f"config {where}: linear attention needs {', '.join(missing)} (all > 0); add them"
        )
    return (interval, *(int(v or 0) for v in sizes))


def _sliding(cfg: Mapping[str, Any], family: _Family, n_layers: int, where: str) -> tuple[int, int]:
    """(sliding_window, sliding_window_pattern): an explicit ``layer_types`` list (gpt-oss,
    newer Gemma configs) wins, then ``sliding_window_pattern`` (Gemma 3), then the family's
    default; without either every layer is windowed (Mistral)."""
    if cfg.get("use_sliding_window") is False:
        return 0, 0
    window = _optional_int(cfg, ("sliding_window",), where) or 0
    if not window:
        return 0, 0
    types = cfg.get("layer_types")
    if _names_linear_layers(types):
        return 0, 0  # a linear-attention hybrid: no window (``_linear_attention``)
    if isinstance(types, list) and types:
        return window, _pattern_from_layer_types(types, n_layers, where)
    pattern = _optional_int(cfg, ("sliding_window_pattern",), where)
    return window, family.sliding_pattern if pattern is None else pattern


def _pattern_from_layer_types(
    types: list[Any],
    n_layers: int,
    where: str,
    *,
    local: frozenset[str] = _SLIDING_TYPES,
    kind: str = "sliding",
) -> int:
    """Express a ``layer_types`` list of full and ``local`` (sliding-window, or linear-
    attention) layers as 'every n-th layer is full' (0: none is), or refuse."""
    if len(types) != n_layers:
        raise WorkloadError(
            f"config {where}: layer_types has {len(types)} entries for {n_layers} layers"
        )
    unknown = sorted({str(t) for t in types} - local - _FULL_TYPES)
    if unknown:
        raise WorkloadError(
            f"config {where}: layer_types {unknown} are not {kind} or full attention; "
            "chipwise cannot time them yet"
        )
    full = [i for i, t in enumerate(types) if t in _FULL_TYPES]
    if not full:
        return 0
    n = full[0] + 1
    if full != list(range(n - 1, n_layers, n)):
        raise WorkloadError(
            f"config {where}: full-attention layers {full[:8]}... are not 'every n-th "
            "layer'; chipwise cannot represent this pattern yet"
        )
    return n


def _expert_quant(config: Mapping[str, Any]) -> str:
    """The format of a checkpoint that quantises only its routed experts, else "": an HF
    ``quantization_config`` whose ``modules_to_not_convert`` keeps the attention unquantised
    (gpt-oss: quant_method mxfp4, not converting ``model.layers.*.self_attn``, the router,
    the embeddings and the head; huggingface.co/openai/gpt-oss-120b config.json)."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
        return ""
    keep = qc.get("modules_to_not_convert") or ()
    method = qc.get("quant_method")
    if isinstance(method, str) and any(isinstance(m, str) and "self_attn" in m for m in keep):
        return method
    return ""


# HF attention module leaf names -> the chipwise matmul ops they are (perf/ops/layers.py
# attention_ops): MLA (DeepseekV3Attention: q_a_proj / q_b_proj or q_proj,
# kv_a_proj_with_mqa, kv_b_proj, o_proj) and the usual q/k/v/o (fused into qkv_proj).
_MLA_PROJECTIONS: dict[str, tuple[tuple[str, ...], ...]] = {
    # each op: the alternative module sets that are it (TensorRT-LLM fuses q_a_proj and
    # kv_a_proj_with_mqa into ``fused_a``, as the exclude lists it reads may name them)
    "q_down": (("q_a_proj",), ("fused_a",)),
    "q_up": (("q_b_proj",),),
    "q_proj": (("q_proj",),),
    "kv_down": (("kv_a_proj_with_mqa",), ("fused_a",)),
    "kv_up": (("kv_b_proj",),),
    "o_proj": (("o_proj",),),
}
_MHA_PROJECTIONS: dict[str, tuple[tuple[str, ...], ...]] = {
    "qkv_proj": (("q_proj", "k_proj", "v_proj"), ("qkv_proj",)),
    "o_proj": (("o_proj",),),
}


# A compressed-tensors ``re:`` pattern that can backtrack for long on a module name: a
# repeated group ("(.*)*x") or more than MAX_EXCLUDE_REGEX_REPEATS repeats (*, +, ?, {m,n}).
_REPEATED_GROUP = re.compile(r"(?<!\\)\)[*+?{]")
_REPEAT = re.compile(r"(?<!\\)(?:[*+]|\{\d*(?:,\d*)?\})|(?<![\\(*+?}])\?")


@dataclass(frozen=True)
class _ExcludeList:
    """A quantization_config exclude list, split so that matching a module name is bounded:
    exact names (a name or any parent of it) by set lookup, ModelOpt wildcards as one
    compiled alternation (``fnmatch.translate`` builds patterns that do not backtrack
    exponentially), compressed-tensors ``re:`` patterns one by one (each few-repeat, see
    ``_exclude_list``)."""

    names: frozenset[str]
    wildcards: re.Pattern[str] | None
    regexes: tuple[re.Pattern[str], ...]

    def excludes(self, name: str) -> bool:
        parts = name.split(".")
        if any(".".join(parts[:i]) in self.names for i in range(1, len(parts) + 1)):
            return True
        if self.wildcards is not None and self.wildcards.match(name):
            return True
        return any(rx.match(name) for rx in self.regexes)


def _exclude_list(patterns: list[str], where: str) -> _ExcludeList:
    """``patterns`` (ModelOpt names and wildcards such as ``model.layers.*.self_attn*``,
    compressed-tensors ``re:`` regexes) as an ``_ExcludeList``. A config is user input and
    Python's ``re`` backtracks, so a list longer than ``MAX_EXCLUDE_PATTERNS`` or a regex
    with a repeated group or more than ``MAX_EXCLUDE_REGEX_REPEATS`` repeats is an error;
    a regex ``re`` cannot compile is skipped (it matches no module)."""
    if len(patterns) > MAX_EXCLUDE_PATTERNS:
        raise WorkloadError(
            f"config {where}: quantization_config lists {len(patterns)} modules to exclude; "
            f"chipwise reads at most {MAX_EXCLUDE_PATTERNS}"
        )
    names: set[str] = set()
    wildcards: list[str] = []
    regexes: list[re.Pattern[str]] = []
    for pattern in patterns:
        if pattern.startswith("re:"):
            body = pattern[3:]
            if _REPEATED_GROUP.search(body) or len(_REPEAT.findall(body)) > (
                MAX_EXCLUDE_REGEX_REPEATS
            ):
                raise WorkloadError(
                    f"config {where}: quantization_config exclude pattern {pattern[:80]!r} "
                    f"repeats a group or more than {MAX_EXCLUDE_REGEX_REPEATS} times; "
                    "write it with fewer repeats (e.g. 're:.*self_attn.*')"
                )
            try:
                regexes.append(re.compile(body))
            except re.error:
                continue
        elif any(c in pattern for c in "*?["):
            wildcards.append(fnmatch.translate(pattern))
        else:
            names.add(pattern)
    wild = re.compile("|".join(f"(?:{w})" for w in wildcards)) if wildcards else None
    return _ExcludeList(frozenset(names), wild, tuple(regexes))


def _quant_exclude(
    config: Mapping[str, Any], n_layers: int, *, mla: bool, where: str = "config"
) -> tuple[str, ...]:
    """The attention projections (chipwise op names) a quantised checkpoint keeps out of its
    low precision: those its HF ``quantization_config`` excludes in every decoder layer,
    by ModelOpt's ``exclude_modules`` (quant_method modelopt: nvidia/DeepSeek-R1-FP4 lists
    ``model.layers.N.self_attn*``, ModelOpt's examples/deepseek/ptq.py disabling ``*attn*``;
    its -v2 checkpoints quantise o_proj too, ptq.py ``--enable_wo_quant``) or
    compressed-tensors' ``ignore`` or AMD-Quark's ``exclude`` (amd/DeepSeek-R1-0528-MXFP4-Preview:
    ``*self_attn*``). ModelOpt exports those modules in bf16
    (examples/deepseek/quantize_to_nvfp4.py dequantises the fp8 weights it does not
    quantise). A projection excluded in only some layers stays quantised (chipwise times
    one layer for all)."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
        return ()
    raw = qc.get("exclude_modules") or qc.get("ignore") or qc.get("exclude") or ()
    patterns = [p for p in raw if isinstance(p, str)] if isinstance(raw, list) else []
    if not patterns or n_layers <= 0:
        return ()
    excluded = _exclude_list(patterns, where)
    projections = _MLA_PROJECTIONS if mla else _MHA_PROJECTIONS
    leaves = sum(len(alt) for alts in projections.values() for alt in alts)
    if len(excluded.regexes) * n_layers * leaves > MAX_EXCLUDE_REGEX_CHECKS:
        raise WorkloadError(
            f"config {where}: quantization_config's {len(excluded.regexes)} 're:' patterns "
            f"over {n_layers} layers are more than chipwise checks "
            f"({MAX_EXCLUDE_REGEX_CHECKS} pattern-module pairs)"
        )
    out = []
    for op, alternatives in projections.items():
        if any(
            all(
                excluded.excludes(f"model.layers.{layer}.self_attn.{leaf}")
                for layer in range(n_layers)
                for leaf in alt
            )
            for alt in alternatives
        ):
            out.append(op)
    return tuple(out)


def _fp8_weight_block(config: Mapping[str, Any]) -> int:
    """The weight block side of a block-scaled fp8 checkpoint (HF ``quantization_config``
    quant_method fp8 with ``weight_block_size`` [128, 128]: DeepSeek-V3/R1, Qwen's -FP8
    checkpoints), else 0 (per-tensor fp8, another format or none)."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping) or qc.get("quant_method") != "fp8":
        return 0
    block = qc.get("weight_block_size")
    if isinstance(block, list) and block and all(isinstance(b, int) and b > 0 for b in block):
        return int(block[0])
    return 0


# Model types whose routed experts carry biases on both projections: gpt-oss
# (transformers' GptOssExperts: gate_up_proj_bias and down_proj_bias; Megatron-Bridge's
# GPTOSSProvider sets add_bias_linear=True).
_EXPERT_BIAS_MODELS = frozenset({"gpt_oss"})


# Model types whose attention normalises q and k (RMSNorm) before attending, read in
# transformers 5.25's modeling code (2026-12-06): per head over head_dim in Qwen3Attention and
# Qwen3MoeAttention ("unlike olmo, only on the head dim"), Gemma3Attention; over the whole
# projection (num_heads x head_dim, one statistic per token) in Olmo2Attention and
# MiniMaxM2Attention. Unconditional in those classes.
_QK_NORM_MODELS = {
    **dict.fromkeys(("qwen3", "qwen3_moe", "gemma3", "gemma3_text"), "head"),
    **dict.fromkeys(("olmo2", "minimax_m2"), "proj"),
}
# Model types whose qk-norm is a config flag, ``use_qk_norm``, with the config class's default
# when the key is absent: Glm4MoeAttention (q_norm/k_norm over head_dim only if use_qk_norm;
# Glm4MoeConfig default False: GLM-4.5 sets it, GLM-4.5-Air does not); Llama4TextAttention
# (a weightless RMSNorm over head_dim if use_qk_norm, on its RoPE layers; Llama4TextConfig
# default True: Scout sets it, Maverick clears it). Llama 4's NoPE layers (one in four) skip
# it; chipwise gives every layer the same attention ops, so it is counted on all of them.
_QK_NORM_FLAG_MODELS = {"glm4_moe": False, "llama4": True, "llama4_text": True}


# Model types with four RMSNorms per layer (transformers 5.25, Gemma2DecoderLayer and
# Gemma3DecoderLayer: input_layernorm, post_attention_layernorm on the attention's output,
# pre_feedforward_layernorm, post_feedforward_layernorm on the MLP's output, each before the
# residual add). OLMo-2 norms the outputs instead of the inputs: two norms, as counted.
_POST_NORM_MODELS = frozenset({"gemma2", "gemma3", "gemma3_text"})


def _qk_norm(cfg: Mapping[str, Any], model_type: str, where: str) -> str:
    """The shape of the model's q/k RMSNorm (``TransformerSpec.qk_norm``); "" for a model
    type not read above (never guessed)."""
    if model_type in _QK_NORM_MODELS:
        return _QK_NORM_MODELS[model_type]
    if model_type not in _QK_NORM_FLAG_MODELS:
        return ""
    flag = cfg.get("use_qk_norm", _QK_NORM_FLAG_MODELS[model_type])
    if not isinstance(flag, bool):
        raise WorkloadError(f"config {where}: use_qk_norm must be true or false")
    return "head" if flag else ""


def _glu_clamp(cfg: Mapping[str, Any], where: str) -> float:
    """gpt-oss's ``swiglu_limit``: the clamp on its expert GLU's inputs (0 = none)."""
    limit = cfg.get("swiglu_limit")
    if limit is None:
        return 0.0
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0:
        raise WorkloadError(f"config {where}: swiglu_limit must be a positive number")
    return float(limit)


def _learned_positions(cfg: Mapping[str, Any], family: _Family, where: str) -> int:
    if not family.learned_positions:
        return 0
    return _optional_int(cfg, _MAX_POS, where) or 0


def _text_model(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The text decoder's keys: ``text_config`` for multimodal wrappers, else the config."""
    inner = config.get("text_config")
    if isinstance(inner, Mapping) and not any(config.get(k) is not None for k in _HIDDEN):
        return inner
    return config


# --- typed access -------------------------------------------------------------------------


def _first(cfg: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str, Any] | None:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            return key, value
    return None


def _as_int(key: str, value: Any, where: str) -> int:
    if key in _POSITIVE_KEYS or key in _COUNT_KEYS:
        return _bounded(key, value, where)
    return check_whole(
        f"config {where}: {key!r}", value, low=0, high=MAX_POSITIONS, error=WorkloadError
    )


def _optional_int(cfg: Mapping[str, Any], keys: tuple[str, ...], where: str) -> int | None:
    found = _first(cfg, keys)
    return None if found is None else _as_int(found[0], found[1], where)


def _required_int(cfg: Mapping[str, Any], keys: tuple[str, ...], where: str) -> int:
    found = _first(cfg, keys)
    if found is None:
        others = f" (or {' / '.join(keys[1:])})" if len(keys) > 1 else ""
        raise WorkloadError(f"config {where}: missing {keys[0]!r}{others}; add it to the file")
    return _as_int(found[0], found[1], where)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _published(raw: Mapping[str, Any], file: Path) -> float:
    value = raw.get("_published_params", 0.0)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value <= MAX_PARAMS
    ):
        raise WorkloadError(
            f"config {file}: '_published_params' must be a number in 0..{MAX_PARAMS:g}"
        )
    return float(value)


# --- transformers -------------------------------------------------------------------------


def _transformers_dict(
    file: Path, raw: Mapping[str, Any], *, required: bool
) -> dict[str, Any] | None:
    """``AutoConfig.to_dict()`` for ``file``, or None where transformers cannot help."""
    model_type = _text(raw.get("model_type"))
    try:  # optional dependency; imported here so chipwise starts without it
        auto = importlib.import_module("transformers.models.auto.configuration_auto")
        hf_logging = importlib.import_module("transformers.utils.logging")
    except ImportError as err:
        if required:
            raise ExtractionError(
                "transformers is not installed; pip install 'chipwise[hf]'"
            ) from err
        return None
    if model_type not in auto.CONFIG_MAPPING_NAMES:
        if required:
            raise ExtractionError(
                f"config {file}: transformers does not know model_type {model_type!r}"
            )
        return None
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # no log lines about configs we only read
    # transformers reads the JSON we already checked, from a private copy: the user's path
    # is opened once (it could be swapped for a FIFO between two opens).
    with tempfile.TemporaryDirectory(prefix="chipwise-config-") as tmp:
        copy = Path(tmp) / "config.json"
        copy.write_text(json.dumps(raw), encoding="utf-8")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                config = auto.AutoConfig.from_pretrained(str(copy), local_files_only=True)
        except Exception as err:  # transformers raises many types for a config it rejects
            why = f"{type(err).__name__}: {err}".replace(str(copy), str(file)).replace(tmp, "")
            raise ExtractionError(
                f"config {file}: transformers could not read it ({' '.join(why.split())})"
            ) from err
        finally:
            hf_logging.set_verbosity(level)
    result: dict[str, Any] = config.to_dict()
    return result
