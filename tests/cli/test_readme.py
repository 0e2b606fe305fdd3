"""The README and docs/ stay true to the CLI: every command is in the README's table, and
every ``chipwise ...`` line in their examples parses (options and values as the CLI has
them). Running the examples end to end is ``python`` over the same blocks; see README."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command

from chipwise.cli import app

ROOT = Path(__file__).parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _commands(group: Any, prefix: str = "chipwise") -> list[str]:
    out = []
    for name, cmd in group.commands.items():
        path = f"{prefix} {name}"
        out.append(path)
        if hasattr(cmd, "commands"):
            out += _commands(cmd, path)
    return out


def _example_lines() -> list[tuple[str, str]]:
    lines = []
    for doc in DOCS:
        for block in re.findall(r"```bash\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            for line in block.splitlines():
                cmd = re.split(r"\s+#|>", line)[0].strip()
                if cmd.startswith("chipwise"):
                    lines.append((doc.name, cmd))
    return lines


def test_the_readme_table_lists_every_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("## Commands") : readme.index("## Advise")]
    for command in _commands(get_command(app)):
        assert f"| `{command}" in table, f"{command} is missing from the README's table"


def test_the_readme_keeps_its_two_commands_at_the_top() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = readme.index("## ")
    assert readme[first:].startswith("## Two commands")
    assert "pip install . && chipwise advise" in readme
    assert 'pip install -e ".[dev,torch,jax,onnx,hf,web,explore,ray]" && scripts/check' in readme
    assert len(readme.splitlines()) <= 300  # long details belong in docs/


def _rest(ctx: Any) -> list[str]:
    """What a group left for its subcommand (click keeps it in ``_protected_args``)."""
    return [*getattr(ctx, "_protected_args", ()), *getattr(ctx, "protected_args", ()), *ctx.args]


@pytest.mark.parametrize(("doc", "line"), _example_lines())
def test_every_example_command_parses(doc: str, line: str) -> None:
    args = shlex.split(line)[1:]
    command: Any = get_command(app)
    ctx = command.make_context("chipwise", list(args), resilient_parsing=False)
    while hasattr(command, "commands") and _rest(ctx):
        rest = _rest(ctx)
        sub = command.commands.get(rest[0])
        assert sub is not None, f"{doc}: unknown command in {line!r}"
        command, ctx = sub, sub.make_context(rest[0], rest[1:], parent=ctx)
    assert not getattr(ctx, "args", []), f"{doc}: unparsed arguments in {line!r}"
