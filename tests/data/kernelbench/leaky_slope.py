import torch
import torch.nn as nn


class Model(nn.Module):
    """Leaky ReLU with a slope given to the constructor, then a learned per-channel offset."""

    def __init__(self, slope, channels):
        super().__init__()
        self.slope = slope
        self.offset = nn.Parameter(torch.randn(channels) * 0.02)

    def forward(self, x):
        return nn.functional.leaky_relu(x, self.slope) + self.offset


tokens = 1024
channels = 512
slope = 0.2


def get_inputs():
    return [torch.randn(tokens, channels)]


def get_init_inputs():
    return [slope, channels]
