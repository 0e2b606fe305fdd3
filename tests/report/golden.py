"""Golden files of rendered terminal output: fixed width, no colour, exact text.

``check_golden(name, text)`` compares ``text`` with ``golden/<name>.txt``. Regenerate on
purpose only: ``CHIPWISE_REGEN_GOLDEN=1 pytest tests/report`` rewrites the files; review the
diff before committing it.
"""

from __future__ import annotations

import difflib
import io
import os
from pathlib import Path

import pytest
from rich.console import Console, RenderableType

GOLDEN_DIR = Path(__file__).parent / "golden"
WIDTH = 100
REGEN_ENV = "CHIPWISE_REGEN_GOLDEN"


def render_text(renderable: RenderableType, width: int = WIDTH) -> str:
    """What ``renderable`` prints on a ``width``-column terminal without colour."""
    console = Console(
        width=width,
        color_system=None,
        force_terminal=False,
        record=True,
        file=io.StringIO(),
        highlight=False,
        emoji=False,
        legacy_windows=False,
    )
    console.print(renderable)
    return console.export_text(styles=False)


def check_golden(name: str, text: str) -> None:
    """Compare with the golden file; with ``CHIPWISE_REGEN_GOLDEN=1``, rewrite it instead."""
    path = GOLDEN_DIR / f"{name}.txt"
    if os.environ.get(REGEN_ENV) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"no golden file {path}; create it with {REGEN_ENV}=1 and review it")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "\n".join(
            difflib.unified_diff(
                expected.splitlines(), text.splitlines(), "golden", "rendered", lineterm=""
            )
        )
        pytest.fail(f"{path.name} differs (regenerate with {REGEN_ENV}=1 if intended):\n{diff}")
