"""The command line starts without importing the models: ``chipwise --help``, each command's
``--help`` and a usage error load typer, rich and the CLI's own light modules only (the models,
the catalog, numpy and pydantic took ~1.2 s of the ~1.6 s that ``chipwise --help`` took).

Structural, not timed: each check runs in a fresh interpreter and lists what it imported.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import chipwise
from chipwise.cli import defaults

# What building the command line may import from chipwise: the CLI and the leaf modules with
# no dependencies beyond the standard library.
LIGHT = {"chipwise", "chipwise._version", "chipwise.errors", "chipwise.limits", "chipwise.pool",
         "chipwise.units"}  # fmt: skip
# (not pydantic: typer itself reads some options' values through it)
HEAVY_THIRD_PARTY = ("numpy", "torch", "jax", "onnx", "pandas", "plotly", "fastapi", "ray")

# Runs in the child: every command path's --help and some usage errors, then what got imported.
_CHILD = """
import json, sys
from typer.main import get_command
from typer.testing import CliRunner
from chipwise.cli import app

def paths(command, prefix):
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from paths(sub, [*prefix, name])

runner = CliRunner()
codes = {}
calls = [[*p, "--help"] for p in paths(get_command(app), [])]
calls += [["predict", "--no-such-option"], ["advise", "--chips"], ["no-such-command"], []]
for args in calls:
    codes[" ".join(args)] = runner.invoke(app, args).exit_code
print(json.dumps({"codes": codes, "modules": sorted(sys.modules)}))
"""


def _run_child(code: str) -> dict[str, object]:
    # the chipwise this session imported, wherever it was found (a checkout, an install)
    paths = [str(Path(chipwise.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _too_heavy(modules: object) -> list[str]:
    assert isinstance(modules, list)
    return [
        m
        for m in modules
        if (m.startswith("chipwise") and m not in LIGHT and m.split(".")[:2] != ["chipwise", "cli"])
        or m.split(".")[0] in HEAVY_THIRD_PARTY
    ]


def test_import_chipwise_loads_nothing_until_a_name_is_used() -> None:
    """``import chipwise`` (which ``import chipwise.cli`` runs first) reads no submodule."""
    out = _run_child(
        "import json, sys, chipwise; print(json.dumps({'modules': sorted(sys.modules)}))"
    )
    modules = out["modules"]
    assert isinstance(modules, list)
    assert [m for m in modules if m.startswith("chipwise")] == ["chipwise", "chipwise._version"]


def test_help_and_usage_errors_import_no_model() -> None:
    out = _run_child(_CHILD)
    codes = out["codes"]
    assert isinstance(codes, dict)
    assert len(codes) > 15 and "workload show --help" in codes  # every command was asked
    assert {k: v for k, v in codes.items() if k.endswith("--help") and v != 0} == {}
    assert codes["predict --no-such-option"] == codes["no-such-command"] == 2
    assert _too_heavy(out["modules"]) == []


# (the CLI's copy, the library module, the library's name for it)
COPIES = [
    ("DEFAULT_WORKLOAD", "chipwise.advise.defaults", "DEFAULT_WORKLOAD"),
    ("DEFAULT_MAX_CHIPS", "chipwise.advise.request", "DEFAULT_MAX_CHIPS"),
    ("LORA_TARGETS", "chipwise.workload.ir", "LORA_TARGETS"),
    ("LORA_DEFAULT_RANK", "chipwise.workload.ir", "LORA_DEFAULT_RANK"),
    ("MAX_SPEC_TOKENS", "chipwise.workload.ir", "MAX_SPEC_TOKENS"),
    ("DEVICE_REQUESTS", "chipwise.bench.devices", "DEVICE_REQUESTS"),
    ("BENCHMARKS", "chipwise.bench.store", "BENCHMARKS"),
    ("DEFAULT_MAX_POINTS", "chipwise.explore.grid", "DEFAULT_MAX_POINTS"),
]


@pytest.mark.parametrize(("name", "module", "source"), COPIES)
def test_the_clis_copies_of_library_defaults_match(name: str, module: str, source: str) -> None:
    assert getattr(defaults, name) == getattr(importlib.import_module(module), source)


def test_the_phase_defaults_match_the_dataclasses() -> None:
    from chipwise.workload.ir import Inference, Training

    assert (
        Training().seq_len,
        Training().global_batch,
    ) == (defaults.TRAIN_SEQ_LEN, defaults.TRAIN_GLOBAL_BATCH)
    assert (
        Inference().batch,
        Inference().input_len,
        Inference().output_len,
    ) == (defaults.INFER_BATCH, defaults.INFER_INPUT_LEN, defaults.INFER_OUTPUT_LEN)


def test_advise_and_explore_stay_the_functions_when_their_packages_load() -> None:
    out = _run_child(
        "import json, chipwise, chipwise.advise.request, chipwise.explore.grid\n"
        "from chipwise import advise, explore\n"
        "print(json.dumps({'kinds': [type(f).__name__ for f in (chipwise.advise, "
        "chipwise.explore, advise, explore)]}))"
    )
    assert out["kinds"] == ["function"] * 4
