"""The child process that asks torch.compile for a task's kernels: compiles the task's reference with Inductor
at one shape, with symbolic sizes, and writes what it generated as JSON. Imports torch; run it by
`start.capture` in a process of its own (a compile can crash or hang; the caller never imports torch).

    python -I -m kernel_tui.core.inductor.capture TASK_DIR --device cuda|cpu --out FILE.json

On a GPU, Inductor's own API (`torch._inductor.utils.run_and_get_code`) with `max_autotune` and Triton GEMM
templates (`max_autotune_gemm_backends="TRITON"`, so that a GEMM is Triton rather than a cuBLAS call where
Inductor can), and the configuration each autotuner kept. On the CPU, Inductor's Triton backend for the CPU
(`cpu_backend="triton"`) writes the same kind of kernels; its code is taken before anything is compiled (the
interpreter then runs the rewritten kernels), and no configuration is kept: the rewrite's defaults apply.

The graph's arguments are named from Dynamo's own record of where each came from (`grapharg.source`: a
launch argument, or a size of one), not guessed from shapes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import traceback
from pathlib import Path
from unittest import mock

_SOURCE = re.compile(r"^L\['(\w+)'\](?:\.size\(\)\[(\d+)\])?$")


class _Captured(Exception):
    """Raised by the patched compile step on the CPU once the wrapper's source is in hand."""


def placeholder_name(source: str) -> str:
    """Dynamo's name of a graph argument's origin as the task's launch sees it: L['x'] -> x,
    L['x'].size()[1] -> x.shape[1]; anything else (a global, an attribute) is refused by the caller."""
    m = _SOURCE.match(source)
    if m is None:
        return f"?{source}"
    return m.group(1) if m.group(2) is None else f"{m.group(1)}.shape[{m.group(2)}]"


def _source_name(source) -> str:
    name = source.name  # a method in older torch, a property in newer
    return name() if callable(name) else str(name)


def kept_configs() -> dict:
    """Per Triton kernel of every module Inductor loaded in this process: the configs offered, the one kept."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    def as_dict(cfg) -> dict:
        return {"kwargs": dict(cfg.kwargs), "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}

    found = {}
    for module in list(PyCodeCache.modules):
        for name, value in vars(module).items():
            if isinstance(value, CachingAutotuner):
                # a template's autotuner carries no configs (its constants are in its source), and one never
                # launched has no launchers yet
                found[name] = {"offered": [as_dict(c) for c in value.configs or []],
                               "kept": [as_dict(launcher.config) for launcher in value.launchers or []]}
    return found


def capture(task_dir: Path, device: str) -> dict:
    import torch
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx

    from kernel_tui.core.evaluator.harness import ArgumentSet, load_module
    from kernel_tui.core.task import load_spec

    spec = load_spec(task_dir / "task.json")
    shape = spec.timing_shape("cuda" if device == "cuda" else "cpu")
    arguments = ArgumentSet.build(spec, dict(shape.dims), device, seed=0)
    with tempfile.TemporaryDirectory() as scratch:
        module = load_module((task_dir / spec.reference.filename).read_text(encoding="utf-8"), Path(scratch),
                             "reference")
    # a reference may say what to compile (an imported KernelBench problem builds its Model outside the graph)
    target = getattr(module, "compile_target", None)
    reference, call_args = (target(*arguments.args()) if callable(target)
                            else (getattr(module, spec.reference.entrypoint), arguments.args()))
    placeholders: list[str] = []

    def backend(gm, example_inputs):
        placeholders[:] = [placeholder_name(_source_name(n.meta["grapharg"].source)) if "grapharg" in n.meta else "?"
                           for n in gm.graph.nodes if n.op == "placeholder"]
        return compile_fx(gm, example_inputs)

    torch._dynamo.reset()
    # a model's float attributes (a scale, a slope) are constants of the task, not graph inputs,
    torch._dynamo.config.specialize_float = True
    # and so are its int attributes (a reduction's dim): tensor sizes stay symbolic (dynamic=True) regardless
    torch._dynamo.config.specialize_int = True
    # two sizes equal at the capture's shape are two symbols still (in_features == out_features, say)
    torch.fx.experimental._config.use_duck_shape = False
    compiled = torch.compile(reference, backend=backend, dynamic=True, fullgraph=True)
    if device == "cuda":
        from torch._inductor.utils import run_and_get_code

        settings = {"max_autotune": True, "max_autotune_gemm_backends": "TRITON"}
        with torch.no_grad(), inductor_config.patch(settings):
            _, codes = run_and_get_code(compiled, *call_args)
        configs = kept_configs()
    else:
        codes, configs = cpu_codegen(compiled, call_args), {}
    return {"code": codes[0] if codes else "", "modules": len(codes), "placeholders": placeholders,
            "configs": configs, "torch": torch.__version__.split("+")[0], "shape": shape.name,
            "device_name": torch.cuda.get_device_name() if device == "cuda" else "CPU (Triton's CPU backend)"}


def cpu_codegen(compiled, args: list) -> list[str]:
    """Inductor's wrapper for the CPU Triton backend, taken before any compile: the backend's hash asks the
    active GPU driver (there is none), and the kernels are for the interpreter, which compiles nothing."""
    import torch._inductor.config as inductor_config
    import torch.utils._triton as triton_utils
    from torch._inductor.graph import GraphLowering

    codes: list[str] = []

    def keep_source(self):
        codes.append(self.codegen()[0].value)
        raise _Captured

    settings = {"cpu_backend": "triton", "force_disable_caches": True, "fx_graph_cache": False}
    with mock.patch.object(triton_utils, "triton_hash_with_backend", lambda: "cpu"), \
            inductor_config.patch(settings), mock.patch.object(GraphLowering, "compile_to_module", keep_source):
        try:
            compiled(*args)
        except Exception:  # Dynamo wraps _Captured: the code, when there is any, is what counts
            if not codes:
                raise
    return codes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", type=Path)
    ap.add_argument("--device", choices=["cuda", "cpu"], required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    try:
        result = capture(args.task, args.device)
    except Exception as exc:  # noqa: BLE001 - one line back to the caller, the traceback to stderr
        traceback.print_exc()
        last = str(exc).strip().splitlines()
        result = {"error": f"{type(exc).__name__}: {last[0] if last else ''}"[:300]}
    args.out.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
