"""Is the model any good: every published measurement predicted, with its error.

The measurement tables ship inside the package (``validate/data/``), so ``chipwise validate``
gives the same figures wherever chipwise is installed. Public entry points:

* ``run_validation(kind)`` -> ``Report`` (rows, errors, median and p90 per group)
* ``load_cases()`` / ``run_case(case)`` - one row at a time
"""

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
    "METRICS",
    "Case",
    "Report",
    "Result",
    "Stats",
    "load_cases",
    "load_model",
    "own_measurements_path",
    "own_measurements_paths",
    "public_cases_path",
    "read_cases",
    "run_case",
    "run_validation",
    "with_scale_out",
]
