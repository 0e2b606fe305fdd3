"""Non-ML workloads, described by what they need rather than by a graph.

Each ``NonMLKind`` lists its ``Requirement``s (a capability and why it is needed) and a
``description`` that says why a TPU cannot run it; the advisor quotes it. Capabilities:

    fp64              double-precision FLOP/s (IEEE binary64)
    memory-bandwidth  bytes per second from device memory (low arithmetic intensity)
    raster            fixed-function rasterizer, texture units, ROPs
    rt-cores          ray-tracing units (BVH traversal, ray-triangle tests)
    display           display engine and outputs (scan-out)
    int32             32-bit integer add, xor, shift and rotate throughput
    media-encode      fixed-function video encoder (NVENC-style)
    general-compute   programmable SIMT cores (CUDA / HIP / OpenCL / Vulkan compute)

Sources are in ``/work/shared/reference/ecosystem.md`` sec. 4 and the links below.
"""

from __future__ import annotations

import difflib
import re

from chipwise.errors import WorkloadError
from chipwise.workload.ir import NonMLKind, Requirement

# Evidence for the "why not on a TPU" lines.
_JAX_NO_FP64 = (
    "github:jax-ml/jax#10158 (maintainer: 'TPUs don't have float64 hardware, so at best a "
    "complex128 FFT would be emulated using float32 double-double math ... do much better "
    "to perform such calculations on CPU or GPU')"
)
_JAX_C128 = "github:jax-ml/jax#19769 ('Element type C128 is not supported on TPU')"
_JAX_X64 = "github:jax-ml/jax#9862 (64-bit types unsupported on the TPU driver API)"
_TPU_ARCH = (
    "https://cloud.google.com/tpu/docs/system-architecture-tpu-vm (TensorCores with MXU, "
    "vector and scalar units, SparseCores; no graphics or media units are described: "
    "inferred, not an explicit statement)"
)
_XLA_ONLY = (
    "https://cloud.google.com/tpu/docs/beginners-guide ('Code that runs on TPUs must be "
    "compiled by the accelerator linear algebra (XLA) compiler')"
)
_TPU_CFD = "arXiv 2108.11076 (CFD on TPU in single precision, rewritten for TensorFlow/XLA)"

_GENERAL = Requirement(
    capability="general-compute",
    why="written for CUDA, HIP, OpenCL or Vulkan compute; a TPU runs only XLA programs",
)

