"""Hostile-input benchmark: the CLI's promise on bad input, tried as an attacker would.

    python benchmarks/hostile.py [--only SUBSTRING] [--timeout 20]

Each case builds its inputs in a temporary directory (absurd config.json files, a binary, a
Latin-1, a NaN-valued and a deeply nested one, a FIFO named requirements.txt, ...), runs the
real CLI in a fresh process of this tree's ``src`` and checks the promise of issue 14: exit
code 2, exactly one line ``error: ...`` on stderr, nothing on stdout, no traceback, within
``--timeout`` seconds (20 s, the issue's bound). A few cases are inputs that must be *handled*
(exit 0, no traceback), e.g. a project with a FIFO inside: the scan skips it with a note.

Prints one line per case (PASS/FAIL, seconds, the first line of stderr) and exits non-zero
when any case fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from chipwise.cli import main; main()"]
TIMEOUT_S = 20.0  # issue 14: every hostile input answers within 20 s

LLAMA = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
}


def _config(tmp: Path, name: str, **changes: object) -> str:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps({**LLAMA, **changes}), encoding="utf-8")
    return str(path)


def _raw(tmp: Path, name: str, data: bytes) -> str:
    path = tmp / name
    path.write_bytes(data)
    return str(path)


def _fifo_project(tmp: Path) -> str:
    project = tmp / "fifo-project"
    project.mkdir()
    (project / "train.py").write_text("import torch\n", encoding="utf-8")
    os.mkfifo(project / "requirements.txt")
    return str(project)


def _fifo_config(tmp: Path) -> str:
    folder = tmp / "fifo-model"
    folder.mkdir()
    os.mkfifo(folder / "config.json")
    return str(folder)


def _fifo_file(tmp: Path) -> str:
    os.mkfifo(tmp / "requirements.txt")
    return str(tmp / "requirements.txt")


@dataclass(frozen=True)
class Case:
    name: str
    argv: Callable[[Path], list[str]]
    exit_code: int = 2


def _predict(workload: str, *more: str) -> list[str]:
    return ["predict", workload, "--chip", "h100", "--quiet", *more]


CASES: tuple[Case, ...] = (
    # config.json files
    Case(
        "1e12 layers: workload show",
        lambda t: ["workload", "show", _config(t, "a", num_hidden_layers=1e12)],
    ),
    Case("1e12 layers: predict", lambda t: _predict(_config(t, "b", num_hidden_layers=1e12))),
    Case(
        "1e12 layers: advise",
        lambda t: ["advise", _config(t, "c", num_hidden_layers=10**12), "--quiet"],
    ),
    Case("negative heads", lambda t: ["workload", "show", _config(t, "d", num_attention_heads=-8)]),
    Case("zero hidden size", lambda t: _predict(_config(t, "e", hidden_size=0))),
    Case("1e300 hidden size", lambda t: _predict(_config(t, "f", hidden_size=1e300))),
    Case("1e20 vocabulary", lambda t: ["workload", "show", _config(t, "g", vocab_size=10**20)]),
    Case(
        "1e12 experts",
        lambda t: _predict(_config(t, "h", num_local_experts=10**12, num_experts_per_tok=2)),
    ),
    Case(
        "MoE prefill of 2^44 tokens",
        lambda t: _predict(
            "mixtral-8x7b",
            "--chips",
            "8",
            "--phase",
            "infer",
            "--batch",
            "1048576",
            "--input-len",
            "16777216",
        ),
    ),
    Case("1e15 sliding window", lambda t: _predict(_config(t, "i", sliding_window=10**15))),
    Case(
        "1e12 sparse-attention top-k",
        lambda t: _predict(
            _config(
                t,
                "dsa",
                kv_lora_rank=512,
                q_lora_rank=1536,
                qk_rope_head_dim=64,
                qk_nope_head_dim=128,
                v_head_dim=128,
                index_topk=10**12,
                index_n_heads=64,
                index_head_dim=128,
            )
        ),
    ),
    Case(
        "1e9 linear-attention value heads",
        lambda t: _predict(
            _config(
                t,
                "gdn",
                full_attention_interval=4,
                linear_num_key_heads=16,
                linear_num_value_heads=10**9,
                linear_key_head_dim=128,
                linear_value_head_dim=128,
                linear_conv_kernel_dim=4,
            )
        ),
    ),
    Case(
        "backtracking exclude regex",
        lambda t: _predict(
            _config(t, "redos", quantization_config={"ignore": ["re:(.*.*)*X", "lm_head"]})
        ),
    ),
    Case(
        "20000 exclude patterns",
        lambda t: _predict(
            _config(
                t,
                "manyexcl",
                quantization_config={"exclude_modules": [f"re:.*{i}.*" for i in range(20000)]},
            )
        ),
    ),
    Case(
        "20000 Quark exclude wildcards",
        lambda t: _predict(
            _config(
                t,
                "quarkexcl",
                quantization_config={"exclude": [f"*layers.{i}.*attn*" for i in range(20000)]},
            )
        ),
    ),
    Case(
        "string layer count",
        lambda t: ["workload", "show", _config(t, "j", num_hidden_layers="32")],
    ),
    Case(
        "NaN-valued config",
        lambda t: [
            "workload",
            "show",
            _raw(t, "nan.json", json.dumps(LLAMA).replace("4096", "NaN").encode()),
        ],
    ),
    Case(
        "Infinity-valued config",
        lambda t: _predict(
            _raw(t, "inf.json", json.dumps(LLAMA).replace("14336", "Infinity").encode())
        ),
    ),
    Case(
        "binary config", lambda t: ["workload", "show", _raw(t, "bin.json", bytes(range(256)) * 64)]
    ),
    Case(
        "Latin-1 config",
        lambda t: [
            "workload",
            "show",
            _raw(
                t,
                "latin.json",
                json.dumps({**LLAMA, "_name": "café"}, ensure_ascii=False).encode("latin-1"),
            ),
        ],
    ),
    Case(
        "deeply nested config",
        lambda t: ["workload", "show", _raw(t, "deep.json", b"[" * 200_000 + b"]" * 200_000)],
    ),
    Case(
        "deep object in a config",
        lambda t: _predict(
            _raw(
                t,
                "deepobj.json",
                json.dumps(LLAMA)[:-1].encode()
                + b', "x": '
                + b'{"a":' * 50_000
                + b"1"
                + b"}" * 50_000
                + b"}",
            )
        ),
    ),
    Case(
        "40 MB config",
        lambda t: [
            "workload",
            "show",
            _raw(t, "huge.json", b'{"pad": "' + b"x" * 40_000_000 + b'"}'),
        ],
    ),
    Case("FIFO as config.json", lambda t: ["workload", "show", _fifo_config(t)]),
    Case(
        "directory named .json",
        lambda t: ["workload", "show", str((t / "dir.json").mkdir() or t / "dir.json")],
    ),
    # options
    Case(
        "--global-batch 1e20",
        lambda t: _predict("llama3-8b", "--global-batch", "99999999999999999999"),
    ),
    Case("--seq-len 1e12", lambda t: _predict("llama3-8b", "--seq-len", "999999999999")),
    Case("--chips 1e14", lambda t: _predict("llama3-8b", "--chips", "99999999999999")),
    Case(
        "--output-len 1e11",
        lambda t: _predict("llama3-8b", "--phase", "infer", "--output-len", "99999999999"),
    ),
    Case("--plan tp=0", lambda t: _predict("llama3-8b", "--plan", "tp=0")),
    Case("--plan pp=1e20", lambda t: _predict("llama3-8b", "--plan", "pp=99999999999999999999")),
    Case(
        "--plan microbatch huge",
        lambda t: _predict("llama3-8b", "--plan", "tp=8,microbatch=99999999999", "--chips", "8"),
    ),
    Case("matmul 1e11 cubed", lambda t: _predict("matmul:99999999999x99999999999x99999999999")),
    Case("copy 1e30 bytes", lambda t: _predict("copy:1e30")),
    Case(
        "allreduce 1e20 Ti", lambda t: _predict("allreduce:99999999999999999999Ti", "--chips", "8")
    ),
    Case(
        "--tokens with --phase infer",
        lambda t: ["advise", "--phase", "infer", "--tokens", "1T", "--quiet"],
    ),
    Case("--tokens 1e400", lambda t: ["advise", "--tokens", "1e400", "--quiet"]),
    Case("--tokens nan", lambda t: ["advise", "--tokens", "nan", "--quiet"]),
    Case("--tokens 1e30", lambda t: ["advise", "--tokens", "1e30", "--quiet"]),
    Case(
        "--requests-per-day inf",
        lambda t: ["advise", "--phase", "infer", "--requests-per-day", "inf", "--quiet"],
    ),
    Case("--budget-usd nan", lambda t: ["advise", "--budget-usd", "nan", "--quiet"]),
    Case("--max-chips 1e11", lambda t: ["advise", "--max-chips", "99999999999", "--quiet"]),
    Case(
        "workload show --seq-len 1e15",
        lambda t: ["workload", "show", "llama3-8b", "--seq-len", "1000000000000000"],
    ),
    # other files a user names
    Case("--chip-file /dev/zero", lambda t: ["predict", "llama3-8b", "--chip-file", "/dev/zero"]),
    Case(
        "--chip-file binary",
        lambda t: ["predict", "llama3-8b", "--chip-file", _raw(t, "c.toml", bytes(range(256)))],
    ),
    Case(
        "--lengths /dev/zero",
        lambda t: _predict(
            "llama3-8b", "--phase", "infer", "--concurrency", "4", "--lengths", "/dev/zero"
        ),
    ),
    Case("--prices a FIFO", lambda t: _predict("llama3-8b", "--prices", _fifo_file(t))),
    Case("--chip-file a FIFO", lambda t: ["advise", "--chip-file", _fifo_file(t), "--quiet"]),
    Case("garbage .onnx", lambda t: _predict(_raw(t, "m.onnx", bytes(range(256)) * 10))),
    # options of the other phase, serving-engine bounds
    Case(
        "--seq-len with --phase infer",
        lambda t: _predict("llama3-8b", "--phase", "infer", "--seq-len", "8"),
    ),
    Case(
        "--concurrency 1e12",
        lambda t: _predict("llama3-8b", "--phase", "infer", "--concurrency", "999999999999"),
    ),
    Case(
        "--input-len-std 1e300",
        lambda t: _predict(
            "llama3-8b", "--phase", "infer", "--concurrency", "4", "--input-len-std", "1e300"
        ),
    ),
    Case(
        # the open loop's M/G/1 wait distribution: a fixed FFT grid, whatever the prompts
        "--rps with 100k-token prompts of spread 200k",
        lambda t: _predict(
            "llama3-8b",
            "--phase",
            "infer",
            "--rps",
            "1",
            "--input-len",
            "100000",
            "--input-len-std",
            "200000",
        ),
        exit_code=0,
    ),
    Case(
        # SGLang's ROCm block-scale GEMM: waves of tiles over a user-sized M, closed form
        "sglang mi300x deepseek at the token and concurrency bounds",
        lambda t: [
            "predict",
            "deepseek-v3",
            "--chip",
            "mi300x",
            "--chips",
            "8",
            "--quiet",
            "--phase",
            "infer",
            "--engine",
            "sglang",
            "--precision",
            "fp8",
            "--concurrency",
            "1048576",
            "--input-len",
            "131072",
            "--max-num-tokens",
            "16777216",
        ],
        exit_code=0,
    ),
    Case(
        # ATOM's whole-prompt admission in a finite run: prompts beyond its token budget
        "atom mi355x: 4096 prompts each longer than the step's token budget",
        lambda t: [
            "predict",
            "gpt-oss-120b",
            "--chip",
            "mi355x",
            "--quiet",
            "--phase",
            "infer",
            "--engine",
            "atom",
            "--precision",
            "fp4",
            "--max-throughput",
            "--num-requests",
            "4096",
            "--input-len",
            "65536",
            "--output-len",
            "16",
        ],
        exit_code=0,
    ),
    Case("--batch-tokens 1e300", lambda t: ["advise", "--batch-tokens", "1e300", "--quiet"]),
    # projects
    Case("scan a missing path", lambda t: ["scan", str(t / "nonexistent")]),
    Case(
        "advise --project missing",
        lambda t: ["advise", "--project", str(t / "nonexistent"), "--quiet"],
    ),
    Case("scan a FIFO file", lambda t: ["scan", _fifo_file(t)]),
    Case("scan a project with a FIFO", lambda t: ["scan", _fifo_project(t)], exit_code=0),
    Case("scan /dev/null", lambda t: ["scan", "/dev/null"]),
)


@dataclass(frozen=True)
class Outcome:
    ok: bool
    seconds: float
    why: str


def run_case(case: Case, tmp: Path, timeout_s: float) -> Outcome:
    work = tmp / f"case-{abs(hash(case.name))}"
    work.mkdir()
    argv = case.argv(work)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CHIPWISE_DB": str(work / "db.sqlite")}
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [*CLI, *argv],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
            env=env,
            cwd=work,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return Outcome(False, time.perf_counter() - start, f"no answer in {timeout_s:g} s")
    seconds = time.perf_counter() - start
    err_lines = done.stderr.strip().splitlines()
    first = err_lines[0] if err_lines else ""
    if "Traceback" in done.stderr or "Traceback" in done.stdout:
        return Outcome(False, seconds, "traceback: " + (err_lines[-1] if err_lines else ""))
    if done.returncode != case.exit_code:
        return Outcome(
            False, seconds, f"exit {done.returncode}, expected {case.exit_code}: {first}"
        )
    if case.exit_code == 2:
        if len(err_lines) != 1 or not first.startswith("error: "):
            return Outcome(False, seconds, f"stderr is not one 'error:' line: {err_lines[:3]}")
        if done.stdout.strip():
            return Outcome(False, seconds, "printed on stdout as well")
    return Outcome(True, seconds, first or "(handled)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="Only cases whose name contains this.")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="Seconds per case.")
    args = parser.parse_args()
    failed = 0
    cases = [c for c in CASES if args.only.lower() in c.name.lower()]
    with tempfile.TemporaryDirectory(prefix="chipwise-hostile-") as tmp:
        for case in cases:
            out = run_case(case, Path(tmp), args.timeout)
            failed += not out.ok
            mark = "PASS" if out.ok else "FAIL"
            print(f"{mark} {out.seconds:5.1f}s  {case.name:32}  {out.why[:110]}", flush=True)
    print(f"{len(cases) - failed}/{len(cases)} hostile inputs handled")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
