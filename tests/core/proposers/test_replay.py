"""How the replay proposer names a round, by one rule: the summary of the file's own module docstring, else
the file's name as it is on disk."""

from __future__ import annotations

from pathlib import Path

from kernel_tui.core.proposers.base import ProposerContext
from kernel_tui.core.proposers.replay import ReplayProposer, describe

BASELINE = '"""Naive Triton baseline for vector-add: one 1-D block of elements per program."""\nimport torch\n'


def named(tmp_path: Path, files: dict[str, str], best: str = BASELINE) -> list[str]:
    for name, source in files.items():
        (tmp_path / name).write_text(source)
    replay = ReplayProposer(tmp_path)
    context = ProposerContext(round=1, best_source=best, baseline_source=BASELINE, history=[])
    names = []
    while (proposal := replay.propose(context)) is not None:
        names.append(proposal.change)
    return names


def test_a_docstring_names_the_round_and_a_file_without_one_by_its_file_name(tmp_path):
    assert named(tmp_path, {
        "01_block_1024.py": '"""Block size 256 -> 1024: fewer, fuller programs."""\nimport torch\n',
        "02_tiled.py": "# no docstring\nimport torch\n",
    }) == ["Block size 256 -> 1024: fewer, fuller programs.", "02_tiled.py"]


def test_a_file_that_does_not_parse_keeps_its_docstring_name(tmp_path):
    assert named(tmp_path, {"01_broken.py": '"""Store mask off by one."""\ndef f(:\n'}) == ["Store mask off by one."]


def test_a_docstring_copied_from_the_baseline_or_best_does_not_name_the_round(tmp_path):
    best = '"""Block size 1024."""\nimport torch\n'
    assert named(tmp_path, {
        "01_copy_of_baseline.py": BASELINE + "# BLOCK_SIZE = 512\n",
        "02_copy_of_best.py": best + "# num_warps = 8\n",
    }, best=best) == ["01_copy_of_baseline.py", "02_copy_of_best.py"]


def test_a_summary_wrapped_over_lines_is_named_whole_and_long_ones_are_cut():
    source = '"""Block size 1024 with eight warps\nand evict-first loads.\n\nMore detail that is not the name."""\n'
    assert describe(Path("03_x.py"), source) == "Block size 1024 with eight warps and evict-first loads."
    long = describe(Path("04_x.py"), f'"""{"word " * 40}"""\n')
    assert len(long) == 100 and long.endswith("…")
