"""The persistent grid: offered where a kernel is launched with one program per tile of a 1-D grid and reads its
program id once, nowhere else; once only; composed with the other structural moves; and correct on the
interpreter."""

from __future__ import annotations

import importlib.util

import pytest

from kernel_tui.core.proposers.transforms import STRUCTURAL_KINDS, analyze
from kernel_tui.core.proposers.transforms.persistent import CPU_PROGRAMS
from tests.conftest import FIXTURE_NAMES, FIXTURES


def baseline(name: str) -> str:
    return (FIXTURES / name / "baseline.py").read_text(encoding="utf-8")


def grid_actions(source: str) -> list:
    return [x for x in analyze(source).actions() if x.kind == "grid"]


def persistent(source: str) -> str:
    a = analyze(source)
    (action,) = [x for x in a.actions() if x.kind == "grid"]
    return a.apply(action)


def then(source: str, kind: str) -> str:
    a = analyze(source)
    return a.apply(next(x for x in a.actions() if x.kind == kind))


def test_the_matmul_becomes_a_loop_over_its_tiles_once():
    src = baseline("matmul")
    (action,) = grid_actions(src)
    assert "grid" in STRUCTURAL_KINDS
    assert (action.knob, action.old, action.new) == ("kernel:matmul_kernel:grid", "one program per tile", "persistent")
    assert action.change == "persistent grid over the SMs: programs loop over the tiles, one per SM"
    out = analyze(src).apply(action)
    assert "    BLOCK_K: tl.constexpr,\n    num_tiles,\n):\n" in out
    assert ("    for tile_id in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0)):\n"
            "        pid = tile_id\n        num_pid_n = tl.cdiv(N, BLOCK_N)\n") in out
    assert "\n            acc = tl.dot(a_tile, b_tile, acc)\n\n        c_ptrs = " in out  # the body one level in, blank lines kept
    assert "    num_tiles = grid[0]\n    matmul_kernel[(persistent_programs(a, num_tiles),)](\n" in out
    assert "        num_stages=2,\n        num_tiles=num_tiles,\n    )" in out
    assert "NUM_SMS[device.index] = torch.cuda.get_device_properties(device).multi_processor_count" in out
    assert out.count("tl.program_id") == 1 and "tl.program_id(axis=0)" not in out
    b = analyze(out)
    assert b.knobs["kernel:matmul_kernel:grid"].value == "persistent"
    assert not any(x.kind == "grid" for x in b.actions())  # once
    # the rest still moves: the tiles (the grid still follows them), the launch order, the K loop's mask, and the K
    # loop keeps its id (the loop over tiles is no loop of the kernel's work)
    assert {"const:BLOCK_M", "const:BLOCK_N", "const:BLOCK_K", "loop:matmul_kernel:0:unroll"} <= set(b.knobs)
    assert {"launch_order", "k_mask", "block"} <= {x.kind for x in b.actions()}
    assert "loop:matmul_kernel:1:unroll" not in b.knobs


def test_it_composes_with_the_grouped_launch_order_either_way():
    src = baseline("matmul")
    grouped_first = persistent(then(src, "launch_order"))
    persistent_first = then(persistent(src), "launch_order")
    for out in (grouped_first, persistent_first):  # the grouped mapping inside the loop, from the tile's id
        assert "        pid = tile_id\n        num_pid_n = tl.cdiv(N, BLOCK_N)\n        num_pid_m = " in out
        assert "        group_id = pid // num_pid_in_group\n" in out
    for out in (grouped_first, persistent_first):
        b = analyze(out)
        assert b.knobs["kernel:matmul_kernel:grid"].value == "persistent"
        assert b.knobs["kernel:matmul_kernel:launch_order"].value == "grouped"
        assert "launch:matmul_kernel:0:GROUP_M" in b.knobs
    assert "        if EVEN_K:\n" in then(persistent(src), "k_mask")  # and with the unmasked K loop
    assert "if EVEN_K:" in persistent(then(src, "k_mask"))


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_offered_on_every_fixture_launched_one_program_per_tile(name):
    out = persistent(baseline(name))
    assert "for tile_id in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0)):" in out
    assert analyze(out).knobs[f"kernel:{next(iter(analyze(out).kernels))}:grid"].value == "persistent"


