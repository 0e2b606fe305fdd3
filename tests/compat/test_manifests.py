"""Dependency files are parsed as text: names, extras, pins, markers, lines."""

from __future__ import annotations

import ast

import pytest

from chipwise.compat import manifests
from chipwise.compat.hits import Hit


def _summary(hits: list[Hit]) -> set[tuple[str, str, int, bool]]:
    return {(h.kind, h.name, h.line, h.optional) for h in hits}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("torch==2.3.0+cu121", {("dist", "torch"), ("signal", "cuda-build-pin")}),
        ("torch==2.4.0+rocm6.1", {("dist", "torch"), ("signal", "rocm-build-pin")}),
        ("torch==2.5.0+xpu", {("dist", "torch"), ("signal", "xpu-build-pin")}),
        ("jax[cuda12]>=0.4.30", {("dist", "jax"), ("signal", "cuda-build-pin")}),
        ("jax[rocm7-local]", {("dist", "jax"), ("signal", "rocm-build-pin")}),
        ("jax[tpu]", {("dist", "jax"), ("signal", "tpu-build-pin")}),
        ("torch_xla[tpu]~=2.8.0", {("dist", "torch_xla"), ("signal", "tpu-build-pin")}),
        ("tensorflow[and-cuda]==2.16", {("dist", "tensorflow"), ("signal", "cuda-build-pin")}),
        ("nvidia-cublas-cu12==12.1.3.1", {("signal", "cuda-build-pin")}),
        ("flash-attn @ https://example.org/flash_attn-2.5.8.whl", {("dist", "flash-attn")}),
        ("git+https://github.com/NVlabs/tiny-cuda-nn#egg=tinycudann&subdirectory=bindings/torch",
         {("dist", "tinycudann")}),
        ("git+https://github.com/org/repo.git", set()),
        ("-e .", set()),
        ("./vendor/pkg", set()),
        ("--index-url https://download.pytorch.org/whl/rocm6.2", {("signal", "rocm-build-pin")}),
        ("-f https://storage.googleapis.com/libtpu-releases/index.html",
         {("signal", "tpu-build-pin")}),
        ("# just a comment", set()),
    ],
)  # fmt: skip
def test_requirement_lines(line: str, expected: set[tuple[str, str]]) -> None:
    parsed = manifests.parse_requirements("requirements.txt", line + "\n")
    assert {(h.kind, h.name) for h in parsed.hits} == expected
    assert all(h.line == 1 and h.file == "requirements.txt" for h in parsed.hits)


@pytest.mark.parametrize(
    ("marker", "optional"),
    [
        ('sys_platform == "darwin"', True),
        ("platform_system == 'Windows'", True),
        ('sys_platform == "darwin" or sys_platform == "linux"', False),
        ('platform_system == "Linux"', False),
        ('python_version >= "3.10"', False),
    ],
)
def test_a_non_linux_marker_makes_a_requirement_optional(marker: str, optional: bool) -> None:
    (hit,) = manifests.parse_requirements("r.txt", f"jax-metal ; {marker}\n").hits
    assert hit.optional is optional
    assert hit.condition == (f"marker: {marker}" if optional else "")


def test_requirements_join_continuations_and_report_includes_with_lines() -> None:
    text = (
        "# header\n"
        "-r base.txt\n"
        "--requirement=extra/gpu.txt\n"
        "-c constraints.txt\n"
        "torch==2.3.0 \\\n"
        "    --hash=sha256:00\n"
        "bitsandbytes  # inline comment\n"
    )
    parsed = manifests.parse_requirements("requirements.txt", text)
    assert parsed.includes == [("base.txt", 2), ("extra/gpu.txt", 3)]
    assert _summary(parsed.hits) == {
        ("dist", "torch", 5, False),
        ("dist", "bitsandbytes", 7, False),
    }


def test_pyproject_reads_pep621_groups_and_poetry_with_lines() -> None:
    text = """\
[project]
name = "demo"
dependencies = [
  "torch>=2.3",
  "jax[tpu]",
]

[project.optional-dependencies]
fast = ["flash-attn>=2"]

[dependency-groups]
dev = ["pytest", {include-group = "fast"}]

[tool.poetry.dependencies]
python = "^3.11"
cupy-cuda12x = { version = "^13", optional = true }
tensorflow = { version = "2.16", extras = ["and-cuda"] }
torch = "2.3.0+cu121"

[tool.poetry.group.docs.dependencies]
mkdocs = "*"
"""
    parsed = manifests.parse_pyproject("pyproject.toml", text)
    assert _summary(parsed.hits) == {
        ("dist", "torch", 4, False),
        ("dist", "jax", 5, False),
        ("signal", "tpu-build-pin", 5, False),
        ("dist", "flash-attn", 9, True),
        ("dist", "pytest", 12, True),
        ("dist", "cupy-cuda12x", 16, True),
        ("dist", "tensorflow", 17, False),
        ("signal", "cuda-build-pin", 17, False),
        ("dist", "torch", 18, False),
        ("signal", "cuda-build-pin", 18, False),
        ("dist", "mkdocs", 21, True),
    }
    flash = next(h for h in parsed.hits if h.name == "flash-attn")
    assert flash.condition == "extra 'fast'"


