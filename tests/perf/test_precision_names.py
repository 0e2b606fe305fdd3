"""Precisions as publications and checkpoints write them resolve to chipwise's ids."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.perf import PRECISIONS, precision_id


@pytest.mark.parametrize(
    ("written", "precision"),
    [
        ("FP8", "fp8"),
        ("NVFP4", "fp4"),
        ("MXFP4", "fp4"),
        ("W4A16", "int4"),
        ("INT4-AWQ", "int4"),
        ("bfloat16", "bf16"),
        ("FP8-Dynamic", "fp8"),
        ("W8A16", "w8a16"),
    ],
)
def test_published_spellings_resolve(written: str, precision: str) -> None:
    assert precision_id(written) == precision


def test_an_ambiguous_w8a8_is_not_guessed() -> None:
    # SmoothQuant int8 and fp8 checkpoints both call themselves W8A8
    assert precision_id("W8A8") == "w8a8"
    assert "w8a8" not in PRECISIONS


@given(st.text(max_size=30))
def test_any_text_gives_a_precision_or_its_own_lowered_text(text: str) -> None:
    got = precision_id(text)
    assert got in PRECISIONS or got == text.strip().lower()


def test_the_cli_takes_a_precision_in_any_case() -> None:
    runner = CliRunner()
    args = ["predict", "llama3-8b", "--chip", "h100", "--chips", "8", "--json"]
    upper = runner.invoke(app, [*args, "--precision", "FP8"])
    lower = runner.invoke(app, [*args, "--precision", "fp8"])
    assert upper.exit_code == 0 and upper.stdout == lower.stdout
    advise = runner.invoke(
        app, ["advise", "llama3-8b", "--phase", "infer", "--precision", "NVFP4", "--json"]
    )
    assert advise.exit_code == 0, advise.output
