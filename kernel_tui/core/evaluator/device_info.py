"""What the evaluation ran on, read in the process that touches the device."""

from __future__ import annotations

import platform

from kernel_tui.core.evaluator.models import Environment


def device_environment(device: str) -> Environment:
    import torch
    import triton

    # platform.machine(), not processor(): the latter runs `uname -p`, and workers start no programs
    name, l2, sms, vendor = platform.machine(), None, None, "cpu"
    if device == "cuda":
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        name = props.name
        l2 = int(getattr(props, "L2_cache_size", 0) or 0) or None
        sms = props.multi_processor_count
        vendor = "amd" if getattr(torch.version, "hip", None) else "nvidia"
    return Environment(
        device=device, device_name=name, python=platform.python_version(), torch=torch.__version__,
        triton=triton.__version__, l2_bytes=l2, sm_count=sms, vendor=vendor,
    )
