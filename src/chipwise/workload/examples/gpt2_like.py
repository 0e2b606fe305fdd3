"""A GPT-2-like decoder-only transformer, in the shape of nanoGPT's ``model.py``.

B = batch, S = sequence, D = model width, H = heads, V = vocabulary, L = layers.
Pre-norm blocks: x + attn(ln(x)), x + mlp(ln(x)); MLP width 4D with GELU; the LM head is
tied to the token embedding. Attention uses ``F.scaled_dot_product_attention`` (causal).
Forward FLOPs are ~2 * N * B * S + 4 * L * D * S * B * S, with N the parameters outside
the position embedding (Kaplan et al. 2020, table 1; nanoGPT ``estimate_mfu``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, n_head: int) -> None:
        super().__init__()
        if d % n_head:
            raise ValueError(f"d={d} is not a multiple of n_head={n_head}")
        self.n_head = n_head
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (t.view(b, s, self.n_head, d // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out: torch.Tensor = self.c_proj(y.transpose(1, 2).contiguous().view(b, s, d))
        return out


class Block(nn.Module):
    def __init__(self, d: int, n_head: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, n_head)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        out: torch.Tensor = x + self.mlp(self.ln_2(x))
        return out


class GPT2Like(nn.Module):
    def __init__(self, *, n_layer: int, d: int, n_head: int, vocab: int, max_seq: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_seq, d)
        self.blocks = nn.ModuleList(Block(d, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in GPT-2

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits: torch.Tensor = self.lm_head(self.ln_f(x))
        return logits


def build(
    n_layer: int = 2,
    d: int = 128,
    n_head: int = 4,
    vocab: int = 1024,
    seq: int = 64,
    batch: int = 2,
) -> tuple[nn.Module, tuple[torch.Tensor]]:
    """A GPT-2-like model and a (batch, seq) token batch. GPT-2 small: 12, 768, 12, 50257."""
    model = GPT2Like(n_layer=n_layer, d=d, n_head=n_head, vocab=vocab, max_seq=seq)
    idx = torch.randint(0, vocab, (batch, seq))
    return model, (idx,)
