"""A U-Net-like diffusion denoiser block (Ho et al. 2020, appendix B; the Stable Diffusion
UNet in miniature).

B = batch, C = channels, H x W = latent size, T = timestep embedding width.
Sinusoidal timestep embedding -> MLP; residual blocks (GroupNorm, SiLU, 3x3 conv, plus the
projected timestep); a strided-conv down path and a nearest-upsample up path joined by
skip concatenations; self-attention over the H x W positions at the bottleneck.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

GROUPS = 8  # GroupNorm groups (Stable Diffusion uses 32 at width >= 320)
MAX_PERIOD = 10_000  # sinusoidal embedding period (Vaswani et al. 2017, section 3.5)


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of (B,) timesteps into (B, dim)."""
    half = dim // 2
    freqs = torch.exp(
        -math.log(MAX_PERIOD) * torch.arange(half, dtype=torch.float32, device=t.device) / half
    )
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, t_dim: int) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(GROUPS, c_in)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.t_proj = nn.Linear(t_dim, c_out)
        self.norm2 = nn.GroupNorm(GROUPS, c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip: nn.Module = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: torch.Tensor, t_emb: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.t_proj(F.silu(t_emb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        out: torch.Tensor = h + self.skip(x)
        return out


class SelfAttention2d(nn.Module):
    def __init__(self, c: int, n_head: int) -> None:
        super().__init__()
        self.n_head = n_head
        self.norm = nn.GroupNorm(GROUPS, c)
        self.qkv = nn.Linear(c, 3 * c)
        self.proj = nn.Linear(c, c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        seq = self.norm(x).flatten(2).transpose(1, 2)  # (B, H*W, C)
        q, k, v = self.qkv(seq).split(c, dim=2)
        q, k, v = (t.view(b, h * w, self.n_head, -1).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v)
        y = self.proj(y.transpose(1, 2).reshape(b, h * w, c))
        out: torch.Tensor = x + y.transpose(1, 2).reshape(b, c, h, w)
        return out


class UNetLike(nn.Module):
    def __init__(self, *, in_channels: int, width: int, mults: tuple[int, ...], n_head: int):
        super().__init__()
        self.t_dim = 4 * width
        self.t_mlp = nn.Sequential(
            nn.Linear(width, self.t_dim), nn.SiLU(), nn.Linear(self.t_dim, self.t_dim)
        )
        self.conv_in = nn.Conv2d(in_channels, width, 3, padding=1)
        chans = [width * m for m in mults]
        self.down_blocks = nn.ModuleList()
        self.downsamples = nn.ModuleList()
        c = width
        for c_out in chans:
            self.down_blocks.append(ResBlock(c, c_out, self.t_dim))
            self.downsamples.append(nn.Conv2d(c_out, c_out, 3, stride=2, padding=1))
            c = c_out
        self.mid1 = ResBlock(c, c, self.t_dim)
        self.mid_attn = SelfAttention2d(c, n_head)
        self.mid2 = ResBlock(c, c, self.t_dim)
        self.up_blocks = nn.ModuleList()
        self.upsamples = nn.ModuleList()
        for c_skip in reversed(chans):
            self.upsamples.append(nn.Conv2d(c, c, 3, padding=1))
            self.up_blocks.append(ResBlock(c + c_skip, c_skip, self.t_dim))
            c = c_skip
        self.norm_out = nn.GroupNorm(GROUPS, c)
        self.conv_out = nn.Conv2d(c, in_channels, 3, padding=1)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        t_emb = self.t_mlp(timestep_embedding(t, self.conv_in.out_channels))
        h = self.conv_in(x)
        skips = []
        for block, down in zip(self.down_blocks, self.downsamples, strict=True):
            h = block(h, t_emb)
            skips.append(h)
            h = down(h)
        h = self.mid2(self.mid_attn(self.mid1(h, t_emb)), t_emb)
        for block, up in zip(self.up_blocks, self.upsamples, strict=True):
            h = up(F.interpolate(h, scale_factor=2.0, mode="nearest"))
            h = block(torch.cat([h, skips.pop()], dim=1), t_emb)
        out: torch.Tensor = self.conv_out(F.silu(self.norm_out(h)))
        return out


def build(
    width: int = 32,
    mults: tuple[int, ...] = (1, 2),
    image_size: int = 32,
    in_channels: int = 4,
    n_head: int = 4,
    batch: int = 2,
) -> tuple[nn.Module, tuple[torch.Tensor, torch.Tensor]]:
    """A U-Net-like denoiser, a (B, C, H, W) noisy latent and (B,) timesteps."""
    if image_size % 2 ** len(mults):
        raise ValueError(f"image_size={image_size} must be divisible by {2 ** len(mults)}")
    model = UNetLike(in_channels=in_channels, width=width, mults=tuple(mults), n_head=n_head)
    x = torch.empty(batch, in_channels, image_size, image_size)
    t = torch.randint(0, 1000, (batch,))
    return model, (x, t)
