"""Finished points on disk, so an interrupted exploration resumes where it stopped.

A point's key is the SHA-256 of everything its row depends on: the point (workload, chip
count, precision, phase, batch settings), the chip's figures and prices, the workload file's
bytes when it is a file, the grid's settings, and chipwise's version. Change any of them and
the point is computed again; change nothing and it is read back. The store is one SQLite
file written only by the process that runs the grid, one commit per finished task.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from chipwise._version import __version__
from chipwise.explore.evaluate import Row
from chipwise.explore.grid import ExploreError, Point, Settings
from chipwise.hardware import UserChip

CACHE_FILE = "points.sqlite"


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


# Text that says where a figure or price came from, not what it is: left out of the key so
# a user chip's "retrieved today" date does not invalidate yesterday's points.
_CITATION_FIELDS = ("figures", "features_sources", "features_note", "notes", "date", "note")


def chip_fingerprint(chip: UserChip) -> str:
    """The chip's figures and prices as canonical JSON (citations left out)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in _CITATION_FIELDS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return json.dumps(strip(_plain(chip)), sort_keys=True, default=str)


def workload_fingerprint(source: str) -> str:
    """A zoo id as is; a file by its bytes (an edited config.json is a new workload)."""
    path = Path(source)
    if path.is_file():
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    return source


_TRAIN_ONLY = ("tokens",)
_INFER_ONLY = ("requests_per_day", "ttft_slo_s", "tpot_slo_s")


def point_key(point: Point, chip: str, workload: str, settings: Settings) -> str:
    """The cache key of one point (``chip``/``workload``: the fingerprints above)."""
    fields = _plain(point)
    fields.pop("index")
    used = _plain(settings)
    for name in _TRAIN_ONLY if point.phase == "infer" else _INFER_ONLY:
        used.pop(name)  # a setting the row does not depend on
    blob = json.dumps(
        {
            "version": __version__,
            "point": fields,
            "chip": chip,
            "workload": workload,
            "settings": used,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


class PointCache:
    """Rows by point key in ``<folder>/points.sqlite``."""

    def __init__(self, folder: Path) -> None:
        folder = Path(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(folder / CACHE_FILE)
            self._db.execute("CREATE TABLE IF NOT EXISTS points (key TEXT PRIMARY KEY, row TEXT)")
        except (OSError, sqlite3.Error) as err:
            raise ExploreError(
                f"cannot keep the point cache in {folder}: {err}; choose another folder"
            ) from err
        self.path = folder / CACHE_FILE

    def get_many(self, keys: Iterable[str]) -> dict[str, Row]:
        wanted = list(keys)
        found: dict[str, Row] = {}
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, row FROM points WHERE key IN ({marks})"
            for key, text in self._db.execute(query, chunk):
                found[key] = json.loads(text)
        return found

    def put_many(self, items: Iterable[tuple[str, Row]]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO points VALUES (?, ?)",
                ((k, json.dumps(r)) for k, r in items),
            )

    def close(self) -> None:
        self._db.close()
