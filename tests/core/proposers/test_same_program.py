"""A move that compiled to the incumbent's own program is skipped before it is timed: the launches are the same
(nothing outside the @triton.jit functions moved) and so is every kernel's machine code."""

from __future__ import annotations

import hashlib

from kernel_tui.core.evaluator.kernel_facts import KernelFacts
from kernel_tui.core.proposers.same_program import launch_text, same_program
from kernel_tui.core.proposers.search import SearchProposer
from kernel_tui.core.proposers.transforms import analyze
from tests.conftest import FIXTURES
from tests.core.proposers.rounds import turned_down


def baseline(name: str = "matmul") -> str:
    return (FIXTURES / name / "baseline.py").read_text(encoding="utf-8")


def moved(source: str, kind: str) -> str:
    a = analyze(source)
    action = next(x for x in a.actions() if x.kind == kind)
    return a.apply(action)


def facts(code: str | None, warps: int = 4) -> list[KernelFacts]:
    return [KernelFacts(name="matmul_kernel", registers=96, spills=0, shared_bytes=16384, num_warps=warps,
                        num_stages=2, blocks_per_sm=2, code=code)]


def test_the_launch_text_is_the_source_less_its_kernels():
    src = baseline()
    text = launch_text(analyze(src))
    assert "def launch(" in text and "@triton.jit" not in text and "tl.dot" not in text
    assert len(text.splitlines()) == len(src.splitlines())  # cut out line by line, the rest where it stood
    assert launch_text(analyze(moved(src, "warp_specialize"))) == text  # a keyword inside the kernel
    for kind in ("block", "num_warps", "grid"):  # a constant, a launch option, the launch's grid
        assert launch_text(analyze(moved(src, kind))) != text, kind


def test_the_same_program_needs_the_same_launches_and_known_equal_machine_code():
    src = baseline()
    a, ws, warps = analyze(src), analyze(moved(src, "warp_specialize")), analyze(moved(src, "num_warps"))
    assert same_program(a, lambda: facts("c0"), ws, facts("c0"))
    assert not same_program(a, lambda: facts("c0"), ws, facts("c1"))  # other machine code
    assert not same_program(a, lambda: facts(None), ws, facts(None))  # unknown is not the same
    assert not same_program(a, lambda: facts("c0"), ws, [])  # nothing compiled
    assert not same_program(a, lambda: facts("c0", warps=4), ws, facts("c0", warps=8))
    assert not same_program(a, lambda: facts("c0"), warps, facts("c0"))  # the launch moved: never skipped


def test_a_move_that_compiles_to_the_incumbents_code_costs_no_round():
    base = baseline()

    def compiled(source: str) -> list[KernelFacts]:
        # warp specialization compiles to the code it had without (as on Hopper with Triton 3.6); all else differs
        plain = source.replace(", warp_specialize=True", "").replace("tl.range(0, K, BLOCK_K)", "range(0, K, BLOCK_K)")
        return facts(hashlib.sha256(plain.encode()).hexdigest()[:32])

    p = SearchProposer(seed=0, resources=compiled, device="cuda")
    proposals, said = turned_down(p, base, 15, bottleneck="compute", device="cuda")
    assert all("warp_specialize=True" not in x.source for x in proposals)
    skipped = [s for s in said if s.startswith("skipped before timing:")]
    assert skipped == ["skipped before timing: warp-specialized K loop (tl.range warp_specialize=True): it compiled to "
                       "the incumbent's own machine code (the same launches and kernels): nothing to time"]
    assert p.outcomes[next(k for k in p.outcomes if "warp_specialize" in k)][1] == 1  # learned as a failure


def test_the_incumbent_is_compiled_for_the_comparison_only_when_no_launch_moved():
    from kernel_tui.core.proposers.search import state_key

    base = baseline("vector_add")  # no tl.dot: nothing else asks for the incumbent's compile
    asked: list[str] = []

    def compiled(source: str) -> list[KernelFacts]:
        asked.append(source)
        return facts("same")

    p = SearchProposer(seed=0, resources=compiled, device="cuda")
    a = p._analyze(base)
    candidates = p._candidates(a, state_key(a.assignment))
    kinds = {c.key: {p.model.kinds.get(part.split("=", 1)[0]) for part in c.parts} for c in candidates}
    block = next(c for c in candidates if kinds[c.key] == {"block"})
    hint = next(c for c in candidates if kinds[c.key] == {"eviction_policy"})  # inside the kernel
    assert p._no_change(a, block, facts("same")) is None and not asked  # BLOCK_SIZE moved: no compile
    assert p._no_change(a, hint, facts("same")) is not None and asked == [base]
    assert p._no_change(a, hint, facts("other")) is None and asked == [base]  # compiled once per incumbent
