"""The model zoo: Hugging Face-style ``config.json`` files shipped as package data.

Each preset is ``configs/<id>.json`` with the model's published config keys plus
``_source`` (the HF repository or paper, with its date), ``_published_params`` (the
published total parameter count, checked within 2 % by the tests) and, for MoE models,
``_published_active_params``. Look-up takes the id, an alias or the HF repository name,
case- and punctuation-insensitively; failing that, it drops an ``org/`` prefix, then
variant tags that keep the architecture (``-instruct``, ``-it``, ``-chat``, ``-hf``,
``-base``, ``-pt``, ``-thinking``, a dated ``-2507``, quantisation tags such as ``-fp8`` or
``-awq``, MLPerf's ``-99``) and looks up again. It never changes a size or a family, so a
name resolves only to a zoo entry that one of its stated names matches. A quantisation tag
does not set the precision: the user states that separately (``--precision``). An unknown
name raises ``WorkloadError`` with close matches.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from chipwise.errors import WorkloadError
from chipwise.workload.config import spec_from_config
from chipwise.workload.ir import TransformerSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """One zoo entry: an id (also the config file's stem), a display title, aliases."""

    id: str
    title: str
    aliases: tuple[str, ...] = ()


PRESETS: tuple[Preset, ...] = (
    Preset(
        id="gpt2", title="GPT-2 (124M)", aliases=("gpt-2", "gpt2-small", "openai-community/gpt2")
    ),
    Preset(id="gpt3-175b", title="GPT-3 175B", aliases=("gpt3", "gpt-3", "gpt-3-175b")),
    Preset(
        id="gptj-6b",
        title="GPT-J 6B",
        aliases=("gpt-j", "gpt-j-6b", "gptj", "EleutherAI/gpt-j-6b"),  # gptj: MLPerf's name
    ),
    Preset(id="llama2-7b", title="Llama 2 7B", aliases=("meta-llama/Llama-2-7b-hf",)),
    Preset(id="llama2-13b", title="Llama 2 13B", aliases=("meta-llama/Llama-2-13b-hf",)),
    Preset(id="llama2-70b", title="Llama 2 70B", aliases=("meta-llama/Llama-2-70b-hf",)),
    Preset(
        id="llama3-8b",
        title="Llama 3 / 3.1 8B",
        aliases=(
            "llama3.1-8b",
            "meta-llama/Meta-Llama-3-8B",
            "meta-llama/Llama-3.1-8B",
            "meta-llama/Meta-Llama-3.1-8B",
            # R1-Distill-Llama-8B is distilled onto Llama-3.1-8B: the same config keys
            "deepseek-r1-distill-llama-8b",
            "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
        ),
    ),
    Preset(
        id="llama3-70b",
        title="Llama 3 / 3.1 / 3.3 70B",
        aliases=(
            "llama3.1-70b",
            "llama3.3-70b",
            "meta-llama/Meta-Llama-3-70B",
            "meta-llama/Llama-3.1-70B",
            "meta-llama/Llama-3.3-70B-Instruct",
            # Llama-3.1-Nemotron-70B is Llama-3.1-70B-Instruct after RLHF: the same config keys
            "llama-3.1-nemotron-70b",
            "nvidia/Llama-3.1-Nemotron-70B-Instruct-HF",
            # DeepSeek-R1-Distill-Llama-70B is fine-tuned from Llama-3.3-70B-Instruct: its
            # config.json has the same architecture keys (see the config's _source)
            "deepseek-r1-distill-llama-70b",
            "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
        ),
    ),
    Preset(
        id="llama3-405b",
        title="Llama 3.1 405B",
        aliases=("llama3.1-405b", "meta-llama/Llama-3.1-405B", "meta-llama/Meta-Llama-3.1-405B"),
    ),
    Preset(
        id="llama3.2-1b",
        title="Llama 3.2 1B",
        aliases=("meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-1B-Instruct"),
    ),
    Preset(
        id="llama3.2-3b",
        title="Llama 3.2 3B",
        aliases=("meta-llama/Llama-3.2-3B", "meta-llama/Llama-3.2-3B-Instruct"),
    ),
    Preset(id="mistral-7b", title="Mistral 7B v0.1", aliases=("mistralai/Mistral-7B-v0.1",)),
    Preset(
        id="mistral-7b-v0.2",
        title="Mistral 7B v0.2",
        aliases=("mistralai/Mistral-7B-v0.2", "mistralai/Mistral-7B-Instruct-v0.2"),
    ),
    Preset(
        id="mistral-7b-v0.3",
        title="Mistral 7B v0.3",
        aliases=("mistralai/Mistral-7B-v0.3", "mistralai/Mistral-7B-Instruct-v0.3"),
    ),
    Preset(
        id="phi-3-mini",
        title="Phi-3-mini 4K (3.8B)",
        aliases=("phi3-mini", "phi-3-mini-4k", "microsoft/Phi-3-mini-4k-instruct"),
    ),
    Preset(
        id="mistral-nemo-12b",
        title="Mistral NeMo 12B",
        aliases=(
            "mistral-nemo",
            "mistralai/Mistral-Nemo-Base-2407",
            "mistralai/Mistral-Nemo-Instruct-2407",
        ),
    ),
    Preset(
        id="mistral-small-3",
        title="Mistral Small 3 (24B)",
        aliases=(
            "mistral-small-24b",
            "mistralai/Mistral-Small-24B-Base-2501",
            "mistralai/Mistral-Small-24B-Instruct-2501",
        ),
    ),
    Preset(
        id="mistral-large-2",
        title="Mistral Large 2 (123B)",
        aliases=(
            "mistral-large-2407",
            "mistral-large-123b",
            "mistralai/Mistral-Large-Instruct-2407",
        ),
    ),
    Preset(id="phi-4", title="Phi-4 (14B)", aliases=("phi4", "microsoft/phi-4")),
    Preset(
        id="mixtral-8x7b",
        title="Mixtral 8x7B",
        aliases=("mixtral", "mistralai/Mixtral-8x7B-v0.1"),
    ),
    Preset(
        id="mixtral-8x22b",
        title="Mixtral 8x22B",
        aliases=("mistralai/Mixtral-8x22B-v0.1", "mistralai/Mixtral-8x22B-Instruct-v0.1"),
    ),
    Preset(id="gemma-2b", title="Gemma 2B", aliases=("google/gemma-2b", "google/gemma-1.1-2b-it")),
    Preset(id="gemma-7b", title="Gemma 7B", aliases=("google/gemma-7b", "google/gemma-1.1-7b-it")),
    Preset(
        id="gemma2-2b", title="Gemma 2 2B", aliases=("google/gemma-2-2b", "google/gemma-2-2b-it")
    ),
    Preset(
        id="gemma3-1b",
        title="Gemma 3 1B",
        aliases=("google/gemma-3-1b-pt", "google/gemma-3-1b-it"),
    ),
    Preset(
        id="gemma3-4b",
        title="Gemma 3 4B (text)",
        aliases=("google/gemma-3-4b-pt", "google/gemma-3-4b-it"),
    ),
    Preset(
        id="gemma3-12b",
        title="Gemma 3 12B (text)",
        aliases=("google/gemma-3-12b-pt", "google/gemma-3-12b-it"),
    ),
    Preset(
        id="gemma3-27b",
        title="Gemma 3 27B (text)",
        aliases=("google/gemma-3-27b-pt", "google/gemma-3-27b-it"),
    ),
    Preset(
        id="gemma2-9b", title="Gemma 2 9B", aliases=("google/gemma-2-9b", "google/gemma-2-9b-it")
    ),
    Preset(
        id="gemma2-27b",
        title="Gemma 2 27B",
        aliases=("google/gemma-2-27b", "google/gemma-2-27b-it"),
    ),
    Preset(
        id="qwen2.5-7b",
        title="Qwen2.5 7B",
        aliases=("qwen2.5-7b-instruct", "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct"),
    ),
    Preset(
        id="qwen2.5-14b",
        title="Qwen2.5 14B",
        aliases=("qwen2.5-14b-instruct", "Qwen/Qwen2.5-14B", "Qwen/Qwen2.5-14B-Instruct"),
    ),
    Preset(
        id="qwen2.5-32b",
        title="Qwen2.5 32B",
        aliases=(
            "qwen2.5-32b-instruct",
            "Qwen/Qwen2.5-32B",
            "Qwen/Qwen2.5-32B-Instruct",
            # QwQ-32B is post-trained from Qwen2.5-32B: the same architecture keys (see _source)
            "qwq-32b",
            "Qwen/QwQ-32B",
            "Qwen/QwQ-32B-Preview",
        ),
    ),
    Preset(
        id="qwen2.5-72b",
        title="Qwen2.5 72B",
        aliases=("qwen2.5-72b-instruct", "Qwen/Qwen2.5-72B", "Qwen/Qwen2.5-72B-Instruct"),
    ),
    Preset(id="qwen3-0.6b", title="Qwen3 0.6B", aliases=("Qwen/Qwen3-0.6B",)),
    Preset(id="qwen3-1.7b", title="Qwen3 1.7B", aliases=("Qwen/Qwen3-1.7B",)),
    Preset(id="qwen3-4b", title="Qwen3 4B", aliases=("Qwen/Qwen3-4B",)),
    Preset(id="qwen3-8b", title="Qwen3 8B", aliases=("Qwen/Qwen3-8B",)),
    Preset(id="qwen3-14b", title="Qwen3 14B", aliases=("Qwen/Qwen3-14B",)),
    Preset(id="qwen3-32b", title="Qwen3 32B", aliases=("Qwen/Qwen3-32B",)),
    Preset(
        id="qwen3-30b-a3b",
        title="Qwen3 30B-A3B",
        aliases=("qwen3-30b", "Qwen/Qwen3-30B-A3B"),
    ),
    Preset(
        id="qwen3-coder-30b",
        title="Qwen3-Coder 30B-A3B",
        aliases=("qwen3-coder-30b-a3b", "Qwen/Qwen3-Coder-30B-A3B-Instruct"),
    ),
    Preset(
        id="qwen3-235b-a22b",
        title="Qwen3 235B-A22B",
        aliases=("qwen3-235b", "Qwen/Qwen3-235B-A22B"),
    ),
    Preset(
        id="qwen3-next-80b",
        title="Qwen3-Next 80B",
        aliases=(
            "qwen3-next-80b-a3b",
            "Qwen/Qwen3-Next-80B-A3B-Instruct",
            "Qwen/Qwen3-Next-80B-A3B-Thinking",
            # the same architecture (its model card: built on Qwen3-Next-80B-A3B-Base)
            "Qwen/Qwen3-Coder-Next",
        ),
    ),
    Preset(
        id="qwen3.5-397b",
        title="Qwen3.5 397B",
        aliases=("qwen3.5-397b-a17b", "Qwen/Qwen3.5-397B-A17B"),
    ),
    Preset(
        id="qwen3.5-35b-a3b",
        title="Qwen3.5 35B-A3B",
        aliases=("qwen3.5-35b", "Qwen/Qwen3.5-35B-A3B"),
    ),
    Preset(
        id="qwen3-coder-480b",
        title="Qwen3-Coder 480B-A35B",
        aliases=(
            "Qwen/Qwen3-Coder-480B-A35B-Instruct",
            "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8",
            "qwen3-coder-480b-a35b",  # the validation rows' config name (wider than the table)
        ),
    ),
    Preset(
        id="deepseek-v3",
        title="DeepSeek-V3 671B",
        aliases=(
            "deepseek-v3-671b",
            "deepseek3-671b",
            "deepseek-ai/DeepSeek-V3",
            # DeepSeek-R1 is post-trained from DeepSeek-V3-Base: its config.json has the
            # same architecture keys (see the config's _source)
            "deepseek-r1",
            "deepseek-ai/DeepSeek-R1",
            # V3.1 / V3.1-Terminus: post-trained from the V3 base checkpoint (see _source);
            # V3-0324 and R1-0528 resolve by their date tag. Not V3.2: sparse attention
            # (its own entry, deepseek-v3.2).
            "deepseek-v3.1",
            "deepseek-ai/DeepSeek-V3.1",
            "deepseek-ai/DeepSeek-V3.1-Base",
            "deepseek-v3.1-terminus",
            "deepseek-ai/DeepSeek-V3.1-Terminus",
        ),
    ),
    Preset(
        id="deepseek-v3.2",
        title="DeepSeek-V3.2",
        aliases=("deepseek-v3.2-exp", "deepseek-ai/DeepSeek-V3.2-Exp"),
    ),
    Preset(
        id="deepseek-v2-lite",
        title="DeepSeek-V2-Lite 16B",
        aliases=("deepseek-v2-lite-16b", "deepseek-ai/DeepSeek-V2-Lite"),
    ),
    Preset(
        id="deepseek-v2",
        title="DeepSeek-V2 236B",
        aliases=("deepseek-v2-236b", "deepseek-ai/DeepSeek-V2", "deepseek-ai/DeepSeek-V2-Chat"),
    ),
    Preset(
        id="kimi-k2",
        title="Kimi K2 1T-A32B",
        aliases=(
            "kimi-k2-instruct",
            "moonshotai/Kimi-K2-Instruct",
            "moonshotai/Kimi-K2-Base",
            # -0905 and -Thinking resolve by their tags: the same architecture (see _source)
        ),
    ),
    Preset(
        id="glm-4.5",
        title="GLM-4.5 355B-A32B",
        aliases=(
            "glm4.5",
            "zai-org/GLM-4.5",
            "zai-org/GLM-4.5-Base",
            "THUDM/GLM-4.5",
            # GLM-4.6: the same architecture keys, a longer context (see _source)
            "glm-4.6",
            "zai-org/GLM-4.6",
        ),
    ),
    Preset(
        id="glm-4.5-air",
        title="GLM-4.5-Air 106B-A12B",
        aliases=("glm4.5-air", "zai-org/GLM-4.5-Air", "zai-org/GLM-4.5-Air-Base"),
    ),
    Preset(
        id="minimax-m2",
        title="MiniMax-M2 230B-A10B",
        aliases=("MiniMaxAI/MiniMax-M2",),
    ),
    Preset(id="gpt-oss-20b", title="gpt-oss-20b", aliases=("openai/gpt-oss-20b",)),
    Preset(id="gpt-oss-120b", title="gpt-oss-120b", aliases=("openai/gpt-oss-120b",)),
    Preset(
        id="llama4-scout",
        title="Llama 4 Scout 17B-16E (text)",
        aliases=(
            "llama4-17b-16e",
            "meta-llama/Llama-4-Scout-17B-16E",
            "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        ),
    ),
    Preset(
        id="llama4-maverick",
        title="Llama 4 Maverick 17B-128E (text)",
        aliases=(
            "llama4-17b-128e",
            "meta-llama/Llama-4-Maverick-17B-128E",
            "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        ),
    ),
    Preset(
        id="bert-large",
        title="BERT-Large",
        aliases=("bert-large-uncased", "bert-large-cased", "google-bert/bert-large-uncased"),
    ),
    Preset(id="t5-large", title="T5-Large (v1.0)", aliases=("google-t5/t5-large",)),
)


def _normalise(name: str) -> str:
    """'Llama-3.1 8B' -> 'llama3.18b', 'meta-llama/Llama-3.1-8B' -> 'metallamallama3.18b'."""
    return re.sub(r"[^a-z0-9.]", "", name.lower())


# Tags publishers append to a release without changing its architecture: tuning (instruct,
# chat, it, thinking), packaging (hf, base, pt), a date (Qwen's -2507, DeepSeek's -0528,
# Mistral's -2407), weight formats (fp8, awq, RedHatAI's quantized.w4a16, bnb-4bit, GGUF's
# q4_k_m, bf16) and MLPerf's benchmark variants (-99, -99.9 accuracy targets, -interactive).
# A quantised checkpoint has the same shapes; its precision is the user's --precision, never
# read from the name.
_TAG = (
    r"instruct|it|chat|hf|base|pt|thinking|\d{4}|99|99\.9|interactive"
    r"|fp8(?:[-_ ]dynamic)?|fp4|nvfp4|mxfp4|awq|gptq|int4|int8|w4a16|w8a8|w8a16|w4a4"
    r"|quantized(?:\.w\d+a\d+)?|bnb|4bit|8bit|bf16|fp16|gguf|q[2-8](?:[-_ ]k)?(?:[-_ ][sml])?"
    r"|q[2-8][-_ ][01]"
)
_TRAILING_TAG = re.compile(rf"[-_ ](?:{_TAG})$")
_ANY_TAG = re.compile(rf"(?<=[-_ ])(?:{_TAG})(?=[-_ ]|$)")


# An HF repository id: one 'org/' before the model name (not a path such as './x' or 'a/b/c').
_HF_REPO = re.compile(r"^\s*[A-Za-z0-9][\w.-]*/([^/]+)$")


def _without_org(name: str) -> str:
    """'meta-llama/Llama-3.1-8B' -> 'Llama-3.1-8B' (an HF org is not part of the model)."""
    match = _HF_REPO.match(name)
    return match.group(1) if match else name


def _variant_stems(name: str) -> list[str]:
    """``name`` less its trailing tags, one at a time, then less every tag anywhere
    ('Mistral-7B-Instruct-v0.3' -> 'mistral-7b-v0.3'); sizes and versions stay."""
    stems: list[str] = []
    text = name.strip().lower()
    while (stripped := _TRAILING_TAG.sub("", text)) != text:
        stems.append(text := stripped)
    anywhere = _ANY_TAG.sub("", name.strip().lower())
    stems.append(re.sub(r"[-_ ]{2,}", "-", anywhere).strip("-_ "))
    return stems


def _index(presets: tuple[Preset, ...]) -> dict[str, Preset]:
    """Every id and alias, normalised, with and without its HF org."""
    index: dict[str, Preset] = {}
    for preset in presets:
        for name in (preset.id, *preset.aliases):
            for key in {_normalise(name), _normalise(_without_org(name))}:
                if key in index and index[key].id != preset.id:
                    raise AssertionError(
                        f"zoo alias {name!r} names {index[key].id} and {preset.id}"
                    )
                index[key] = preset
    return index


_INDEX = _index(PRESETS)


def preset_ids() -> tuple[str, ...]:
    """Every zoo id, in listing order."""
    return tuple(p.id for p in PRESETS)


def find_preset(name: str) -> Preset | None:
    """The preset ``name`` names, or None: the id or an alias (any case or punctuation),
    else the same without an ``org/`` prefix, else without architecture-neutral tags."""
    bare = _without_org(name)
    for candidate in (name, bare, *_variant_stems(bare)):
        key = _normalise(candidate)
        if key and key in _INDEX:
            return _INDEX[key]
    return None


def close_presets(name: str, n: int = 3) -> list[str]:
    """Zoo ids whose id or alias is close to ``name`` (for 'did you mean')."""
    names = {n_.lower(): p.id for p in PRESETS for n_ in (p.id, *p.aliases)}
    names |= {_without_org(n_).lower(): p.id for p in PRESETS for n_ in p.aliases}
    close: list[str] = []
    for candidate in (_variant_stems(_without_org(name))[-1], name):
        close += difflib.get_close_matches(candidate.lower(), list(names), n=n * 2, cutoff=0.6)
    return list(dict.fromkeys(names[c] for c in close))[:n]


def resolve_preset(name: str) -> Preset:
    """Find a preset by id or alias; an unknown name raises with close matches."""
    preset = find_preset(name)
    if preset is not None:
        return preset
    close = close_presets(name)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise WorkloadError(f"unknown model {name!r}{hint} (see 'chipwise workload list')")


def preset_config(name: str) -> dict[str, Any]:
    """The raw config dictionary of a preset (keys as in the shipped JSON)."""
    preset = resolve_preset(name)
    text = resources.files(__name__).joinpath("configs", f"{preset.id}.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


@cache
def _load(preset_id: str) -> TransformerSpec:
    raw = preset_config(preset_id)
    published = raw.get("_published_params", 0.0)
    return spec_from_config(
        raw,
        name=preset_id,
        origin=f"zoo:{preset_id}",
        source=str(raw.get("_source", "")),
        published_params=float(published),
    )


def load_preset(name: str) -> TransformerSpec:
    """The ``TransformerSpec`` of a zoo model (built-in reader: the files are complete)."""
    return _load(resolve_preset(name).id)
