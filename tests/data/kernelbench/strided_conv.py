import torch
import torch.nn as nn


class Model(nn.Module):
    """A strided, padded 2-D convolution followed by a ReLU."""

    def __init__(self, channels_in, channels_out, kernel, stride, padding):
        super().__init__()
        self.conv = nn.Conv2d(channels_in, channels_out, kernel, stride=stride, padding=padding)

    def forward(self, images):
        return torch.relu(self.conv(images))


batch = 4
channels_in = 3
channels_out = 8
height, width = (64, 48)
kernel = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.rand(batch, channels_in, height, width)]


def get_init_inputs():
    return [channels_in, channels_out, kernel, stride, padding]
