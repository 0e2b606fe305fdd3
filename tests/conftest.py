"""Session-wide test setup: the suite never reads or writes the user's real price cache, and
the validation rows are predicted once per session, not once per test module."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import settings

from chipwise.pool import default_workers
from chipwise.validate import Case, Report, run_case, run_validation

# 'chipwise prices update' writes a user-level cache that later runs read; point it at an
# empty temporary directory so a developer's own cache cannot change any test's answer. The
# directory is removed when the session's interpreter exits (TemporaryDirectory's finaliser),
# so runs do not leave one behind in /tmp each.
_PRICE_CACHE_DIR = tempfile.TemporaryDirectory(prefix="chipwise-test-cache-")
os.environ["CHIPWISE_PRICE_CACHE"] = str(Path(_PRICE_CACHE_DIR.name) / "prices.json")

# CI (.ci/run sets HYPOTHESIS_PROFILE=ci) replays the same examples every run, so a landing
# is never refused by a rare example found by chance; local runs keep exploring and the
# database keeps what they find.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


VALIDATION_GROUP = "validation"  # pytest-xdist runs the tests that share the report on one worker


@pytest.fixture(scope="session")
def validation_report() -> Report:
    """Every validation row predicted as shipped (minutes of CPU, spread over the cores):
    computed once per session for the tests that read the whole report (tests/validate,
    ``chipwise validate`` runs)."""
    return run_validation(workers=default_workers())


@pytest.fixture
def validated_rows(validation_report: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    """``chipwise validate`` takes a row's result from the session's report instead of
    predicting it again: a CLI test checks options and output, tests/validate the figures."""
    import chipwise.cli.validate as cli

    by_case = {r.case: r for r in validation_report.results}

    def shared(cases: Sequence[Case], **_: object) -> Report:
        return Report(results=tuple(by_case.get(c) or run_case(c) for c in cases))

    monkeypatch.setattr(cli, "run_validation", shared)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests that read the session's validation report in one pytest-xdist group, so
    ``-n`` workers predict it once between them (``--dist loadgroup``), not once each."""
    for item in items:
        if "validation_report" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(VALIDATION_GROUP))
