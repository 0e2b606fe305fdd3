"""Is the model any good: every published measurement predicted, with its error.

The measurement tables ship inside the package (``validate/data/``), so ``chipwise validate``
gives the same figures wherever chipwise is installed. Public entry points:

* ``run_validation(kind)`` -> ``Report`` (rows, errors, median and p90 per group)
* ``load_cases()`` / ``run_case(case)`` - one row at a time
* ``load_confidence()`` -> ``ConfidenceTable``: the errors computed once and shipped as
  package data (what ``advise`` quotes); ``all_entries(report, lopo)`` computes them
* ``in_sample_of(row_id)`` - the constants read off or fitted to a row (``in_sample.toml``);
  ``leave_one_publication_out(cases)`` - training rows scored out of sample
"""

from chipwise.validate.confidence import (
    ALL_ROWS,
    CONFIDENCE_SCHEMA_VERSION,
    ConfidenceDataError,
    ConfidenceEntry,
    ConfidenceTable,
    all_entries,
    confidence_entries,
    confidence_json,
    confidence_path,
    confidence_table,
    load_confidence,
    lopo_fits,
    out_of_sample_results,
    parse_confidence,
    row_subsets,
)
from chipwise.validate.lopo import (
    HeldOut,
    InSample,
    Lopo,
    SustainedFit,
    in_sample_constants,
    in_sample_of,
    leave_one_publication_out,
    publication,
    sustained_group,
    with_sustained,
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
from chipwise.validate.summary import GroupScore, groups_of, score_groups

__all__ = [
    "ALL_ROWS",
    "CONFIDENCE_SCHEMA_VERSION",
    "METRICS",
    "Case",
    "ConfidenceDataError",
    "ConfidenceEntry",
    "ConfidenceTable",
    "GroupScore",
    "HeldOut",
    "InSample",
    "Lopo",
    "Report",
    "Result",
    "Stats",
    "SustainedFit",
    "all_entries",
    "confidence_entries",
    "confidence_json",
    "confidence_path",
    "confidence_table",
    "groups_of",
    "in_sample_constants",
    "in_sample_of",
    "leave_one_publication_out",
    "load_cases",
    "load_confidence",
    "load_model",
    "lopo_fits",
    "out_of_sample_results",
    "own_measurements_path",
    "own_measurements_paths",
    "parse_confidence",
    "public_cases_path",
    "publication",
    "read_cases",
    "row_subsets",
    "run_case",
    "run_validation",
    "score_groups",
    "sustained_group",
    "with_scale_out",
    "with_sustained",
]
