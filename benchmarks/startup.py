"""Start-up benchmark: how long the command line takes before it does any work.

    python benchmarks/startup.py [--runs 7] [--top 8]

Times, as the median wall time of ``--runs`` fresh interpreters each: ``python -c pass`` (the
interpreter alone), ``python -m chipwise --help``, ``python -m chipwise predict --help`` and a
usage error (``predict --no-such-option``); then prints the largest cumulative imports of
``import chipwise.cli`` from ``python -X importtime``. None of these needs a model:
``tests/cli/test_startup.py`` checks that they import none (structurally, not by time).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import chipwise

CASES = (
    ("python -c pass", ["-c", "pass"]),
    ("chipwise --help", ["-m", "chipwise", "--help"]),
    ("chipwise predict --help", ["-m", "chipwise", "predict", "--help"]),
    ("chipwise predict --no-such-option", ["-m", "chipwise", "predict", "--no-such-option"]),
)


def _env() -> dict[str, str]:
    # the chipwise this script imported, wherever it was found (a checkout, an install)
    paths = [str(Path(chipwise.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def median_seconds(args: list[str], runs: int) -> float:
    """The median wall time of ``runs`` fresh ``python ARGS``."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], capture_output=True, env=_env(), check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def top_imports(top: int) -> list[tuple[float, str]]:
    """The ``top`` largest cumulative import times (s) of ``import chipwise.cli``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import chipwise.cli"],
        capture_output=True, text=True, env=_env(), check=True,
    )  # fmt: skip
    rows = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]) / 1e6, parts[2].rstrip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per case")
    parser.add_argument("--top", type=int, default=8, help="imports to list")
    args = parser.parse_args()
    print(f"median of {args.runs} runs (wall s)")
    for name, argv in CASES:
        print(f"  {median_seconds(argv, args.runs):6.3f}  {name}")
    print("python -X importtime -c 'import chipwise.cli': largest cumulative (s)")
    for seconds, name in top_imports(args.top):
        print(f"  {seconds:6.3f}  {name}")


if __name__ == "__main__":
    main()
