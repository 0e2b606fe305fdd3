import dataclasses
import tomllib
from pathlib import Path

import pytest

from chipwise.cost.assumptions import (
    Assumptions,
    CostError,
    _default_path,
    default_assumptions,
    load_assumptions,
)


def test_packaged_defaults_load_and_every_value_has_a_source_and_date() -> None:
    a = load_assumptions()
    names = [f.name for f in dataclasses.fields(Assumptions) if f.name != "sources"]
    assert sorted(a.sources) == sorted(names)
    for name in names:
        src = a.sources[name]
        assert src.default == getattr(a, name)
        assert len(src.source) > 10, name
        assert src.date[:2] in ("19", "20"), name
        assert src.unit, name


def test_cited_defaults_name_their_source() -> None:
    (cited,) = default_assumptions().cited("usd_per_kwh")
    assert cited.name == "usd_per_kwh"
    assert cited.value == default_assumptions().usd_per_kwh
    assert "EIA" in str(cited.source)


def test_override_is_cited_as_override_with_the_default() -> None:
    a = default_assumptions().override(usd_per_kwh=0.25)
    (cited,) = a.cited("usd_per_kwh")
    assert cited.value == 0.25
    assert str(cited.source).startswith("override (default 0.1")


def test_override_of_unknown_name_says_which_names_exist() -> None:
    with pytest.raises(CostError, match=r"unknown assumption\(s\) usd_per_kw;.*usd_per_kwh"):
        default_assumptions().override(usd_per_kw=0.2)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("pue_cloud", 0.9),
        ("idle_fraction_gpu", 1.0),
        ("idle_fraction_tpu", -0.1),
        ("owned_duty_cycle", 0.0),
        ("amortisation_years", 0.0),
        ("usd_per_kwh", -0.01),
        ("host_power_factor_gpu", 0.5),
    ],
)
def test_out_of_range_assumption_is_an_error_naming_it(name: str, value: float) -> None:
    with pytest.raises(CostError, match=name):
        default_assumptions().override(**{name: value})


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "assumptions.toml"
    path.write_text(text)
    return path


def test_misspelled_key_in_file_is_an_error(tmp_path: Path) -> None:
    text = _default_path().read_text() + '\n[usd_per_kwhh]\nvalue = 1\nunit = "x"\n'
    text += 'source = "nowhere at all"\ndate = "2026"\n'
    with pytest.raises(CostError, match="usd_per_kwhh"):
        load_assumptions(_write(tmp_path, text))


def test_missing_source_in_file_is_an_error(tmp_path: Path) -> None:
    raw = tomllib.loads(_default_path().read_text())
    lines = ["[usd_per_kwh]", "value = 0.1", 'unit = "USD/kWh"', 'date = "2024"']
    rest = _default_path().read_text().split("[grid_kg_co2e_per_kwh]", 1)[1]
    assert "usd_per_kwh" in raw
    path = _write(tmp_path, "\n".join(lines) + "\n[grid_kg_co2e_per_kwh]" + rest)
    with pytest.raises(CostError, match=r"usd_per_kwh\.source"):
        load_assumptions(path)


def test_bad_date_in_file_is_an_error(tmp_path: Path) -> None:
    text = _default_path().read_text().replace('date = "2024-10-17"', 'date = "Oct 2024"', 1)
    with pytest.raises(CostError, match="Oct 2024"):
        load_assumptions(_write(tmp_path, text))