def test_the_program_id_keeps_its_type_where_more_than_its_value_is_read():
    out = persistent(baseline("vector_add"))
    assert "        pid = tile_id\n        offsets = pid * BLOCK_SIZE" in out
    assert "    num_tiles = grid[0]\n    add_kernel[(persistent_programs(x, num_tiles),)](" in out
    assert "const:BLOCK_SIZE" in analyze(out).knobs  # the grid follows the block through num_tiles
    # the interpreter's loop variable is an int, program_id's a tensor: `.to()` needs the tensor
    out = persistent(baseline("softmax"))
    assert "        row = tl.cast(tile_id, tl.int32).to(tl.int64)\n" in out
    src = baseline("vector_add").replace("mask = offsets < n_elements", "mask = offsets < n_elements + pid.to(tl.int32) * 0")
    assert "        pid = tl.cast(tile_id, tl.int32)\n" in persistent(src)


def test_a_grid_written_in_the_launch_is_counted_there():
    src = baseline("vector_add").replace("add_kernel[grid](", "add_kernel[(triton.cdiv(n_elements, BLOCK_SIZE),)](")
    out = persistent(src)
    assert ("    num_tiles = triton.cdiv(n_elements, BLOCK_SIZE)\n"
            "    add_kernel[(persistent_programs(x, num_tiles),)](") in out
    assert "const:BLOCK_SIZE" in analyze(out).knobs


NOT_THE_PATTERN = {
    "a 2-D grid": ("grid = (triton.cdiv(n_elements, BLOCK_SIZE),)", "grid = (triton.cdiv(n_elements, BLOCK_SIZE), 1)"),
    "a grid of the launch's meta-parameters": (
        "grid = (triton.cdiv(n_elements, BLOCK_SIZE),)",
        'grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)'),
    "a grid bound twice": ("    add_kernel[grid](", "    grid = (grid[0],)\n    add_kernel[grid]("),
    "an early return": ("    offsets = ", "    if pid * BLOCK_SIZE >= n_elements:\n        return\n    offsets = "),
    "another axis": ("pid = tl.program_id(axis=0)", "pid = tl.program_id(axis=1)"),
    "the program id read twice": ("offsets = pid * BLOCK_SIZE", "offsets = tl.program_id(0) * BLOCK_SIZE"),
    "the program id read in a branch": (
        "    pid = tl.program_id(axis=0)\n",
        "    if BLOCK_SIZE > 0:\n        pid = tl.program_id(axis=0)\n    else:\n        pid = 0\n"),
    "the program count read": ("mask = offsets < n_elements", "mask = offsets < n_elements + tl.num_programs(0) * 0"),
    "a parameter rebound": ("    total = x + y\n", "    total = x + y\n    out_ptr = out_ptr + 0\n"),
    "the pid rebound": ("    total = x + y\n", "    total = x + y\n    pid = 0\n"),
    "a name it adds taken": ("    total = x + y\n", "    total = x + y\n    num_tiles = 1\n"),
    "an autotuned kernel": ("@triton.jit", "@triton.autotune(configs=[triton.Config({}, num_warps=4)], key=['n_elements'])\n@triton.jit"),
    "no torch to ask for the SMs": ("import torch\n", ""),
    "a string that re-indenting would change": ("    total = x + y\n", '    total = x + y\n    tl.static_print("""a\nb""")\n'),
    "two launches": ("BLOCK_SIZE=BLOCK_SIZE, num_warps=4)", "BLOCK_SIZE=BLOCK_SIZE, num_warps=4)\n    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE)"),
    "no tensor passed by name": ("add_kernel[grid](x, y, output,", "add_kernel[grid](x + 0, y + 0, output[:],"),
}


@pytest.mark.parametrize("why", sorted(NOT_THE_PATTERN))
def test_not_offered_where_the_pattern_is_not_all_there(why):
    old, new = NOT_THE_PATTERN[why]
    src = baseline("vector_add")
    assert old in src
    changed = src.replace(old, new)
    analyze(changed)  # read without an exception
    assert not grid_actions(changed), why
    assert grid_actions(src)


