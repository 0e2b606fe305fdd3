"""``chipwise workload list`` and ``chipwise workload show``, run through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.workload import accounting, load_preset
from chipwise.workload.presets import preset_config, preset_ids

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_show_zoo_model() -> None:
    code, out = run("workload", "show", "llama3-70b")
    assert code == 0, out
    assert "llama3-70b" in out and "total 70.6 G" in out and "KV cache" in out
    assert "16 B/param" in out and "huggingface.co/meta-llama" in out.replace("\n", "")


def test_show_json_is_parsable_and_matches_accounting() -> None:
    code, out = run("workload", "show", "mixtral-8x7b", "--seq-len", "2048", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["schema_version"] == 1
    w = data["workload"]
    spec = load_preset("mixtral-8x7b")
    assert (w["type"], w["kind"], w["seq_len"]) == ("transformer", "moe", 2048)
    assert w["params"]["total"] == accounting.params_total(spec)
    assert w["params"]["active"] == accounting.params_active(spec)
    assert w["flops_per_token"]["train"] == accounting.model_flops_per_token(spec, 2048)
    assert w["flops_per_token"]["forward"] == pytest.approx(w["flops_per_token"]["train"] / 3)
    assert 0.9 < w["op_mix"]["tensor_share"] < 1
    assert w["memory"]["kv_cache_bytes_per_token_bf16"] == 2 * 32 * 8 * 128 * 2


def test_show_config_path(tmp_path: Path) -> None:
    path = tmp_path / "my-model.json"
    path.write_text(json.dumps(preset_config("gptj-6b")))
    code, out = run("workload", "show", str(path), "--json")
    assert code == 0, out
    w = json.loads(out)["workload"]
    assert w["name"] == "my-model" and w["architecture"]["n_layers"] == 28


def test_show_primitive_and_non_ml_kind() -> None:
    code, out = run("workload", "show", "matmul:4096x4096x4096", "--json")
    assert code == 0, out
    w = json.loads(out)["workload"]
    assert w["type"] == "primitive" and w["flops_per_step"] == 2 * 4096**3
    code, out = run("workload", "show", "linpack", "--json")
    assert code == 0, out
    w = json.loads(out)["workload"]
    assert w["name"] == "fp64-hpc" and "fp64" in {r["capability"] for r in w["requirements"]}
    code, out = run("workload", "show", "hashing")
    assert code == 0 and "why not a TPU" in out


def test_list_shows_every_zoo_model() -> None:
    code, out = run("workload", "list", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert [m["id"] for m in data["models"]] == list(preset_ids())
    types = {m["id"]: m["type"] for m in data["models"]}
    assert types["deepseek-v3"] == "MoE" and types["llama3-8b"] == "dense"
    code, out = run("workload", "list")
    assert code == 0 and "qwen3-235b-a22b" in out and "video-encode" in out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("workload", "show", "llama3-7b"), "did you mean"),
        (("workload", "show", "matmul:8x8"), "matmul:MxNxK"),
        (("workload", "show", "pkg.mod:build"), "--trust-code"),
        (("workload", "show", "/nonexistent/config.json"), "no such config file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], fragment: str) -> None:
    code, out = run(*args)
    assert code == 2
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0]


def test_seq_len_must_be_positive() -> None:
    code, _ = run("workload", "show", "gpt2", "--seq-len", "0")
    assert code == 2
