import re

import pytest

from chipwise.bench.devices import (
    DEVICE_NAME_PATTERNS,
    _squash,
    chip_id_for_device_name,
    detect_device,
)
from chipwise.errors import MeasurementError
from chipwise.hardware import default_catalog

# Names as torch.cuda.get_device_name() / jax device_kind report them -> the chip they are.
REPORTED_NAMES = {
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA H200": "h200-sxm",
    "NVIDIA H200 NVL": "h200-nvl",
    "NVIDIA H800": "h800",
    "NVIDIA B200": "b200",
    "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb",
    "NVIDIA A100-SXM4-40GB": "a100-sxm-40gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "NVIDIA A100-PCIE-40GB": "a100-pcie-40gb",
    "NVIDIA L4": "l4",
    "NVIDIA L40S": "l40s",
    "NVIDIA A10G": "a10g",
    "Tesla T4": "t4",
    "Tesla V100-SXM2-16GB": "v100",
    "NVIDIA GeForce RTX 4090": "rtx-4090",
    "AMD Instinct MI250X/MI250": "mi250x",
    "AMD Instinct MI300X": "mi300x",
    "AMD Instinct MI325X": "mi325x",
    "TPU v4": "tpu-v4",
    "TPU v5 lite": "tpu-v5e",
    "TPU v5": "tpu-v5p",
    "TPU v5p": "tpu-v5p",
    "TPU v6 lite": "tpu-v6e",
    "TPU7x": "tpu-v7",
}


@pytest.mark.parametrize(("name", "chip_id"), REPORTED_NAMES.items())
def test_every_reported_name_matches_exactly_one_pattern(name: str, chip_id: str) -> None:
    hits = [ids for pattern, ids in DEVICE_NAME_PATTERNS if re.fullmatch(pattern, _squash(name))]
    assert len(hits) == 1, (name, hits)
    assert chip_id in hits[0]


@pytest.mark.parametrize(("name", "chip_id"), REPORTED_NAMES.items())
def test_a_reported_name_finds_its_chip_when_the_catalog_has_it(name: str, chip_id: str) -> None:
    in_catalog = chip_id in {c.id for c in default_catalog().chips}
    assert chip_id_for_device_name(name) == (chip_id if in_catalog else None)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),  # the SXM5 board's reported name
        ("h100", "h100-sxm"),  # a catalog alias works directly
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", None),  # a MIG slice is not the chip
        ("Intel(R) Xeon(R) Platinum 8480+", None),
        ("", None),
    ],
)
def test_device_names_map_to_catalog_ids_or_none(name: str, expected: str | None) -> None:
    assert chip_id_for_device_name(name) == expected


def test_cpu_is_always_available_and_unknown_to_the_catalog() -> None:
    device = detect_device("cpu")
    assert device.kind == "cpu"
    assert device.library in ("torch", "numpy")
    assert device.count == 1
    assert device.chip_id is None
    assert device.name


def test_an_unknown_device_request_names_the_choices() -> None:
    with pytest.raises(MeasurementError, match="auto, cpu, cuda, tpu"):
        detect_device("gpu0")


def test_asking_for_cuda_without_a_gpu_explains_how_to_get_one() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    jax = pytest.importorskip("jax")
    if jax.default_backend() == "gpu":
        pytest.skip("JAX sees a GPU")
    with pytest.raises(MeasurementError, match="--device cuda"):
        detect_device("cuda")


def test_asking_for_a_tpu_without_one_is_an_error() -> None:
    jax = pytest.importorskip("jax")
    if jax.default_backend() == "tpu":
        pytest.skip("a TPU is present")
    with pytest.raises(MeasurementError, match="--device tpu"):
        detect_device("tpu")
