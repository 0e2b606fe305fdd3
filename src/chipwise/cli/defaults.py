"""The library's defaults and choices that the CLI's options show in ``--help``, copied here
so that building the command line imports no model (``chipwise --help`` stays fast).

``tests/cli/test_startup.py`` pins each equal to the library's own, which stays the source.
"""

from __future__ import annotations

# chipwise.advise.defaults.DEFAULT_WORKLOAD, chipwise.advise.request.DEFAULT_MAX_CHIPS
DEFAULT_WORKLOAD = "llama3-8b"
DEFAULT_MAX_CHIPS = 1024
# chipwise.workload.ir: LORA_TARGETS, LORA_DEFAULT_RANK, MAX_SPEC_TOKENS
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LORA_DEFAULT_RANK = 16
MAX_SPEC_TOKENS = 16
# chipwise.workload.ir: the field defaults of Training and Inference
TRAIN_SEQ_LEN = 4096
TRAIN_GLOBAL_BATCH = 256
INFER_BATCH = 1
INFER_INPUT_LEN = 1024
INFER_OUTPUT_LEN = 256
# chipwise.bench.devices.DEVICE_REQUESTS, chipwise.bench.store.BENCHMARKS
DEVICE_REQUESTS = ("auto", "cpu", "cuda", "tpu")
BENCHMARKS = ("gemm", "copy", "elementwise", "reduction", "attention", "allreduce")
# chipwise.explore.grid.DEFAULT_MAX_POINTS
DEFAULT_MAX_POINTS = 10_000
