"""Length histograms of a serving load: ``input_len,output_len[,count]`` CSV rows.

A dataset's length profile (MLPerf's OpenOrca set, a production trace) is a few hundred
``(input_len, output_len, count)`` buckets; ``Inference.lengths`` carries them and the
engine model (``perf/step/engine.py``) mixes its percentiles over them. ``chipwise predict
--lengths FILE`` and the validation rows' ``lengths`` column read the same format.
"""

from __future__ import annotations

import csv
import io
import itertools
from pathlib import Path

from chipwise.errors import WorkloadError
from chipwise.limits import read_user_file

# Rows of a length histogram: a few hundred buckets describe any dataset's lengths.
MAX_ROWS = 100_000

LengthRows = tuple[tuple[int, int, float], ...]


def read_lengths(path: Path, *, what: str = "--lengths") -> LengthRows:
    """A length histogram CSV: ``input_len,output_len[,count]`` with a header row
    (``what`` names the file's role in messages)."""
    try:
        text = read_user_file(path, what=what, error=WorkloadError).decode("utf-8")
        rows = list(itertools.islice(csv.DictReader(io.StringIO(text, newline="")), MAX_ROWS + 1))
    except OSError as err:
        raise WorkloadError(f"{what} {path}: cannot read it ({err.strerror})") from err
    except (UnicodeDecodeError, csv.Error) as err:
        raise WorkloadError(f"{what} {path}: not a UTF-8 CSV file ({err})") from err
    if len(rows) > MAX_ROWS:
        raise WorkloadError(
            f"{what} {path} has over {MAX_ROWS:,} rows; a length histogram needs a few "
            "hundred buckets at most"
        )
    try:
        out = tuple(
            (int(r["input_len"]), int(r["output_len"]), float(r.get("count") or 1)) for r in rows
        )
    except (KeyError, ValueError, TypeError) as err:
        raise WorkloadError(
            f"{what} {path}: need columns input_len,output_len[,count] with numbers"
        ) from err
    if not out:
        raise WorkloadError(f"{what} {path}: no rows")
    return out


def mean_lengths(rows: LengthRows) -> tuple[float, float]:
    """(mean input, mean output) tokens of a histogram, weighted by its counts."""
    total = sum(c for _, _, c in rows)
    if not total > 0:
        raise WorkloadError("a length histogram needs a positive total count")
    return (
        sum(i * c for i, _, c in rows) / total,
        sum(o * c for _, o, c in rows) / total,
    )
