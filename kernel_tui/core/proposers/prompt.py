"""What the agent is told: the task and its contract, the roofline, how the gate decides, what the policy forbids.

Everything here is built from the task, the evaluator's settings and the policy module's own tables, so the
prompt cannot drift from what is enforced.
"""

from __future__ import annotations

from kernel_tui.core import policy
from kernel_tui.core.evaluator import Evaluator
from kernel_tui.core.format import duration
from kernel_tui.core.proposers.base import ProposerContext
from kernel_tui.core.proposers.facts import environment_facts
from kernel_tui.core.task import InputDistribution, Task, TensorSpec
from kernel_tui.core.workspace import Workspace

NUDGE = (
    "Your reply had no tool call, so nothing happened. Continue by calling exactly one tool: read_best, "
    "read_reference, get_environment, get_history, compile_candidate, profile_candidate, submit_candidate "
    "(source, change) — or finish (summary) when you are done. Every reply counts against your step budget."
)


def _seconds(s: float | None) -> str:
    return "unknown" if s is None else duration(s)


def _bytes(n: float | None) -> str:
    if n is None:
        return "unknown"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit} ({n:.0f} B)"
    return f"{n:.0f} B"


def _tensor_line(task: Task, t: TensorSpec) -> str:
    dims = task.spec.shape
    if t.kind == "scalar":
        value = task.spec.scalar_value(t, dims)
        expr = f"{t.value} = {value}" if isinstance(t.value, str) else f"{value}"
        return f"- `{t.name}`: scalar {t.dtype} = {expr} at the benchmark shape"
    names = t.dims_of_shape()
    sizes = list(task.spec.tensor_shape(t, dims))
    role = {
        "input": "input (read only: it is compared after the call)",
        "parameter": "parameter (model weights; read only)",
        "output": "output (write every element)",
    }[t.kind]
    drawn = ""
    if t.input is not None:
        drawn = f", drawn {_distribution(t.input)}"
    return (f"- `{t.name}`: {role} tensor, {t.dtype}, shape [{', '.join(map(str, names))}] = {sizes} at the "
            f"benchmark shape{drawn}")


def _distribution(d: InputDistribution) -> str:
    if d.distribution == "normal":
        return f"normal(mean {d.mean}, sd {d.standard_deviation})"
    if d.distribution == "constant":
        return f"constant {d.value}"
    if d.distribution == "bernoulli":
        return f"bernoulli(p {d.p})"
    return f"{d.distribution}(low {d.low}, high {d.high})"


def contract(task: Task) -> str:
    """The entrypoint's contract: signature, tensors, what the reference computes, how it is checked."""
    spec = task.spec
    c = spec.correctness
    shapes = "; ".join(
        f"{s.name} {s.dims}" + (" (CPU interpreter)" if s.interpreter else "") for s in spec.all_shapes()
    )
    tolerances = ", ".join(
        f"{name}: atol {atol:g}, rtol {rtol:g}" for name in spec.output_order() for atol, rtol in [spec.tolerance(name)]
    )
    lines = [
        f"Entrypoint: `def {spec.entrypoint}({', '.join(spec.launch_arguments)}) -> None`, a module-level function "
        f"that launches Triton kernel(s) which write the result into the output tensor(s) in place "
        f"(its return value is ignored). The reference `{spec.reference.entrypoint}` takes the same arguments and "
        f"returns the expected output.",
        "Arguments:",
        *[_tensor_line(task, task.spec.tensor(name)) for name in spec.launch_arguments],
        f"Inputs without their own distribution are drawn {_distribution(spec.input)}"
        + (" (structured values come from the task's input generator)" if spec.generator else "") + ".",
        f"Correctness: compared with the reference at {tolerances}, for seeds {c.seeds} on the shapes: "
        f"{shapes}. Outputs are filled with NaN before every call, so every element must be written; NaN/Inf never "
        "pass; inputs must be left unchanged. Shapes need not be multiples of your block sizes: mask the edges.",
    ]
    if task.baseline_is_pytorch:
        lines.append(
            "The task starts from a PyTorch eager implementation (the baseline); it is exempt from the rules, "
            "but every candidate must launch Triton kernels: host code may not compute with torch."
        )
    return "\n".join(lines)


