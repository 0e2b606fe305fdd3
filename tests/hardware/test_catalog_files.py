"""Loading catalog files: a bad file is a CatalogError that names the file and the fix.

Each test copies real packaged files into ``tmp_path``, breaks one thing, and loads that
directory with ``load_catalog(tmp_path)``.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import pytest

from chipwise import CatalogError
from chipwise.hardware import load_catalog

DATA = Path(str(resources.files("chipwise.hardware").joinpath("data")))
H100 = DATA / "gpu" / "h100-sxm.toml"
V5P = DATA / "tpu" / "tpu-v5p.toml"

MINIMAL_OFFERS = """\
provider = "testcloud"
kind = "neocloud"

[[offers]]
chip = "h100-sxm"
pricing = "on-demand"
usd_per_chip_hour = 2.5
region = "us"
source = "test fixture"
date = "2026-01-02"
"""


def _copy(root: Path, src: Path, kind: str, name: str | None = None) -> Path:
    dest = root / kind / (name or src.name)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dest)
    return dest


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A small valid catalog: H100 SXM, TPU v5p and one offer."""
    _copy(tmp_path, H100, "gpu")
    _copy(tmp_path, V5P, "tpu")
    _write(tmp_path / "offers" / "testcloud.toml", MINIMAL_OFFERS)
    return tmp_path


def test_a_copied_catalog_loads(root: Path) -> None:
    catalog = load_catalog(root)
    assert [c.id for c in catalog.chips] == ["h100-sxm", "tpu-v5p"]
    assert catalog.chip("v5p").id == "tpu-v5p"
    (offer,) = catalog.offers_for("h100-sxm")
    assert (offer.provider, offer.usd_per_chip_hour) == ("testcloud", 2.5)


def test_an_extra_top_level_key_is_an_error_naming_file_and_key(root: Path) -> None:
    path = root / "gpu" / "h100-sxm.toml"
    path.write_text('colour = "green"\n' + path.read_text())
    with pytest.raises(CatalogError, match=r"h100-sxm\.toml: colour: Extra inputs"):
        load_catalog(root)


def test_a_misspelled_nested_key_is_an_error(root: Path) -> None:
    path = root / "gpu" / "h100-sxm.toml"
    path.write_text(path.read_text().replace("capacity_bytes =", "capcity_bytes =", 1))
    with pytest.raises(CatalogError, match=r"h100-sxm\.toml: memory\.") as err:
        load_catalog(root)
    assert "capcity_bytes" in str(err.value) or "capacity_bytes" in str(err.value)


def test_malformed_toml_is_an_error_naming_the_file(root: Path) -> None:
    _write(root / "gpu" / "broken.toml", 'id = "broken"\nname = \n')
    with pytest.raises(CatalogError, match=r"broken\.toml: not valid TOML"):
        load_catalog(root)


def test_a_figure_citing_a_missing_source_is_an_error(root: Path) -> None:
    path = root / "tpu" / "tpu-v5p.toml"
    path.write_text(
        path.read_text().replace(
            'bf16 = { value = 459e12, source = "S6"', 'bf16 = { value = 459e12, source = "S99"'
        )
    )
    with pytest.raises(CatalogError, match=r"tpu-v5p\.toml: .*S99"):
        load_catalog(root)


def test_a_source_without_an_iso_date_is_an_error(root: Path) -> None:
    path = root / "tpu" / "tpu-v5p.toml"
    path.write_text(path.read_text().replace('date = "2026-08-08"', 'date = "Aug 2026"', 1))
    with pytest.raises(CatalogError, match=r"tpu-v5p\.toml: .*YYYY"):
        load_catalog(root)


def test_an_unknown_dtype_is_an_error(root: Path) -> None:
    path = root / "gpu" / "h100-sxm.toml"
    path.write_text(path.read_text().replace("int8 = {", "int4 = {", 1))
    with pytest.raises(CatalogError, match=r"h100-sxm\.toml: dense_flops_per_s\.int4"):
        load_catalog(root)


def test_a_file_name_must_equal_its_id(root: Path) -> None:
    (root / "gpu" / "h100-sxm.toml").rename(root / "gpu" / "h100.toml")
    with pytest.raises(CatalogError, match=r"h100\.toml: file name must equal its id 'h100-sxm'"):
        load_catalog(root)


def test_a_chip_must_lie_in_the_folder_of_its_kind(root: Path) -> None:
    (root / "tpu" / "tpu-v5p.toml").rename(root / "gpu" / "tpu-v5p.toml")
    with pytest.raises(CatalogError, match=r"tpu-v5p\.toml: kind 'tpu' but lies in gpu/"):
        load_catalog(root)


def test_an_alias_naming_two_chips_is_an_error(root: Path) -> None:
    path = root / "tpu" / "tpu-v5p.toml"
    path.write_text(path.read_text().replace('aliases = ["v5p"', 'aliases = ["H100", "v5p"', 1))
    with pytest.raises(CatalogError, match=r"alias 'H100' names both h100-sxm and tpu-v5p"):
        load_catalog(root)


