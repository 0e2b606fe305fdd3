"""Shared output helpers for commands: one console, JSON printing, progress on stderr.

Results go to stdout (a table, or JSON with ``--json``); progress and notes go to stderr,
only when stderr is a terminal, and never with ``--json`` or ``--quiet``, so a pipe or a
script reads clean output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from chipwise.errors import ChipwiseError

console = Console()
err_console = Console(stderr=True)

QUIET_HELP = "No progress on stderr (--json implies it)."


def quiet_option() -> Any:
    """The ``--quiet``/``-q`` option every long-running command takes."""
    return typer.Option(False, "--quiet", "-q", help=QUIET_HELP)


class OutputPathError(ChipwiseError):
    """A file the command was asked to write cannot be written there."""


def check_writable(path: Path, option: str) -> None:
    """Fail before the work, not after it, when ``path`` cannot be written (a directory,
    a missing or read-only folder)."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    problem = ""
    if str(path) in ("", ".") or target.is_dir():
        problem = "it is a directory"
    elif not folder.is_dir():
        problem = f"folder {folder} does not exist"
    elif not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        problem = "permission denied"
    if problem:
        raise OutputPathError(
            f"cannot write {option} {str(path) or repr('')}: {problem}; give a file path, "
            f"e.g. {option} report.html"
        )


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout (no rich markup, stable key order)."""
    print(json.dumps(data, indent=2, sort_keys=False, default=str))


def show_progress(*, quiet: bool = False, as_json: bool = False) -> bool:
    """Whether to draw progress: stderr is a terminal and neither --quiet nor --json."""
    return not (quiet or as_json) and err_console.is_terminal


def progress_bar(enabled: bool, unit: str = "") -> Progress:
    """A transient progress bar on stderr (a no-op when ``enabled`` is false)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not enabled,
    )


@contextmanager
def spinner(enabled: bool, text: str) -> Iterator[None]:
    """A transient spinner with ``text`` on stderr while the block runs (if ``enabled``)."""
    if not enabled:
        yield
        return
    with err_console.status(text):
        yield


def refuse_other_phase_options(ctx: typer.Context, phase: str) -> None:
    """An option of the other phase that the user gave (on the command line or from the
    environment) is an error naming it, never silently ignored. An option belongs to a phase
    when its help starts with "Train" or "Infer" (the convention of every command's help).
    """
    from typer._click.core import ParameterSource

    other = "Infer" if phase == "train" else "Train"
    given = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    for param in ctx.command.params:
        help_text = str(getattr(param, "help", "") or "")
        if not help_text.startswith(other) or param.name is None:
            continue
        if ctx.get_parameter_source(param.name) in given:
            flag = param.opts[0] if param.opts else param.name
            raise ChipwiseError(
                f"{flag} is an option of --phase {other.lower()}, not used with --phase "
                f"{phase}; drop it, or use --phase {other.lower()}"
            )
