"""Device memory that two processes share, through the CUDA driver's IPC handles.

The judge allocates each side's arena with `cuMemAlloc` itself rather than through PyTorch's caching
allocator: an IPC handle opens the whole allocation it points into, and the caching allocator packs
unrelated tensors (the judge's expected answers, say) into shared segments. An allocation of our own holds
the side's inputs and outputs and nothing else, so the worker that opens it can see nothing more, whatever
it reads past its tensors. Both sides wrap the pointer as a torch tensor through `__cuda_array_interface__`
(no copy); PyTorch never owns or frees it.

Only the trusted processes call this module before any candidate code is loaded: the judge to allocate and
export, a worker to open what it was handed.
"""

from __future__ import annotations

import ctypes
import functools

import torch

IPC_HANDLE_BYTES = 64
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1
# An IPC handle opens the whole 2 MiB granule an allocation sits in, and the driver packs smaller allocations
# together into granules: every shared allocation is a whole number of granules, which the driver gives
# pages of their own.
GRANULE = 2 << 20


class CudaDriverError(RuntimeError):
    """A driver call failed; the message names the call and the driver's own words."""


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * IPC_HANDLE_BYTES)]


@functools.cache
def _driver() -> ctypes.CDLL:
    return ctypes.CDLL("libcuda.so.1")


def _fn(name: str, *fallbacks: str):
    lib = _driver()
    for candidate in (name, *fallbacks):
        fn = getattr(lib, candidate, None)
        if fn is not None:
            return fn
    raise CudaDriverError(f"the CUDA driver has no {name}")


def _check(result: int, what: str) -> None:
    if result == 0:
        return
    text = ctypes.c_char_p()
    _fn("cuGetErrorString")(ctypes.c_int(result), ctypes.byref(text))
    words = text.value.decode(errors="replace") if text.value else f"error {result}"
    raise CudaDriverError(f"{what}: {words}")


def _ensure_context(device: int) -> None:
    """The primary context PyTorch uses, current on this thread (driver calls act on the current one)."""
    torch.cuda.init()
    torch.cuda.set_device(device)
    torch.empty(1, device=f"cuda:{device}")  # the runtime binds its primary context to this thread
    ctx = ctypes.c_void_p()
    _check(_fn("cuCtxGetCurrent")(ctypes.byref(ctx)), "cuCtxGetCurrent")
    if not ctx.value:
        dev = ctypes.c_int()
        _check(_fn("cuDeviceGet")(ctypes.byref(dev), device), "cuDeviceGet")
        _check(_fn("cuDevicePrimaryCtxRetain")(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        _check(_fn("cuCtxSetCurrent")(ctx), "cuCtxSetCurrent")


class _Pointer:
    """What `torch.as_tensor` needs to wrap device memory it does not own."""

    def __init__(self, address: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {
            "shape": (nbytes,), "typestr": "|u1", "data": (address, False), "version": 2, "strides": None,
        }


def _wrap(address: int, nbytes: int, device: int) -> torch.Tensor:
    return torch.as_tensor(_Pointer(address, nbytes), device=f"cuda:{device}")


class SharedDeviceMemory:
    """One allocation of our own, exported (the judge) or opened from a handle (a worker)."""

    def __init__(self, address: int, nbytes: int, device: int, *, owned: bool) -> None:
        self.address, self.nbytes, self.device, self.owned = address, nbytes, device, owned
        self.tensor = _wrap(address, nbytes, device)  # uint8, the whole allocation
        self._open = True

    @classmethod
    def allocate(cls, nbytes: int, device: int = 0) -> SharedDeviceMemory:
        _ensure_context(device)
        size = -(-max(nbytes, 1) // GRANULE) * GRANULE
        ptr = ctypes.c_uint64()
        _check(_fn("cuMemAlloc_v2", "cuMemAlloc")(ctypes.byref(ptr), ctypes.c_size_t(size)),
               f"cuMemAlloc of {size} bytes")
        return cls(ptr.value, size, device, owned=True)

    def handle(self) -> str:
        """The IPC handle, as hex text for a message."""
        h = _IpcHandle()
        _check(_fn("cuIpcGetMemHandle")(ctypes.byref(h), ctypes.c_uint64(self.address)), "cuIpcGetMemHandle")
        return ctypes.string_at(ctypes.addressof(h), IPC_HANDLE_BYTES).hex()

    @classmethod
    def open(cls, handle_hex: str, nbytes: int, device: int = 0) -> SharedDeviceMemory:
        raw = bytes.fromhex(handle_hex)
        if len(raw) != IPC_HANDLE_BYTES:
            raise CudaDriverError(f"an IPC handle has {IPC_HANDLE_BYTES} bytes, not {len(raw)}")
        _ensure_context(device)
        h = _IpcHandle()
        ctypes.memmove(ctypes.addressof(h), raw, IPC_HANDLE_BYTES)
        ptr = ctypes.c_uint64()
        _check(_fn("cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle")(
            ctypes.byref(ptr), h, ctypes.c_uint(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)), "cuIpcOpenMemHandle")
        return cls(ptr.value, nbytes, device, owned=False)

    def word(self, offset: int) -> int:
        """The device address of the 32-bit word at `offset` bytes (for stream memory operations)."""
        return self.address + offset

    def close(self) -> None:
        """Free (the owner) or unmap (a worker). Every tensor over this memory must be gone first."""
        if not self._open:
            return
        self._open = False
        del self.tensor
        torch.cuda.synchronize(self.device)
        if self.owned:
            _check(_fn("cuMemFree_v2", "cuMemFree")(ctypes.c_uint64(self.address)), "cuMemFree")
        else:
            _check(_fn("cuIpcCloseMemHandle")(ctypes.c_uint64(self.address)), "cuIpcCloseMemHandle")


# Stream memory operations: a stream waits until a 32-bit word in device memory reaches a value, or writes
# one, in stream order. Unlike an interprocess event, nothing binds at enqueue time, and the wait is polled
# by the GPU's front end.
WAIT_GEQ = 0x0


def stream_wait_value(stream: int, address: int, value: int) -> None:
    """Enqueue on `stream` (a raw cudaStream_t) a wait until the word at `address` is >= `value`."""
    _check(_fn("cuStreamWaitValue32_v2", "cuStreamWaitValue32")(
        ctypes.c_void_p(stream), ctypes.c_uint64(address), ctypes.c_uint32(value), ctypes.c_uint(WAIT_GEQ)),
        "cuStreamWaitValue32")


def stream_write_value(stream: int, address: int, value: int) -> None:
    """Enqueue on `stream` a write of `value` to the word at `address` (after the stream's earlier work)."""
    _check(_fn("cuStreamWriteValue32_v2", "cuStreamWriteValue32")(
        ctypes.c_void_p(stream), ctypes.c_uint64(address), ctypes.c_uint32(value), ctypes.c_uint(0)),
        "cuStreamWriteValue32")
