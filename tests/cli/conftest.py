"""CLI tests run ``chipwise advise`` in this process (``--workers``' default, every core,
would start a pool of cold worker processes for each command); the tests that ask for
``--workers`` get what they ask for."""

from __future__ import annotations

import pytest

import chipwise.cli.advise as advise_cli


@pytest.fixture(autouse=True)
def _advise_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(advise_cli, "default_workers", lambda: 1)