def test_the_program_count_is_at_most_the_tiles_and_a_few_on_the_cpu(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "persistent_vector_add.py"  # @triton.jit reads its source from a file
    path.write_text(persistent(baseline("vector_add")), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("persistent_vector_add", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    on_cpu = torch.zeros(1)
    assert module.persistent_programs(on_cpu, 1000) == CPU_PROGRAMS
    assert module.persistent_programs(on_cpu, 2) == 2
    assert module.NUM_SMS == {}  # no GPU asked


def test_the_launch_runs_programs_per_sm_on_each_sm_and_the_count_is_no_knob():
    from kernel_tui.core.proposers.transforms.persistent import programs_per_sm, with_programs_per_sm

    out = persistent(baseline("matmul"))
    assert "\nPROGRAMS_PER_SM = 1  # " in out and "NUM_SMS[device.index] * PROGRAMS_PER_SM)" in out
    assert programs_per_sm(out) is not None and programs_per_sm(out)[0] == 1
    assert not any("PROGRAMS_PER_SM" in k for k in analyze(out).knobs)  # derived, adds no states to the search
    four = with_programs_per_sm(out, 4)
    assert four is not None and "\nPROGRAMS_PER_SM = 4  # " in four and programs_per_sm(four)[0] == 4
    assert with_programs_per_sm(baseline("matmul"), 4) is None


def facts(name: str, blocks: int):
    from kernel_tui.core.evaluator.kernel_facts import KernelFacts

    return KernelFacts(name=name, registers=72, spills=0, shared_bytes=16384, num_warps=4, num_stages=2,
                       blocks_per_sm=blocks, occupancy=blocks / 16, limited_by="registers")


def grid_candidate(source: str):
    from kernel_tui.core.proposers.search_steps import Candidate

    a = analyze(source)
    (action,) = [x for x in a.actions() if x.kind == "grid"]
    out = a.apply(action)
    return Candidate(key=action.key, parts=(action.key,), moves=frozenset(), change=action.change, source=out,
                     after=a.assignment_after(action))


def test_a_persistent_grid_runs_at_the_kernels_blocks_per_sm():
    """One program per SM ran the fixture's 7-blocks-per-SM matmul 6x slower on an H200: a candidate with a
    persistent kernel runs as many programs per SM as the compiler says its blocks fit there."""
    from dataclasses import replace

    from kernel_tui.core.proposers.occupancy import at_occupancy

    c = grid_candidate(baseline("matmul"))
    full = at_occupancy(c, [facts("matmul_kernel", 7)])
    assert "\nPROGRAMS_PER_SM = 7  # " in full.source
    assert full.change == "persistent grid over the SMs: programs loop over the tiles, 7 per SM (the kernel's 7 blocks per SM)"
    assert at_occupancy(c, [facts("matmul_kernel", 1)]) == c  # a tile that fills its SM: one
    assert at_occupancy(c, []) == c  # no facts (the interpreter): as rewritten
    # a later move of an already persistent kernel (its tiles, say) follows the new kernel's occupancy
    later = replace(full, change="BLOCK_M 64 → 128")
    moved = at_occupancy(later, [facts("matmul_kernel", 2)])
    assert "\nPROGRAMS_PER_SM = 2  # " in moved.source
    assert moved.change == "BLOCK_M 64 → 128; persistent programs per SM 7 → 2 (the kernel's blocks per SM)"
    plain = replace(c, source=baseline("matmul"))
    assert at_occupancy(plain, [facts("matmul_kernel", 7)]) == plain  # no persistent kernel: nothing to set


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_persistent_kernels_pass_correctness_on_the_interpreter(tmp_path):
    from kernel_tui.core.evaluator import Evaluator, Status
    from kernel_tui.core.task import load_task

    mm = baseline("matmul")
    sources = [
        ("matmul", "persistent", persistent(mm)),
        ("matmul", "grouped, then persistent", persistent(then(mm, "launch_order"))),
        ("matmul", "persistent, then the unmasked K loop", then(persistent(mm), "k_mask")),
        ("vector_add", "persistent", persistent(baseline("vector_add"))),
        ("softmax", "persistent (a program id cast)", persistent(baseline("softmax"))),
    ]
    evaluators: dict[str, Evaluator] = {}
    failures = []
    for name, change, source in sources:
        ev = evaluators.get(name)
        if ev is None:
            ev = evaluators[name] = Evaluator(load_task(FIXTURES / name), device="cpu", workdir=tmp_path / name)
        result = ev.check(source)
        if result.status is not Status.ok:
            failures.append(f"{name}: {change}: {result.status.value}: {result.reason}")
    assert not failures, failures
