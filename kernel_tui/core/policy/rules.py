"""What a candidate may import and reach, and what it may not: the sets the policy's walk checks against.
The names each allowed module may lend are in `allowlist`; here they become dotted paths."""

from __future__ import annotations

from kernel_tui.core.policy import allowlist as allow

# libdevice's modules may be imported (`from triton.language.extra import libdevice`); their parents are only links
# of a path (`tl.extra.cuda.libdevice.tanh`): the rest of triton.language.extra reaches sys.modules.
LIBDEVICE_MODULES = {"triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice"}
ALLOWED_IMPORTS = {"torch", "triton", "triton.language", "math", "typing", "functools", "__future__"} | LIBDEVICE_MODULES
FORBIDDEN_BUILTINS = {
    "open", "exec", "eval", "compile", "__import__", "getattr", "setattr", "delattr", "globals",
    "locals", "vars", "breakpoint", "input", "memoryview",
    "type",  # type(x) holds a tensor's class; type(name, bases, dict) builds a subclass with any dunder
}
ALLOWED_DUNDERS = {"__name__", "__future__"}
# torch attributes host code may use: allocation, dtypes and device queries.
TORCH_HOST_ALLOWED = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "full", "full_like",
    "float16", "bfloat16", "float32", "float64", "half", "float", "int8", "int16", "int32",
    "int64", "uint8", "bool", "float8_e4m3fn", "float8_e5m2", "dtype", "device", "Size", "Tensor",
    "finfo", "iinfo", "is_tensor",
}
TORCH_CUDA_ALLOWED = {"get_device_properties", "current_device", "get_device_capability", "device_count"}
# Tensor methods with no compute: metadata and views.
TENSOR_METHODS_ALLOWED = {
    "stride", "size", "numel", "dim", "element_size", "is_contiguous", "data_ptr", "view",
    "new_empty", "new_zeros", "unsqueeze", "squeeze", "flatten", "reshape", "t", "permute",
    "transpose", "expand", "get_device", "nelement", "storage_offset",
}
# Method names that only ever mean tensor compute in this context.
TENSOR_COMPUTE_METHODS = {
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "copy_", "clone", "sum", "mean",
    "max", "min", "exp", "log", "matmul", "mm", "bmm", "addmm", "softmax", "sigmoid", "relu",
    "float", "half", "to", "contiguous", "fill_", "zero_", "neg", "sqrt", "rsqrt", "pow", "abs",
    "cumsum", "prod", "norm", "index_copy_", "scatter_", "gather", "masked_fill_", "cpu", "cuda",
    "numpy", "tolist", "item", "amax", "amin", "argmax", "var", "std", "where", "lerp", "sort",
}
# Modules a candidate may name and go through (`tl.load`), never hold as a value: a module object in a
# variable would let attribute chains escape the path check below.
MODULE_PATHS = {"torch", "torch.cuda", "triton", "triton.language", "triton.language.math", "math", "typing",
                "functools", "__future__", "triton.language.extra", "triton.language.extra.cuda"} | LIBDEVICE_MODULES
# Every dotted path a candidate may reach through an allowed module; anything longer or elsewhere is rejected
# (submodules such as triton.runtime.cache or typing itself expose os, sys and subprocess).
ALLOWED_PATHS = frozenset(
    MODULE_PATHS
    | {f"torch.{n}" for n in TORCH_HOST_ALLOWED}
    | {f"torch.cuda.{n}" for n in TORCH_CUDA_ALLOWED}
    | {f"triton.{n}" for n in allow.TRITON_NAMES}
    | {f"triton.language.{n}" for n in allow.TRITON_LANGUAGE_NAMES + allow.TRITON_LANGUAGE_OLDER_NAMES}
    | {f"triton.language.math.{n}" for n in allow.TRITON_LANGUAGE_MATH_NAMES}
    | {f"{m}.{n}" for m in LIBDEVICE_MODULES for n in allow.LIBDEVICE_NAMES}
    | {f"math.{n}" for n in allow.MATH_NAMES}
    | {f"typing.{n}" for n in allow.TYPING_NAMES}
    | {f"functools.{n}" for n in allow.FUNCTOOLS_NAMES}
    | {f"__future__.{n}" for n in allow.FUTURE_NAMES}
)
# Frame, generator, coroutine and traceback links reach any caller's globals without a single dunder.
INTROSPECTION_ATTRS = {
    "f_globals", "f_locals", "f_back", "f_builtins", "f_code", "gi_frame", "gi_code", "gi_yieldfrom",
    "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code", "ag_await", "tb_frame", "tb_next",
    "func_globals",
}
# Refused wherever they appear: numpy's `.ctypes` reaches the ctypes module (and from it any other);
# `from_file` maps a file into a storage or a tensor, as torch.load and torch.save read and write one.
NATIVE_ATTRS = {"ctypes", "_ctypes"}
FILE_ATTRS = {"from_file"}
FILE_PATHS = {"torch.load", "torch.save", "torch.from_file"}
# Classes are named only to call them, in annotations and in isinstance(): one held in a variable can be patched.
CLASS_PATHS = frozenset(allow.CLASS_PATHS)
# Tensor methods host code may not hold as values (a held method escapes the checks on method calls). Some share
# a name with a data field: a dtype's predicates (harmless held on a tensor too), and finfo's and iinfo's max/min
# and a device's type/index, free on what is visibly such an object (torch.finfo(...), x.device, a name bound
# only to those).
HELD_METHODS = frozenset(allow.TENSOR_METHODS) - {"is_complex", "is_floating_point", "is_signed"}
INFO_FIELDS = {"max", "min", "type", "index"}
INFO_MAKERS = {"torch.finfo", "torch.iinfo", "torch.device"}
INFO_ATTRS = {"device", "dtype"}
TIMER_MODULES = {"time", "timeit"}
SIDE_STREAM_NAMES = {"Stream", "stream", "ExternalStream", "StreamContext", "set_stream"}
TIMER_NAMES = {"Event", "Timer", "synchronize"}
