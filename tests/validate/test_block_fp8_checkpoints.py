"""The Qwen FP8 checkpoints the serving rows run (Qwen/Qwen3-8B/14B/32B-FP8,
Qwen3-235B-A22B-Instruct-2507-FP8, Qwen3.5-35B-A3B-FP8) are block-scaled fp8 (128 x 128
weight blocks, per-1x128-group activations), as DeepSeek-V3/R1: their validation configs carry
the checkpoints' quantization_config, so the rows run the block-scaled path; the
architecture is the zoo's bf16 entry's."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest

from chipwise.validate.run import load_model
from chipwise.workload.ir import TransformerSpec
from chipwise.workload.presets import load_preset

DATA = Path(__file__).parents[2] / "src" / "chipwise" / "validate" / "data"
CONFIGS = {
    "configs/qwen3-8b-fp8.json": "qwen3-8b",
    "configs/qwen3-14b-fp8.json": "qwen3-14b",
    "configs/qwen3-32b-fp8.json": "qwen3-32b",
    "configs/qwen3-235b-a22b-fp8.json": "qwen3-235b-a22b",
    "configs/qwen3.5-35b-a3b-fp8.json": "qwen3.5-35b-a3b",
}


@pytest.mark.parametrize("path", sorted(CONFIGS))
def test_the_qwen_fp8_checkpoints_are_block_scaled_with_the_zoo_architecture(path: str) -> None:
    spec = load_model(path, DATA)
    zoo = load_preset(CONFIGS[path])
    assert isinstance(spec, TransformerSpec)
    assert spec.fp8_weight_block == 128
    assert zoo.fp8_weight_block == 0
    assert replace(spec, fp8_weight_block=0, name=zoo.name,
                   source=zoo.source) == zoo  # fmt: skip


def test_every_fp8_row_on_a_block_scaled_qwen_checkpoint_names_its_config() -> None:
    checkpoints = {
        "Qwen/Qwen3-8B-FP8", "Qwen/Qwen3-14B-FP8", "Qwen/Qwen3-32B-FP8",
        "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "Qwen/Qwen3.5-35B-A3B-FP8",
    }  # fmt: skip
    seen = 0
    for name in ("measurements-serving-gpustack.csv", "measurements-serving-gdn.csv"):
        with (DATA / name).open() as f:
            for row in csv.DictReader(f):
                if row["precision"] != "fp8" or row["chip"].startswith("tpu"):
                    continue
                if any(c in row["notes"] for c in checkpoints):
                    assert row["workload"] in CONFIGS, row["id"]
                    seen += 1
    assert seen == 77
