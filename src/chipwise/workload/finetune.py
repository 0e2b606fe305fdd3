"""Parameter accounting of LoRA / QLoRA fine-tunes: which weights train and how many.

LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models", §4.1) freezes a
projection W (d_in x d_out) and trains B @ A beside it, A: d_in x r and B: r x d_out, so one
adapted matrix adds r * (d_in + d_out) parameters. PEFT names the projections of a
Llama-style layer q_proj, k_proj, v_proj, o_proj (attention) and gate_proj, up_proj,
down_proj (MLP); an MoE layer has one adapter per expert's projection.

Check: Llama-3-8B, r=16 on all seven projections: 32 layers x 16 x (2 x (4096 + 4096) +
2 x (4096 + 1024) + 3 x (4096 + 14336)) = 41,943,040 trainable parameters, the figure
PEFT's ``print_trainable_parameters()`` reports for that configuration.
"""

from __future__ import annotations

from chipwise.workload.ir import Training, TransformerSpec


def lora_matrices(spec: TransformerSpec, *, moe: bool) -> tuple[tuple[str, int, int, int], ...]:
    """(target, d_in, d_out, copies) of the projections of one decoder layer LoRA may adapt.

    MLA attention (DeepSeek) has no separate q/k/v matrices: its query path counts as
    ``q_proj`` and the latent KV down/up projections as ``k_proj``/``v_proj``.
    """
    d = spec.d_model
    out: list[tuple[str, int, int, int]] = []
    if spec.uses_mla:
        qk = spec.qk_nope_head_dim + spec.qk_rope_head_dim
        v = spec.v_head_dim or spec.head_dim
        h = spec.n_heads
        if spec.q_lora_rank:
            out += [("q_proj", d, spec.q_lora_rank, 1), ("q_proj", spec.q_lora_rank, h * qk, 1)]
        else:
            out.append(("q_proj", d, h * qk, 1))
        out.append(("k_proj", d, spec.kv_lora_rank + spec.qk_rope_head_dim, 1))
        out.append(("v_proj", spec.kv_lora_rank, h * (spec.qk_nope_head_dim + v), 1))
        out.append(("o_proj", h * v, d, 1))
    else:
        dh = spec.head_dim
        out += [
            ("q_proj", d, spec.n_heads * dh, 1),
            ("k_proj", d, spec.n_kv_heads * dh, 1),
            ("v_proj", d, spec.n_kv_heads * dh, 1),
            ("o_proj", spec.n_heads * dh, d, 1),
        ]
    if moe:
        width = spec.moe_d_ff or spec.d_ff
        copies = spec.n_experts + spec.n_shared_experts
    else:
        width, copies = spec.d_ff, 1
    if spec.gated_mlp:
        out.append(("gate_proj", d, width, copies))
    out += [("up_proj", d, width, copies), ("down_proj", width, d, copies)]
    return tuple(out)


def lora_params_per_layer(spec: TransformerSpec, training: Training, *, moe: bool) -> float:
    """Trainable adapter parameters of one decoder layer (0 for full training)."""
    if not training.adapters:
        return 0.0
    r = training.lora_rank
    return float(
        sum(
            r * (d_in + d_out) * copies
            for target, d_in, d_out, copies in lora_matrices(spec, moe=moe)
            if target in training.lora_targets
        )
    )


def lora_params(spec: TransformerSpec, training: Training) -> float:
    """Trainable adapter parameters of the whole model (decoder layers only)."""
    n_moe = spec.n_moe_layers
    dense = (spec.n_layers - n_moe) * lora_params_per_layer(spec, training, moe=False)
    if not n_moe:
        return dense
    return dense + n_moe * lora_params_per_layer(spec, training, moe=True)
