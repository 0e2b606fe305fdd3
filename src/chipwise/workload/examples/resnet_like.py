"""A ResNet-50-like CNN: bottleneck blocks in stages [3, 4, 6, 3] (He et al. 2016, table 1).

B = batch, C = channels, H x W = image size. The stride sits on the 3x3 conv of each
bottleneck ("ResNet v1.5", as torchvision builds it). At ``width=64``, 224 x 224 and
batch 1 it is ResNet-50: 25.6 M parameters, 4.1 G multiply-adds forward.
"""

from __future__ import annotations

import torch
from torch import nn

EXPANSION = 4  # bottleneck output channels = 4 x its inner width (He et al. 2016, fig. 5)


class Bottleneck(nn.Module):
    def __init__(self, c_in: int, width: int, stride: int) -> None:
        super().__init__()
        c_out = width * EXPANSION
        self.conv1 = nn.Conv2d(c_in, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, c_out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        out: torch.Tensor = self.relu(y + self.downsample(x))
        return out


class ResNetLike(nn.Module):
    def __init__(
        self, *, width: int, layers: tuple[int, ...], num_classes: int, in_channels: int
    ) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, width, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        stages: list[nn.Module] = []
        c_in = width
        for i, n_blocks in enumerate(layers):
            inner = width * 2**i
            blocks = []
            for j in range(n_blocks):
                blocks.append(Bottleneck(c_in, inner, stride=2 if i > 0 and j == 0 else 1))
                c_in = inner * EXPANSION
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c_in, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.stages(self.stem(x)))
        logits: torch.Tensor = self.fc(torch.flatten(x, 1))
        return logits


def build(
    width: int = 16,
    image_size: int = 64,
    batch: int = 2,
    layers: tuple[int, ...] = (3, 4, 6, 3),
    num_classes: int = 1000,
    in_channels: int = 3,
) -> tuple[nn.Module, tuple[torch.Tensor]]:
    """A ResNet-like model and a (batch, C, H, W) image batch. ResNet-50: width=64, 224."""
    model = ResNetLike(
        width=width, layers=tuple(layers), num_classes=num_classes, in_channels=in_channels
    )
    return model, (torch.empty(batch, in_channels, image_size, image_size),)
