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
