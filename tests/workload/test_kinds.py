"""Non-ML workloads: ids, aliases, requirements and the 'why not on a TPU' text."""

from __future__ import annotations

import pytest

from chipwise.errors import WorkloadError
from chipwise.workload.kinds import NON_ML_KINDS, non_ml_kind

IDS = ["graphics", "fp64-hpc", "stencil", "fft", "hashing", "video-encode"]


def test_the_issue_ids_exist_in_order() -> None:
    assert [k.name for k in NON_ML_KINDS] == IDS


@pytest.mark.parametrize(
    ("alias", "kind_id"),
    [("HPL", "fp64-hpc"), ("linpack", "fp64-hpc"), ("mining", "hashing"), ("Graphics", "graphics")],
)
def test_aliases(alias: str, kind_id: str) -> None:
    assert non_ml_kind(alias).name == kind_id


@pytest.mark.parametrize(
    ("kind_id", "capability"),
    [
        ("graphics", "raster"),
        ("graphics", "rt-cores"),
        ("graphics", "media-encode"),
        ("fp64-hpc", "fp64"),
        ("fp64-hpc", "memory-bandwidth"),
        ("stencil", "memory-bandwidth"),
        ("fft", "fp64"),
        ("hashing", "int32"),
        ("video-encode", "media-encode"),
    ],
)
def test_requirements(kind_id: str, capability: str) -> None:
    kind = non_ml_kind(kind_id)
    assert capability in {r.capability for r in kind.requirements}
    assert all(r.why for r in kind.requirements)


@pytest.mark.parametrize("kind_id", IDS)
def test_every_kind_says_why_a_tpu_cannot_run_it_and_cites_it(kind_id: str) -> None:
    kind = non_ml_kind(kind_id)
    assert "TPU" in kind.description and kind.sources and kind.title


def test_unknown_kind_suggests() -> None:
    with pytest.raises(WorkloadError, match="did you mean 'graphics'"):
        non_ml_kind("grafics")
