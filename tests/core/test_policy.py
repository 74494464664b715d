from __future__ import annotations

import pytest

from kernel_tui.core.policy import check_source
from kernel_tui.core.task import load_task
from tests.conftest import FIXTURE_NAMES, FIXTURES

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n"
KERNEL = """
@triton.jit
def k(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
"""
LAUNCH = "\ndef launch(x, y, output, n_elements):\n    k[(triton.cdiv(n_elements, 256),)](x, y, output, n_elements, BLOCK=256)\n"


def check(source: str):
    return check_source(
        source, entrypoint="launch", launch_arguments=["x", "y", "output", "n_elements"],
        tensor_arguments=["x", "y", "output"], max_source_chars=5000,
    )


def rules(source: str) -> set[str]:
    return {v.rule for v in check(source).violations}


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_fixture_baseline_passes(name):
    task = load_task(FIXTURES / name)
    spec = task.spec
    report = check_source(
        task.baseline_source, entrypoint=spec.entrypoint, launch_arguments=spec.launch_arguments,
        tensor_arguments=[t.name for t in spec.tensors if t.kind != "scalar"],
    )
    assert report.ok, report.summary()


def test_clean_candidate_passes():
    assert check(HEADER + KERNEL + LAUNCH).ok


@pytest.mark.parametrize(
    "extra, rule",
    [
        ("import os\n", "import-not-allowed"),
        ("import subprocess\n", "import-not-allowed"),
        ("from concurrent import futures\n", "import-not-allowed"),
        ("import time\n", "timer-access"),
        ("from triton.testing import do_bench\n", "timer-access"),
        ("from reference import reference\n", "reference-access"),
        ("X = open('reference.py').read()\n", "forbidden-builtin"),
        ("f = getattr(torch, 'add')\n", "forbidden-builtin"),
        ("m = __import__('os')\n", "forbidden-builtin"),
        ("c = ().__class__.__bases__\n", "dunder-access"),
        ("torch.cuda.Event.elapsed_time = lambda a, b: 1.0\n", "monkeypatch"),
        ("triton.jit = None\n", "monkeypatch"),
        ("S = torch.cuda.Stream()\n", "side-stream"),
        ("def helper(x, output):\n    torch.add(x, x, out=output)\n", "torch-compute"),
        ("def helper(x, output):\n    output.copy_(x)\n", "torch-compute"),
        ("def helper(x, output):\n    output[:] = x + x\n", "torch-compute"),
        ("def helper(x):\n    return x.sum()\n", "torch-compute"),
        ("def helper():\n    global CACHE\n    CACHE = 1\n", "monkeypatch"),
    ],
)
def test_rule_is_named(extra, rule):
    found = rules(HEADER + extra + KERNEL + LAUNCH)
    assert rule in found, found


def test_structure_rules():
    assert "entrypoint-missing" in rules(HEADER + KERNEL)
    assert "entrypoint-signature" in rules(HEADER + KERNEL + "\ndef launch(x, y, output):\n    k[(1,)](x, y, output, 1, BLOCK=256)\n")
    assert "no-triton-kernel" in rules(HEADER + "\ndef launch(x, y, output, n_elements):\n    pass\n")
    no_launch = HEADER + KERNEL + "\ndef launch(x, y, output, n_elements):\n    return None\n"
    assert "no-triton-kernel" in rules(no_launch)
    assert "source-size" in rules(HEADER + KERNEL + LAUNCH + "#" * 6000)


def test_syntax_error_is_reported_with_line():
    report = check(HEADER + "def launch(x, y, output, n_elements)\n    pass\n")
    assert not report.ok and report.syntax_error and "line 5" in report.syntax_error


