import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer followed by a scale and a clamp."""

    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return torch.clamp(self.proj(x) * self.scale, min=-1.0)


rows = 96
in_features = 96
out_features = 40
scale = 1.5


def get_inputs():
    return [torch.randn(rows, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
