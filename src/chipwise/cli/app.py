"""The root typer app. Commands live in sibling modules and register themselves on ``app``.

Every command is thin: parse -> call the library -> render -> exit code. A
``ChipwiseError`` becomes one line on stderr and exit code 2 (``--debug`` shows the
traceback instead).
"""

from __future__ import annotations

import sys
from typing import Any

import typer
from typer._click.core import Context as ClickContext
from typer.core import TyperGroup

from chipwise._version import __version__
from chipwise.errors import ChipwiseError

EXIT_USAGE = 2


class _ErrorHandlingGroup(TyperGroup):
    """Turns ``ChipwiseError`` anywhere below into one clear line and exit code 2."""

    def invoke(self, ctx: ClickContext) -> Any:
        try:
            return super().invoke(ctx)
        except ChipwiseError as err:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(EXIT_USAGE) from None


app = typer.Typer(
    name="chipwise",
    cls=_ErrorHandlingGroup,
    help=(
        "GPU or TPU, which chip, how many, at what cost: measured answers for an ML "
        "workload. Start with 'chipwise advise' (a default workload) or 'chipwise chips'."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"chipwise {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one line."),
) -> None:
    ctx.obj = {"debug": debug}


def main() -> None:
    """Console-script entry point."""
    sys.exit(app())
