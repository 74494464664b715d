"""Reference for group_norm: GroupNorm with 8 groups, the function torch.compile compiled for the test data."""

import torch


def reference(x, gn_weight, gn_bias, out, batch_size, features, dim1, dim2):
    return torch.nn.functional.group_norm(x, 8, gn_weight, gn_bias, eps=1e-5)
