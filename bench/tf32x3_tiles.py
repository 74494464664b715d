"""Where the tensor cores pay on Inductor's fp32 GEMM start: tf32x3 across tiles, warps and stages.

Two measurements disagree. On an H100 the search's `input_precision ieee → tf32x3` lost −22.8% on L1-1's
Inductor start (its 128×128×32 tile, 8 warps, 3 stages; bench/results/2026-12-07-h100-inductor-suite-fresh),
while a hand-written tf32x3 GEMM (bench/kernelbench/candidates/tf32x3, autotuned over five tiles) beat fp32
cuBLAS 1.84× on L1-17's main shape on an H200 (bench/results/2026-12-02-h200-fair). Compiled for sm_90 on the
CPU with Triton 3.6's ptxas, the two kernels come out alike at 128×128×32: three wgmma products per K step,
each waited for before the next. So the tile, the warps and the operand layout are what is left to explain it:
L1-17 computes A·Bᵀ, whose B is K-major as TF32 wgmma wants it; L1-1's B is not. On L1-17, Inductor's start
runs at 0.51x of eager, and the search never proposed tf32x3 there: the start sits at the 255-register cap, and
the ranking holds tf32x3 back from a full incumbent until a move frees registers (none was accepted).

This times, at each task's benchmark shape, Inductor's start as it was imported
(`bench/candidates/kernelbench_inductor_starts/`, written by `import kernelbench --start inductor` on an H100,
torch 2.11), the same kernel with tf32x3 over a grid of
tiles, warps and stages, and PyTorch's own call (cuBLAS), with `triton.testing.do_bench` (median, L2 cleared
before each call). Each variant is the start's text with its constants and launch keywords changed, as the
search would write it; its error against an fp64 product is recorded beside its time. Results go to OUT as JSON
lines, one per variant, written as they come: a second run with the same OUT skips what is there.

    python bench/tf32x3_tiles.py OUT.jsonl [--case l1_1|l1_17] [--limit SECONDS]
    python bench/tf32x3_tiles.py OUT.jsonl --smoke      # Triton's CPU interpreter, small shapes, two variants
    python bench/tf32x3_tiles.py OUT.jsonl --compile-only   # no GPU: each variant compiled for sm_90 (H100/H200)

--compile-only needs no GPU: Triton compiles each variant for sm_90 with the ptxas it ships, and the row holds
what the compiler reports (registers per thread, the stack frame that spills go to, shared memory, and
whether that fits the 227 KiB a block may have on sm_90) and the PTX's counts of wgmma
products, waits for them, cp.async copies and FMAs, or the compile error (a tile that needs more shared memory
than an SM has). It tells which variants are worth GPU time; it times nothing.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

STARTS = Path(__file__).resolve().parent / "candidates" / "kernelbench_inductor_starts"
TILES = [(128, 128, 32), (128, 128, 64), (128, 256, 32), (256, 128, 32), (64, 128, 32), (128, 64, 32),
         (64, 256, 32), (64, 128, 64)]
WARPS = (4, 8)
STAGES = (3, 4)
SHARED_PER_BLOCK = 232448  # bytes a block may opt in to on sm_90 (H100, H200): 227 KiB


@dataclass(frozen=True)
class Case:
    name: str
    start: str  # file under bench/candidates/kernelbench_inductor_starts
    dims: dict[str, int]  # the task's benchmark shape
    smoke: dict[str, int]


CASES = {
    "l1_1": Case("l1_1", "l1_1_square.py", {"N": 4096}, {"N": 64}),
    "l1_17": Case("l1_17", "l1_17_transposed_b.py", {"M": 2048, "K": 8192, "N": 4096},
                  {"M": 64, "K": 96, "N": 32}),
}


@dataclass(frozen=True)
class Variant:
    precision: str
    tile: tuple[int, int, int]
    warps: int
    stages: int

    @property
    def key(self) -> str:
        m, n, k = self.tile
        return f"{self.precision} {m}x{n}x{k} w{self.warps} s{self.stages}"


def start_variant(source: str) -> Variant:
    """The start's own precision, tile, warps and stages, read from its text."""
    sizes = [re.search(rf"^BLOCK_{d}_0 = (\d+)$", source, re.M) for d in "MNK"]
    launch = re.search(r"num_warps=(\d+), num_stages=(\d+)\)", source)
    precision = re.search(r"input_precision='(\w+)'", source)
    if not (launch and precision and all(sizes)):
        raise ValueError("not an Inductor GEMM start: no BLOCK_M/N/K_0 constants, launch keywords or dot precision")
    m, n, k = (int(s.group(1)) for s in sizes if s)
    return Variant(precision.group(1), (m, n, k), int(launch.group(1)), int(launch.group(2)))


