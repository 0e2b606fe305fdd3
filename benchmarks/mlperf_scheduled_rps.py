"""Fill the ``scheduled_rps`` column of the MLPerf Server rows from their notes.

Every ``load=server`` row's notes quote the run's mlperf_log_summary.txt: "scheduled
samples/s 73.66" (SVM-001..035) or "completed samples/s 84.51 (scheduled 88.45)" (the
later rows, and the SVR rows). The scheduled rate is the Poisson rate loadgen issued
queries at, set by the submitter's user.conf ``target_qps``: a configuration of the run,
which chipwise's validation times the run's TTFT and TPOT rows at
(``chipwise.validate.run._served_rps``). This script copies the number the notes state
into the column (adding it after ``tpot_p99_target_s`` when absent) and changes nothing
else; a server row whose notes state no scheduled rate keeps the column empty.

Run: ``python benchmarks/mlperf_scheduled_rps.py`` (rewrites the CSVs in place; the
output is stable: a second run changes nothing).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "src" / "chipwise" / "validate" / "data"
FILES = ("measurements-serving-scenarios.csv", "measurements-serving-vendors.csv")
COLUMN = "scheduled_rps"
AFTER = "tpot_p99_target_s"
# the first statement of the scheduled rate in a row's notes (bounded: a number of at most
# 16 characters after one of two fixed phrases)
SCHEDULED = re.compile(r"scheduled (?:samples/s )?([0-9]{1,10}(?:\.[0-9]{1,5})?)\b")


def scheduled_rps(notes: str) -> str:
    """The scheduled samples/s the notes state, as written there ("" = none)."""
    found = SCHEDULED.search(notes)
    return found.group(1) if found else ""


def fill(path: Path) -> int:
    """Rewrite ``path`` with the column filled; returns the rows given a rate."""
    raw = path.read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(raw, newline="")))
    header = rows[0]
    if COLUMN not in header:
        at = header.index(AFTER) + 1
        for row in rows:
            row.insert(at, COLUMN if row is header else "")
    col, load, notes = header.index(COLUMN), header.index("load"), header.index("notes")
    filled = 0
    for row in rows[1:]:
        row[col] = scheduled_rps(row[notes]) if row[load] == "server" else row[col]
        filled += bool(row[col])
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")
    return filled


if __name__ == "__main__":
    for name in FILES:
        print(f"{name}: {fill(DATA / name)} rows with a scheduled rate")
