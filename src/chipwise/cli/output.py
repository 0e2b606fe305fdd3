"""Shared output helpers for commands: one console, JSON printing."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout (no rich markup, stable key order)."""
    print(json.dumps(data, indent=2, sort_keys=False, default=str))