def test_host_helper_that_launches_counts_and_kernel_code_is_free():
    src = HEADER + KERNEL + (
        "\ndef _go(x, y, output, n):\n    k[(triton.cdiv(n, 256),)](x, y, output, n, BLOCK=256)\n"
        "\ndef launch(x, y, output, n_elements):\n    tmp = torch.empty_like(output)\n    _go(x, y, output, n_elements)\n"
    )
    assert check(src).ok, check(src).summary()


def test_each_rejection_names_its_rule_and_line():
    report = check(HEADER + "import os\n" + KERNEL + LAUNCH)
    v = report.violations[0]
    assert v.rule == "import-not-allowed" and v.line == 5
    assert report.summary().startswith("import-not-allowed (line 5)")


# --- escape chains: patching through a held class, native memory, files, held methods ------------------------
@pytest.mark.parametrize(
    "extra, rule",
    [
        # patching a class or module, directly or through a variable that holds one
        ("T = torch.Tensor\nT.add = lambda a, b: a\n", "attribute-assignment"),
        ("T = torch.Tensor\n", "class-alias"),
        ("t = tl.tensor\nt.x = 1\n", "attribute-assignment"),
        ("t = tl.tensor\n", "class-alias"),
        ("from torch import Tensor\nT = Tensor\n", "class-alias"),
        ("def helper(T=torch.Tensor):\n    T.add = None\n", "attribute-assignment"),
        ("def helper(a):\n    return type(a)\n", "forbidden-builtin"),
        ("def helper():\n    return [torch.Tensor, triton.Config]\n", "class-alias"),
        ("class Mine(torch.Tensor):\n    pass\n", "class-alias"),
        ("def helper(a):\n    return isinstance(a, T := torch.Tensor) and T\n", "class-alias"),
        ("def helper(a):\n    a.add = None\n", "attribute-assignment"),
        ("def helper(a):\n    del a.add\n", "attribute-assignment"),
        ("def helper(a):\n    a.n += 1\n", "attribute-assignment"),
        ("def helper(a):\n    a.n: int = 1\n", "attribute-assignment"),
        ("def helper(a):\n    for a.add in [None]:\n        pass\n", "attribute-assignment"),
        ("def helper(a):\n    return [0 for a.add in [None]]\n", "attribute-assignment"),
        ("def helper():\n    (lambda: 0).x = 1\n", "attribute-assignment"),
        # numpy arrays (and anything else) reach ctypes through .ctypes
        ("def helper(a):\n    return a.ctypes\n", "native-access"),
        ("def helper(a):\n    return a.ctypes._ctypes\n", "native-access"),
        ("def helper(a):\n    return a._ctypes\n", "native-access"),
        ("def helper():\n    return _ctypes\n", "native-access"),
        ("def helper(a):\n    match a:\n        case object(ctypes=c):\n            return c\n", "native-access"),
        # tensors and storages built from files
        ("def helper(x):\n    return x.untyped_storage().from_file('w', True, 4)\n", "file-access"),
        ("def helper(s):\n    return s.from_file('w')\n", "file-access"),
        ("S = torch.UntypedStorage.from_file('w', True, 4)\n", "file-access"),
        ("t = torch.from_file('w')\n", "file-access"),
        ("m = torch.load('w')\n", "file-access"),
        ("torch.save(0, 'w')\n", "file-access"),
        ("from torch import load\n", "file-access"),
        # methods held as values escape the method-name checks
        ("def helper(x, output):\n    f = output.copy_\n    f(x)\n", "bound-method"),
        ("def helper(a):\n    g = a.numpy\n    return g()\n", "bound-method"),
        ("import functools\ndef helper(a):\n    return functools.partial(a.add, 1)\n", "bound-method"),
        ("def helper(a):\n    return a.untyped_storage\n", "bound-method"),
        ("T = torch.Tensor\nm = T.add\n", "bound-method"),
        ("def helper(a):\n    return a.max\n", "bound-method"),
        ("def helper(a):\n    fi = torch.finfo(a.dtype)\n    fi = a\n    return fi.max\n", "bound-method"),
    ],
)
def test_escape_chain_is_named(extra, rule):
    found = rules(HEADER + extra + KERNEL + LAUNCH)
    assert rule in found, found


