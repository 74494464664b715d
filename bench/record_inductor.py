"""Record what torch.compile writes for KernelBench problems, on a GPU: the generated modules, as test data
for the rewrite of Inductor's kernels into a task's Triton start (run on the CPU later, without a GPU).

    python bench/record_inductor.py --kernelbench .kernelbench --out DIR [--problems STEM ...] [--dynamic] \
        [--levels 1,2] [--budget SECONDS] [--per-problem SECONDS] [--no-autotune]

Each problem is compiled in a process of its own (a hang or a crash costs that problem only) with Inductor's
own API, `torch._inductor.utils.run_and_get_code`, and `max_autotune` with `max_autotune_gemm_backends="TRITON"`
(so that GEMMs are Triton templates rather than extern cuBLAS calls, where Inductor can). For each problem
DIR/STEM.py holds the generated modules (joined, each headed by a comment with its index) and
DIR/manifest.json a line per problem: status, seconds, the number of Triton kernels, the extern calls left,
the versions and the device. Problems already in the manifest are skipped: run it again to go on.

The generated code does not say which of a kernel's configurations its autotuner picked (a pointwise or
reduction kernel carries a list; the launcher chooses at the first call): DIR/STEM.configs.json holds, per
kernel of the loaded modules, the configurations offered and the one each launcher kept, the literals a Triton
start writes down. `--dynamic` compiles with symbolic shapes (`torch.compile(dynamic=True)`): kernels and
wrapper then take the sizes as arguments, which a task with several shapes needs; its files are
STEM.dynamic.py and STEM.dynamic.configs.json, its manifest key ends in ":dynamic".
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import time
from pathlib import Path

EXTERN = re.compile(r"\bextern_kernels\.(\w+)")


def kernel_counts(code: str) -> dict:
    """What a generated module holds: its Triton kernels and the calls it leaves to other libraries."""
    return {"triton_kernels": len(re.findall(r"^@triton\.jit", code, flags=re.M)),
            "extern_calls": sorted(set(EXTERN.findall(code)))}


def problems(root: Path, levels: list[str], stems: list[str] | None) -> list[Path]:
    found = sorted(p for level in levels for p in (root / f"level{level}").glob("*.py"))
    if stems:
        found = [p for p in found if p.stem in stems]
    return found


def record_one(problem: Path, out: Path, autotune: bool, dynamic: bool = False) -> dict:
    """In this process: compile the problem's model on the GPU and write what Inductor generated."""
    import torch
    import torch._inductor.config as inductor_config
    from torch._inductor.utils import run_and_get_code

    spec = importlib.util.spec_from_file_location(f"kb_{problem.stem}", problem)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Model(*module.get_init_inputs()).cuda().eval()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    settings = {"max_autotune": True, "max_autotune_gemm_backends": "TRITON"} if autotune else {}
    with torch.no_grad(), inductor_config.patch(settings):
        _, codes = run_and_get_code(torch.compile(model, dynamic=dynamic or None), *inputs)
    header = (f"# torch.compile of KernelBench {problem.parent.name}/{problem.name}: torch {torch.__version__}, "
              f"{torch.cuda.get_device_name()}, {'max_autotune (Triton GEMMs)' if autotune else 'default'}"
              f"{', dynamic shapes' if dynamic else ''}; inputs "
              f"{[tuple(x.shape) if isinstance(x, torch.Tensor) else x for x in inputs]}\n")
    text = header + "".join(f"\n# --- generated module {i} ---\n{code}" for i, code in enumerate(codes))
    stem = problem.stem + (".dynamic" if dynamic else "")
    (out / f"{stem}.py").write_text(text, encoding="utf-8")
    from kernel_tui.core.inductor.capture import kept_configs

    (out / f"{stem}.configs.json").write_text(json.dumps(kept_configs(), indent=1, default=str) + "\n")
    import triton

    return {"modules": len(codes), **kernel_counts("\n".join(codes)), "torch": torch.__version__,
            "triton": triton.__version__, "device": torch.cuda.get_device_name(), "autotune": autotune, "dynamic": dynamic}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernelbench", type=Path, default=Path(".kernelbench"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--problems", nargs="*")
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--budget", type=float, default=540)
    ap.add_argument("--per-problem", type=float, default=150)
    ap.add_argument("--no-autotune", action="store_true")
    ap.add_argument("--dynamic", action="store_true", help="symbolic shapes: sizes become arguments")
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # the child: one problem, its line on stdout
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.one is not None:
        print(json.dumps(record_one(args.one, args.out, not args.no_autotune, args.dynamic)))
        return 0
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    end = time.monotonic() + args.budget
    for problem in problems(args.kernelbench, args.levels.split(","), args.problems):
        key = f"{problem.parent.name}/{problem.stem}" + (":dynamic" if args.dynamic else "")
        if key in manifest:
            continue
        left = end - time.monotonic()
        if left < 20:
            print(f"budget spent: run again to go on ({len(manifest)} recorded)", flush=True)
            break
        t0 = time.monotonic()
        cmd = [sys.executable, __file__, "--out", str(args.out), "--one", str(problem)]
        cmd += ["--no-autotune"] if args.no_autotune else []
        cmd += ["--dynamic"] if args.dynamic else []
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=min(args.per_problem, left))
            last = (done.stdout.strip().splitlines() or [""])[-1]
            entry = json.loads(last) if done.returncode == 0 and last.startswith("{") else {
                "status": "failed", "reason": ((done.stderr.strip().splitlines() or ["no output"])[-1])[:300]}
            entry.setdefault("status", "ok")
        except subprocess.TimeoutExpired:
            entry = {"status": "timeout", "reason": f"over {min(args.per_problem, left):.0f} s"}
        entry["seconds"] = round(time.monotonic() - t0, 1)
        manifest[key] = entry
        manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        print(f"{key}: {entry['status']} in {entry['seconds']} s "
              f"{entry.get('triton_kernels', '')} {entry.get('extern_calls', entry.get('reason', ''))}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
