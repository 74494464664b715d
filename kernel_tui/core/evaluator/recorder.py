"""Records torch ops that a candidate's host code dispatches while it runs.

The static policy cannot type Python expressions, so the worker also watches which torch functions and
tensor methods host code actually calls during a launch (a TorchFunctionMode: cheap, and unlike a
dispatch mode it does not pull in torch's compiler stack): anything beyond allocation, fills and views is host-side compute
(a torch fallback, a cached result being copied) and fails the candidate. Ops issued from inside
Triton itself (its CPU interpreter moves tensors around) are not the candidate's and are ignored.
"""

from __future__ import annotations

import os
import sys
import types

import triton
from torch.overrides import TorchFunctionMode

ALLOWED_CALLS = {
    # allocation and fills
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "zero_", "fill_", "full", "full_like",
    # views
    "view", "reshape", "unsqueeze", "squeeze", "t", "transpose", "permute", "expand", "flatten",
    "as_strided", "detach", "__getitem__", "split", "unbind",
    # metadata ("__get__" is a property such as .shape or .dtype)
    "__get__", "stride", "size", "numel", "nelement", "dim", "element_size", "is_contiguous",
    "data_ptr", "get_device", "storage_offset", "__len__", "__repr__", "__format__", "__hash__",
}
_TRITON_DIR = os.path.dirname(triton.__file__) + os.sep


def _called_from_triton() -> bool:
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(_TRITON_DIR):
            return True
        frame = frame.f_back
    return False


class HostOpRecorder(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.forbidden: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        if name not in ALLOWED_CALLS and not _called_from_triton():
            self.forbidden.append(f"torch {name}()")
        return func(*args, **(kwargs or {}))
