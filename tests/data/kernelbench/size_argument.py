import torch
import torch.nn as nn


class Model(nn.Module):
    """Sums groups of n elements; n, a size, is handed to forward by get_inputs."""

    def __init__(self):
        super().__init__()

    def forward(self, x, n):
        return x.reshape(-1, n).sum(dim=1)


rows = 512
cols = 1024


def get_inputs():
    return [torch.randn(rows, cols), cols]


def get_init_inputs():
    return []