def test_a_broken_pyproject_is_a_note_not_an_exception() -> None:
    parsed = manifests.parse_pyproject("pyproject.toml", "[project\n")
    assert parsed.hits == []
    assert parsed.notes and parsed.notes[0].startswith("pyproject.toml: not valid TOML")


def test_setup_py_literals_are_read_from_the_ast() -> None:
    text = """\
from setuptools import setup

REQUIRES = [
    "torch>=2.1",
    "xformers",
]
setup(
    name="x",
    install_requires=REQUIRES,
    extras_require={"quant": ["bitsandbytes"]},
)
"""
    parsed = manifests.parse_setup_py("setup.py", text, ast.parse(text))
    assert _summary(parsed.hits) == {
        ("dist", "torch", 4, False),
        ("dist", "xformers", 5, False),
        ("dist", "bitsandbytes", 10, True),
    }


def test_setup_cfg_install_requires_and_extras() -> None:
    text = """\
[metadata]
name = demo

[options]
install_requires =
    torch>=2.1
    deepspeed; platform_system == "Linux"

[options.extras_require]
graphics =
    moderngl
"""
    parsed = manifests.parse_setup_cfg("setup.cfg", text)
    assert _summary(parsed.hits) == {
        ("dist", "torch", 6, False),
        ("dist", "deepspeed", 7, False),
        ("dist", "moderngl", 11, True),
    }


def test_pipfile_packages_and_dev_packages() -> None:
    text = """\
[[source]]
url = "https://download.pytorch.org/whl/cu121"
name = "pytorch"

[packages]
torch = {version = "*", index = "pytorch"}
"triton" = "*"

[dev-packages]
pytest = "*"
"""
    parsed = manifests.parse_pipfile("Pipfile", text)
    assert _summary(parsed.hits) == {
        ("signal", "cuda-build-pin", 2, False),
        ("dist", "torch", 6, False),
        ("dist", "triton", 7, False),
        ("dist", "pytest", 10, True),
    }


def test_environment_yml_subset_reader() -> None:
    text = """\
name: demo  # comment
channels: [pytorch, nvidia]
dependencies:
  - python=3.11
  - conda-forge::cupy>=13
  - 'cudatoolkit=11.8'
  - pytorch=2.1.0=py3.11_rocm5.7_0
  - pip
  - pip:
    - flash-attn==2.5.8
    - --extra-index-url https://download.pytorch.org/whl/cu121
  - numpy
  - &anchor jax
variables:
  - not-a-dependency
"""
    parsed = manifests.parse_environment_yml("environment.yml", text)
    assert _summary(parsed.hits) == {
        ("conda", "python", 4, False),
        ("conda", "cupy", 5, False),
        ("signal", "cuda-build-pin", 6, False),
        ("conda", "pytorch", 7, False),
        ("signal", "rocm-build-pin", 7, False),
        ("conda", "pip", 8, False),
        ("dist", "flash-attn", 10, False),
        ("signal", "cuda-build-pin", 11, False),
        ("conda", "numpy", 12, False),
    }
    assert parsed.notes == [
        "environment.yml:13: YAML construct not supported by the reader; skipped"
    ]


def test_environment_yml_flow_lists() -> None:
    parsed = manifests.parse_environment_yml("env.yml", "dependencies: [jax, optax]\n")
    assert _summary(parsed.hits) == {("conda", "jax", 1, False), ("conda", "optax", 1, False)}


@pytest.mark.parametrize(
    ("line", "signal"),
    [
        ("FROM nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04", "cuda-build-pin"),
        ("FROM nvcr.io/nvidia/pytorch:24.05-py3", "cuda-build-pin"),
        ("FROM rocm/pytorch:latest", "rocm-build-pin"),
        ('RUN pip install "jax[tpu]" -f https://example.org', "tpu-build-pin"),
        ("RUN pip install torch --index-url https://download.pytorch.org/whl/xpu", "xpu-build-pin"),
    ],
)
def test_dockerfile_pins(line: str, signal: str) -> None:
    hits = manifests.parse_dockerfile("Dockerfile", line + "\n").hits
    assert {h.name for h in hits} == {signal}
    assert all(h.line == 1 for h in hits)


def test_dockerfile_without_pins_has_no_hits() -> None:
    assert manifests.parse_dockerfile("Dockerfile", "FROM python:3.11-slim\n").hits == []
