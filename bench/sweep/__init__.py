"""Exhaustive knob sweeps on the GPU: the reference the built-in search is judged against.

One run, within a hard wall-clock budget, measures:

1. the device's copy bandwidth (`dst.copy_(src)` of 1 GiB fp16; read + write);
2. every configuration of two of the search's knob spaces, vector_add (all its knobs) and a matmul
   subspace (tiles, warps, stages, launch order), each timed against the baseline the evaluator's way
   (`worker.run` in this process: L2 flushed, kernel-only event timing, ABBA pairs, timed outputs
   checked), the kernels compiled beforehand by a spawn pool sharing one Triton cache; the five fastest
   are re-timed and the sweep best is picked from those;
3. torch's own kernels (torch.add, a torch.compile'd add, torch.matmul) against each sweep best;
4. the built-in search replayed over the measured tables (restricted to the swept values, lognormal
   noise from the sweep's repeats), 20 seeds: evaluations until within 3% of the sweep best;
5. the bandwidth of the memory-bound fixtures at chip-filling sizes, over a small block x warps sweep.

Each part has a share of the budget (what a part leaves rolls over to the next), stops when its share
runs out and keeps what it measured. JSON goes to --out after every part (and every few configs),
sweep_summary.md at the end. `--device cpu --smoke` runs the same code paths on tiny spaces under
Triton's CPU interpreter; its numbers mean nothing.

    python3 -m bench.sweep --device cuda --out DIR --budget 480      # from the repo root

The package: `settings` (shares, spaces, targets, the clock), `space` (building each config's source),
`timing` (one timing block in this process), `pool` (the spawn pool that precompiles), `measure` (timing
a space), `parts` (the run's parts), `replay` (the search over the measured tables), `results` (JSON and
the summary), `cli` (the command line).
"""
