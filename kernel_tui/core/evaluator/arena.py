"""One side's shared memory: the judge carves that side's buffers out of it, and the side's worker maps it
whole. It holds the side's inputs and guarded outputs and nothing else, so whatever a worker reads past its
tensors, it finds only its own side's buffers.

On the CPU an arena is an anonymous memory file (memfd) whose descriptor the judge hands the worker over
their socket; on a GPU it is one `cuMemAlloc` allocation opened through an IPC handle (cuda_ipc.py).
"""

from __future__ import annotations

import math
import mmap
import os
from dataclasses import dataclass

import torch

from kernel_tui.core.evaluator.draw import DTYPES
from kernel_tui.core.evaluator.harness import GUARD
from kernel_tui.core.evaluator.protocol import ArenaSpec, TensorPlace
from kernel_tui.core.task import TaskSpec

ALIGN = 256  # bytes: every buffer starts on a boundary any dtype and any vector load accepts
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


def aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def side_set_bytes(spec: TaskSpec, dims: dict[str, int]) -> int:
    """Arena bytes one side needs for one argument set: its inputs and its guarded outputs."""
    total = 0
    for t in spec.tensors:
        if t.kind == "scalar":
            continue
        n = math.prod(spec.tensor_shape(t, dims)) + (0 if t.is_argument_tensor else 2 * GUARD)
        total += aligned(n * DTYPES[t.dtype].itemsize)
    return total


class Arena:
    """The judge's side of one arena: allocate, carve, share, free."""

    def __init__(self, ident: int, device: str, nbytes: int) -> None:
        self.ident, self.device, self.nbytes = ident, device, max(nbytes, ALIGN)
        self.used = 0
        self.fd: int | None = None
        self._mm: mmap.mmap | None = None
        self._cuda = None
        if device == "cuda":
            from kernel_tui.core.evaluator.cuda_ipc import SharedDeviceMemory

            self._cuda = SharedDeviceMemory.allocate(self.nbytes, torch.cuda.current_device())
            self.nbytes = self._cuda.nbytes  # whole granules
            self.base = self._cuda.tensor
        else:
            self.fd = os.memfd_create(f"kernel-tui-arena-{ident}", os.MFD_CLOEXEC)
            os.ftruncate(self.fd, self.nbytes)
            self._mm = mmap.mmap(self.fd, self.nbytes)
            self.base = torch.frombuffer(self._mm, dtype=torch.uint8)

    def empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        nbytes = math.prod(shape) * dtype.itemsize
        if self.used + nbytes > self.nbytes:
            raise MemoryError(f"arena {self.ident}: {nbytes} bytes asked, {self.nbytes - self.used} left")
        start = self.used
        self.used += aligned(nbytes)
        return self.base[start : start + nbytes].view(dtype).view(shape)

    def place(self, tensor: torch.Tensor) -> TensorPlace:
        offset = tensor.data_ptr() - self.base.data_ptr()
        assert 0 <= offset < self.nbytes and tensor.is_contiguous(), "a tensor of another arena"
        return TensorPlace(arena=self.ident, offset=offset, dtype=DTYPE_NAMES[tensor.dtype], shape=list(tensor.shape))

    def spec(self) -> ArenaSpec:
        if self._cuda is not None:
            return ArenaSpec(arena=self.ident, kind="cuda", nbytes=self.nbytes, handle=self._cuda.handle())
        return ArenaSpec(arena=self.ident, kind="memfd", nbytes=self.nbytes)

    def close(self) -> None:
        """Free the memory: the worker must have let go of its mapping (a CPU mapping it keeps stays valid;
        CUDA memory it still maps is freed under it, and its next use faults in its own process)."""
        del self.base
        if self._cuda is not None:
            self._cuda.close()
            self._cuda = None
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:  # views still alive somewhere: the mapping goes with them
                pass
            self._mm = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@dataclass
class MappedArena:
    """A worker's view of an arena the judge shared with it."""

    spec: ArenaSpec
    base: torch.Tensor
    keep: object  # the mmap or the opened device memory, alive as long as the views

    @classmethod
    def open(cls, spec: ArenaSpec, fd: int | None) -> MappedArena:
        if spec.kind == "cuda":
            from kernel_tui.core.evaluator.cuda_ipc import SharedDeviceMemory

            mem = SharedDeviceMemory.open(spec.handle, spec.nbytes, torch.cuda.current_device())
            return cls(spec, mem.tensor, mem)
        if fd is None:
            raise ValueError(f"arena {spec.arena}: no descriptor came with it")
        mm = mmap.mmap(fd, spec.nbytes)
        os.close(fd)
        return cls(spec, torch.frombuffer(mm, dtype=torch.uint8), mm)

    def tensor(self, place: TensorPlace) -> torch.Tensor:
        dtype = DTYPES[place.dtype]
        nbytes = math.prod(place.shape) * dtype.itemsize
        if place.offset + nbytes > self.spec.nbytes:
            raise ValueError(f"a tensor past the end of arena {self.spec.arena}")
        return self.base[place.offset : place.offset + nbytes].view(dtype).view(place.shape)

    def close(self) -> None:
        del self.base
        close = getattr(self.keep, "close", None)
        if close is not None:
            try:
                close()
            except BufferError:
                pass
