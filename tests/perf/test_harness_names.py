"""The harness names a workload accepts (``ir.HARNESSES``, validated where input enters) and
the ones the engine model times (``engine.HARNESS_ADMISSION_GATES`` and
``HARNESS_ARRIVAL_WINDOWS``, ``ir.TRTLLM_BENCH_HARNESSES``, ``serve.GEMM_ALL_REDUCE_HARNESSES``)
are listed in two layers, as the
import contracts require (the workload layer may not import perf): this ties them."""

from __future__ import annotations

from chipwise.perf.step.engine import HARNESS_ADMISSION_GATES, HARNESS_ARRIVAL_WINDOWS
from chipwise.perf.step.serve import GEMM_ALL_REDUCE_HARNESSES
from chipwise.workload.ir import HARNESSES, TRTLLM_BENCH_HARNESSES


def test_every_accepted_harness_is_modelled_and_every_modelled_one_accepted() -> None:
    # "" (in-process, the engine's defaults), "api" (an HTTP client, no gate) and
    # "api-sglang-decode-steps-4" (an HTTP client stating an SGLang flag no loop reads: no
    # gate, engine.HARNESS_ADMISSION_GATES) need no model entry of their own
    modelled = (
        set(HARNESS_ADMISSION_GATES)
        | set(HARNESS_ARRIVAL_WINDOWS)
        | set(TRTLLM_BENCH_HARNESSES)
        | set(GEMM_ALL_REDUCE_HARNESSES)
        | {"", "api", "api-sglang-decode-steps-4"}
    )
    assert set(HARNESSES) == modelled
    assert len(HARNESSES) == len(set(HARNESSES))