@pytest.mark.parametrize(
    "extra, rule",
    [  # rejected before these rules existed; kept so they stay rejected
        ("torch.Tensor.add = lambda a, b: a\n", "monkeypatch"),
        ("tl.tensor.__add__ = lambda a, b: a\n", "dunder-access"),
        ("tl.load = None\n", "monkeypatch"),
        ("m = torch.Tensor.add\n", "attribute-not-allowed"),
        ("def helper(x):\n    x.data = None\n", "attribute-assignment"),
    ],
)
def test_patching_named_paths_stays_rejected(extra, rule):
    found = rules(HEADER + extra + KERNEL + LAUNCH)
    assert rule in found, found


def test_each_new_rule_says_what_to_do_in_one_line():
    src = HEADER + (
        "T = torch.Tensor\n"
        "def helper(a):\n    a.n = 1\n    b = a.ctypes\n    c = a.from_file\n    return a.copy_\n"
    ) + KERNEL + LAUNCH
    report = check(src)
    by_rule = {v.rule: v.message for v in report.violations}
    assert {"class-alias", "attribute-assignment", "native-access", "file-access", "bound-method"} <= set(by_rule)
    assert all("\n" not in m for m in by_rule.values())
    assert "annotation" in by_rule["class-alias"] and "local variable" in by_rule["attribute-assignment"]
    assert "kernel" in by_rule["native-access"] and "torch.empty" in by_rule["file-access"]
    assert "a.copy_(...)" in by_rule["bound-method"]


def test_legitimate_classes_methods_and_fields_pass():
    src = HEADER + "import functools\nimport typing\nfrom triton import Config\n" + KERNEL + (
        "\nMaybeTensor = typing.Optional[torch.Tensor]\n"
        "\n\n@triton.autotune(configs=[triton.Config({'BLOCK': 128}, num_warps=4)], key=['n'])"
        "\n@triton.jit\ndef tuned(x_ptr, n, BLOCK: tl.constexpr):\n    v = tl.load(x_ptr)\n"
        "    tl.store(x_ptr, v.to(x_ptr.dtype.element_ty))\n"
        "\n\ndef helper(a: torch.Tensor, d: torch.dtype = torch.float16) -> typing.Optional[torch.Tensor]:\n"
        "    cfg: typing.Optional[Config] = triton.Config({'BLOCK': 64})\n"
        "    if isinstance(a, (torch.Tensor, int)) and a.dtype.is_floating_point and a.device.type == 'cuda':\n"
        "        big = torch.finfo(a.dtype).max\n"
        "        fi = torch.finfo(d)\n"
        "        small, where = fi.min, a.device.index\n"
        "    dev = torch.device('cuda')\n"
        "    rows, cols = a.shape\n"
        "    return torch.empty(a.stride(0), a.T.shape[0], device=a.device, dtype=d)\n"
        "\n\ndef launch(x, y, output, n_elements):\n"
        "    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK']),)\n"
        "    go = functools.partial(k[grid], x, y)\n"
        "    go(output, n_elements, BLOCK=256)\n"
        "    tuned[grid](x, n_elements)\n"
    )
    report = check(src)
    assert report.ok, report.summary()


# --- libdevice: its functions through four spellings, nothing else under triton.language.extra ----------------
LIBDEVICE_KERNEL = """
@triton.jit
def k(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(o_ptr + offs, {lib}tanh(x) + {lib}erf(x) + {lib}exp2(x), mask=m)
"""


