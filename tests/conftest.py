"""Session-wide test setup: the suite never reads or writes the user's real price cache, and
the validation rows are predicted once per session, not once per test module, in the
background while the other tests run."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from chipwise.errors import ChipwiseError
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

# The report is predicted by a child process started once the tests are collected (pytest
# itself runs on one core; the prediction is minutes of CPU, most of it MLPerf Server rate
# searches and finite max-throughput runs): it runs the same ``run_validation`` over the
# cores at a lower priority, so the other tests keep their core and the report's waits for
# none; the tests that read it run last. A run that reads no report starts none, and
# pytest-xdist workers (each collects every test) predict it in the worker that needs it.
_BACKGROUND_NICE = 10
_PREDICT_REPORT = """\
import os, pickle, sys
if hasattr(os, "nice"):
    os.nice(int(sys.argv[2]))
from chipwise.pool import default_workers
from chipwise.validate import run_validation
report = run_validation(workers=default_workers())
with open(sys.argv[1] + ".part", "wb") as fh:
    pickle.dump(report, fh)
os.replace(sys.argv[1] + ".part", sys.argv[1])
"""
_REPORT_DIR = tempfile.TemporaryDirectory(prefix="chipwise-test-report-")
_REPORT_PATH = Path(_REPORT_DIR.name) / "validation-report.pickle"
_background: subprocess.Popen[bytes] | None = None


def _start_validation_report() -> subprocess.Popen[bytes]:
    """The child process that predicts every validation row into ``_REPORT_PATH``."""
    import chipwise

    # the chipwise this session imported, wherever it was found (a checkout, an install)
    paths = [str(Path(chipwise.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    with (_REPORT_PATH.parent / "validation-report.stderr").open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-c", _PREDICT_REPORT, str(_REPORT_PATH), str(_BACKGROUND_NICE)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,  # its pool's workers are stopped with it (a group)
        )


@pytest.fixture(scope="session")
def validation_report() -> Report:
    """Every validation row predicted as shipped (minutes of CPU, spread over the cores):
    computed once per session for the tests that read the whole report (tests/validate,
    ``chipwise validate`` runs)."""
    if _background is None:
        return run_validation(workers=default_workers())
    if _background.wait() != 0:
        err = (_REPORT_PATH.parent / "validation-report.stderr").read_text(errors="replace")
        raise RuntimeError(f"predicting the validation report failed:\n{err}")
    with _REPORT_PATH.open("rb") as fh:
        report: Report = pickle.load(fh)
    return report


@pytest.fixture
def validated_rows(validation_report: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    """``chipwise validate`` takes a row's result from the session's report instead of
    predicting it again: a CLI test checks options and output, tests/validate the figures."""
    import chipwise.validate as validate_package  # where the CLI reads it at run time

    by_case = {r.case: r for r in validation_report.results}

    def shared(cases: Sequence[Case], **_: object) -> Report:
        return Report(results=tuple(by_case.get(c) or run_case(c) for c in cases))

    monkeypatch.setattr(validate_package, "run_validation", shared)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the tests that read the session's validation report in one pytest-xdist group, so
    ``-n`` workers predict it once between them (``--dist loadgroup``), not once each; without
    xdist, run them last and start predicting the report now (``_start_validation_report``)."""
    global _background
    readers = [i for i in items if "validation_report" in getattr(i, "fixturenames", ())]
    for item in readers:
        item.add_marker(pytest.mark.xdist_group(VALIDATION_GROUP))
    xdist = "PYTEST_XDIST_WORKER" in os.environ or getattr(config.option, "numprocesses", None)
    if not readers or xdist or config.option.collectonly or _background is not None:
        return
    chosen = set(readers)
    items[:] = [i for i in items if i not in chosen] + readers
    _background = _start_validation_report()


def pytest_sessionfinish() -> None:
    """Stop the report's process group if no test waited for it (a failure under -x)."""
    if _background is not None and _background.poll() is None:
        os.killpg(_background.pid, signal.SIGTERM)
        _background.wait()


# Planning is pure: the same workload, chip, precision and count give the same prediction
# (or the same error) whatever the request around them prices, ranks or filters. Shared by
# the modules that opt in (``pytestmark = pytest.mark.usefixtures("shared_plans")``), whose
# requests re-plan the same counts under another objective, price, budget or cloud, and
# which patch nothing the planner reads.
_PLANS: dict[str, object] = {}


@pytest.fixture
def shared_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """``advise``'s search plans each (workload, chip, precision, count) once per session."""
    from chipwise.advise import candidates

    real = candidates._predict

    def shared(predictor: Any, chips: int) -> Any:
        if predictor.efficiency is not None or predictor._network is not None:
            return real(predictor, chips)  # a calibrated predictor: not keyed here
        key = repr((predictor.workload, predictor.chip, predictor.requested_precision, chips))
        if key not in _PLANS:
            try:
                _PLANS[key] = real(predictor, chips)
            except ChipwiseError as err:
                _PLANS[key] = err
        found = _PLANS[key]
        if isinstance(found, ChipwiseError):
            raise found
        return found

    monkeypatch.setattr(candidates, "_predict", shared)
