"""Find the local accelerator and name it as the catalog does.

Three backends, tried in this order for ``--device auto``:

1. PyTorch ``torch.cuda`` (NVIDIA CUDA builds, and AMD ROCm builds, which reuse ``torch.cuda``;
   ``torch.version.hip`` tells them apart);
2. JAX ``jax.devices()`` when its default backend is a TPU or a GPU;
3. the CPU, through PyTorch when it is installed, else numpy.

Device names map to catalog chip ids through ``DEVICE_NAME_PATTERNS``: anchored regular
expressions over the names drivers report (``torch.cuda.get_device_name``, JAX's
``device_kind``), each tried against the catalog with its candidate ids and aliases. A name
that matches nothing (a CPU, a new GPU) gets ``chip_id=None``, never a guess.
"""

from __future__ import annotations

import platform
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from chipwise.errors import MeasurementError, UnknownChipError
from chipwise.hardware import default_catalog

DeviceRequest = Literal["auto", "cpu", "cuda", "tpu"]
DeviceKind = Literal["gpu", "tpu", "cpu"]
Library = Literal["torch", "jax", "numpy"]

DEVICE_REQUESTS: tuple[DeviceRequest, ...] = ("auto", "cpu", "cuda", "tpu")

# Names as drivers report them -> catalog ids or aliases to try, in order. Patterns are
# matched in full (re.fullmatch, case-insensitive) against the name with runs of spaces,
# dashes and underscores collapsed to one space, so no pattern is a substring of another's
# match. Sources for the reported names: torch.cuda.get_device_name() on each part (NVIDIA
# prints "NVIDIA H100 80GB HBM3" for the SXM5 board and "Tesla ..." before Ampere; ROCm
# prints the marketing name), and jax Device.device_kind ("TPU v5 lite" is v5e,
# "TPU v6 lite" is v6e).
DEVICE_NAME_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"nvidia h100 80gb hbm3", ("h100-sxm", "h100")),
    (r"nvidia h100 (sxm5?)( \d+gb)?", ("h100-sxm", "h100")),
    (r"nvidia h100 pcie( \d+gb)?", ("h100-pcie", "H100 PCIe")),
    (r"nvidia h100 nvl( \d+gb)?", ("h100-nvl", "H100 NVL")),
    (r"nvidia h200( sxm)?( \d+gb)?( hbm3e)?", ("h200-sxm", "h200")),
    (r"nvidia h200 nvl( \d+gb)?", ("h200-nvl", "H200 NVL")),
    (r"nvidia h800( \d+gb)?( hbm3)?", ("h800",)),
    (r"nvidia b200( \d+gb)?", ("b200",)),
    (r"nvidia gb200", ("gb200",)),
    (r"nvidia a100 sxm4 80gb", ("a100-sxm-80gb", "A100 SXM 80GB")),
    (r"nvidia a100 sxm4 40gb", ("a100-sxm-40gb", "A100 SXM 40GB")),
    (r"nvidia a100 80gb pcie", ("a100-pcie-80gb", "A100 PCIe 80GB")),
    (r"nvidia a100 pcie 40gb", ("a100-pcie-40gb", "A100 PCIe 40GB")),
    (r"nvidia l4", ("l4",)),
    (r"nvidia l40s", ("l40s",)),
    (r"nvidia a10g", ("a10g",)),
    (r"tesla t4", ("t4",)),
    (r"tesla v100 sxm2 (16|32)gb", ("v100",)),  # the 16 GB part has the same rates
    (r"nvidia geforce rtx 4090", ("rtx-4090", "RTX 4090")),
    (r"nvidia geforce rtx 5090", ("rtx-5090", "RTX 5090")),
    (r"amd instinct mi250x(/mi250)?", ("mi250x",)),
    (r"amd instinct mi300x( vf)?", ("mi300x",)),
    (r"amd instinct mi325x( vf)?", ("mi325x",)),
    (r"amd instinct mi355x( vf)?", ("mi355x",)),
    (r"tpu v2", ("tpu-v2",)),
    (r"tpu v3", ("tpu-v3",)),
    (r"tpu v4", ("tpu-v4",)),
    (r"tpu v5 ?lite|tpu v5e", ("tpu-v5e",)),
    (r"tpu v5p?", ("tpu-v5p",)),
    (r"tpu v6 ?lite|tpu v6e", ("tpu-v6e",)),
    (r"tpu ?7x|tpu v7", ("tpu-v7",)),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceInfo:
    """The device a benchmark runs on, and the software that drives it."""

    name: str  # as the driver reports it: "NVIDIA H100 80GB HBM3", "TPU v5 lite", a CPU model
    kind: DeviceKind
    vendor: str  # nvidia | amd | google | intel | arm | unknown
    library: Library
    library_version: str
    driver_version: str  # CUDA or HIP runtime of the torch build, JAX platform version, ""
    host: str
    count: int  # local devices of this kind (all-reduce needs more than one)
    memory_bytes: float | None
    chip_id: str | None  # catalog id, when the name maps to one

    @property
    def label(self) -> str:
        """One line for humans: ``NVIDIA H100 80GB HBM3 x1 (torch 2.5.1, cuda 12.4)``."""
        driver = f", {self.driver_version}" if self.driver_version else ""
        return f"{self.name} x{self.count} ({self.library} {self.library_version}{driver})"


