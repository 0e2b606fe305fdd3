"""Memo tables are bounded: a cache keyed by user input (a config.json's shapes, a prompt
length, a workload path) must not grow with every distinct request a long-running server
answers. Unbounded ``functools.cache`` is kept only where its keys come from the package."""

from __future__ import annotations

import ast
from pathlib import Path

import chipwise

SRC = Path(chipwise.__file__).parent

# Unbounded caches whose every key is package data, each with why.
PACKAGE_KEYED = {
    "perf/ops/kernels.py:_table": "chip id x dtype of the packaged GEMM tables",
    "perf/ops/kernels.py:_size_table": "a packaged table's name",
    "perf/ops/kernels.py:_grid_table": "engine x dtype of the packaged GEMM grid tables",
    "workload/presets/__init__.py:_load": "a preset id (the zoo)",
    "validate/confidence.py:_is_moe": "a measurements file's workloads, in one-shot commands",
}


def _cached_functions() -> list[tuple[str, ast.FunctionDef, ast.expr]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                name = ast.unparse(target)
                if name in {"cache", "functools.cache", "lru_cache", "functools.lru_cache"}:
                    found.append((f"{path.relative_to(SRC).as_posix()}:{node.name}", node, deco))
    return found


def test_every_user_keyed_cache_is_bounded() -> None:
    cached = _cached_functions()
    assert len(cached) > 10  # the scan sees the package's caches
    for where, fn, deco in cached:
        takes_args = bool(fn.args.args or fn.args.kwonlyargs or fn.args.vararg)
        if isinstance(deco, ast.Call):  # lru_cache(maxsize=...)
            sizes = [k.value for k in deco.keywords if k.arg == "maxsize"] + deco.args
            assert sizes, where
            assert not (isinstance(sizes[0], ast.Constant) and sizes[0].value is None), where
        elif takes_args:
            assert where in PACKAGE_KEYED, f"{where}: unbounded cache keyed by its arguments"
