"""What a candidate may name through each allowed module: one sorted literal per module.

TRITON_LANGUAGE_NAMES is `dir(triton.language)` of Triton 3.9 without private names and submodules
(core, extra, math, random, standard, target_info reach os, subprocess and builtins). Names a given Triton
lacks are harmless here: the list only has to cover what candidates use and hold nothing that escapes;
tests/core/test_policy_walk.py checks the latter against the installed torch and triton.

LIBDEVICE_NAMES is every public function of `triton.language.extra.cuda.libdevice` of Triton 3.9 (197
elementwise math, rounding, conversion and bit functions), the names a kernel may call through it or through
`triton.language.extra.libdevice`, the backend-neutral stub that the CUDA backend maps onto it when it
compiles. Not `core` (triton.language.core, which reaches builtins), nor `fast_tanhf`, which only the stub and
HIP's module have. Nothing else under triton.language.extra is allowed: `cuda.utils`, `cuda.gdc` and `hip` are
not math, and the package's own attributes reach any module (`modules` is sys.modules; `pkgutil`).

Two more literals serve the rules on values: CLASS_PATHS, the allowed names that are classes (named only to
call them, in annotations and in isinstance(), never held), and TENSOR_METHODS, every public method of
torch.Tensor (in host code called where it is named, never held); the same test file checks both against the
installed torch and triton.
"""

# set_allocator: the global scratch memory that a kernel's device-side tensor descriptors (tl.make_tensor_descriptor)
# need, asked for at launch from the allocator it sets; a plain function that takes the candidate's own callable
# and holds it for the candidate's own launches, in the candidate's process. Nothing else of triton.runtime.
TRITON_NAMES = ("Config", "autotune", "cdiv", "heuristics", "jit", "language", "next_power_of_2", "set_allocator")

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

