import re
from typing import Any

import pytest
from typer.testing import CliRunner

from chipwise import __version__
from chipwise.cli import app
from chipwise.cli.app import COMMAND_ORDER, reflow_help
from chipwise.errors import UnknownChipError

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

runner = CliRunner()


def test_version_prints_package_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output


def test_unknown_chip_is_one_line_and_exit_2() -> None:
    result = runner.invoke(app, ["chips", "show", "h10"])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert "h100-sxm" in lines[0]


# ---- usage errors are one line too ----------------------------------------------------------


def _one_line(output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    assert len(lines) == 1, output
    return lines[0]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["advize"], "no such command 'advize'"),
        (["--jsn"], "no such option: --jsn"),
        (["chips", "--jsn"], "--json"),
        (["chips", "--kind", "fpga"], "'fpga' is not one of"),
        (["predict", "llama3-8b", "--chip", "h100", "--chips", "-3"], "'--chips'"),
        (["advise", "--seq-len", "0"], "'--seq-len'"),
        (["advise", "--max-chips", "-1"], "'--max-chips'"),
        (["workload", "show"], "missing argument 'WORKLOAD'"),
        (["serve", "--port", "70000"], "'--port'"),
        (["profile", "x:y", "--steps", "0"], "'--steps'"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args: list[str], says: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    line = _one_line(result.output)
    assert line.startswith("error: ") and says in line, line
    assert "--help' for more" not in line and "╭" not in result.output
    assert line.endswith("--help')")  # and where to read the options


def test_predict_without_a_chip_asks_for_one() -> None:
    result = runner.invoke(app, ["predict", "llama3-8b"])
    assert result.exit_code == 2, result.output
    line = _one_line(result.output)
    assert line.startswith("error: ") and "exactly one of --chip" in line, line


def test_the_usage_hint_names_the_subcommand() -> None:
    line = _one_line(runner.invoke(app, ["chips", "show"]).output)
    assert "(see 'chipwise chips show --help')" in line


def test_debug_still_shows_the_traceback_of_a_chipwise_error() -> None:
    result = runner.invoke(app, ["--debug", "chips", "show", "h10"])
    assert result.exit_code != 0
    assert isinstance(result.exception, UnknownChipError)


# ---- help ------------------------------------------------------------------------------------


def test_help_lists_the_commands_question_first() -> None:
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    names = [n for n in COMMAND_ORDER if re.search(rf"│ {n} ", result.output)]
    assert names == list(COMMAND_ORDER)
    positions = [result.output.index(f"│ {n} ") for n in COMMAND_ORDER]
    assert positions == sorted(positions)


def test_docstring_paragraphs_are_reflowed_not_hard_wrapped() -> None:
    assert reflow_help("One line\n    wrapped here.\n\n    Second\n    paragraph.") == (
        "One line wrapped here.\n\nSecond paragraph."
    )
    result = runner.invoke(app, ["advise", "--help"], env={"COLUMNS": "200"})
    assert "each with the number or scan finding behind it" in result.output


@pytest.mark.parametrize("columns", ["80", "120"])
def test_every_option_has_help_text(columns: str) -> None:
    """No option of any command prints without saying what it does."""
    from typer.main import get_command

    root = get_command(app)
    missing = []

    def walk(cmd: Any, path: str) -> None:
        for p in cmd.params:
            if p.param_type_name == "option" and not p.help:
                missing.append(f"{path} {p.opts[0]}")
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(root, "chipwise")
    assert not missing, missing
    for name in COMMAND_ORDER:
        result = runner.invoke(app, [name, "--help"], env={"COLUMNS": columns})
        assert result.exit_code == 0, (name, result.output)
        assert max(len(ln) for ln in result.output.splitlines()) <= int(columns)


def test_every_long_running_command_takes_quiet_and_json() -> None:
    from typer.main import get_command

    root: Any = get_command(app)
    for name in ("advise", "predict", "validate", "bench", "profile"):
        opts = {o for p in root.commands[name].params for o in p.opts}
        assert {"--quiet", "-q", "--json"} <= opts, name


def test_chips_json_before_show_applies_and_kind_is_refused() -> None:
    before = runner.invoke(app, ["chips", "--json", "show", "v5p"])
    after = runner.invoke(app, ["chips", "show", "v5p", "--json"])
    assert before.exit_code == 0 and before.stdout == after.stdout
    refused = runner.invoke(app, ["chips", "--kind", "gpu", "show", "v5p"])
    assert refused.exit_code == 2 and "--kind" in _one_line(refused.output)
