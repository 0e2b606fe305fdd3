"""The knowledge file: valid, complete against packages.csv, strict about its schema."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from chipwise.compat.knowledge import (
    CODED_SIGNAL_IDS,
    PLATFORMS,
    STATUS_VERDICT,
    default_knowledge,
    load_knowledge,
)
from chipwise.errors import ScanError

PACKAGES_CSV = Path(__file__).parents[1] / "fixtures/reference/packages.csv"
DATA = Path(__file__).parents[2] / "src/chipwise/compat/data/packages.toml"
CSV_COLUMNS = {
    "nvidia-cuda": "nvidia_cuda",
    "amd-rocm": "amd_rocm",
    "intel-xpu": "intel_xpu",
    "google-tpu": "google_tpu",
}


def _csv_rows() -> list[dict[str, str]]:
    if not PACKAGES_CSV.is_file():
        pytest.skip(f"{PACKAGES_CSV} not present")
    with PACKAGES_CSV.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _raw_entries() -> list[dict[str, object]]:
    import tomllib

    with DATA.open("rb") as fh:
        packages: list[dict[str, object]] = tomllib.load(fh)["package"]
    return packages


def test_packaged_knowledge_loads_with_an_iso_last_checked_date() -> None:
    k = default_knowledge()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", k.last_checked)
    assert {r.id for r in k.rules if r.kind == "signal"} >= CODED_SIGNAL_IDS


def test_every_packages_csv_row_is_converted_with_its_support_and_sources() -> None:
    rows = _csv_rows()
    by_csv = {str(e["csv_name"]): e for e in _raw_entries() if e.get("csv_name")}
    assert len(by_csv) == len(rows)
    for row in rows:
        entry = by_csv.get(row["pypi_name"])
        assert entry is not None, f"packages.csv row {row['pypi_name']!r} missing"
        support = entry["support"]
        assert isinstance(support, dict)
        for platform, column in CSV_COLUMNS.items():
            assert support[platform] == row[column], (row["pypi_name"], platform)
        assert ";".join(entry["import_names"]) == row["import_names"]  # type: ignore[arg-type]
        assert entry["category"] == row["category"]
        assert entry["tpu_alternative"] == row["tpu_alternative"]
        assert entry["notes"] == row["notes"]
        assert " ; ".join(entry["sources"]) == row["source"]  # type: ignore[arg-type]


def test_every_rule_that_does_not_run_on_tpu_has_a_porting_path_and_effort() -> None:
    for rule in default_knowledge().rules:
        if rule.tpu_path or STATUS_VERDICT[rule.support["google-tpu"]] == "runs":
            continue
        assert rule.porting_for("google-tpu"), rule.id
        assert rule.effort_for("google-tpu") in {"small", "medium", "large"}, rule.id


@pytest.mark.parametrize(
    ("dist", "expected"),
    [
        ("Flash_Attn", {"flash-attn"}),
        ("flash-attn-3", {"flash-attn"}),
        ("cupy-cuda12x", {"cupy"}),
        ("jax-metal", {"jax-metal"}),
        ("numba", set()),  # CUDA-specific only through numba.cuda
        ("PyOpenGL", {"graphics-api"}),
        ("requests", set()),
    ],
)
def test_distribution_lookup_normalises_names(dist: str, expected: set[str]) -> None:
    assert {r.id for r in default_knowledge().for_dist(dist)} == expected


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("jax", {"jax"}),  # not jax-metal, which does not claim the import
        ("jax.numpy", {"jax"}),
        ("jax.experimental.pallas.tpu", {"jax-pallas", "pallas-tpu-kernel"}),
        ("numba", set()),
        ("numba.cuda", {"numba-cuda"}),
        ("tensorflow", {"tensorflow"}),
        ("torch_xla.experimental.custom_kernel", {"torch-xla-pallas"}),
        ("OpenGL.GL", {"graphics-api"}),
        ("onnxruntime", set()),  # the CPU wheel shares the import name
    ],
)
def test_import_lookup_takes_the_longest_prefix(module: str, expected: set[str]) -> None:
    assert {r.id for r in default_knowledge().for_import(module)} == expected


def test_conda_and_extension_lookups() -> None:
    k = default_knowledge()
    assert [r.id for r in k.for_conda("pytorch")] == ["torch"]
    rule = k.for_extension(".CU")
    assert rule is not None and rule.id == "cuda-kernel"
    assert k.for_extension(".txt") is None


def test_porting_and_effort_fall_back_to_the_status_defaults() -> None:
    apex = default_knowledge().rule("apex")  # amd-rocm: fork, no explicit porting
    assert apex.porting_for("amd-rocm") == "use the vendor or community fork (see the notes)"
    assert apex.effort_for("amd-rocm") == "medium"
    assert apex.porting_for("nvidia-cuda") == ""
    assert apex.effort_for("nvidia-cuda") is None
    assert apex.porting_for("google-tpu").startswith("torch.amp autocast")
    assert apex.effort_for("google-tpu") == "small"


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    text = DATA.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "packages.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('category = "framework"', 'category = "framework"\ncolour = "red"', "colour"),
        ('nvidia-cuda = "yes"', 'nvidia-cuda = "sometimes"', "sometimes"),
        ('effort = { google-tpu = "medium" }', "", "effort.google-tpu is missing"),
        ('last_checked = "', 'last_checked = "12/2026', "last_checked"),
        ('id = "cuda-kernel"', 'id = "cuda-kernels"', "cuda-kernel"),
        ('import_names = ["jax"]\nclaims_imports = false\n', 'import_names = ["jax"]\n',
         "claimed by"),
    ],
)  # fmt: skip
def test_a_malformed_knowledge_file_is_a_one_line_scan_error(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    with pytest.raises(ScanError, match=re.escape(message)):
        load_knowledge(_broken(tmp_path, old, new))


def test_a_missing_knowledge_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ScanError, match=r"nope\.toml"):
        load_knowledge(tmp_path / "nope.toml")


def test_support_covers_all_four_platforms() -> None:
    for rule in default_knowledge().rules:
        assert tuple(rule.support) == PLATFORMS or set(rule.support) == set(PLATFORMS)
