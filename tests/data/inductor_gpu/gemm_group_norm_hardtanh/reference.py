"""KernelBench level 2 problem 30_Gemm_GroupNorm_Hardtanh: a GEMM, GroupNorm over 16 groups, then HardTanh."""

import torch


def reference(x, gemm_weight, gemm_bias, group_norm_weight, group_norm_bias, out, batch_size, in_features,
              out_features):
    y = torch.nn.functional.linear(x, gemm_weight, gemm_bias)
    y = torch.nn.functional.group_norm(y, 16, group_norm_weight, group_norm_bias)
    return torch.clamp(y, -2.0, 2.0)
