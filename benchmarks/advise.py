"""Speed benchmark: how long ``chipwise advise`` takes, end to end, in a fresh process.

    python benchmarks/advise.py [--repeat 3] [--all]

Target (issue "The advisor"): the README's main command, ``chipwise advise`` (Llama-3-8B
fine-tuning on 1B tokens, every chip in the catalog), prints its answer in under 10 s on
2 cores. Each case runs the real CLI in a new Python process (``--quiet``, so no progress
bar), which counts interpreter start, imports, the catalog load, the search over chips x
counts, the confidence band and rendering: what a user waits for. ``--all`` adds the other
objectives, serving, a massive run and a scanned project.

Prints one line per case: the best and the median wall-clock seconds of ``--repeat`` runs,
and exits non-zero when the default command misses the target.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from chipwise.cli import main; main()"]
TARGET_S = 10.0  # the target for the default command on 2 cores
FIXTURES = ROOT / "tests" / "compat" / "fixtures"

DEFAULT = ("default", ["advise", "--quiet"])
MORE = (
    ("objective time", ["advise", "--quiet", "--objective", "time"]),
    ("objective energy", ["advise", "--quiet", "--objective", "energy"]),
    ("pricing any", ["advise", "--quiet", "--pricing", "any"]),
    ("serving llama3-70b", ["advise", "llama3-70b", "--phase", "infer", "--quiet"]),
    (
        "llama3-405b 15T",
        ["advise", "llama3-405b", "--tokens", "15T", "--max-chips", "16384", "--quiet"],
    ),
    ("cuda project", ["advise", "--quiet", "--project", str(FIXTURES / "cuda_ext")]),
)


def time_case(args: list[str], repeat: int) -> list[float]:
    """Wall-clock seconds of ``repeat`` runs of the CLI with ``args``."""
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run([*CLI, *args], cwd=ROOT, capture_output=True, text=True, check=False)
        out.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"chipwise {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (default 3)")
    parser.add_argument("--all", action="store_true", help="also time the other cases")
    args = parser.parse_args()
    cases = (DEFAULT, *MORE) if args.all else (DEFAULT,)
    verdict = 0
    for name, cli in cases:
        seconds = time_case(cli, args.repeat)
        best, median = min(seconds), statistics.median(seconds)
        line = f"{name:22s} best {best:6.2f} s   median {median:6.2f} s   ({args.repeat} runs)"
        if (name, cli) == DEFAULT:
            ok = median < TARGET_S
            line += f"   target < {TARGET_S:g} s: {'ok' if ok else 'MISSED'}"
            verdict = 0 if ok else 1
        print(line, flush=True)
    return verdict


if __name__ == "__main__":
    sys.exit(main())
