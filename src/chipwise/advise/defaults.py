"""Defaults for an advise request that names no scale: documented, not guessed per call."""

from __future__ import annotations

from chipwise.workload.accounting import params_total
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