# The libdevice functions a kernel may call (Triton 3.9), as tl.extra.cuda.libdevice.<name> or
# tl.extra.libdevice.<name>; see the module docstring.
LIBDEVICE_NAMES = (
    "abs", "acos", "acosh", "add_rd", "add_rn", "add_ru", "add_rz", "asin", "asinh", "atan", "atan2", "atanh",
    "brev", "byte_perm", "cbrt", "ceil", "clz", "copysign", "cos", "cosh", "cospi", "cyl_bessel_i0",
    "cyl_bessel_i1", "div_rd", "div_rn", "div_ru", "div_rz", "double2float_rd", "double2float_rn",
    "double2float_ru", "double2float_rz", "double2hiint", "double2int_rd", "double2int_rn", "double2int_ru",
    "double2int_rz", "double2ll_rd", "double2ll_rn", "double2ll_ru", "double2ll_rz", "double2loint",
    "double2uint_rd", "double2uint_rn", "double2uint_ru", "double2uint_rz", "double2ull_rd", "double2ull_rn",
    "double2ull_ru", "double2ull_rz", "double_as_longlong", "erf", "erfc", "erfcinv", "erfcx", "erfinv", "exp",
    "exp10", "exp2", "expm1", "fast_cosf", "fast_dividef", "fast_exp10f", "fast_expf", "fast_log10f", "fast_log2f",
    "fast_logf", "fast_powf", "fast_sinf", "fast_tanf", "fdim", "ffs", "finitef", "float2int_rd", "float2int_rn",
    "float2int_ru", "float2int_rz", "float2ll_rd", "float2ll_rn", "float2ll_ru", "float2ll_rz", "float2uint_rd",
    "float2uint_rn", "float2uint_ru", "float2uint_rz", "float2ull_rd", "float2ull_rn", "float2ull_ru",
    "float2ull_rz", "float_as_int", "float_as_uint", "floor", "fma", "fma_rd", "fma_rn", "fma_ru", "fma_rz", "fmod",
    "hadd", "hiloint2double", "hypot", "ilogb", "int2double_rn", "int2float_rd", "int2float_rn", "int2float_ru",
    "int2float_rz", "int_as_float", "isfinited", "isinf", "isnan", "j0", "j1", "jn", "ldexp", "lgamma",
    "ll2double_rd", "ll2double_rn", "ll2double_ru", "ll2double_rz", "ll2float_rd", "ll2float_rn", "ll2float_ru",
    "ll2float_rz", "llrint", "llround", "log", "log10", "log1p", "log2", "logb", "longlong_as_double", "mul24",
    "mul_rd", "mul_rn", "mul_ru", "mul_rz", "mulhi", "nearbyint", "nextafter", "norm3d", "norm4d", "normcdf",
    "normcdfinv", "popc", "pow", "rcbrt", "rcp64h", "rcp_rd", "rcp_rn", "rcp_ru", "rcp_rz", "remainder", "rhadd",
    "rhypot", "rint", "rnorm3d", "rnorm4d", "round", "rsqrt", "rsqrt_rn", "sad", "saturatef", "scalbn", "signbit",
    "sin", "sinh", "sinpi", "sqrt", "sqrt_rd", "sqrt_rn", "sqrt_ru", "sqrt_rz", "sub_rd", "sub_rn", "sub_ru",
    "sub_rz", "tan", "tanh", "tgamma", "trunc", "uint2double_rn", "uint2float_rd", "uint2float_rn", "uint2float_ru",
    "uint2float_rz", "uint_as_float", "ull2double_rd", "ull2double_rn", "ull2double_ru", "ull2double_rz",
    "ull2float_rd", "ull2float_rn", "ull2float_ru", "ull2float_rz", "y0", "y1", "yn",
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

# Allowed names that are classes (torch 2.13, Triton 3.9); typing's are type expressions and stay free.
CLASS_PATHS = (
    "functools.cached_property", "functools.partial", "torch.Size", "torch.Tensor", "torch.device", "torch.dtype",
    "torch.finfo", "torch.iinfo", "triton.Config", "triton.language.PropagateNan", "triton.language.block_type",
    "triton.language.condition", "triton.language.const", "triton.language.constexpr",
    "triton.language.constexpr_type", "triton.language.dtype", "triton.language.pointer_type",
    "triton.language.range", "triton.language.slice", "triton.language.static_range", "triton.language.tensor",
    "triton.language.tensor_descriptor", "triton.language.tensor_descriptor_type", "triton.language.tuple",
    "triton.language.tuple_type",
)

# The public methods of torch.Tensor (torch 2.13): `dir(torch.Tensor)`, callables without a leading underscore.
TENSOR_METHODS = (
    "abs", "abs_", "absolute", "absolute_", "acos", "acos_", "acosh", "acosh_", "add", "add_", "addbmm",
    "addbmm_", "addcdiv", "addcdiv_", "addcmul", "addcmul_", "addmm", "addmm_", "addmv", "addmv_", "addr",
    "addr_", "adjoint", "all", "allclose", "amax", "amin", "aminmax", "angle", "any", "apply_", "arccos",
    "arccos_", "arccosh", "arccosh_", "arcsin", "arcsin_", "arcsinh", "arcsinh_", "arctan", "arctan2",
    "arctan2_", "arctan_", "arctanh", "arctanh_", "argmax", "argmin", "argsort", "argwhere", "as_strided",
    "as_strided_", "as_strided_scatter", "as_subclass", "asin", "asin_", "asinh", "asinh_", "atan", "atan2",
    "atan2_", "atan_", "atanh", "atanh_", "backward", "baddbmm", "baddbmm_", "bernoulli", "bernoulli_",
    "bfloat16", "bincount", "bitwise_and", "bitwise_and_", "bitwise_left_shift", "bitwise_left_shift_",
    "bitwise_not", "bitwise_not_", "bitwise_or", "bitwise_or_", "bitwise_right_shift", "bitwise_right_shift_",
    "bitwise_xor", "bitwise_xor_", "bmm", "bool", "broadcast_to", "byte", "cauchy_", "ccol_indices", "cdouble",
    "ceil", "ceil_", "cfloat", "chalf", "char", "cholesky", "cholesky_inverse", "cholesky_solve", "chunk",
    "clamp", "clamp_", "clamp_max", "clamp_max_", "clamp_min", "clamp_min_", "clip", "clip_", "clone",
    "coalesce", "col_indices", "conj", "conj_physical", "conj_physical_", "const_data_ptr", "contiguous",
    "copy_", "copysign", "copysign_", "corrcoef", "cos", "cos_", "cosh", "cosh_", "count_nonzero", "cov", "cpu",
    "cross", "crow_indices", "cuda", "cummax", "cummin", "cumprod", "cumprod_", "cumsum", "cumsum_", "data_ptr",
    "deg2rad", "deg2rad_", "dense_dim", "dequantize", "det", "detach", "detach_", "diag", "diag_embed",
    "diagflat", "diagonal", "diagonal_scatter", "diff", "digamma", "digamma_", "dim", "dim_order", "dist",
    "div", "div_", "divide", "divide_", "dot", "double", "dsplit", "eig", "element_size", "eq", "eq_", "equal",
    "erf", "erf_", "erfc", "erfc_", "erfinv", "erfinv_", "exp", "exp2", "exp2_", "exp_", "expand", "expand_as",
    "expm1", "expm1_", "exponential_", "fill_", "fill_diagonal_", "fix", "fix_", "flatten", "flip", "fliplr",
    "flipud", "float", "float_power", "float_power_", "floor", "floor_", "floor_divide", "floor_divide_",
    "fmax", "fmin", "fmod", "fmod_", "frac", "frac_", "frexp", "gather", "gcd", "gcd_", "ge", "ge_",
    "geometric_", "geqrf", "ger", "get_device", "greater", "greater_", "greater_equal", "greater_equal_", "gt",
    "gt_", "half", "hardshrink", "hash_tensor", "heaviside", "heaviside_", "histc", "histogram", "hsplit",
    "hypot", "hypot_", "i0", "i0_", "igamma", "igamma_", "igammac", "igammac_", "index", "index_add",
    "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_", "index_put", "index_put_",
    "index_reduce", "index_reduce_", "index_select", "indices", "inner", "int", "int_repr", "inverse", "ipu",
    "is_coalesced", "is_complex", "is_conj", "is_contiguous", "is_distributed", "is_floating_point",
    "is_inference", "is_neg", "is_nonzero", "is_pinned", "is_same_size", "is_set_to", "is_shared", "is_signed",
    "isclose", "isfinite", "isinf", "isnan", "isneginf", "isposinf", "isreal", "istft", "item", "kron",
    "kthvalue", "lcm", "lcm_", "ldexp", "ldexp_", "le", "le_", "lerp", "lerp_", "less", "less_", "less_equal",
    "less_equal_", "lgamma", "lgamma_", "log", "log10", "log10_", "log1p", "log1p_", "log2", "log2_", "log_",
    "log_normal_", "log_softmax", "logaddexp", "logaddexp2", "logcumsumexp", "logdet", "logical_and",
    "logical_and_", "logical_not", "logical_not_", "logical_or", "logical_or_", "logical_xor", "logical_xor_",
    "logit", "logit_", "logsumexp", "long", "lstsq", "lt", "lt_", "lu", "lu_solve", "map2_", "map_",
    "masked_fill", "masked_fill_", "masked_scatter", "masked_scatter_", "masked_select", "matmul", "matrix_exp",
    "matrix_power", "max", "maximum", "mean", "median", "min", "minimum", "mm", "mode", "module_load",
    "moveaxis", "movedim", "msort", "mtia", "mul", "mul_", "multinomial", "multiply", "multiply_", "mv",
    "mvlgamma", "mvlgamma_", "nan_to_num", "nan_to_num_", "nanmean", "nanmedian", "nanquantile", "nansum",
    "narrow", "narrow_copy", "ndimension", "ne", "ne_", "neg", "neg_", "negative", "negative_", "nelement",
    "new", "new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor", "new_zeros", "nextafter",
    "nextafter_", "nonzero", "nonzero_static", "norm", "normal_", "not_equal", "not_equal_", "numel", "numpy",
    "orgqr", "ormqr", "outer", "permute", "pin_memory", "pinverse", "polygamma", "polygamma_", "positive",
    "pow", "pow_", "prelu", "prod", "put", "put_", "q_per_channel_axis", "q_per_channel_scales",
    "q_per_channel_zero_points", "q_scale", "q_zero_point", "qr", "qscheme", "quantile", "rad2deg", "rad2deg_",
    "random_", "ravel", "reciprocal", "reciprocal_", "record_stream", "register_hook",
    "register_post_accumulate_grad_hook", "reinforce", "relu", "relu_", "remainder", "remainder_", "renorm",
    "renorm_", "repeat", "repeat_interleave", "requires_grad_", "reshape", "reshape_as", "resize", "resize_",
    "resize_as", "resize_as_", "resize_as_sparse_", "resolve_conj", "resolve_neg", "retain_grad", "roll",
    "rot90", "round", "round_", "row_indices", "rsqrt", "rsqrt_", "scatter", "scatter_", "scatter_add",
    "scatter_add_", "scatter_reduce", "scatter_reduce_", "select", "select_scatter", "set_", "sgn", "sgn_",
    "share_memory_", "short", "sigmoid", "sigmoid_", "sign", "sign_", "signbit", "sin", "sin_", "sinc", "sinc_",
    "sinh", "sinh_", "size", "slice_inverse", "slice_scatter", "slogdet", "smm", "softmax", "solve", "sort",
    "sparse_dim", "sparse_mask", "sparse_resize_", "sparse_resize_and_clear_", "split", "split_with_sizes",
    "sqrt", "sqrt_", "square", "square_", "squeeze", "squeeze_", "sspaddmm", "std", "stft", "storage",
    "storage_offset", "storage_type", "stride", "sub", "sub_", "subtract", "subtract_", "sum", "sum_to_size",
    "svd", "swapaxes", "swapaxes_", "swapdims", "swapdims_", "symeig", "t", "t_", "take", "take_along_dim",
    "tan", "tan_", "tanh", "tanh_", "tensor_split", "tile", "to", "to_dense", "to_mkldnn", "to_padded_tensor",
    "to_sparse", "to_sparse_bsc", "to_sparse_bsr", "to_sparse_coo", "to_sparse_csc", "to_sparse_csr", "tolist",
    "topk", "trace", "transpose", "transpose_", "triangular_solve", "tril", "tril_", "triu", "triu_",
    "true_divide", "true_divide_", "trunc", "trunc_", "type", "type_as", "unbind", "unflatten", "unfold",
    "uniform_", "unique", "unique_consecutive", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes",
    "unsqueeze", "unsqueeze_", "untyped_storage", "values", "var", "vdot", "view", "view_as", "vsplit", "where",
    "xlogy", "xlogy_", "xpu", "zero_",
)
