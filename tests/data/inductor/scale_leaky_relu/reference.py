"""Reference for scale-leaky-relu: elementwise chain, the function torch.compile compiles for the test data."""

import torch


def reference(x: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.leaky_relu(x * 2.0, 0.01)
