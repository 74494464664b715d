import torch
import torch.nn as nn


class Model(nn.Module):
    """Scores masked to the lower triangle: the mask is a buffer built in __init__, not a random tensor."""

    def __init__(self, seq):
        super().__init__()
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)))

    def forward(self, scores):
        return scores.masked_fill(self.mask == 0, 0.0)


seq = 128


def get_inputs():
    return [torch.randn(seq, seq)]


def get_init_inputs():
    return [seq]
