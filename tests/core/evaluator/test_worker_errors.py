"""What a side's failed call is reported as: the status and the one line a person reads."""

from __future__ import annotations

from triton.runtime.errors import PTXASError

from kernel_tui.core.evaluator.kernel_worker import classify

# Triton's PTXASError text (triton/backends/nvidia/compiler.py): a summary, ptxas's stderr, a repro command
PTXAS = ("`ptxas` failed with error code 255\n`ptxas` stderr:\n"
         "ptxas /tmp/tmpe0l6c57c.ptx, line 154; error   : Unknown modifier '.cg.L1::evict_first'\n"
         "ptxas fatal   : Ptx assembly aborted due to errors\n\n"
         "Repro command: /opt/triton/bin/ptxas -lineinfo -v --gpu-name=sm_90a /tmp/tmpe0l6c57c.ptx -o /tmp/x.o\n")


def test_a_kernel_ptxas_rejects_is_a_compile_error_reported_by_ptxas_own_error_line():
    status, reason = classify(PTXASError(PTXAS), "candidate.py", set(), interpreted=False)
    assert status == "compile_error"
    assert reason == "PTXASError: ptxas: line 154; error   : Unknown modifier '.cg.L1::evict_first'"


def test_without_an_error_line_the_summary_is_kept_and_never_the_repro_command():
    crash = "`ptxas` raised SIGSEGV\n`ptxas` stderr:\n\nRepro command: /opt/triton/bin/ptxas x.ptx\n"
    assert classify(PTXASError(crash), "candidate.py", set(), interpreted=False) == (
        "compile_error", "PTXASError: PTXAS error: `ptxas` raised SIGSEGV")


def test_a_python_error_keeps_its_last_line():
    assert classify(ValueError("context\nthe reason"), "candidate.py", set(), interpreted=False) == (
        "runtime_error", "ValueError: the reason")
