"""The PyTorch sides of the score as launch sources the harness times like any incumbent.

Each is the task's reference source, unchanged, followed by a launch that calls the reference (eager, or
through torch.compile) and returns its results, allocated by the reference itself, as a user's call would:
the evaluator copies them into the output tensors after the timed region (the suite names these sources as
returning ones), then checks them as it checks the kernel they are compared with. The copy a user never
makes is not timed (measured on an H200: it doubled eager's time for elementwise ops).

The harness watches host torch calls with a TorchFunctionMode on both sides of a timed call. The PyTorch
sides are exempt from that policy, and the mode would otherwise cost eager a Python hook per op and break
torch.compile's graph at every op (measured: 3 graph breaks for a 4-op function, against none without
it), so the launch steps outside the mode stack for the call and restores it after.
"""

from __future__ import annotations

from kernel_tui.core.suite.models import SIDE_LABELS, Side
from kernel_tui.core.task import Task

_COMPILE = '''
import os as _kt_os

# one compile thread (no worker pool: compiles stay in this process and the compilers it runs), and Inductor's
# caches (the compiled graph, its autotuning) beside this side's own Triton cache, a folder only this side's
# workers may write that outlives the process: the scoring's second and third fresh processes load the graph
# instead of compiling it again (three full compiles were 80 s of a problem's 3 minutes on an H200)
_kt_os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
_kt_os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", _kt_os.path.join(
    _kt_os.environ.get("TRITON_CACHE_DIR") or _kt_os.getcwd(), "inductor"))
import torch._inductor.config as _kt_inductor_config
import torch._dynamo.repro.after_aot as _kt_after_aot

# Inductor heads the repro text of every graph with `nvcc --version`, and only a missing nvcc is caught:
# the sandbox's refusal to run it (PermissionError) failed every compile. The comment is not needed.
_kt_after_aot._cuda_system_info_comment = lambda: "# CUDA toolkit version not queried inside the sandbox\\n"

_kt_inductor_config.compile_threads = 1
_kt_reference = _kt_torch.compile(_kt_reference)
'''

_LAUNCH = '''

def _kt_launch(*args):
    modes = [_kt_torch._C._pop_torch_function_stack() for _ in range(_kt_torch._C._len_torch_function_stack())]
    try:
        results = _kt_reference(*args)
    except Exception as exc:  # one line that names the cause (the worker reports a message's last line)
        lines = [line for line in str(exc).splitlines() if line.strip()]
        raise RuntimeError(f"{{_kt_side}} failed: {{type(exc).__name__}}: {{lines[0] if lines else ''}}") from None
    finally:
        for mode in reversed(modes):
            _kt_torch._C._push_on_torch_function_stack(mode)
    return results


{entrypoint} = _kt_launch
'''


def pytorch_source(task: Task, side: Side) -> str:
    """The launch source of the eager or torch.compile side for `task`."""
    spec = task.spec
    parts = [
        task.reference_source.rstrip("\n"),
        "",
        "",
        f"# --- kernel-tui suite: the reference above as a launch ({side}) ---",
        "import torch as _kt_torch",
        "",
        f"_kt_reference = {spec.reference.entrypoint}",
        f"_kt_side = {SIDE_LABELS[side]!r}",
    ]
    if side == "compile":
        parts.append(_COMPILE)
    parts.append(_LAUNCH.format(entrypoint=spec.entrypoint))
    return "\n".join(parts)