def _squash(name: str) -> str:
    return re.sub(r"[\s_-]+", " ", name.strip().lower())


def chip_id_for_device_name(name: str) -> str | None:
    """The catalog id of a device name reported by torch or JAX, or ``None`` if unknown.

    The name is first tried as a catalog id or alias itself, then through
    ``DEVICE_NAME_PATTERNS``; a pattern's candidates that the catalog lacks are skipped.
    """
    catalog = default_catalog()
    candidates: list[str] = [name]
    squashed = _squash(name)
    for pattern, ids in DEVICE_NAME_PATTERNS:
        if re.fullmatch(pattern, squashed, flags=re.IGNORECASE):
            candidates.extend(ids)
    for candidate in candidates:
        try:
            return catalog.chip(candidate).id
        except UnknownChipError:
            continue
    return None


def _cpu_name_and_vendor() -> tuple[str, str]:
    """The CPU model (``/proc/cpuinfo`` on Linux) and its vendor."""
    name = platform.processor() or platform.machine() or "cpu"
    vendor = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        text = cpuinfo.read_text(errors="replace")
        model = re.search(r"^model name\s*:\s*(.+)$", text, flags=re.MULTILINE)
        if model:
            name = model.group(1).strip()
        vendor_id = re.search(r"^vendor_id\s*:\s*(.+)$", text, flags=re.MULTILINE)
        if vendor_id:
            vendor = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(
                vendor_id.group(1).strip(), "unknown"
            )
    if vendor == "unknown" and platform.machine().lower() in ("arm64", "aarch64"):
        vendor = "arm"
    return name, vendor


def _torch_cuda() -> DeviceInfo | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    name = str(torch.cuda.get_device_name(0))
    hip = getattr(torch.version, "hip", None)
    props = torch.cuda.get_device_properties(0)
    return DeviceInfo(
        name=name,
        kind="gpu",
        vendor="amd" if hip else "nvidia",
        library="torch",
        library_version=str(torch.__version__),
        driver_version=f"hip {hip}" if hip else f"cuda {torch.version.cuda}",
        host=socket.gethostname(),
        count=int(torch.cuda.device_count()),
        memory_bytes=float(props.total_memory),
        chip_id=chip_id_for_device_name(name),
    )


def _jax_accelerator(want: tuple[str, ...]) -> DeviceInfo | None:
    """The first JAX device whose platform is in ``want`` ("tpu", "gpu")."""
    try:
        import jax
    except ImportError:
        return None
    try:
        backend = jax.default_backend()
    except RuntimeError:
        return None
    if backend not in want:
        return None
    devices = jax.devices()
    first = devices[0]
    name = str(first.device_kind)
    try:
        platform_version = str(first.client.platform_version)
    except AttributeError:
        platform_version = ""
    vendor = "google" if backend == "tpu" else ("amd" if "rocm" in platform_version else "nvidia")
    return DeviceInfo(
        name=name,
        kind="tpu" if backend == "tpu" else "gpu",
        vendor=vendor,
        library="jax",
        library_version=str(jax.__version__),
        driver_version=platform_version,
        host=socket.gethostname(),
        count=len(devices),
        memory_bytes=None,
        chip_id=chip_id_for_device_name(name),
    )


def _cpu() -> DeviceInfo:
    name, vendor = _cpu_name_and_vendor()
    try:
        import torch

        library: Library = "torch"
        version = str(torch.__version__)
    except ImportError:
        import numpy

        library = "numpy"
        version = str(numpy.__version__)
    return DeviceInfo(
        name=name,
        kind="cpu",
        vendor=vendor,
        library=library,
        library_version=version,
        driver_version="",
        host=socket.gethostname(),
        count=1,
        memory_bytes=None,
        chip_id=chip_id_for_device_name(name),
    )


def detect_device(request: str = "auto") -> DeviceInfo:
    """The device to benchmark: ``auto`` (best present), ``cuda``, ``tpu`` or ``cpu``.

    Raises:
        MeasurementError: the requested kind is not present, or ``request`` is unknown.
    """
    if request not in DEVICE_REQUESTS:
        raise MeasurementError(
            f"unknown device {request!r}; choose one of {', '.join(DEVICE_REQUESTS)}"
        )
    if request == "cpu":
        return _cpu()
    if request in ("auto", "cuda"):
        found = _torch_cuda() or _jax_accelerator(("gpu",) if request == "cuda" else ("tpu", "gpu"))
        if found is not None:
            return found
        if request == "cuda":
            raise MeasurementError(
                "--device cuda: no GPU visible to torch.cuda or JAX; install a CUDA or ROCm "
                "build of PyTorch (or jax[cuda]) or use --device auto"
            )
        return _cpu()
    found = _jax_accelerator(("tpu",))
    if found is None:
        raise MeasurementError(
            "--device tpu: JAX sees no TPU; run on a TPU VM with jax[tpu] or use --device auto"
        )
    return found