def test_an_offer_for_an_unknown_chip_names_the_offers_file(root: Path) -> None:
    _write(root / "offers" / "other.toml", MINIMAL_OFFERS.replace('"h100-sxm"', '"h100-sxn"'))
    with pytest.raises(
        CatalogError, match=r"other\.toml: unknown chip id 'h100-sxn'; did you mean 'h100-sxm'"
    ):
        load_catalog(root)


def test_an_offer_must_name_an_id_not_an_alias(root: Path) -> None:
    _write(root / "offers" / "other.toml", MINIMAL_OFFERS.replace('"h100-sxm"', '"H100"'))
    with pytest.raises(CatalogError, match=r"other\.toml: unknown chip id 'H100'"):
        load_catalog(root)


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ('date = "2026-01-02"', 'date = "last spring"', "date"),
        ("usd_per_chip_hour = 2.5", "usd_per_chip_hour = 0", "usd_per_chip_hour"),
        ('pricing = "on-demand"', 'pricing = "reserved"', "pricing"),
        ('source = "test fixture"', 'source = ""', "source"),
    ],
)
def test_a_malformed_offer_is_an_error_naming_file_and_field(
    root: Path, old: str, new: str, field: str
) -> None:
    _write(root / "offers" / "testcloud.toml", MINIMAL_OFFERS.replace(old, new))
    with pytest.raises(CatalogError, match=rf"testcloud\.toml: offers\.0\.{field}"):
        load_catalog(root)


def test_a_purchase_for_an_unknown_chip_names_the_file(root: Path) -> None:
    text = '[[purchases]]\nchip = "b300"\nusd = 50000\nsource = "test"\ndate = "2026"\n'
    _write(root / "offers" / "purchase.toml", text)
    with pytest.raises(CatalogError, match=r"purchase\.toml: unknown chip id 'b300'"):
        load_catalog(root)


def test_a_file_that_is_not_utf8_is_an_error_naming_the_file(root: Path) -> None:
    (root / "gpu" / "latin1.toml").write_bytes(b'id = "caf\xe9"\n')
    with pytest.raises(CatalogError, match=r"latin1\.toml: not valid TOML"):
        load_catalog(root)


# [capabilities]: a validated list of feature names, sourced like every figure.


def _set_capabilities(path: Path, table: str) -> None:
    """Replace the file's [capabilities] table (if any) with ``table`` (empty: none)."""
    text = path.read_text().split("\n[capabilities]", 1)[0].rstrip("\n")
    path.write_text(text + "\n" + (f"\n[capabilities]\n{table}\n" if table else ""))


H100_CAPS = 'features = ["general-compute", "fp64", "media-decode"]\nsource = "S1"'


def test_a_capabilities_table_becomes_the_chips_features_with_their_sources(root: Path) -> None:
    _set_capabilities(root / "gpu" / "h100-sxm.toml", H100_CAPS + '\nnote = "no NVENC"')
    h100 = load_catalog(root).chip("h100-sxm")
    assert h100.features == ("general-compute", "fp64", "media-decode")
    assert h100.has_feature("media-decode") and not h100.has_feature("media-encode")
    assert h100.features_note == "no NVENC"
    (cited,) = h100.features_sources
    assert cited.startswith("stas00/ml-engineering") and cited.endswith("(2026-08-22)")


def test_a_chip_without_a_capabilities_table_has_no_features(root: Path) -> None:
    _set_capabilities(root / "tpu" / "tpu-v5p.toml", "")
    v5p = load_catalog(root).chip("v5p")
    assert v5p.features == () and v5p.features_sources == ()


def test_an_empty_feature_list_is_allowed_when_sourced(root: Path) -> None:
    _set_capabilities(root / "tpu" / "tpu-v5p.toml", 'features = []\nsource = "S6"')
    assert load_catalog(root).chip("v5p").features == ()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('features = ["raytracing"]\nsource = "S1"',
         r"capabilities\.features\.0: Input should be 'fp64'.*\(got 'raytracing'\)"),
        ('features = ["fp64", "fp64"]\nsource = "S1"', r"features listed twice: fp64"),
        ('features = ["fp64"]', r"capabilities\.source: Field required"),
        ('features = ["fp64"]\nsource = "C9"', r"cite sources not in \[sources\]: C9"),
        ('features = ["fp64"]\nsource = "S1"\nmore_sources = ["C9"]', r"not in \[sources\]: C9"),
        ('features = ["fp64"]\nsource = "S1"\ncolour = "red"', r"capabilities\.colour: Extra"),
        ('features = ["general-compute"]\nsource = "S1"', r"lacks 'fp64'; add it"),
    ],
    ids=["unknown-name", "repeated", "unsourced", "missing-source", "missing-more", "extra-key",
         "fp64-rate-without-feature"],
)  # fmt: skip
def test_a_bad_capabilities_table_is_an_error_naming_the_file(
    root: Path, table: str, message: str
) -> None:
    _set_capabilities(root / "gpu" / "h100-sxm.toml", table)
    with pytest.raises(CatalogError, match=r"h100-sxm\.toml: .*" + message):
        load_catalog(root)
