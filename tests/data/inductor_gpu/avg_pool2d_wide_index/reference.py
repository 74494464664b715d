"""KernelBench level 1 problem 45_Average_Pooling_2D: Simple model that performs 2D Average Pooling."""

import torch


def reference(x, out, batch_size, channels, height, width):
    return torch.nn.functional.avg_pool2d(x, kernel_size=11, stride=11)