def rewritten(source: str, v: Variant) -> str:
    """The start with the variant's precision, tile, warps and stages: every edit made exactly once."""
    edits = [(r"input_precision='\w+'", f"input_precision='{v.precision}'"),
             (r"num_warps=\d+, num_stages=\d+\)", f"num_warps={v.warps}, num_stages={v.stages})")]
    edits += [(rf"^BLOCK_{d}_0 = \d+$", f"BLOCK_{d}_0 = {size}") for d, size in zip("MNK", v.tile, strict=True)]
    for pattern, new in edits:
        source, count = re.subn(pattern, new, source, flags=re.M)
        if count != 1:
            raise ValueError(f"{pattern!r} matched {count} times in the start")
    return source


def variants(source: str, smoke: bool) -> list[Variant]:
    own = start_variant(source)
    if smoke:
        return [own, Variant("tf32x3", (32, 32, 32), own.warps, own.stages)]
    out = [own, Variant(own.precision, own.tile, 8, own.stages), Variant("tf32x3", own.tile, own.warps, own.stages)]
    out += [Variant("tf32x3", t, w, s) for t in TILES for w in WARPS for s in STAGES]
    return list(dict.fromkeys(out))


def load_module(source: str, folder: Path, name: str) -> ModuleType:
    path = folder / f"{name}.py"  # @triton.jit reads its function's source from a file
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"tf32x3_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inputs(case: Case, dims: dict[str, int], device: str) -> tuple[Callable, tuple[int, int], Any, Callable]:
    """(launch arguments for an output tensor, the output's shape, the fp64 product, PyTorch's own call)."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(0)
    transposed = case.name == "l1_17"  # A·Bᵀ with B stored (N, K)
    m, k, n = (dims["M"], dims["K"], dims["N"]) if transposed else (dims["N"],) * 3
    a = torch.rand(m, k, generator=g)
    b = torch.rand(n, k, generator=g) if transposed else torch.rand(k, n, generator=g)
    a_d, b_d = a.to(device), b.to(device)
    exact = (a.double() @ (b.double().T if transposed else b.double())).to(device)
    sizes = (m, k, n) if transposed else (n,)

    def arguments(out: Any) -> tuple:
        return (a_d, b_d, out, *sizes)

    def pytorch() -> Any:
        return a_d @ (b_d.T if transposed else b_d)

    return arguments, (m, n), exact, pytorch


def compiled_facts(source: str, folder: Path, name: str) -> dict:
    """What Triton's compiler makes of the start's kernel for sm_90, at the start's constants: no GPU needed."""
    import shutil
    import subprocess

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    module = load_module(source, folder, name)
    kernel = next(v for v in vars(module).values() if isinstance(v, triton.runtime.JITFunction))
    launch = re.search(r"num_warps=(\d+), num_stages=(\d+)\)", source)
    assert launch is not None
    signature, constants, attrs = {}, {}, {}
    for i, arg in enumerate(kernel.arg_names):
        if hasattr(module, f"{arg}_0"):  # BLOCK_M <- BLOCK_M_0, ...
            signature[arg], constants[arg] = "constexpr", getattr(module, f"{arg}_0")
        else:  # Inductor's pointers (arg_A, out_ptr0) and sizes (ks0): all 16-divisible at the benchmark shapes
            signature[arg] = "*fp32" if arg.startswith("arg_") or "ptr" in arg else "i32"
            attrs[(i,)] = [["tt.divisibility", 16]]
    k = triton.compile(ASTSource(kernel, signature, constants, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": int(launch.group(1)), "num_stages": int(launch.group(2))})
    cubin = folder / f"{name}.cubin"
    cubin.write_bytes(k.asm["cubin"])
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    usage = subprocess.run([str(tool) if tool.exists() else shutil.which("cuobjdump") or "cuobjdump", "-res-usage",
                            str(cubin)], capture_output=True, text=True, check=True).stdout
    found = re.search(r"REG:(\d+) STACK:(\d+)", usage)
    ptx = k.asm["ptx"]
    return {"triton": triton.__version__, "registers": int(found.group(1)) if found else None,
            # the stack frame holds what spills out of the registers
            "stack_bytes": int(found.group(2)) if found else None, "shared_bytes": k.metadata.shared,
            "shared_fits": k.metadata.shared <= SHARED_PER_BLOCK,
            "wgmma": ptx.count("wgmma.mma_async"), "wgmma_waits": ptx.count("wgmma.wait_group"),
            "cp_async": ptx.count("cp.async.cg") + ptx.count("cp.async.ca"), "fma": ptx.count("fma.rn.f32"),
            # tf32x3 splits each operand in registers and stores the parts back for wgmma, whose tf32 operands
            # are K-major in shared memory: an operand held N-major is transposed there, one element a store
            "st_shared_scalar": len(re.findall(r"st\.shared\.b32", ptx)),
            "st_shared_vector": len(re.findall(r"st\.shared\.v[24]\.b32", ptx))}


def timer(smoke: bool) -> Callable[[Callable], float]:
    """Milliseconds per call: do_bench's median on a GPU; on the interpreter one timed call (not a GPU time)."""
    if smoke:
        def once(fn: Callable) -> float:
            begin = time.perf_counter()
            fn()
            return (time.perf_counter() - begin) * 1e3
        return once
    from triton.testing import do_bench

    return lambda fn: float(do_bench(fn, warmup=25, rep=200, return_mode="median"))


def run(out_path: Path, case_names: list[str], smoke: bool, limit: float, compile_only: bool = False) -> None:
    import torch

    device = "cpu" if smoke or compile_only else "cuda"
    torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's side as the tasks time it: fp32 cuBLAS
    done = set()
    if out_path.exists():
        done = {(r["case"], r["variant"]) for r in map(json.loads, out_path.read_text().splitlines()) if r}
    begin, measure = time.monotonic(), timer(smoke)
    env = {"torch": torch.__version__, "device": torch.cuda.get_device_name() if device == "cuda"
           else "sm_90, compiled on the CPU" if compile_only else "interpreter"}
    with tempfile.TemporaryDirectory() as tmp, out_path.open("a", encoding="utf-8") as out:
        for case in (CASES[c] for c in case_names):
            source = (STARTS / case.start).read_text(encoding="utf-8")
            dims = case.smoke if smoke else case.dims
            if not compile_only:
                args_of, shape, exact, torch_call = inputs(case, dims, device)
                scale = float(exact.abs().max())
            rows = ([] if compile_only else [("torch", None)]) + [(v.key, v) for v in variants(source, smoke)]
            for key, v in rows:
                if (case.name, key) in done:
                    continue
                if time.monotonic() - begin > limit:
                    print(f"stopped at the time limit ({limit:.0f} s); run again to go on", flush=True)
                    return
                row: dict = {"case": case.name, "variant": key, "dims": dims, **env}
                try:
                    if compile_only:
                        assert v is not None
                        row.update(compiled_facts(rewritten(source, v), Path(tmp), f"{case.name}_{len(done)}"))
                    elif v is None:
                        fn, result = torch_call, torch_call()
                    else:
                        launch = load_module(rewritten(source, v), Path(tmp), f"{case.name}_{len(done)}").launch
                        result = torch.empty(shape, device=device)
                        fn = functools.partial(launch, *args_of(result))
                        fn()
                    if not compile_only:
                        row["max_error"] = float((result.double() - exact).abs().max()) / scale
                        row["ms"] = measure(fn)
                except Exception as exc:  # noqa: BLE001 - a variant that does not compile (shared memory) is a row
                    row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
                out.write(json.dumps(row) + "\n")
                out.flush()
                done.add((case.name, key))
                said = (row["error"] if "error" in row else f"{row['ms']:.3f} ms, error {row['max_error']:.1e}"
                        if "ms" in row else ", ".join(f"{k} {row[k]}" for k in ("registers", "stack_bytes",
                                                                                "shared_bytes", "shared_fits")))
                print(f"{case.name} {key}: {said}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    parser.add_argument("--limit", type=float, default=540.0, help="stop starting variants after this many seconds")
    parser.add_argument("--smoke", action="store_true", help="Triton's CPU interpreter, small shapes")
    parser.add_argument("--compile-only", action="store_true", help="compile each variant for sm_90; no GPU, no timing")
    args = parser.parse_args(argv)
    if args.smoke:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    run(args.out, args.case or sorted(CASES), args.smoke, args.limit, args.compile_only)


if __name__ == "__main__":
    main()
