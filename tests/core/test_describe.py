"""Describing a source change in a few words, from the sources."""

from kernel_tui.core.describe import describe_change, describe_edit


def test_one_changed_value_is_named_by_what_it_sets():
    assert describe_change("BLOCK_SIZE = 256\nx = 1\n", "BLOCK_SIZE = 1024\nx = 1\n") == "BLOCK_SIZE: 256 -> 1024"
    assert describe_change("k[grid](x, num_warps=4)", "k[grid](x, num_warps=8)") == "num_warps: 4 -> 8"
    assert describe_change('tl.load(p, eviction_policy="evict_last")', 'tl.load(p, eviction_policy="evict_first")') \
        == "eviction_policy: evict_last -> evict_first"


def test_larger_changes_are_counted_and_no_change_is_said():
    assert describe_change("a\nb\nc\n", "a\nB\nc\nd\n") == "b -> B; 1 line(s) added"
    assert describe_change("a\nb\n", "a\n") == "1 line(s) removed"
    assert describe_change("same\n", "same\n") == "no change"
    assert len(describe_change("x = 1\n", "x = " + "9" * 300 + "\n")) <= 100


def test_an_edit_says_what_is_evaluated_and_what_was_proposed():
    text = describe_edit("BLOCK_SIZE = 256\n", "BLOCK_SIZE = 1024\n", "block_size 256 -> 8192")
    assert text == "edited: BLOCK_SIZE: 256 -> 1024 (proposed: block_size 256 -> 8192)"


def test_the_edit_panes_header_says_what_the_edit_evaluates():
    from kernel_tui.core.decision import PendingProposal
    from kernel_tui.core.records import ProposerInfo
    from kernel_tui.tui.present import edited_view

    pending = PendingProposal(round=4, commit="a" * 40, change="block_size 256 -> 8192",
                              proposer=ProposerInfo(kind="search", name="built-in search"),
                              source="BLOCK_SIZE = 8192\n", best_source="BLOCK_SIZE = 256\n", best_commit="b" * 40)
    view = edited_view(pending, "BLOCK_SIZE = 1024\n")
    assert view.change == "edited: BLOCK_SIZE: 256 -> 1024 (proposed: block_size 256 -> 8192)"


def test_a_structural_move_made_by_hand_reads_as_the_move():
    from kernel_tui.core.proposers.transforms import analyze
    from tests.conftest import DATA, FIXTURES

    base = (FIXTURES / "matmul" / "baseline.py").read_text(encoding="utf-8")

    def step(src: str, kind: str) -> str:
        a = analyze(src)
        return a.apply(next(x for x in a.actions() if x.kind == kind))

    both = step(step(base, "grid"), "loads")
    assert describe_change(base, both) == "persistent grid, TMA loads (tensor descriptors)"
    assert describe_change(base, step(base, "split_k")) == "split-K"
    leaky = (DATA / "matmul_leaky_relu" / "baseline.py").read_text(encoding="utf-8")
    assert describe_change(leaky, step(leaky, "epilogue")) == "epilogue fused into the GEMM"
    bigger = step(base, "grid").replace("BLOCK_M = 64", "BLOCK_M = 128")
    assert describe_change(base, bigger).startswith("persistent grid; ") and "64 -> 128" in describe_change(base, bigger)
    assert describe_change(base, base.replace("BLOCK_M = 64", "BLOCK_M = 128")) == "BLOCK_M: 64 -> 128"

