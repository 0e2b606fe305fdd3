"""Zoo name resolution (issue 13): the names publications use reach the zoo entry of the same
architecture (org prefix, tuning, date and quantisation tags dropped), and nothing else."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chipwise.errors import WorkloadError
from chipwise.workload.presets import PRESETS, find_preset, load_preset, resolve_preset

FUZZ = settings(
    max_examples=200,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow],
)

# Tags that leave the architecture as it is (the resolver's documented list).
TAGS = (
    "instruct", "it", "chat", "hf", "base", "pt", "thinking", "2507", "0528", "2407",
    "fp8", "fp4", "nvfp4", "mxfp4", "awq", "gptq", "int4", "int8", "w4a16", "w8a8",
    "fp8-dynamic", "FP8-Dynamic", "Instruct", "AWQ", "99", "99.9", "interactive",
    "quantized.w4a16", "bnb-4bit", "GGUF", "Q4_K_M", "q8_0", "BF16",
)  # fmt: skip
NAMES = sorted({name for p in PRESETS for name in (p.id, *p.aliases)})
# a size token: '8b', '0.6b', '8x7b', 'a22b', '17b-16e'; the resolver must never change one
SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)b(?![a-z0-9])")


@pytest.mark.parametrize(
    ("name", "preset_id"),
    [
        # an HF org prefix, any org (a re-upload or a quantiser's repository)
        ("RedHatAI/Llama-3.3-70B-Instruct", "llama3-70b"),
        ("some-org/Meta-Llama-3.1-8B", "llama3-8b"),
        ("unsloth/Mixtral-8x7B-v0.1", "mixtral-8x7b"),
        # tuning tags
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3-8b"),
        ("llama2-7b-chat", "llama2-7b"),
        ("meta-llama/Llama-2-7b-chat-hf", "llama2-7b"),
        ("mixtral-8x7b-instruct", "mixtral-8x7b"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),  # a tag mid-name
        ("kimi-k2-thinking", "kimi-k2"),
        ("Qwen3-8B-Base", "qwen3-8b"),
        ("gemma-2-9b-pt", "gemma2-9b"),
        # dated releases
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-v3"),
        ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b"),
        ("mistral-large-2407-fp8", "mistral-large-2"),  # the alias itself carries the date
        # quantisation tags, chained
        ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "qwen3-235b-a22b"),
        ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "llama3-70b"),
        ("qwen3-8b-awq", "qwen3-8b"),
        ("Llama-3.1-8B-Instruct-GPTQ-INT4", "llama3-8b"),
        ("Meta-Llama-3.1-405B-Instruct-FP8", "llama3-405b"),
        ("llama2-70b-chat-w4a16", "llama2-70b"),
        ("gpt-oss-120b-mxfp4", "gpt-oss-120b"),
        ("Llama 3.1 8B Instruct", "llama3-8b"),  # spaces as separators
        # weight formats of re-uploads: RedHatAI, unsloth, GGUF, BF16 copies
        ("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8", "llama3-8b"),
        ("unsloth/Llama-3.2-1B-Instruct-bnb-4bit", "llama3.2-1b"),
        ("Qwen3-8B-GGUF", "qwen3-8b"),
        ("qwen3-8b-q4_k_m", "qwen3-8b"),
        ("unsloth/Kimi-K2-Thinking-BF16", "kimi-k2"),
        # MLPerf's benchmark names: accuracy targets and the interactive scenario
        ("llama2-70b-99", "llama2-70b"),
        ("llama2-70b-99.9", "llama2-70b"),
        ("llama2-70b-interactive-99", "llama2-70b"),
        ("llama3.1-405b-interactive", "llama3-405b"),
        ("gptj-99", "gptj-6b"),
        ("mistralai/Mistral-7B-Instruct-v0.2", "mistral-7b-v0.2"),
        ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "llama3-8b"),
    ],
)
def test_published_names_resolve(name: str, preset_id: str) -> None:
    assert resolve_preset(name).id == preset_id
    assert load_preset(name) is load_preset(preset_id)


@pytest.mark.parametrize(
    "name",
    [
        "llama3-7b-instruct",  # no 7B Llama 3: never the 8B
        "qwen3-9b-fp8",  # no 9B Qwen3
        "mistral-7b-instruct-v0.4",  # a version is not a tag; v0.4 is not in the zoo
        "gemma-13b-it",
        "instruct",
        "-fp8",
        "org/",
        "/",
        "",
        "meta-llama/",
        "llama3-70b/extra",  # the part after 'org/' is the model
        "./llama3-70b",  # a path, not an HF repository id
        "a/b/llama3-70b",
    ],
)
def test_names_outside_the_zoo_stay_unknown(name: str) -> None:
    assert find_preset(name) is None


def test_quantisation_tag_does_not_change_the_spec() -> None:
    # the spec carries the architecture only; the precision is the user's --precision
    assert load_preset("qwen3-32b-fp8") is load_preset("qwen3-32b")
    assert load_preset("llama3-70b-nvfp4") == load_preset("llama3-70b")


def test_unknown_tagged_name_still_suggests_close_matches() -> None:
    with pytest.raises(WorkloadError) as err:
        resolve_preset("meta-llama/Llama3-7B-Instruct")
    message = str(err.value)
    assert "did you mean" in message and "llama3-8b" in message
    assert "chipwise workload list" in message


def test_no_alias_less_its_tags_names_another_family() -> None:
    # every alias with its tags dropped either names nothing or its own preset
    for preset in PRESETS:
        for name in (preset.id, *preset.aliases):
            bare = re.sub(r"[-_ ](instruct|it|chat|hf|base|pt|thinking|fp8|\d{4})\b", "", name)
            found = find_preset(bare)
            assert found is None or found.id == preset.id, (name, bare, found)


@FUZZ
@given(
    name=st.sampled_from(NAMES),
    org=st.sampled_from(["", "org/", "RedHatAI/", "nvidia/", "unsloth/"]),
    tags=st.lists(st.sampled_from(TAGS), max_size=4),
    separator=st.sampled_from(["-", "_", " "]),
)
def test_fuzz_tags_and_org_keep_the_preset(
    name: str, org: str, tags: list[str], separator: str
) -> None:
    target = resolve_preset(name)
    tagged = org + (name if "/" not in name else name.split("/", 1)[1])
    tagged += "".join(separator + tag for tag in tags)
    assert resolve_preset(tagged).id == target.id


@FUZZ
@given(
    text=st.text(alphabet=st.sampled_from("abcdefgijlmnopqrstuvwxyz0123456789.-_/ "), max_size=40)
)
def test_fuzz_any_text_resolves_or_raises_one_error(text: str) -> None:
    found = find_preset(text)
    if found is None:
        with pytest.raises(WorkloadError):
            resolve_preset(text)
    else:
        assert resolve_preset(text) == found


@FUZZ
@given(
    name=st.sampled_from(NAMES),
    tags=st.lists(st.sampled_from(TAGS), max_size=3),
    bump=st.integers(min_value=1, max_value=7),
)
def test_fuzz_a_changed_size_never_resolves_to_the_original(
    name: str, tags: list[str], bump: int
) -> None:
    match = SIZE.search(name.lower())
    if match is None:
        return
    size = float(match.group(1)) + bump
    resized = name.lower()[: match.start(1)] + f"{size:g}" + name.lower()[match.end(1) :]
    found = find_preset("-".join([resized, *tags]))
    assert found is None or found.id != resolve_preset(name).id