@pytest.mark.parametrize(
    "imports, lib",
    [
        ("from triton.language.extra import libdevice\n", "libdevice."),
        ("from triton.language.extra.cuda import libdevice\n", "libdevice."),
        ("", "tl.extra.cuda.libdevice."),
        ("", "tl.extra.libdevice."),
        # the same modules spelled otherwise
        ("import triton.language.extra.cuda.libdevice as ld\n", "ld."),
        ("from triton.language.extra.libdevice import tanh, erf, exp2\n", ""),
    ],
)
def test_libdevice_passes(imports, lib):
    report = check(HEADER + imports + LIBDEVICE_KERNEL.format(lib=lib) + LAUNCH)
    assert report.ok, report.summary()


@pytest.mark.parametrize(
    "expr, rule",
    [
        ("tl.extra.cuda.libdevice.os", "attribute-not-allowed"),
        ("tl.extra.libdevice.os.system", "attribute-not-allowed"),
        ("tl.extra.cuda.libdevice.core.builtins", "attribute-not-allowed"),
        ("tl.extra.cuda.libdevice.tanh.signature", "attribute-not-allowed"),
        ("tl.extra.cuda.libdevice.fast_tanhf(x)", "attribute-not-allowed"),
        ("tl.extra.cuda.utils.num_warps()", "attribute-not-allowed"),
        ("tl.extra.cuda.gdc_wait()", "attribute-not-allowed"),
        ("tl.extra.hip.libdevice.tanh(x)", "attribute-not-allowed"),
        ("tl.extra.modules['os']", "attribute-not-allowed"),
        ("tl.extra.pkgutil", "attribute-not-allowed"),
        ("libdevice.core", "attribute-not-allowed"),
        ("libdevice.__dict__", "dunder-access"),
        ("tl.extra.cuda.libdevice.__spec__", "dunder-access"),
        ("libdevice", "module-alias"),
        ("tl.extra.cuda", "module-alias"),
        ("[tl.extra.libdevice]", "module-alias"),
    ],
)
def test_libdevice_escape_is_named(expr, rule):
    imports = "from triton.language.extra.cuda import libdevice\n"
    kernel = LIBDEVICE_KERNEL.format(lib="libdevice.")
    in_kernel = kernel.replace("libdevice.tanh(x)", f"({expr})")
    in_host = kernel + f"\ndef helper():\n    return {expr}\n"
    for source in (HEADER + imports + in_kernel + LAUNCH, HEADER + imports + in_host + LAUNCH):
        assert rule in rules(source), check(source).summary()


@pytest.mark.parametrize(
    "extra, rule",
    [
        ("import triton.language.extra\n", "import-not-allowed"),
        ("import triton.language.extra.cuda as cuda\n", "import-not-allowed"),
        ("import triton.language.extra.cuda.utils\n", "import-not-allowed"),
        ("from triton.language.extra import cuda\n", "import-not-allowed"),
        ("from triton.language.extra import pkgutil\n", "import-not-allowed"),
        ("from triton.language.extra.cuda import utils\n", "import-not-allowed"),
        ("from triton.language.extra.hip import libdevice\n", "import-not-allowed"),
        ("from triton.language.extra.cuda.libdevice import core\n", "attribute-not-allowed"),
        ("from triton.language.extra.libdevice import os\n", "attribute-not-allowed"),
        ("from triton.language.extra import libdevice\nlibdevice.tanh = None\n", "monkeypatch"),
        ("from triton.language.extra import libdevice\nL = libdevice\n", "module-alias"),
        ("from triton.language.extra import libdevice\nlibdevice = 0\n", "module-alias"),
    ],
)
def test_libdevice_import_escape_is_named(extra, rule):
    found = rules(HEADER + extra + KERNEL + LAUNCH)
    assert rule in found, found


def test_libdevice_refusals_say_what_to_use():
    report = check(HEADER + "from triton.language.extra.cuda import libdevice\n" + KERNEL + LAUNCH
                   + "\ndef helper():\n    return libdevice.core, tl.extra.cuda.utils\n")
    messages = [v.message for v in report.violations]
    assert len(messages) == 2 and all("libdevice.tanh" in m for m in messages), messages