def _roofline(facts: dict) -> str:
    flops = facts["cost_per_call"]["flops"]
    nbytes = facts["cost_per_call"]["bytes"]
    shape = facts["timing_shape"]
    lines = [
        f"Cost of one call at the timed shape {shape['name']} {shape['dims']}: {_bytes(nbytes)} moved, {flops:.4g} flops "
        f"({facts['cost_per_call']['label'] or 'task cost model'}); arithmetic intensity "
        f"{facts['arithmetic_intensity_flops_per_byte'] or 0:.3g} flop/B.",
    ]
    if facts["interpreter"]:
        lines.append(
            "This run uses Triton's CPU interpreter: timings are not GPU timings and no bandwidth figure exists; "
            "the gate still compares candidates the same way."
        )
    else:
        bw = facts["measured_bandwidth_bytes_per_s"]
        peak = facts.get("matmul_peak_flops_per_s")
        lines.append(
            f"Device: {facts['device_name'] or 'GPU'}; measured copy bandwidth "
            + (f"{bw / 1e9:.4g} GB/s" if bw else "not measured yet")
            + (f"; measured {facts['compute_roof_dtype']} matmul peak {peak / 1e12:.4g} TFLOP/s" if peak else "")
            + f"; roofline floor latency (the longer of bytes / bandwidth and flops / peak): "
            f"{_seconds(facts['roofline_floor_seconds'])}."
        )
        if facts.get("best_roofline_fraction") is not None:
            lines.append(
                f"The incumbent reaches {facts['best_roofline_fraction']:.1%} of that roofline: "
                f"{facts['best_bottleneck']}-bound"
                + (" (far below both roofs: too little work in flight, dependent loads, or launch cost)"
                   if facts["best_bottleneck"] == "latency" else "") + "."
            )
    lines.append(
        f"Baseline latency: {_seconds(facts['baseline_latency_seconds'])}; current best: "
        f"{_seconds(facts['best_latency_seconds'] or facts['baseline_latency_seconds'])}."
    )
    return "\n".join(lines)


def _gate(task: Task, evaluator: Evaluator) -> str:
    g = evaluator.policy
    plan = evaluator.plan()
    return (
        f"- Each submission is first checked (policy, then correctness), then timed against the current best in "
        f"blocks: one block is one fresh process timing the best (A) and your candidate (B) interleaved ABBA, "
        f"{plan.pairs} pairs of {plan.inner_repeats} calls each, L2 state equalised before every measurement.\n"
        f"- The test is across processes: at least {g.min_blocks} and at most {g.max_blocks} blocks, a one-sided "
        f"t-test of the per-block median paired log ratios, significant at alpha {g.alpha:g} (split over the looks).\n"
        f"- Accepting needs an estimated improvement of at least {g.min_improvement:.1%} "
        f"(the task's minImprovementFraction), a median paired improvement of at least that too with at least "
        f"{g.min_positive_fraction:.0%} of pairs faster, significance across processes, and confirmation on "
        f"{g.confirm_blocks} fresh process(es) that alone still show at least {g.min_improvement:.1%}.\n"
        "- A clearly slower candidate is rejected after its first block. Noise-level changes are rejected: aim for "
        "changes with a real, explainable effect (memory traffic, occupancy, launch shape, fusion)."
    )


