"""The search's action space: knobs found on every fixture, edits that keep every other byte, applicability
checks that leave out what is not a free knob, and candidates that pass correctness on the interpreter."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kernel_tui.core.proposers.transforms import (
    DOT_BLOCK_BOUNDS,
    Analysis,
    analyze,
    apply_edits,
)
from tests.conftest import FIXTURE_NAMES, FIXTURES


def baseline(name: str) -> str:
    return (FIXTURES / name / "baseline.py").read_text(encoding="utf-8")


def knobs(source: str) -> dict:
    return analyze(source, allow_unroll=True).knobs


EXPECTED = {
    "vector_add": {
        "const:BLOCK_SIZE": 256, "launch:add_kernel:0:num_warps": 4,
        "kernel:add_kernel:eviction_policy": "", "kernel:add_kernel:cache_modifier": "",
        "kernel:add_kernel:grid": "one program per tile", "kernel:add_kernel:sizes": "runtime",
    },
    "silu_mul": {
        "const:BLOCK_SIZE": 256, "launch:silu_mul_kernel:0:num_warps": 4,
        "kernel:silu_mul_kernel:eviction_policy": "", "kernel:silu_mul_kernel:cache_modifier": "",
        "kernel:silu_mul_kernel:grid": "one program per tile", "kernel:silu_mul_kernel:sizes": "runtime",
    },
    "softmax": {
        "launch:softmax_kernel:0:num_warps": 4,
        "kernel:softmax_kernel:eviction_policy": "", "kernel:softmax_kernel:cache_modifier": "",
        "kernel:softmax_kernel:grid": "one program per tile", "kernel:softmax_kernel:sizes": "runtime",
    },
    "rmsnorm": {
        "const:BLOCK_SIZE": 256, "launch:rmsnorm_kernel:0:num_warps": 4,
        "launch:rmsnorm_kernel:0:num_stages": 3,  # absent: inserted at Triton's default
        "loop:rmsnorm_kernel:0:unroll": 1, "loop:rmsnorm_kernel:1:unroll": 1,
        "kernel:rmsnorm_kernel:eviction_policy": "", "kernel:rmsnorm_kernel:cache_modifier": "",
        "kernel:rmsnorm_kernel:grid": "one program per tile", "kernel:rmsnorm_kernel:sizes": "runtime",
    },
    "row_sum": {
        "const:BLOCK_SIZE": 128, "launch:row_sum_kernel:0:num_warps": 4, "launch:row_sum_kernel:0:num_stages": 3,
        "loop:row_sum_kernel:0:unroll": 1,
        "kernel:row_sum_kernel:eviction_policy": "", "kernel:row_sum_kernel:cache_modifier": "",
        "kernel:row_sum_kernel:grid": "one program per tile", "kernel:row_sum_kernel:sizes": "runtime",
    },
    "matmul": {
        "const:BLOCK_M": 64, "const:BLOCK_N": 64, "const:BLOCK_K": 32,
        "launch:matmul_kernel:0:num_warps": 4, "launch:matmul_kernel:0:num_stages": 2,
        "kernel:matmul_kernel:launch_order": "row-major", "kernel:matmul_kernel:k_mask": "masked",
        "loop:matmul_kernel:0:unroll": 1,
        "kernel:matmul_kernel:eviction_policy": "", "kernel:matmul_kernel:cache_modifier": "",
        "kernel:matmul_kernel:grid": "one program per tile", "kernel:matmul_kernel:loads": "pointers",
        "kernel:matmul_kernel:split_k": "one pass over K", "kernel:matmul_kernel:warp_specialize": "off",
    },
}


def test_every_fixture_is_covered():
    assert sorted(EXPECTED) == FIXTURE_NAMES


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_knobs_found_on_every_fixture(name):
    found = {k: v.value for k, v in knobs(baseline(name)).items()}
    assert found == EXPECTED[name]
    a = analyze(baseline(name), allow_unroll=True)
    assert a.actions(), name
    kinds = {x.kind for x in a.actions()}
    assert {"num_warps", "eviction_policy", "cache_modifier"} <= kinds


def test_knob_domains_respect_the_hardware_rules():
    mm = knobs(baseline("matmul"))
    for tile in ("const:BLOCK_M", "const:BLOCK_N", "const:BLOCK_K"):
        assert min(mm[tile].domain) >= DOT_BLOCK_BOUNDS[0] == 16  # tl.dot needs >= 16
        assert max(mm[tile].domain) <= DOT_BLOCK_BOUNDS[1]
        assert all(v & (v - 1) == 0 for v in mm[tile].domain)  # powers of two
    assert mm["launch:matmul_kernel:0:num_warps"].domain == (1, 2, 4, 8, 16)
    assert mm["launch:matmul_kernel:0:num_stages"].domain == (1, 2, 3, 4, 5)
    va = knobs(baseline("vector_add"))
    assert all(v & (v - 1) == 0 for v in va["const:BLOCK_SIZE"].domain)


def test_no_grouped_order_where_the_pattern_is_absent():
    for name in FIXTURE_NAMES:
        if name != "matmul":
            assert not any(k.endswith(":launch_order") for k in knobs(baseline(name))), name
            assert not any(a.kind == "launch_order" for a in analyze(baseline(name)).actions())


def test_softmax_block_that_must_cover_the_row_is_not_a_knob():
    found = knobs(baseline("softmax"))
    assert not any("BLOCK" in k for k in found)  # BLOCK_SIZE = next_power_of_2(n_cols): not free
    # a literal block used only as a tensor shape covers the row too: not offered either
    src = (Path(__file__).parents[2] / "adversarial" / "softmax__fixed_block_128.py").read_text()
    assert not any("BLOCK" in k for k in knobs(src))
    # num_stages means nothing without a loop that loads
    assert not any(k.endswith("num_stages") for k in found)


def test_num_stages_not_offered_for_a_kernel_without_a_loop():
    assert not any(k.endswith("num_stages") for k in knobs(baseline("vector_add")))
    assert not any(k.startswith("loop:") for k in knobs(baseline("vector_add")))


def test_block_tied_to_the_program_id_needs_a_grid_that_follows_it():
    src = baseline("vector_add").replace(
        "grid = (triton.cdiv(n_elements, BLOCK_SIZE),)", "grid = (triton.cdiv(n_elements, 256),)")
    assert "const:BLOCK_SIZE" not in knobs(src)
    # a literal block with a literal grid: the same
    lit = src.replace("BLOCK_SIZE=BLOCK_SIZE", "BLOCK_SIZE=256")
    assert not any("BLOCK_SIZE" in k for k in knobs(lit))
    # a grid lambda reading meta["BLOCK_SIZE"] follows a launch literal: a knob
    meta = lit.replace("grid = (triton.cdiv(n_elements, 256),)",
                       'grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)')
    k = knobs(meta)["launch:add_kernel:0:BLOCK_SIZE"]
    assert k.value == 256 and 1024 in k.domain


def test_unmasked_kernel_blocks_may_only_shrink():
    src = baseline("vector_add").replace(", mask=mask, other=0.0)", ")").replace(", mask=mask)", ")")
    assert "mask=" not in src.split("def launch")[0].replace("mask = ", "")
    k = knobs(src)["const:BLOCK_SIZE"]
    assert max(k.domain) == 256 and 128 in k.domain  # a power of two that divides n keeps dividing it


def test_an_fp32_dot_written_in_ieee_precision_may_use_tf32x3_and_nothing_less_precise():
    gemm = (Path(__file__).parents[3] / "bench" / "candidates" / "kb_square_gemm_triton.py").read_text(encoding="utf-8")
    a = analyze(gemm)
    knob = a.knobs["kernel:matmul_kernel:input_precision"]
    assert (knob.value, knob.domain, knob.numeric) == ("ieee", ("ieee", "tf32x3"), False)
    (action,) = [x for x in a.actions() if x.kind == "input_precision"]
    assert action.change == "input_precision ieee → tf32x3 (tl.dot)"
    changed = a.apply(action)
    dot = 'acc = tl.dot(a, b, acc, input_precision="ieee")'
    assert changed == gemm.replace(dot, dot.replace("ieee", "tf32x3"))
    assert analyze(changed).knobs["kernel:matmul_kernel:input_precision"].value == "tf32x3"  # and back
    # Triton's default (TF32 for fp32), a precision it cannot read, or plain tf32: no knob
    for other in ('acc = tl.dot(a, b, acc)', 'acc = tl.dot(a, b, acc, input_precision=P)',
                  'acc = tl.dot(a, b, acc, input_precision="tf32")', 'acc = tl.dot(a, b, acc, **opts)'):
        src = gemm.replace(dot, other)
        assert other in src and not [k for k in analyze(src).knobs if k.endswith("input_precision")], other
    assert not [k for k in knobs(baseline("matmul")) if k.endswith("input_precision")]  # fp16: no such knob


def test_autotuned_kernel_leaves_launch_options_to_its_configs():
    src = baseline("vector_add").replace(
        "@triton.jit", "@triton.autotune(configs=[triton.Config({}, num_warps=4)], key=['n_elements'])\n@triton.jit")
    found = knobs(src)
    assert not any(k.endswith("num_warps") for k in found) and "const:BLOCK_SIZE" not in found
    assert "kernel:add_kernel:eviction_policy" in found  # a load hint is still the kernel's own


def test_sanity_bounds_couple_blocks_and_warps():
    a = analyze(baseline("vector_add").replace("num_warps=4", "num_warps=16"))
    blocks = {x.new for x in a.actions() if x.knob == "const:BLOCK_SIZE"}
    assert 32 not in blocks and 64 not in blocks  # 16 warps idle on a block of 32
    b = analyze(baseline("vector_add").replace("BLOCK_SIZE = 256", "BLOCK_SIZE = 32").replace("num_warps=4", "num_warps=1"))
    warps = {x.new for x in b.actions() if x.kind == "num_warps"}
    assert 16 not in warps
    mm = analyze(baseline("matmul").replace("BLOCK_M = 64", "BLOCK_M = 256").replace("BLOCK_N = 64", "BLOCK_N = 256"))
    offered = {(x.knob, x.new) for x in mm.actions()}
    assert ("const:BLOCK_K", 256) not in offered  # (256x256 + 256x256) fp16 tiles x stages: no shared memory for that
    assert ("launch:matmul_kernel:0:num_warps", 1) not in offered  # 65536 accumulators on 32 threads


def test_no_cache_modifier_where_a_load_keeps_an_eviction_hint_no_knob_can_clear():
    # Inductor writes evict_first on one load and evict_last on another: no eviction knob, but the hints stay,
    # and ptxas rejects a load with both (L1-95's `.cg` move failed to assemble on an H100)
    src = baseline("vector_add").replace("mask=mask, other=0.0)", "mask=mask, other=0.0, eviction_policy='evict_first')", 1)
    src = src.replace("mask=mask, other=0.0)", "mask=mask, other=0.0, eviction_policy='evict_last')", 1)
    a = analyze(src)
    assert "kernel:add_kernel:eviction_policy" not in a.knobs and "kernel:add_kernel:cache_modifier" in a.knobs
    assert not [x for x in a.actions() if x.kind == "cache_modifier"]
    plain = analyze(baseline("vector_add"))  # no hint yet: either may be set, not both
    assert {x.new for x in plain.actions() if x.kind == "cache_modifier"} >= {".cg"}
    both = dict(plain.assignment, **{"kernel:add_kernel:eviction_policy": "evict_first",
                                     "kernel:add_kernel:cache_modifier": ".cg"})
    assert "kernel:add_kernel:load-hints" in plain.violations(both)


def test_grouped_launch_order_is_offered_once_and_brings_group_m():
    a = analyze(baseline("matmul"))
    grouped = [x for x in a.actions() if x.kind == "launch_order"]
    assert len(grouped) == 1 and grouped[0].change == "grouped launch order GROUP_M=8"
    src = a.apply(grouped[0])
    assert "GROUP_M: tl.constexpr," in src and "GROUP_M=8," in src and "group_size_m = min(" in src
    b = analyze(src)
    assert b.knobs["kernel:matmul_kernel:launch_order"].value == "grouped"
    assert not any(x.kind == "launch_order" for x in b.actions())
    group = b.knobs["launch:matmul_kernel:0:GROUP_M"]
    assert group.kind == "group" and group.value == 8
    changes = {x.change for x in b.actions() if x.kind == "group"}
    assert "group_m 8 → 4" in changes
    # the tiles stay knobs of the grouped kernel
    assert {"const:BLOCK_M", "const:BLOCK_N", "const:BLOCK_K"} <= set(b.knobs)


def test_the_unmasked_k_loop_is_offered_where_its_guard_holds_and_nowhere_else():
    src = baseline("matmul")
    a = analyze(src)
    [even] = [x for x in a.actions() if x.kind == "k_mask"]
    assert even.change == "unmasked K loop when K is a multiple of its block (EVEN_K guard at launch)"
    out = a.apply(even)
    assert "EVEN_K: tl.constexpr," in out and "EVEN_K=K % BLOCK_K == 0," in out
    assert "if EVEN_K:\n            mask_k = tl.full([BLOCK_K], 1, tl.int1)\n        else:\n            mask_k = k_idx < K" in out
    b = analyze(out)
    assert b.knobs["kernel:matmul_kernel:k_mask"].value == "unmasked when even"
    assert not any(x.kind == "k_mask" for x in b.actions())  # once
    assert {"const:BLOCK_K", "kernel:matmul_kernel:launch_order"} <= set(b.knobs)  # the rest still moves
    # with the grouped launch order first, it is still offered, and both edits compose
    grouped = analyze(a.apply(next(x for x in a.actions() if x.kind == "launch_order")))
    assert any(x.kind == "k_mask" for x in grouped.actions())
    # a literal block at the launch would not follow a later change of the block: the guard could go stale
    literal = src.replace("BLOCK_K=BLOCK_K,", "BLOCK_K=32,")
    assert not any(x.kind == "k_mask" for x in analyze(literal).actions())
    # a loop that does not start at 0, or a mask of another bound, is not the pattern
    assert not any(x.kind == "k_mask" for x in analyze(src.replace("range(0, K, BLOCK_K)", "range(1, K, BLOCK_K)")).actions())
    assert not any(x.kind == "k_mask" for x in analyze(src.replace("mask_k = k_idx < K", "mask_k = k_idx < M")).actions())
    # an index built from another arange (not BLOCK_K wide) proves nothing
    assert not any(x.kind == "k_mask" for x in analyze(src.replace("offs_k = tl.arange(0, BLOCK_K)",
                                                                   "offs_k = tl.arange(0, BLOCK_N)")).actions())
    # EVEN_K already a name somewhere: nothing is added over it
    assert not any(x.kind == "k_mask" for x in analyze(src.replace("acc = tl.zeros", "EVEN_K = 1\n    acc = tl.zeros")).actions())


def _check_byte_for_byte(a: Analysis, source: str) -> int:
    data = source.encode("utf-8")
    checked = 0
    for action in a.actions():
        edits = a._editors[action.knob](action.new)
        out = a.apply(action)
        assert out == apply_edits(source, edits)
        # every byte outside the edited spans is kept, in order
        rebuilt, pos = b"", 0
        for e in sorted(edits, key=lambda e: e.start):
            rebuilt += data[pos:e.start] + e.text.encode("utf-8")
            pos = e.end
        rebuilt += data[pos:]
        assert rebuilt == out.encode("utf-8")
        # a literal's edit replaces exactly the literal (an absent option is inserted instead)
        if action.kind in ("block", "factor", "group", "num_warps", "num_stages") and edits[0].start != edits[0].end:
            assert len(edits) == 1
            assert data[edits[0].start:edits[0].end] == str(action.old).encode()
            assert edits[0].text == str(action.new)
        # the edited source says what the action says
        assert analyze(out).knobs[action.knob].value == action.new
        assert a.assignment_after(action) == analyze(out).assignment
        checked += 1
    return checked


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_edits_keep_every_other_byte(name):
    src = baseline(name)
    assert _check_byte_for_byte(analyze(src, allow_unroll=True), src) > 5


def test_literal_edit_replaces_only_its_span():
    src = baseline("vector_add")
    a = analyze(src)
    action = next(x for x in a.actions() if x.change == "block_size 256 → 1024")
    out = a.apply(action)
    start = src.index("BLOCK_SIZE = 256") + len("BLOCK_SIZE = ")
    assert out == src[:start] + "1024" + src[start + 3:]
    action = next(x for x in a.actions() if x.change == "num_warps 4 → 8")
    out = a.apply(action)
    start = src.index("num_warps=4") + len("num_warps=")
    assert out == src[:start] + "8" + src[start + 1:]


def test_offsets_are_right_with_multibyte_characters_and_crlf():
    src = baseline("vector_add").replace("BLOCK_SIZE = 256", "é = 0; BLOCK_SIZE = 256  # größe ×")
    src = src.replace('"""Naive', '"""Naïve — ')
    a = analyze(src)
    out = a.apply(next(x for x in a.actions() if x.change == "block_size 256 → 512"))
    assert out == src.replace("BLOCK_SIZE = 256", "BLOCK_SIZE = 512")
    _check_byte_for_byte(a, src)
    crlf = baseline("matmul").replace("\n", "\r\n")
    b = analyze(crlf)
    assert _check_byte_for_byte(b, crlf) > 5
    for action in b.actions():  # inserted lines end as the file's lines do
        out = b.apply(action)
        assert out.count("\n") == out.count("\r\n"), action.change
    out = b.apply(next(x for x in b.actions() if x.kind == "launch_order"))
    assert "\r\n    GROUP_M: tl.constexpr,\r\n" in out and "\r\n    group_id = pid // num_pid_in_group\r\n" in out
    rms = baseline("rmsnorm").replace("\n", "\r\n")
    c = analyze(rms)
    out = c.apply(next(x for x in c.actions() if x.change == "num_stages 3 → 4"))
    assert "        num_warps=4,\r\n        num_stages=4,\r\n    )" in out


def test_insertions_follow_the_call_style():
    one_line = baseline("row_sum")
    a = analyze(one_line)
    out = a.apply(next(x for x in a.actions() if x.change == "num_stages 3 → 4"))
    assert "BLOCK_SIZE=BLOCK_SIZE, num_warps=4, num_stages=4)" in out
    multi = baseline("rmsnorm")
    b = analyze(multi)
    out = b.apply(next(x for x in b.actions() if x.change == "num_stages 3 → 2"))
    assert "        num_warps=4,\n        num_stages=2,\n    )" in out
    out = b.apply(next(x for x in b.actions() if x.change == "eviction_policy evict_first on loads"))
    assert out.count('eviction_policy="evict_first"') == 3
    back = analyze(out)
    out2 = back.apply(next(x for x in back.actions() if x.change == "eviction_policy evict_first → default on loads"))
    assert out2 == multi  # removing the hint gives the original back, byte for byte


def test_unusual_sources_are_survived():
    # no @triton.jit kernel, nothing to transform: no actions, and no exception on the way
    for src in ("", "def broken(:\n", "x = 1\n", baseline("vector_add").replace("@triton.jit\n", "")):
        assert analyze(src).actions() == [], src[:40]
    assert analyze(baseline("vector_add")).actions()  # the same source with its kernel offers some


# --- correctness on the CPU interpreter ---------------------------------------------------------------------
KINDS = ("block", "num_warps", "num_stages", "unroll", "eviction_policy", "cache_modifier", "launch_order", "group",
         "k_mask", "grid", "loads")


def sample_candidates(seed: int = 7) -> list[tuple[str, str, str]]:
    """Up to 3 single-step candidates per fixture (a fixed seed), every kind of transformation once at least:
    a fixture first takes the kinds not yet covered, the rarest across fixtures first."""
    rng = random.Random(seed)
    analyses = {name: analyze(baseline(name), allow_unroll=True) for name in FIXTURE_NAMES}
    offered = {name: a.actions() for name, a in analyses.items()}
    rarity = {k: sum(any(x.kind == k for x in acts) for acts in offered.values()) for k in KINDS}
    covered: set[str] = set()
    out = []
    for name in FIXTURE_NAMES:
        a, actions = analyses[name], list(offered[name])
        rng.shuffle(actions)
        picked = []
        for action in sorted(actions, key=lambda x: rarity.get(x.kind, 99)):  # stable: the shuffle breaks ties
            if action.kind not in covered and len(picked) < 3:
                picked.append(action)
                covered.add(action.kind)
        for action in actions:
            if len(picked) >= 3:
                break
            if action not in picked:
                picked.append(action)
        out += [(name, action.change, a.apply(action)) for action in picked]
        if name == "matmul":  # the unmasked K loop on the grouped launch order: the two structural edits together
            grouped = analyze(a.apply(next(x for x in actions if x.kind == "launch_order")))
            even = next(x for x in grouped.actions() if x.kind == "k_mask")
            out.append((name, "grouped launch order, then " + even.change, grouped.apply(even)))
        if name == "matmul":  # GROUP_M is a knob only once the launch order is grouped
            grouped = analyze(a.apply(next(x for x in actions if x.kind == "launch_order")))
            g = next(x for x in grouped.actions() if x.kind == "group" and x.new == 4)
            out.append((name, "grouped launch order, then " + g.change, grouped.apply(g)))
            covered.add("group")
    assert covered >= set(KINDS), set(KINDS) - covered
    return out


def test_the_sample_covers_every_kind():
    sample = sample_candidates()
    assert len(sample) <= 3 * len(FIXTURE_NAMES) + 2
    assert len({src for _, _, src in sample}) == len(sample)
    assert any(change.startswith("grouped launch order") for _, change, _ in sample)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sampled_candidates_pass_correctness_on_the_interpreter(tmp_path):
    from kernel_tui.core.evaluator import Evaluator, Status
    from kernel_tui.core.task import load_task

    evaluators: dict[str, Evaluator] = {}
    failures = []
    for name, change, source in sample_candidates():
        ev = evaluators.get(name)
        if ev is None:
            ev = evaluators[name] = Evaluator(load_task(FIXTURES / name), device="cpu", workdir=tmp_path / name)
        result = ev.check(source)
        if result.status is not Status.ok:
            failures.append(f"{name}: {change}: {result.status.value}: {result.reason}")
    assert not failures, failures
