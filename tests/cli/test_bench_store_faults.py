"""'chipwise bench' loses nothing (issue 14): a bad store is found before measuring, and a
store that fails after measuring leaves the results in a JSON file the error names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chipwise.bench import micro, store
from chipwise.cli import app
from chipwise.errors import MeasurementError

runner = CliRunner()


def test_a_corrupt_store_is_refused_before_anything_is_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "store.sqlite"
    db.write_bytes(b"this is not a database" * 100)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("measured before checking the store")

    monkeypatch.setattr(micro, "run_benchmarks", never)  # read when the command runs
    result = runner.invoke(app, ["bench", "--quick", "--device", "cpu", "--db", str(db)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(db) in lines[0] and "unreadable" in lines[0]


def test_a_store_that_fails_after_measuring_saves_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "store.sqlite"

    def broken(*args: object, **kwargs: object) -> int:
        raise MeasurementError(f"measurement store {db} is unreadable (disk I/O error)")

    monkeypatch.setattr(store, "add_measurements", broken)
    args = ["bench", "--quick", "--device", "cpu", "--only", "copy", "--db", str(db), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    saved = Path(doc["saved_to"])
    assert doc["db"] is None and saved.parent == tmp_path
    error = result.stderr.strip().splitlines()
    assert len(error) == 1 and f"saved in {saved}" in error[0]
    kept = json.loads(saved.read_text())
    assert kept["run_id"] == doc["run_id"]
    assert kept["measurements"] == doc["measurements"] and kept["measurements"]
    assert "disk I/O error" in kept["not_stored_because"]


def test_the_fallback_file_goes_to_the_temp_dir_when_here_is_not_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store.tempfile, "gettempdir", lambda: str(tmp_path))
    path = store.save_fallback([], run_id="r1", reason="x", folder=tmp_path / "missing")
    assert path == tmp_path / "chipwise-bench-r1.json"
    again = store.save_fallback([], run_id="r1", reason="x", folder=tmp_path / "missing")
    assert again == tmp_path / "chipwise-bench-r1-1.json"  # never overwrites


def test_check_store_creates_a_new_store_and_refuses_a_newer_one(tmp_path: Path) -> None:
    db = tmp_path / "new.sqlite"
    assert store.check_store(db) == db and db.exists()
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(MeasurementError, match="newer"):
        store.check_store(db)
