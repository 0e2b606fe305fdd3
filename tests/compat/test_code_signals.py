"""Python is read by AST (imports, device code, kernels, fp64, jit branches); C++ by text."""

from __future__ import annotations

import ast
import textwrap

import pytest

from chipwise.compat.code import scan_native, scan_python
from chipwise.compat.hits import Hit


def _scan(src: str) -> list[Hit]:
    text = textwrap.dedent(src)
    return scan_python("m.py", text, ast.parse(text))


def _signals(src: str) -> set[str]:
    return {h.name for h in _scan(src) if h.kind == "signal"}


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("x.cuda()", {"torch-cuda-api"}),
        ("import torch as th\nth.cuda.synchronize()", {"torch-cuda-api"}),
        ("from torch import cuda\ncuda.empty_cache()", {"torch-cuda-api"}),
        ("import torch\ntorch.backends.cudnn.benchmark = True", {"torch-cuda-api"}),
        ("m.to('cuda:1')", {"torch-cuda-api"}),
        ("import torch\ntorch.device('cuda')", {"torch-cuda-api"}),
        ("import torch\ntorch.ones(2, device='cuda')", {"torch-cuda-api"}),
        ("m.to('cpu')\ndevice = 'cuda'", set()),  # a bare string is not device code
        ("import torch\ntorch.zeros(2, dtype=torch.float64)", {"fp64-device"}),
        ("import torch\nx = t.double()", {"fp64-device"}),
        ("import jax\njax.config.update('jax_enable_x64', True)", {"fp64-device"}),
        ("import jax.numpy as jnp\njnp.ones(3, dtype='float64')", {"fp64-device"}),
        ("import numpy as np\nnp.zeros(2, dtype=np.float64)", {"fp64-host"}),
        ("import numpy as np\nnp.zeros(2, dtype='float64')", {"fp64-host"}),
        ("a.astype('float64')", {"fp64-host"}),
        ("import torch.distributed as dist\ndist.init_process_group('nccl')", {"nccl-backend"}),
        ("import torch.distributed as dist\ndist.init_process_group(backend='nccl')",
         {"nccl-backend"}),
        ("import torch.distributed as dist\ndist.init_process_group(backend='gloo')", set()),
        ("from torch.utils.cpp_extension import load_inline\n"
         "load_inline('m', cpp_sources='', cuda_sources='')", {"cuda-kernel"}),
        ("from torch.utils import cpp_extension\n"
         "cpp_extension.load('m', sources=['a.cpp', 'k.cu'])", {"cuda-kernel"}),
        ("from torch.utils.cpp_extension import CppExtension\nCppExtension('m', ['a.cpp'])",
         {"cpp-extension"}),
        ("import triton\n@triton.autotune(configs=[], key=[])\n@triton.jit\ndef k(x):\n    pass",
         {"triton-kernel"}),
        ("from triton import jit\n@jit\ndef k(x):\n    pass", {"triton-kernel"}),
        ("import cupy\ncupy.ElementwiseKernel('float32 x', 'float32 y', 'y = x', 'copy')",
         {"cupy-raw-kernel"}),
        ("M.from_pretrained('m', attn_implementation='flash_attention_2')",
         {"flash-attention-2-flag"}),
        ("M.from_pretrained('m', attn_implementation='sdpa')", set()),
        ("import jax\njax.devices('tpu')", {"tpu-device-use"}),
        ("import jax\nif jax.default_backend() == 'tpu':\n    pass", {"tpu-device-use"}),
        ("trainer = Trainer(accelerator='tpu')", {"tpu-device-use"}),
        ("import os\nos.environ['PJRT_DEVICE'] = 'TPU'", {"tpu-device-use"}),
        ("import os\nos.environ.setdefault('JAX_PLATFORMS', 'tpu')", {"tpu-device-use"}),
        ("import tensorflow as tf\ns = tf.distribute.TPUStrategy(r)", {"tpu-strategy"}),
        ("from tensorflow.distribute import TPUStrategy\ns = TPUStrategy(r)", {"tpu-strategy"}),
    ],
)  # fmt: skip
def test_code_signals(src: str, expected: set[str]) -> None:
    assert _signals(src) == expected


def test_signals_carry_the_line_and_source_excerpt() -> None:
    hits = _scan("import torch\n\n\ndef f(x):\n    return x.cuda()\n")
    (hit,) = [h for h in hits if h.name == "torch-cuda-api"]
    assert (hit.file, hit.line, hit.evidence) == ("m.py", 5, "return x.cuda()")


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("import flash_attn.ops", {("flash_attn.ops", False)}),
        ("from numba import cuda", {("numba.cuda", False)}),
        ("from jax.experimental import pallas as pl", {("jax.experimental.pallas", False)}),
        ("try:\n    import flash_attn\nexcept ImportError:\n    flash_attn = None",
         {("flash_attn", True)}),
        ("try:\n    import flash_attn\nexcept (RuntimeError, ModuleNotFoundError):\n    pass",
         {("flash_attn", True)}),
        ("try:\n    import flash_attn\nexcept KeyError:\n    pass", {("flash_attn", False)}),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch",
         {("typing.TYPE_CHECKING", False), ("torch", True)}),
        ("from . import cuda\nfrom .ops import triton", set()),
    ],
)  # fmt: skip
def test_imports_and_guarded_imports(src: str, expected: set[tuple[str, bool]]) -> None:
    assert {(h.name, h.optional) for h in _scan(src) if h.kind == "import"} == expected


JIT_CASES = """\
import functools
from functools import partial

import jax
import jax.numpy as jnp
from jax import jit


@jax.jit
def branch_on_value(x):
    if x > 0:  # line 11: flagged
        return x
    return -x


@jit
def static_facts(x, y=None):
    if x.shape[0] > 2 and x.ndim == 2 and len(x) > 1 and y is None:
        return x
    return x.T


@partial(jax.jit, static_argnums=(1,))
def static_arg(x, n):
    if n > 0:
        return x * n
    return x


@functools.partial(jax.jit, static_argnames="mode")
def taint_through_assignment(x, mode, batch):
    y = x * 2
    if "dropout" in batch:
        pass
    z = 1.0 if y.sum() > 0 else 0.0  # line 35: flagged
    while mode == "loop":
        break
    return z


def plain(x):
    if x > 0:  # not jitted: fine
        return x
    return x


def later(x, n):
    for _ in range(n):
        x = x + 1
    assert x.sum() > 0  # line 50: flagged (jax.jit call below)
    if n > 1:
        x = -x
    return x


later_fast = jax.jit(later, static_argnums=1)
"""


def test_python_branches_on_traced_values_under_jit_are_found_and_static_ones_are_not() -> None:
    hits = [h for h in _scan(JIT_CASES) if h.name == "jax-traced-control-flow"]
    assert sorted(h.line for h in hits) == [11, 35, 50]
    assert {h.detail for h in hits} == {
        "'x' is traced in jitted branch_on_value()",
        "'y' is traced in jitted taint_through_assignment()",
        "'x' is traced in jitted later()",
    }


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("// fused op\n#include <cuda_runtime.h>\n", 2),
        ('#include "cub/cub.cuh"\n', 1),
        ("#include <torch/extension.h>\n__global__ void k() {}\n", 2),
    ],
)
def test_native_sources_with_cuda_are_kernels(text: str, line: int) -> None:
    (hit,) = scan_native("ops.cpp", text)
    assert (hit.name, hit.line) == ("cuda-kernel", line)


def test_plain_cpp_is_not_a_kernel() -> None:
    assert scan_native("ops.cpp", "#include <torch/extension.h>\nint f() { return 1; }\n") == []