def _policy() -> str:
    imports = ", ".join(sorted(policy.ALLOWED_IMPORTS - {"__future__"}))
    host = ", ".join(sorted(policy.TORCH_HOST_ALLOWED))
    methods = ", ".join(sorted(policy.TENSOR_METHODS_ALLOWED))
    return (
        f"- Imports: only {imports} (and `from __future__`); no relative or star imports.\n"
        "- The work must be done by `@triton.jit` kernels launched from the entrypoint (`kernel[grid](...)`); the "
        "entrypoint must exist at module level with the task's signature.\n"
        f"- Host code may only allocate, compute launch grids and launch: torch attributes allowed on the host are "
        f"{host}; tensor methods allowed on the host are {methods}. Any other torch call (torch.add, torch.matmul, "
        "x.sum(), .to(), .contiguous(), .clone(), ...), host-side arithmetic on the argument tensors or writes "
        "into them is `torch-compute`. (torch.cuda.get_device_properties / current_device / "
        "get_device_capability / device_count are allowed.)\n"
        f"- Forbidden builtins: {', '.join(sorted(policy.FORBIDDEN_BUILTINS))}; no dunder names or attributes; no "
        "`global`; no setting or deleting attributes at all (`attribute-assignment`); a class such as torch.Tensor "
        "may be called or used in annotations and isinstance, never held in a variable, passed or subclassed "
        "(`class-alias`); a tensor method is called where it is named, never stored or passed (`bound-method`); "
        "no `.ctypes` (`native-access`) and no `from_file`, torch.load or torch.save (`file-access`).\n"
        "- No timers or streams: time/timeit, triton.testing, torch.cuda.Event/synchronize, side streams.\n"
        "- No access to the reference (no import of it, no mention of reference.py).\n"
        "- Through an allowed module only its listed names (`attribute-not-allowed`): triton.jit / cdiv / "
        "next_power_of_2 / Config / autotune / heuristics, triton.language's functions and dtypes (as `tl.*`), "
        "typing's type names, math's functions, functools' decorators; never a submodule chain such as "
        "`typing.sys` or `triton.runtime....`. A module is used only as `module.name`, never as a value "
        "(`module-alias`); no frame or code attributes such as f_globals, gi_frame, tb_frame (`introspection`).\n"
        "- The evaluation runs sandboxed: no network, no files outside its own folder, no programs; an attempt "
        "is a `sandbox_violation`. Your code runs in a process of its own: the checks and the clock are in "
        "another, which reads your outputs itself; outputs written before the timed call starts or after it "
        "ends, or work left running after it, are `tampering`.\n"
        "- Host-side torch ops are also recorded while the candidate runs; the source may not exceed the "
        "task's size limit.\n"
        "A violation names its rule and line; fix that and resubmit."
    )


def system_prompt(ws: Workspace, evaluator: Evaluator, *, max_steps: int) -> str:
    task = ws.task
    spec = task.spec
    facts = environment_facts(ws, evaluator)
    return f"""You are a GPU kernel engineer optimizing one Triton kernel with a person who approves every change.

# Task: {task.name}
{spec.description}

{contract(task)}

Reference (`{spec.reference.filename}`), what the candidate must compute:
```python
{task.reference_source.rstrip()}
```

# Roofline
{_roofline(facts)}

# How a candidate is judged
{_gate(task, evaluator)}

# What the static policy forbids (checked before anything runs)
{_policy()}

# How to work
- Tools: read_best() shows the current best (your starting point); read_reference(); get_environment();
  get_history(limit) shows past rounds and verdicts; compile_candidate(source) checks policy, compilation
  and correctness without timing and costs no round; profile_candidate(source or round, or nothing for the
  incumbent) says why a kernel is slow (Nsight Compute: DRAM and tensor-pipe use, occupancy, stalls; no round,
  about 10 s on a GPU); submit_candidate(source, change) proposes a candidate for a round; finish(summary)
  ends the work.
- Always send the complete module (imports, kernels, the `{spec.entrypoint}` entrypoint) as `source`, and
  one line saying what changed and why as `change`.
- Call one tool at a time. Check a candidate with compile_candidate before submitting it.
- A person sees each submission first: they may approve it, reject it with a reason (take it into
  account), or edit it (the verdict is then for their version). Each submission uses one round of a
  limited budget; you have at most {max_steps} replies in all, so be purposeful.
- Candidates are built on the current best: after an accept, the accepted version is the new incumbent.
- Call finish(summary) when you believe no further change can pass the gate, or when you are done.
"""


def first_message(ctx: ProposerContext) -> str:
    judged = len(ctx.history)
    accepted = sum(ln.accepted for ln in ctx.history)
    past = (
        f" {judged} round(s) were already judged in this workspace ({accepted} accepted): see get_history."
        if judged else ""
    )
    return (
        f"Round {ctx.round} is open.{past} Start by reading the current best with read_best, then propose a "
        "faster candidate with submit_candidate."
    )
