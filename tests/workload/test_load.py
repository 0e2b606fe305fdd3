"""Resolving the WORKLOAD string into a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chipwise.errors import WorkloadError
from chipwise.workload import load_workload_model
from chipwise.workload.ir import NonMLKind, Primitive, TransformerSpec
from chipwise.workload.presets import preset_config


@pytest.mark.parametrize(
    ("spec", "kind", "name"),
    [
        ("llama3-70b", TransformerSpec, "llama3-70b"),
        ("Llama3.1-8B", TransformerSpec, "llama3-8b"),
        ("matmul:8192x8192x8192", Primitive, "matmul:8192x8192x8192:bf16"),
        ("copy:8Gi", Primitive, "copy:8589934592"),
        ("hpl", NonMLKind, "fp64-hpc"),
        ("video-encode", NonMLKind, "video-encode"),
    ],
)
def test_resolution(spec: str, kind: type, name: str) -> None:
    model = load_workload_model(spec)
    assert isinstance(model, kind) and model.name == name


def test_config_path_and_directory(tmp_path: Path) -> None:
    (tmp_path / "mistral.json").write_text(json.dumps(preset_config("mistral-7b")))
    assert load_workload_model(str(tmp_path / "mistral.json")) == load_workload_model(
        str(tmp_path / "mistral.json")
    )
    model = load_workload_model(str(tmp_path / "mistral.json"))
    assert isinstance(model, TransformerSpec) and model.name == "mistral"
    (tmp_path / "config.json").write_text(json.dumps(preset_config("mistral-7b")))
    from_dir = load_workload_model(str(tmp_path))
    assert isinstance(from_dir, TransformerSpec) and from_dir.d_model == model.d_model


def test_module_factory_needs_trust_code() -> None:
    with pytest.raises(WorkloadError, match="--trust-code"):
        load_workload_model("mypackage.models:build_model")


def test_missing_onnx_file(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="no such ONNX file"):
        load_workload_model(str(tmp_path / "model.onnx"))


def test_unknown_workload_lists_what_is_accepted() -> None:
    with pytest.raises(WorkloadError) as err:
        load_workload_model("mixtrall-8x7b")
    message = str(err.value)
    assert "did you mean 'mixtral-8x7b'" in message
    assert "matmul:MxNxK" in message and "config.json" in message and "hashing" in message


def test_empty_workload() -> None:
    with pytest.raises(WorkloadError, match="empty workload"):
        load_workload_model("  ")


def test_a_directory_without_a_config_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match=r"directory without a config\.json"):
        load_workload_model(str(tmp_path))


def test_jetstream_takes_a_slot_cache_and_no_token_budget() -> None:
    from chipwise.errors import WorkloadError
    from chipwise.workload.ir import Inference

    assert Inference(engine="jetstream", slot_cache_len=2048).slot_cache_len == 2048
    with pytest.raises(WorkloadError, match="slot-cache-len"):
        Inference(engine="vllm", slot_cache_len=2048)
    with pytest.raises(WorkloadError, match="token budget"):
        Inference(engine="jetstream", max_num_tokens=8192)
    with pytest.raises(WorkloadError, match="in-process"):
        Inference(engine="jetstream", load="concurrency", concurrency=8, spec_tokens=2)
