"""Is the model any good: every published measurement predicted, with its error.

The measurement tables ship inside the package (``validate/data/``), so ``chipwise validate``
gives the same figures wherever chipwise is installed. Public entry points:

* ``run_validation(kind)`` -> ``Report`` (rows, errors, median and p90 per group)
* ``load_cases()`` / ``run_case(case)`` - one row at a time
* ``load_confidence()`` -> ``ConfidenceTable``: the errors computed once and shipped as
  package data (what ``advise`` quotes); ``confidence_entries(report)`` computes them
"""

from chipwise.validate.confidence import (
    CONFIDENCE_SCHEMA_VERSION,
    ConfidenceDataError,
    ConfidenceEntry,
    ConfidenceTable,
    confidence_entries,
    confidence_json,
    confidence_path,
    confidence_table,
    load_confidence,
    parse_confidence,
    row_subsets,
)
from chipwise.validate.run import (
    METRICS,
    Case,
    Report,
    Result,
    Stats,
    load_cases,
    load_model,
    own_measurements_path,
    own_measurements_paths,
    public_cases_path,
    read_cases,
    run_case,
    run_validation,
    with_scale_out,
)

__all__ = [
    "CONFIDENCE_SCHEMA_VERSION",
    "METRICS",
    "Case",
    "ConfidenceDataError",
    "ConfidenceEntry",
    "ConfidenceTable",
    "Report",
    "Result",
    "Stats",
    "confidence_entries",
    "confidence_json",
    "confidence_path",
    "confidence_table",
    "load_cases",
    "load_confidence",
    "load_model",
    "own_measurements_path",
    "own_measurements_paths",
    "parse_confidence",
    "public_cases_path",
    "read_cases",
    "row_subsets",
    "run_case",
    "run_validation",
    "with_scale_out",
]
