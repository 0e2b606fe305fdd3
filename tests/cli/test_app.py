from typer.testing import CliRunner

from chipwise import __version__
from chipwise.cli import app

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
