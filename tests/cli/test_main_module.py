"""``python -m chipwise`` runs the same command line as the installed ``chipwise`` script."""

from __future__ import annotations

import subprocess
import sys


def test_python_dash_m_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chipwise", "--help"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "advise" in done.stdout and "validate" in done.stdout


def test_python_dash_m_refuses_bad_input_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chipwise", "predict", "no-such-model"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
