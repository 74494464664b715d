"""What a candidate may name through each allowed module: one sorted literal per module.

TRITON_LANGUAGE_NAMES is `dir(triton.language)` of Triton 3.9 without private names and submodules
(core, extra, math, random, standard, target_info reach os, subprocess and builtins). Names a given Triton
lacks are harmless here: the list only has to cover what candidates use and hold nothing that escapes;
tests/test_policy_walk.py checks the latter against the installed torch and triton.
"""

TRITON_NAMES = ("Config", "autotune", "cdiv", "heuristics", "jit", "language", "next_power_of_2")

TRITON_LANGUAGE_NAMES = (
    "PropagateNan", "TRITON_MAX_TENSOR_NUMEL", "abs", "add", "aggregate_replace", "arange", "argmax",
    "argmin", "associative_scan", "assume", "atomic_add", "atomic_and", "atomic_cas", "atomic_load",
    "atomic_max", "atomic_min", "atomic_or", "atomic_poll", "atomic_store", "atomic_xchg", "atomic_xor",
    "bfloat16", "bitonic_merge", "block_type", "broadcast", "broadcast_to", "cast", "cat", "cdiv", "ceil",
    "clamp", "condition", "const", "constexpr", "constexpr_type", "cos", "cumprod", "cumsum",
    "debug_barrier", "device_assert", "device_print", "div_rn", "dot", "dot_scaled", "dtype", "erf", "exp",
    "exp2", "expand_dims", "expect_zero", "fdiv", "flip", "float16", "float32", "float64", "float8e4b15",
    "float8e4b8", "float8e4nv", "float8e5", "float8e5b16", "floor", "fma", "full", "gather", "histogram",
    "inline_asm_elementwise", "int1", "int16", "int32", "int64", "int8", "interleave", "join", "load",
    "load_tensor_descriptor", "log", "log2", "make_block_ptr", "make_tensor_descriptor", "map_elementwise",
    "max", "max_constancy", "max_contiguous", "maximum", "min", "minimum", "mul", "multiple_of",
    "num_programs", "pair_uniform_to_normal", "permute", "philox", "philox_impl", "pi32_t", "pointer_type",
    "program_id", "rand", "rand4x", "randint", "randint4x", "randn", "randn4x", "range", "ravel", "reduce",
    "reduce_or", "reshape", "rsqrt", "sigmoid", "sin", "slice", "softmax", "sort", "split", "sqrt",
    "sqrt_rn", "squeeze", "static_assert", "static_print", "static_range", "store",
    "store_tensor_descriptor", "str_to_ty", "sub", "sum", "swizzle2d", "tensor", "tensor_descriptor",
    "tensor_descriptor_type", "to_tensor", "topk", "trans", "tuple", "tuple_type", "uint16", "uint32",
    "uint64", "uint8", "uint_to_uniform_float", "umulhi", "unsqueeze", "view", "void", "where", "xor_sum",
    "zeros", "zeros_like",
)

# Exported by earlier Triton 3.x releases (the GPU machine's 3.6), dropped from 3.9's namespace.
TRITON_LANGUAGE_OLDER_NAMES = ("advance",)

TRITON_LANGUAGE_MATH_NAMES = (
    "abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log", "log2", "rsqrt",
    "sin", "sqrt", "sqrt_rn", "umulhi",
)

MATH_NAMES = (
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "comb", "copysign", "cos",
    "cosh", "degrees", "dist", "e", "erf", "erfc", "exp", "exp2", "expm1", "fabs", "factorial", "floor",
    "fmod", "frexp", "fsum", "gamma", "gcd", "hypot", "inf", "isclose", "isfinite", "isinf", "isnan",
    "isqrt", "lcm", "ldexp", "lgamma", "log", "log10", "log1p", "log2", "modf", "nan", "nextafter", "perm",
    "pi", "pow", "prod", "radians", "remainder", "sin", "sinh", "sqrt", "tan", "tanh", "tau", "trunc", "ulp",
)

# Type names only: not typing.sys and friends, nor get_type_hints / ForwardRef, which evaluate strings.
TYPING_NAMES = (
    "Annotated", "Any", "AnyStr", "Callable", "ClassVar", "Collection", "Dict", "Final", "FrozenSet",
    "Generator", "Generic", "Iterable", "Iterator", "List", "Literal", "Mapping", "MutableMapping",
    "MutableSequence", "NamedTuple", "NoReturn", "Optional", "Protocol", "Sequence", "Set", "TYPE_CHECKING",
    "Tuple", "Type", "TypeVar", "TypedDict", "Union", "cast", "final", "overload",
)

FUNCTOOLS_NAMES = ("cache", "cached_property", "lru_cache", "partial", "reduce", "wraps")

FUTURE_NAMES = ("annotations",)
