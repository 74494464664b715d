import torch
import torch.nn as nn


class Model(nn.Module):
    """Product of two lower-triangular matrices (the result is lower triangular too)."""

    def __init__(self):
        super().__init__()

    def forward(self, L, R):
        return torch.tril(L @ R)


size = 512


def get_inputs():
    L = torch.tril(torch.rand(size, size))
    R = torch.tril(torch.rand(size, size))
    return [L, R]


def get_init_inputs():
    return []
