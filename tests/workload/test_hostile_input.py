"""Hostile input at the workload edge (issue 14): config files, primitives, plans and
quantities outside any physical range are one-line ``ChipwiseError``s, never a hang, a
traceback or a silent answer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from chipwise.errors import ChipwiseError, PlanError, WorkloadError
from chipwise.limits import MAX_JSON_DEPTH, MAX_LAYERS, json_too_deep
from chipwise.perf.base import parse_plan, plan_values
from chipwise.units import parse_quantity
from chipwise.workload import config as config_module
from chipwise.workload.config import load_config
from chipwise.workload.load import load_workload_model
from chipwise.workload.primitives import parse_primitive

LLAMA: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
}


def _write(tmp_path: Path, data: bytes, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"num_hidden_layers": 1e12}, "'num_hidden_layers' is 1e\\+12; it must be in 1..1,000"),
        ({"num_hidden_layers": 10**30}, "'num_hidden_layers' is"),
        ({"hidden_size": 1e300}, "'hidden_size' is 1e\\+300"),
        ({"hidden_size": 0}, "'hidden_size' is 0"),
        ({"num_attention_heads": -8}, "'num_attention_heads' is -8"),
        ({"vocab_size": 10**20}, "'vocab_size' is"),
        ({"num_hidden_layers": "32"}, "'num_hidden_layers' must be a whole number"),
        ({"num_hidden_layers": True}, "'num_hidden_layers' must be a whole number"),
        ({"num_key_value_heads": 0}, "'num_key_value_heads' is 0"),
        ({"num_local_experts": 10**12, "num_experts_per_tok": 2}, "'num_local_experts' is"),
        ({"sliding_window": 10**15}, "'sliding_window' is"),
        ({"moe_layers": ["x"]}, "an entry of 'moe_layers' must be a whole number"),
        ({"moe_layers": 5}, "'moe_layers' must be a list"),
        ({"mlp_only_layers": "abc"}, "'mlp_only_layers' must be a list"),
        ({"layer_types": ["full"] * (MAX_LAYERS + 1)}, "'layer_types' must be a list"),
        ({"text_config": {"num_hidden_layers": 1e12}}, "'num_hidden_layers' is"),
        ({"_published_params": 1e300}, "'_published_params' must be a number"),
    ],
)
@pytest.mark.parametrize("reader", ["builtin", "auto"])
def test_out_of_range_config_values_are_one_line_errors(
    tmp_path: Path, changes: dict[str, Any], match: str, reader: str
) -> None:
    path = _write(tmp_path, json.dumps({**LLAMA, **changes}).encode())
    with pytest.raises(WorkloadError, match=match) as caught:
        load_config(path, reader=reader)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (bytes(range(256)) * 8, "is not UTF-8 text \\(byte 0x80"),
        ('{"name": "café"}'.encode("latin-1"), "is not UTF-8 text \\(byte 0xe9"),
        (json.dumps(LLAMA).replace("4096", "NaN").encode(), "NaN is not a number"),
        (json.dumps(LLAMA).replace("4096", "-Infinity").encode(), "-Infinity is not a number"),
        (json.dumps(LLAMA).replace("4096", "1e999").encode(), "overflows"),
        (b"[" * 100_000 + b"]" * 100_000, "nests more than"),
        (b'{"a":' * (MAX_JSON_DEPTH + 1) + b"1" + b"}" * (MAX_JSON_DEPTH + 1), "nests more than"),
        (b'{"n": ' + b"9" * 5000 + b"}", "finite numbers"),
        (b"[1, 2]", "must hold a JSON object"),
    ],
)
def test_hostile_config_files_are_one_line_errors(tmp_path: Path, data: bytes, match: str) -> None:
    with pytest.raises(WorkloadError, match=match) as caught:
        load_config(_write(tmp_path, data))
    assert "\n" not in str(caught.value)


def test_a_bom_is_accepted(tmp_path: Path) -> None:
    spec = load_config(_write(tmp_path, b"\xef\xbb\xbf" + json.dumps(LLAMA).encode()))
    assert spec.n_layers == 32


def test_a_config_over_the_size_cap_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_module, "MAX_CONFIG_BYTES", 1000)
    path = _write(tmp_path, json.dumps({**LLAMA, "pad": "x" * 2000}).encode())
    with pytest.raises(WorkloadError, match=r"is 2,.*bytes; a config.json is at most"):
        load_config(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_named_config_json_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "model.json")  # nobody writes to it: a blocking read would hang
    with pytest.raises(WorkloadError, match="is a FIFO, device or socket"):
        load_workload_model(str(tmp_path / "model.json"))


def test_a_directory_named_json_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "model.json").mkdir()
    with pytest.raises(WorkloadError):
        load_workload_model(str(tmp_path / "model.json"))


def test_a_workload_string_longer_than_a_path_is_an_error() -> None:
    with pytest.raises(WorkloadError, match="characters"):
        load_workload_model("a" * 100_000)
    with pytest.raises(WorkloadError, match="cannot read"):
        load_workload_model("a" * 4000)  # a name too long for the file system


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("matmul:99999999999x99999999999x99999999999", "is over 4,194,304"),
        ("matmul:4194304x4194304x4194304", "moves .* bytes, over 1e\\+13"),
        ("matmul:" + "9" * 5000 + "x1x1", "too long"),
        ("copy:1e30", "is over 1e\\+13 bytes"),
        ("allreduce:99999999999999999999Ti", "is over 1e\\+13 bytes"),
        ("copy:" + "9" * 100, "bad byte count"),
    ],
)
def test_absurd_primitives_are_refused(spec: str, match: str) -> None:
    with pytest.raises(WorkloadError, match=match):
        parse_primitive(spec)


def test_real_primitives_still_parse() -> None:
    assert parse_primitive("matmul:65536x65536x65536").mnk == (65536, 65536, 65536)
    assert parse_primitive("copy:8Gi").n_bytes == 8 * 1024**3


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("tp=0", "tp is 0; it must be in 1.."),
        ("pp=99999999999999999999", "pp is 99999999999999999999"),
        ("microbatch=999999999999", "microbatch is"),
        ("vp=100000", "vp is 100000"),
        ("tp=8," * 200, "characters"),
    ],
)
def test_absurd_plans_are_refused(text: str, match: str) -> None:
    with pytest.raises(PlanError, match=match):
        plan_values(text)


def test_a_real_plan_still_parses() -> None:
    assert parse_plan("dp=2,fsdp=8,tp=4,recompute=full").chips == 64


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e400", "1e999T", "9" * 100, "abc", ""])
def test_quantities_that_are_not_finite_numbers_raise_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        parse_quantity(text)


def test_quantities_parse() -> None:
    assert parse_quantity("15T") == 15e12
    assert parse_quantity("1M") == 1e6
    assert parse_quantity("8Gi") == 8 * 1024**3


def test_json_depth_is_measured_without_recursion() -> None:
    deep: Any = 1
    for _ in range(50_000):
        deep = [deep]
    assert json_too_deep(deep)
    assert not json_too_deep({"a": {"b": [1, 2, {"c": 3}]}})


def test_every_limit_error_is_a_chipwise_error() -> None:
    with pytest.raises(ChipwiseError):
        parse_primitive("copy:1e30")