NON_ML_KINDS: tuple[NonMLKind, ...] = (
    NonMLKind(
        name="graphics",
        title="Graphics rendering (raster, ray tracing, streamed or displayed)",
        requirements=(
            Requirement(
                capability="raster",
                why="triangles become pixels in the rasterizer, texture units and ROPs",
            ),
            Requirement(
                capability="rt-cores",
                why="real-time ray tracing needs BVH-traversal and ray-triangle hardware",
            ),
            Requirement(
                capability="media-encode",
                why="frames leave as an encoded video stream: cloud rendering, game and 3-D "
                "application streaming run on GPUs without display outputs (AWS G4dn's T4, "
                "GCP G2's L4; a local screen needs display outputs instead)",
            ),
            Requirement(
                capability="general-compute",
                why="vertex, pixel and compute shaders run on programmable SIMT cores",
            ),
        ),
        description=(
            "A TPU has no graphics pipeline: no rasterizer, texture units, ROPs, ray-tracing "
            "units or display outputs, and no OpenGL, Vulkan or DirectX driver. Only rendering "
            "rewritten as tensor math in JAX can run there."
        ),
        sources=(
            _TPU_ARCH,
            "github:facebookresearch/pytorch3d#1845",
            "docs.aws.amazon.com/AWSEC2/latest/WindowsGuide/accelerated-computing-instances"
            ".html (GPU instances for 'game streaming, 3-D application streaming, and other "
            "graphics workloads'; G4dn instances use NVIDIA T4)",
        ),
    ),
    NonMLKind(
        name="fp64-hpc",
        title="FP64 dense linear algebra (HPL / LINPACK)",
        requirements=(
            Requirement(
                capability="fp64",
                why="HPL factors a dense matrix in double precision (2/3 n^3 + 2 n^2 FLOPs); "
                "the Top500 counts only fp64 results",
            ),
            Requirement(
                capability="memory-bandwidth",
                why="panel factorisation and the triangular solves are bandwidth-bound",
            ),
        ),
        description=(
            "A TPU has no fp64 hardware: double precision is unsupported or emulated with "
            "float32 double-double arithmetic at a small fraction of its speed, and the MXU "
            "multiplies bf16 (int8/fp8 on newer chips; fp32 by several bf16 passes). FP64 HPC "
            "belongs on a GPU with strong fp64 (H100, MI300) or a CPU."
        ),
        sources=(_JAX_NO_FP64, _JAX_X64),
    ),
    NonMLKind(
        name="stencil",
        title="Stencil / structured-grid PDE solvers (CFD, weather)",
        requirements=(
            Requirement(
                capability="memory-bandwidth",
                why="a few FLOPs per grid point per sweep: far below one FLOP per byte",
            ),
            Requirement(capability="fp64", why="most production solvers run in double precision"),
            _GENERAL,
        ),
        description=(
            "Stencils are neighbour-wise elementwise arithmetic, not matmuls, so the MXU "
            "idles and only the vector units work; a TPU has no fp64. Single-precision "
            "stencils rewritten in JAX/TensorFlow do run on TPUs, but an fp64 CUDA/Fortran "
            "code does not."
        ),
        sources=(_JAX_NO_FP64, _TPU_CFD, _XLA_ONLY),
    ),
    NonMLKind(
        name="fft",
        title="Fast Fourier transforms (spectral methods, signal processing)",
        requirements=(
            Requirement(
                capability="fp64",
                why="scientific FFTs are complex128 (5 N log2 N FLOPs per transform)",
            ),
            Requirement(
                capability="memory-bandwidth",
                why="each radix pass streams the whole array with strided access",
            ),
            _GENERAL,
        ),
        description=(
            "A TPU supports FFTs only in single precision (complex64): complex128 is rejected "
            "because there is no fp64 hardware, and its MXU is built for bf16 matmul and "
            "convolution, not FFT butterflies. Double-precision FFTs (cuFFT, FFTW) need a GPU "
            "or a CPU."
        ),
        sources=(_JAX_C128, _JAX_NO_FP64, _XLA_ONLY),
    ),
    NonMLKind(
        name="hashing",
        title="Hashing / cryptocurrency mining (SHA-256 and similar)",
        requirements=(
            Requirement(
                capability="int32",
                why="SHA-256 is 32-bit integer add, xor, shift and rotate, 64 rounds per block",
            ),
            _GENERAL,
        ),
        description=(
            "Hashing is 32-bit integer and bitwise work with no matrix multiply, so a TPU's "
            "MXU, where its throughput is, stays idle; it could be written for the vector "
            "units in JAX, but no TPU miner exists and 64-bit integers are not supported on "
            "TPU. GPUs run it as ordinary integer SIMT code (Bitcoin itself is mined on ASICs)."
        ),
        sources=(
            _JAX_X64,
            _XLA_ONLY,
            "chipwise reference ecosystem.md sec. 4: reasoned from the VPU cost table, unverified",
        ),
    ),
    NonMLKind(
        name="video-encode",
        title="Video encoding (H.264 / HEVC / AV1)",
        requirements=(
            Requirement(
                capability="media-encode",
                why="real-time encoding uses a fixed-function encoder (NVIDIA NVENC, AMD VCN); "
                "data-centre A100/H100 have decoders but no NVENC",
            ),
            _GENERAL,
        ),
        description=(
            "A TPU has no media engine: no NVENC/NVDEC-style encoder or decoder, so video is "
            "encoded and decoded on the host CPU; entropy coding and motion search are not "
            "matrix math for the MXU."
        ),
        sources=(_TPU_ARCH, "https://cloud.google.com/tpu/docs/performance-guide"),
    ),
)

_ALIASES: dict[str, str] = {
    "hpl": "fp64-hpc",
    "linpack": "fp64-hpc",
    "fp64": "fp64-hpc",
    "hpc": "fp64-hpc",
    "rendering": "graphics",
    "mining": "hashing",
    "crypto-mining": "hashing",
    "sha256": "hashing",
    "video": "video-encode",
    "nvenc": "video-encode",
}


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_INDEX: dict[str, NonMLKind] = {_normalise(k.name): k for k in NON_ML_KINDS} | {
    _normalise(alias): next(k for k in NON_ML_KINDS if k.name == target)
    for alias, target in _ALIASES.items()
}


def find_kind(name: str) -> NonMLKind | None:
    """The non-ML kind ``name`` (id or alias, any case) names, or None."""
    return _INDEX.get(_normalise(name))


def close_kinds(name: str, n: int = 3) -> list[str]:
    """Kind ids whose id or alias is close to ``name``."""
    names = {k.name: k.name for k in NON_ML_KINDS} | dict(_ALIASES)
    close = difflib.get_close_matches(name.lower(), list(names), n=n * 2, cutoff=0.6)
    return list(dict.fromkeys(names[c] for c in close))[:n]


def non_ml_kind(name: str) -> NonMLKind:
    """Find a non-ML kind by id or alias; an unknown name raises with close matches."""
    kind = find_kind(name)
    if kind is not None:
        return kind
    close = close_kinds(name)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    ids = ", ".join(k.name for k in NON_ML_KINDS)
    raise WorkloadError(f"unknown non-ML workload {name!r}{hint} (known: {ids})")
