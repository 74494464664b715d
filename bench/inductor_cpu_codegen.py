"""Generate torch.compile's output code for small tasks on a machine without a GPU: test data for the rewrite
of Inductor's kernels into a task's Triton start (kernel_tui/core/inductor).

    python bench/inductorcpu_codegen.py TASK_DIR [TASK_DIR ...] [--static]

Each task's reference is compiled with `torch.compile(dynamic=True)` (or static shapes with --static), called
with the task's launch arguments in order at its first interpreter shape. Inductor's CPU backend is switched to
Triton (`torch._inductor.config.cpu_backend = "triton"`), so it writes the same kind of Triton kernels and
wrapper it writes for a GPU, marked for the CPU driver. Two patches make that work without a GPU:
`torch.utils._triton.triton_hash_with_backend` is stubbed (it asks the active GPU backend for a hash) and
`GraphLowering.compile_to_module` is replaced by one that keeps the wrapper's source and stops before anything
is compiled. Caches are off so that every run generates the code again.

Writes TASK_DIR/inductor.dynamic.py (or inductor.static.py) and, beside it, a JSON of the graph's placeholders
in terms of the task (`placeholders`: for each tensor placeholder the task argument it is; the rewrite derives
the size symbols itself). Recorded with torch 2.13.0+cpu and Triton 3.9. GPU recordings by
bench/record_inductor.py (CUDA, autotuned configs in STEM.configs.json) replace these where they exist.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def generate(task_dir: Path, dynamic: bool) -> tuple[str, list[str]]:
    """The wrapper module Inductor writes for the task's reference, and the task tensors its placeholders are."""
    import torch

    from kernel_tui.core.evaluator.harness import ArgumentSet, load_module
    from kernel_tui.core.inductor.capture import cpu_codegen
    from kernel_tui.core.task import load_spec

    spec = load_spec(task_dir / "task.json")
    shape = next(s for s in spec.correctness.shapes if s.interpreter)
    arguments = ArgumentSet.build(spec, dict(shape.dims), "cpu", seed=0)
    with tempfile.TemporaryDirectory() as scratch:
        module = load_module((task_dir / spec.reference.filename).read_text(), Path(scratch), "reference")
    reference = getattr(module, spec.reference.entrypoint)
    torch._dynamo.reset()
    codes = cpu_codegen(torch.compile(reference, dynamic=dynamic, fullgraph=True), arguments.args())
    if not codes:
        raise RuntimeError(f"{task_dir.name}: no code generated")
    # the reference reads its inputs, never its outputs: the tensor placeholders are the inputs, in order
    tensors = [t.name for t in spec.tensors if t.kind == "input"]
    order = [a for a in spec.launch_arguments if a in tensors]
    return codes[0], order


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", type=Path, nargs="+")
    ap.add_argument("--static", action="store_true", help="static shapes: sizes are literals in the kernels")
    args = ap.parse_args()
    kind = "static" if args.static else "dynamic"
    for task_dir in args.tasks:
        code, placeholders = generate(task_dir, dynamic=not args.static)
        (task_dir / f"inductor.{kind}.py").write_text(code, encoding="utf-8")
        (task_dir / f"inductor.{kind}.json").write_text(json.dumps({"placeholders": placeholders}) + "\n")
        print(f"{task_dir.name}: {kind}, {code.count('@triton.jit')} kernels", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
