"""Defaults for an advise request that names no scale: documented, not guessed per call."""

from __future__ import annotations

import math

from chipwise.limits import MAX_TOKENS, check_number
from chipwise.workload.accounting import model_flops_per_token, params_total
from chipwise.workload.ir import TransformerSpec

# The README's main command: Llama-3-8B fine-tuning. A fine-tune of 1B tokens is the size of
# common instruction-tuning mixes (e.g. Tulu 3 SFT mix ~ 0.9M examples x ~1k tokens).
DEFAULT_WORKLOAD = "llama3-8b"
DEFAULT_FINETUNE_TOKENS = 1e9
# Without --tokens, a (pre-)training run is compute-optimal: ~20 tokens per parameter
# (Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models", Table 3).
CHINCHILLA_TOKENS_PER_PARAM = 20.0


def default_tokens(model: TransformerSpec) -> float:
    """Training tokens when the user gives none: the fine-tune size for the default model
    (by any of its ids or aliases), else a compute-optimal run."""
    if model.name == DEFAULT_WORKLOAD:
        return DEFAULT_FINETUNE_TOKENS
    return CHINCHILLA_TOKENS_PER_PARAM * params_total(model)


def default_method(model: TransformerSpec, *, tokens_given: bool) -> str:
    """How the weights train when the user does not say (``--method``): the default
    fine-tune is a LoRA run, the common case (Hugging Face PEFT, Unsloth and Axolotl
    default to LoRA adapters for instruction tuning; a full fine-tune of an 8B model needs
    ~16 bytes per parameter of optimizer state, LoRA about 2); any other run (a pre-training
    run sized by --tokens or Chinchilla) trains every weight."""
    if model.name == DEFAULT_WORKLOAD and not tokens_given:
        return "lora"
    return "full"


# ---- the global batch of a training run ---------------------------------------------------

# DeepSeek LLM's fitted law for the optimal batch as a function of compute (DeepSeek-AI,
# "DeepSeek LLM: Scaling Open-Source Language Models with Longtermism", arXiv 2401.02954,
# 2024-01, section 3.1): B_opt = 0.2920 * C^0.3271 tokens, C = non-embedding FLOPs per token x
# tokens. Published runs sit near it: Llama 3 405B used 16M tokens per step (arXiv
# 2407.21783, Table 4; the law gives ~70M at 3.8e25 FLOPs), DeepSeek-V3 15,360 x 4,096 = 63M.
BATCH_LAW_TOKENS_COEFF = 0.2920
BATCH_LAW_EXPONENT = 0.3271
# Sequences per step for a workload that is not a transformer the law can be applied to.
DEFAULT_GLOBAL_BATCH = 256
BATCH_LAW_SOURCE = "DeepSeek LLM scaling law B_opt = 0.292 x C^0.3271 tokens (arXiv 2401.02954)"
# The law is fitted up to ~3e20 FLOPs; past the largest published batch it would extrapolate
# into batches no run has used. DeepSeek-V3's 15,360 x 4,096 = 62.9M tokens per step (arXiv
# 2412.19437, section 4.2) is the largest published: the default never goes beyond it.
LARGEST_PUBLISHED_BATCH_TOKENS = 15_360 * 4_096


def default_global_batch(model: TransformerSpec, tokens: float, seq_len: int) -> tuple[int, str]:
    """Sequences per optimizer step for a run of ``tokens`` when the user names none: the
    DeepSeek LLM law at the run's compute, rounded to the nearest power of two (so it divides
    over power-of-two data-parallel ranks); and a line saying so."""
    compute = model_flops_per_token(model, seq_len) * tokens
    batch_tokens = min(
        BATCH_LAW_TOKENS_COEFF * compute**BATCH_LAW_EXPONENT, LARGEST_PUBLISHED_BATCH_TOKENS
    )
    seqs = 2 ** max(0, round(math.log2(max(batch_tokens / seq_len, 1.0))))
    note = (
        f"global batch {seqs:,} x {seq_len:,} tokens = {seqs * seq_len / 1e6:,.1f}M tokens per "
        f"step, from the {BATCH_LAW_SOURCE} at C = {compute:.2g} FLOPs; set --global-batch "
        f"or --batch-tokens to choose it"
    )
    return seqs, note


# ---- how long a training run may take -----------------------------------------------------

# Without --deadline-days a training run must finish within this many days. Frontier
# pre-training runs take about two months: Llama 3 405B's pre-training is reported over a
# 54-day period on up to 16K H100 (arXiv 2407.21783, section 3.3.4), DeepSeek-V3's 14.8T
# tokens took 2.664M H800-hours on 2,048 GPUs, ~54 days (arXiv 2412.19437, section 1). 120
# days (about four months) leaves twice that: a plan beyond it is one nobody would pick.
DEFAULT_DEADLINE_DAYS = 120.0
DEADLINE_SOURCE = (
    "default deadline: about twice the ~54 days of Llama 3 405B and DeepSeek-V3 pre-training "
    "(arXiv 2407.21783, 2412.19437)"
)


def training_batch(
    model: object, tokens: float | None, seq_len: int, global_batch: int | None,
    batch_tokens: float | None = None,
) -> tuple[int, str]:  # fmt: skip
    """The global batch of an advise request and a line saying where it came from: given
    (``--global-batch``), from ``--batch-tokens``, else the DeepSeek LLM law for a transformer
    with a token count, else ``DEFAULT_GLOBAL_BATCH``."""
    if global_batch is not None:
        return global_batch, ""
    if tokens is not None:  # checked here too: the batch law runs before the request exists
        check_number("--tokens", tokens, high=MAX_TOKENS)
    if batch_tokens is not None:
        seqs = max(1, round(batch_tokens / seq_len))
        return seqs, f"global batch {seqs:,} x {seq_len:,} tokens (--batch-tokens)"
    if isinstance(model, TransformerSpec) and tokens:
        return default_global_batch(model, tokens, seq_len)
    return DEFAULT_GLOBAL_BATCH, ""
