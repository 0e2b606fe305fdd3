"""Engine names as publications write them resolve to the engine model's ids."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chipwise.errors import WorkloadError
from chipwise.workload import Inference, engine_id
from chipwise.workload.ir import ENGINES


@pytest.mark.parametrize(
    ("written", "engine"),
    [
        ("TensorRT-LLM", "trtllm"),
        ("tensorrt_llm 1.0.0rc4", "trtllm"),
        ("trtllm-serve", "trtllm"),
        ("vLLM v0.10.2", "vllm"),
        ("ROCm vLLM", "vllm"),
        ("SGLang 0.4.9.post2", "sglang"),
        ("jetstream-pytorch", "jetstream"),
        ("MaxText JetStream", "jetstream"),
        ("AMD ATOM", "atom"),
        ("ATOM 0.1.1", "atom"),
    ],
)
def test_published_spellings_resolve(written: str, engine: str) -> None:
    assert engine_id(written) == engine


def test_an_engine_it_does_not_model_is_refused_with_the_list() -> None:
    assert engine_id(" TGI ") == "tgi"
    with pytest.raises(WorkloadError, match="choose one of vllm"):
        Inference(engine=engine_id("TGI"))


@given(st.text(max_size=40))
def test_any_text_gives_an_engine_or_its_own_lowered_text(text: str) -> None:
    got = engine_id(text)
    assert got in ENGINES or got == text.strip().lower()


def test_an_unknown_moe_backend_is_one_clear_error() -> None:
    with pytest.raises(WorkloadError, match=r"moe backend 'cutlass-x'.*trtllm-gen"):
        Inference(engine="trtllm", moe_backend="cutlass-x")
    assert Inference(engine="vllm", moe_backend="trtllm-gen").moe_backend == "trtllm-gen"
