"""The tidy table of an exploration: one row per point, the columns of ``evaluate.COLUMNS``.

Written as CSV (always) and Parquet (pyarrow, the ``[explore]`` extra, imported lazily);
``to_pandas`` gives a DataFrame (pandas, same extra).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chipwise.explore.evaluate import COLUMN_NAMES, COLUMNS, Row
from chipwise.explore.grid import ExploreError

EXPLORE_EXTRA_HINT = "pip install 'chipwise[explore]'"


@dataclass(frozen=True, slots=True)
class ExploreTable:
    """Rows in grid order; every row has every column (None where it does not apply)."""

    rows: tuple[Row, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return COLUMN_NAMES

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def to_dicts(self) -> list[Row]:
        return [dict(r) for r in self.rows]

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` with the table's columns in order.

        Raises:
            ExploreError: pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError as err:
            raise ExploreError(f"a DataFrame needs pandas; {EXPLORE_EXTRA_HINT}") from err
        return pd.DataFrame(self.to_dicts(), columns=list(COLUMN_NAMES))

    def write_csv(self, path: Path) -> Path:
        """Write the table as CSV (empty cells for None; floats at full precision)."""
        target = Path(path)
        try:
            with target.open("w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow(COLUMN_NAMES)
                for row in self.rows:
                    writer.writerow(_cell(row[c]) for c in COLUMN_NAMES)
        except OSError as err:
            raise ExploreError(f"cannot write {target}: {err.strerror}") from err
        return target

    def write_parquet(self, path: Path) -> Path:
        """Write the table as Parquet with a fixed schema (types from ``COLUMNS``).

        Raises:
            ExploreError: pyarrow is not installed, or the file cannot be written.
        """
        pa, pq = require_pyarrow()
        types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
        schema = pa.schema([(name, types[kind]) for name, kind in COLUMNS])
        data = {name: [r[name] for r in self.rows] for name in COLUMN_NAMES}
        table = pa.Table.from_pydict(data, schema=schema)
        target = Path(path)
        try:
            pq.write_table(table, target)
        except OSError as err:
            raise ExploreError(f"cannot write {target}: {err}") from err
        return target


def require_pyarrow() -> tuple[Any, Any]:
    """``(pyarrow, pyarrow.parquet)``, or an ``ExploreError`` that says how to install it."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as err:
        raise ExploreError(f"Parquet output needs pyarrow; {EXPLORE_EXTRA_HINT}") from err
    return pa, pq


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)  # shortest text that reads back as the same float
    return value


def read_csv_rows(path: Path) -> Sequence[dict[str, str]]:
    """The CSV back as strings (for tests and quick looks)."""
    with Path(path).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))
