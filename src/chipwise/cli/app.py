"""The root typer app. Commands live in sibling modules and register themselves on ``app``.

Every command is thin: parse -> call the library -> render -> exit code. A
``ChipwiseError`` and a usage error (a typo in an option, a value out of range, a missing
argument) both become one line ``error: ...`` on stderr and exit code 2 (``--debug`` shows
the traceback of a ``ChipwiseError`` instead).
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import typer
from typer._click.core import Command as ClickCommand
from typer._click.core import Context as ClickContext
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperGroup
from typer.exceptions import TyperException

from chipwise._version import __version__
from chipwise.errors import ChipwiseError

EXIT_USAGE = 2
EXIT_INTERNAL = 1
# An error line longer than this is cut: it is read in a terminal, and a hostile input (a
# 4 KiB path, a pasted file) must not turn it into a page.
MAX_ERROR_CHARS = 2000

# The order of ``chipwise --help``: the question first, then what it builds on, then the
# measuring commands and the web UI. Commands not listed here follow in registration order.
COMMAND_ORDER = (
    "advise", "predict", "workload", "chips", "scan", "validate", "bench", "calibrate",
    "profile", "serve",
)  # fmt: skip


def one_line(message: str) -> str:
    """A message on one line (a library's multi-line error joined), cut at
    ``MAX_ERROR_CHARS``."""
    text = " ".join(message.split())
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


def _describe(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        where = f" ({err.filename})" if err.filename else ""
        return f"{err.strerror}{where}"
    if isinstance(err, RecursionError | MemoryError | OverflowError):
        return f"the input is too large or too deeply nested ({type(err).__name__})"
    return f"{type(err).__name__}: {err}"


def usage_error_line(err: UsageError) -> str:
    """A click usage error as one line: what is wrong and where to read the options."""
    message = err.format_message().replace("Value error, ", "").strip().rstrip(".")
    message = message[:1].lower() + message[1:]
    where = err.ctx.command_path if err.ctx is not None else "chipwise"
    return f"error: {one_line(message)} (see '{where} --help')"


def reflow_help(text: str | None) -> str | None:
    """Join the hard-wrapped lines of a docstring into paragraphs (typer's rich help keeps
    single newlines, so a docstring wrapped at 100 columns would print ragged)."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def _reflow_tree(command: ClickCommand) -> None:
    command.help = reflow_help(command.help)
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _reflow_tree(sub)


class _ErrorHandlingGroup(TyperGroup):
    """Turns ``ChipwiseError`` and usage errors anywhere below into one clear line and exit
    code 2; lists the commands in ``COMMAND_ORDER``; reflows docstring help."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: ClickContext | None = None,
        **extra: Any,
    ) -> ClickContext:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except NoArgsIsHelpError:
            raise
        except UsageError as err:
            typer.echo(usage_error_line(err), err=True)
            raise typer.Exit(EXIT_USAGE) from None

    def invoke(self, ctx: ClickContext) -> Any:
        try:
            return super().invoke(ctx)
        except NoArgsIsHelpError:
            raise
        except UsageError as err:
            typer.echo(usage_error_line(err), err=True)
            raise typer.Exit(EXIT_USAGE) from None
        except ChipwiseError as err:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            typer.echo(f"error: {one_line(str(err))}", err=True)
            raise typer.Exit(EXIT_USAGE) from None
        except (typer.Exit, typer.Abort, TyperException):
            raise
        except (OSError, RecursionError, MemoryError, OverflowError, UnicodeError) as err:
            # The system refused what the input asked for (a file, the stack, memory): still
            # bad input, so the same one line and exit code 2 rather than a traceback.
            if ctx.obj and ctx.obj.get("debug"):
                raise
            typer.echo(f"error: {one_line(_describe(err))}", err=True)
            raise typer.Exit(EXIT_USAGE) from None
        except Exception as err:
            # A bug in chipwise, not in the input: one line that says so, exit code 1.
            if ctx.obj and ctx.obj.get("debug"):
                raise
            typer.echo(
                f"error: internal error ({one_line(_describe(err))}); rerun with --debug and "
                "report the traceback",
                err=True,
            )
            raise typer.Exit(EXIT_INTERNAL) from None

    def list_commands(self, ctx: ClickContext) -> list[str]:
        names = super().list_commands(ctx)
        rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda n: (rank.get(n, len(rank)), names.index(n)))

    def get_command(self, ctx: ClickContext, cmd_name: str) -> ClickCommand | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _reflow_tree(command)
        return command


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
