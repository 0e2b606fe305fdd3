"""The CLI's promise on bad input (issue 14): each hostile option is one line ``error: ...``
on stderr and exit code 2, never a traceback, a hang or a silently ignored option.
(``benchmarks/hostile.py`` runs the same classes through the real CLI in subprocesses.)"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.cli.app import MAX_ERROR_CHARS, one_line

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (
            ["predict", "llama3-8b", "--chip", "h100", "--global-batch", "99999999999999999999"],
            "--global-batch",
        ),
        (["predict", "llama3-8b", "--chip", "h100", "--chips", "99999999999999"], "--chips"),
        (["predict", "llama3-8b", "--chip", "h100", "--plan", "tp=0"], "tp is 0"),
        (["predict", "llama3-8b", "--chip", "h100", "--plan", "pp=99999999999999999999"], "pp is"),
        (["predict", "matmul:99999999999x99999999999x99999999999", "--chip", "h100"], "matmul dim"),
        (["predict", "copy:1e30", "--chip", "h100"], "byte count"),
        (["workload", "show", "llama3-8b", "--seq-len", "1000000000000000"], "--seq-len"),
        (["advise", "--phase", "infer", "--tokens", "1T"], "--tokens is for training"),
        (["advise", "--requests-per-day", "1M"], "--requests-per-day is for serving"),
        (["advise", "--tokens", "1e30"], "--tokens is 1e\\+30"),
        (["advise", "--tokens", "nan"], "--tokens 'nan' is not a number"),
        (["advise", "--max-chips", "99999999999"], "--max-chips"),
        (["advise", "--budget-usd", "1e300"], "--budget-usd is 1e\\+300"),
        (["advise", "--project", "/nonexistent/chipwise-project"], "cannot scan"),
        (["scan", "/nonexistent/chipwise-project"], "cannot scan"),
        (
            ["predict", "llama3-8b", "--chip", "h100", "--phase", "infer", "--seq-len", "8"],
            "--seq-len is an option of --phase train",
        ),
        (
            ["predict", "llama3-8b", "--chip", "h100", "--batch", "8"],
            "--batch is an option of --phase infer",
        ),
        (
            ["advise", "--phase", "infer", "--lora-rank", "8"],
            "--lora-rank is an option of --phase train",
        ),
        (["predict", "llama3-8b", "--chip", "h100", "--phase", "infer", "--rps", "1e300"], "--rps"),
        (
            [
                "predict",
                "llama3-8b",
                "--chip",
                "h100",
                "--phase",
                "infer",
                "--concurrency",
                "99999999999",
            ],
            "--concurrency",
        ),
        (["advise", "--batch-tokens", "1e300"], "--batch-tokens is 1e\\+300"),
    ],
)
def test_hostile_options_are_one_line_and_exit_2(args: list[str], match: str) -> None:
    result = runner.invoke(app, [*args, "--quiet"] if args[0] == "advise" else args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert __import__("re").search(match, lines[0]), lines[0]
    assert "Traceback" not in result.output


def test_one_line_joins_and_cuts() -> None:
    assert one_line("a\n  b\tc") == "a b c"
    assert len(one_line("x" * 10 * MAX_ERROR_CHARS)) == MAX_ERROR_CHARS


def test_an_os_error_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    from chipwise.workload import load  # where the CLI reads it when the command runs

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "/some/file")

    monkeypatch.setattr(load, "load_workload_model", refuse)
    result = runner.invoke(app, ["workload", "show", "x"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: Permission denied (/some/file)"


def test_a_bug_is_one_line_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    from chipwise.workload import load  # where the CLI reads it when the command runs

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("oops")

    monkeypatch.setattr(load, "load_workload_model", broken)
    result = runner.invoke(app, ["workload", "show", "x"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: internal error (KeyError")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["predict", "llama3-8b", "--chip-file", "/dev/zero"], "is a FIFO, device or socket"),
        (
            ["predict", "llama3-8b", "--chip", "h100", "--phase", "infer", "--concurrency", "4",
             "--lengths", "/dev/zero"],
            "is a FIFO, device or socket",
        ),
        (["predict", "llama3-8b", "--chip", "h100", "--prices", "/dev/zero"], "--prices"),
    ],
)  # fmt: skip
def test_device_files_are_refused_without_reading(args: list[str], match: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and match in lines[0], lines


def test_user_files_over_the_cap_are_refused(tmp_path: object) -> None:
    from pathlib import Path

    from chipwise.limits import LimitError, read_user_file

    big = Path(str(tmp_path)) / "big.toml"
    big.write_bytes(b"#" * 2000)
    with pytest.raises(LimitError, match="is 2,000\\+ bytes"):
        read_user_file(big, what="chip file", max_bytes=1000)
    assert read_user_file(big, what="chip file") == b"#" * 2000
