"""Reference for frobenius_norm: the function torch.compile compiled for the test data."""

import torch


def reference(x, out, batch_size, features, dim1, dim2):
    return x / torch.norm(x, p="fro")
