"""The files of an imported task: reference.py, inputs.py, baseline.py (self-contained), task.json.

Each Python file starts with the problem's source, unchanged, then adds its own `_kt_` names: the
dimension setter, and the wrapper that speaks in launch arguments. The directory is written under a
temporary name and renamed into place, so a failed import leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_tui.core.errors import TaskError


@dataclass(frozen=True)
class Layout:
    """Where each kind of value sits among the launch arguments."""

    forward: list[str]  # forward's argument names (tensors and scalars), in order
    state: list[str]  # state_dict names
    buffers: list[str]  # those of them that are buffers (forward may update them: train-mode norms)
    outputs: int
    dims: list[str]
    dtype: str  # torch dtype name of the precision
    tuple_output: bool
    seed_forward: bool  # forward draws random numbers (dropout): seed it so the answer is repeatable
    names: list[str]  # the launch names of forward's arguments and of the state, in that order


def _compile_target(layout: Layout) -> str:
    """`compile_target`, what start-from-inductor compiles: Dynamo cannot trace the model's construction (its
    cache is keyed by sorted dimensions), and names a graph input by the parameter it came in as."""
    n_forward = len(layout.forward)
    forward, state = layout.names[:n_forward], layout.names[n_forward:]
    params = ", ".join(layout.names)
    tup = lambda names: "(" + "".join(f"{x}, " for x in names) + ")"  # noqa: E731 - a one-element tuple too
    seeded = ('    raise ValueError("forward draws random numbers: torch.compile\'s random stream is not eager\'s")\n'
              if layout.seed_forward else "")
    return f'''

def compile_target(*args):
    """For torch.compile (start-from-inductor): the Model for these launch arguments, built here, outside what
    is compiled, and a function of the arguments forward reads, by their launch names; with those arguments."""
{seeded}    n = len(_KT_FORWARD) + len(_KT_STATE)
    dims = dict(zip(_KT_DIMENSIONS, (int(d) for d in args[n + _KT_OUTPUTS :])))
    device = next((a.device for a in args if isinstance(a, _kt_torch.Tensor)), _kt_torch.device("cpu"))
    model = _kt_model(dims, device)

    def forward({params}):
        values = dict(zip(_KT_STATE, {tup(state)}))
        values = {{k: (t.clone() if k in _KT_BUFFERS else t) for k, t in values.items()}}
        with _kt_torch.no_grad():
            result = _kt_functional_call(model, values, {tup(forward)})
        return tuple(result) if _KT_TUPLE else result

    return forward, list(args[:n])
'''


def _header(problem_name: str, what: str) -> str:
    return f"# {what} for KernelBench problem {problem_name}: the problem's source, unchanged, then the task's wrapper.\n\n"


def _common(layout: Layout, setter: str) -> str:
    return f'''

# --- kernel-tui: launch arguments -> the problem's Model -------------------------------------------------
import torch as _kt_torch
from torch.func import functional_call as _kt_functional_call

_KT_FORWARD = {layout.forward!r}
_KT_STATE = {layout.state!r}
_KT_BUFFERS = {set(layout.buffers) or "set()"!s}
_KT_OUTPUTS = {layout.outputs}
_KT_DIMENSIONS = {layout.dims!r}
_KT_DTYPE = _kt_torch.{layout.dtype}
_KT_TUPLE = {layout.tuple_output}
_KT_SEED_FORWARD = {layout.seed_forward}
_kt_models: dict = {{}}


{setter}

def _kt_model(dims, device):
    """The problem's own Model for these dimensions, built once per (init arguments, device)."""
    _kt_set_dimensions(dims)
    init = get_init_inputs()
    key = (tuple(sorted(dims.items())), repr(init), str(device))
    model = _kt_models.get(key)
    if model is None:
        _kt_torch.manual_seed(0)  # plain tensor attributes are then the same on every call
        with _kt_torch.device(device):
            model = Model(*init)
        model = model.to(device=device, dtype=_KT_DTYPE)
        for module in model.modules():  # tensors that are neither parameters nor buffers
            for name, value in list(vars(module).items()):
                if isinstance(value, _kt_torch.Tensor):
                    cast = _KT_DTYPE if value.is_floating_point() else value.dtype
                    setattr(module, name, value.to(device=device, dtype=cast))
        _kt_models[key] = model
    return model


def reference(*args):
    n_forward, n_state = len(_KT_FORWARD), len(_KT_STATE)
    forward = args[:n_forward]
    state = args[n_forward : n_forward + n_state]
    dims = dict(zip(_KT_DIMENSIONS, (int(d) for d in args[n_forward + n_state + _KT_OUTPUTS :])))
    device = next((a.device for a in args if isinstance(a, _kt_torch.Tensor)), _kt_torch.device("cpu"))
    model = _kt_model(dims, device)
    # buffers are copied: a train-mode norm updates its running statistics in place
    values = {{n: (t.clone() if n in _KT_BUFFERS else t) for n, t in zip(_KT_STATE, state)}}
    if _KT_SEED_FORWARD:
        _kt_torch.manual_seed(0)
    with _kt_torch.no_grad():
        result = _kt_functional_call(model, values, tuple(forward))
    return tuple(result) if _KT_TUPLE else result
'''


def reference_source(problem_text: str, problem_name: str, layout: Layout, setter: str) -> str:
    return (_header(problem_name, "Reference") + problem_text.rstrip() + "\n" + _common(layout, setter)
            + _compile_target(layout))


def inputs_source(problem_text: str, problem_name: str, layout: Layout, setter: str) -> str:
    return reference_source(problem_text, problem_name, layout, setter).replace(
        _header(problem_name, "Reference"), _header(problem_name, "Inputs"), 1) + '''

def make_inputs(dims, seed, device):
    """The problem's own get_inputs at these dimensions (structured inputs stay exactly the problem's)."""
    _kt_set_dimensions(dims)
    _kt_torch.manual_seed(seed)
    with _kt_torch.device(device):
        values = list(get_inputs())
    return {name: value for name, value in zip(_KT_FORWARD, values) if isinstance(value, _kt_torch.Tensor)}
'''


def baseline_source(problem_text: str, problem_name: str, layout: Layout, setter: str) -> str:
    return reference_source(problem_text, problem_name, layout, setter).replace(
        _header(problem_name, "Reference"), _header(problem_name, "PyTorch eager baseline"), 1) + '''

def launch(*args):
    """Eager PyTorch as a user calls it: the reference's own results, returned. The evaluator copies them into
    the output arguments after the timed region (a Triton candidate writes its outputs itself)."""
    return reference(*args)
'''


def write_task(out: Path, files: dict[str, str], spec: dict[str, Any], force: bool) -> None:
    """Write the task directory atomically: a temporary sibling renamed into place."""
    out = Path(out)
    if out.exists() and not force:
        raise TaskError(f"{out}: already exists (pass --force to replace it)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        (tmp / "task.json").write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
        if out.exists():
            old = out.with_name(f".{out.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise TaskError(f"{out}: cannot write the task: {exc}") from None
