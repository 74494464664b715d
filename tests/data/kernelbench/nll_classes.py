import torch
import torch.nn as nn


class Model(nn.Module):
    """Cross entropy between logits and integer class labels."""

    def __init__(self):
        super().__init__()

    def forward(self, logits, labels):
        return nn.functional.cross_entropy(logits, labels)


samples = 512
classes = 257


def get_inputs():
    return [torch.randn(samples, classes), torch.randint(0, classes, (samples,))]


def get_init_inputs():
    return []
