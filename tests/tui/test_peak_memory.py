"""The peak device memory of each evaluation, on the screen and in the report: shown where it was recorded,
and no column of dashes where none was (the CPU interpreter records no peak)."""

from __future__ import annotations

import json

from textual.app import App, ComposeResult

from kernel_tui.core.evaluator.memory import GiB, gib
from kernel_tui.core.format import memory_bytes
from kernel_tui.core.records import TrajectoryLine
from kernel_tui.core.report import write_report
from kernel_tui.core.workspace import Workspace
from kernel_tui.tui import present
from kernel_tui.tui.screens.history import HistoryScreen
from kernel_tui.tui.view import NA
from kernel_tui.tui.widgets.run import TrajectoryPane, TrajectoryTable
from tests.core.report.test_report import line, make_workspace
from tests.support.tui import app_for, rendered, run, run_state, wait_until
from tests.support.workspaces import ADA, fixed_workspace

PEAK = 36 * GiB
SMALL = 5 * 2**20  # below GiB / 100, where gib switches to MiB


def with_peaks(root, peaks: dict[int, int], baseline: int | None = None) -> None:
    """Record peaks on the given rounds of a workspace's verdicts (and on its baseline evaluation)."""
    path = root / "trajectory.jsonl"
    lines = [TrajectoryLine.model_validate_json(x) for x in path.read_text().splitlines()]
    path.write_text("".join(ln.model_copy(update={"peak_memory_bytes": peaks.get(ln.round)}).model_dump_json() + "\n"
                            for ln in lines))
    if baseline is not None:
        evaluation = json.loads((root / "baseline-evaluation.json").read_text())
        (root / "baseline-evaluation.json").write_text(json.dumps({**evaluation, "peak_memory_bytes": baseline}))


def cells(table: TrajectoryTable) -> tuple[list[str], list[list[str]]]:
    headers = [str(c.label) for c in table.columns.values()]
    return headers, [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


# --- the formatter --------------------------------------------------------------------------------------


def test_memory_bytes_picks_a_unit_and_a_marker_where_there_is_none():
    assert memory_bytes(PEAK) == "36.00 GiB" and memory_bytes(SMALL) == "5.0 MiB" and memory_bytes(GiB // 2) == "0.50 GiB"
    assert memory_bytes(GiB // 100 + 1) == "0.01 GiB" and memory_bytes(GiB // 100 - 1) == "10.2 MiB"
    assert memory_bytes(96 * 2**10) == "96.0 KiB" and memory_bytes(0) == "0.0 KiB"
    assert gib(PEAK) == memory_bytes(PEAK)  # the core's messages and the screens say it alike
    assert memory_bytes(None) == "n/a" and memory_bytes(None, missing="—") == "—"


# --- the report -----------------------------------------------------------------------------------------


def attempts_table(md: str) -> list[str]:
    section = md.split("## Key attempts", 1)[1].split("\n## ", 1)[0]
    return [row for row in section.splitlines() if row.startswith("|")]


def test_report_has_a_peak_memory_column_only_where_a_peak_was_recorded(tmp_path):
    lines = [line(1, accepted=True, latency=40e-6, improvement=0.2, peak_memory_bytes=PEAK),
             line(2, latency=44e-6, improvement=-0.1, peak_memory_bytes=SMALL),
             line(3, status="incorrect")]
    ws = make_workspace(tmp_path / "ws", lines)
    write_report(ws)
    table = attempts_table((ws / "report.md").read_text())
    head = [c.strip() for c in table[0].strip("|").split("|")]
    at = head.index("peak memory")
    assert head[at - 1] == "% roofline" and head[at - 3] == "latency"  # after the latencies and the roofline
    assert len({row.count("|") for row in table}) == 1  # every row has the header's cells
    body = [[c.strip() for c in row.strip("|").split("|")] for row in table[2:]]
    assert [r[at] for r in body] == ["36.00 GiB", "5.0 MiB", "—"]


def test_report_has_no_peak_memory_column_without_a_peak(tmp_path):
    ws = make_workspace(tmp_path / "ws", [line(1, accepted=True, latency=40e-6, improvement=0.2), line(2)])
    write_report(ws)
    md = (ws / "report.md").read_text()
    assert "peak memory" not in md and "GiB" not in md
    assert attempts_table(md)[0].startswith("| round | change | proposer | verdict | latency | incumbent latency |")


# --- the screens' data ----------------------------------------------------------------------------------


def test_rows_carry_the_peak_as_text_and_the_marker_without_one():
    rows = present.rows([line(1, latency=40e-6, peak_memory_bytes=PEAK), line(2, peak_memory_bytes=SMALL), line(3)])
    assert [r.memory for r in rows] == ["36.00 GiB", "5.0 MiB", NA]


def test_history_rows_carry_the_peak_of_the_evaluation_each_version_carries(tmp_path):
    ws = fixed_workspace(tmp_path / "ws")
    with_peaks(ws.root, {1: PEAK, 2: SMALL}, baseline=2 * GiB)
    ws = Workspace.open(ws.root)
    data = present.history(ws)
    assert [(r.round, r.memory) for r in data.lineage] == [(1, "36.00 GiB"), (0, "2.00 GiB")]
    assert [(r.round, r.memory) for r in data.proposals] == [(1, "36.00 GiB"), (2, "5.0 MiB"), (3, NA), (4, NA)]
    ws.restore(data.lineage[-1].commit, ADA)  # a restore of the baseline carries the baseline's peak
    assert [r.memory for r in present.history(ws).lineage][:2] == ["2.00 GiB", "36.00 GiB"]


# --- the widgets ----------------------------------------------------------------------------------------


class PaneApp(App):
    def compose(self) -> ComposeResult:
        yield TrajectoryPane()


def test_the_table_shows_a_peak_mem_column_only_when_a_row_has_a_peak():
    app = PaneApp()
    with_peak = present.rows([line(1, latency=40e-6, peak_memory_bytes=PEAK), line(2, latency=44e-6)])
    without = present.rows([line(1, latency=40e-6), line(2, latency=44e-6)])

    async def scenario():
        async with app.run_test(size=(200, 20)) as pilot:
            pane, table = app.query_one(TrajectoryPane), app.query_one(TrajectoryTable)
            pane.show(with_peak)
            await pilot.pause()
            headers, body = cells(table)
            at = headers.index("peak mem")
            assert headers[at - 2:at] == ["latency", "incumbent"]  # the candidate's beside its incumbent's
            assert [r[at] for r in body] == ["36.00 GiB", NA]
            assert [r[1] for r in body] == ["rejected by the gate"] * 2  # the verdict column is still styled in place
            await pilot.press("up")  # the first row: its peak in the detail line
            await pilot.pause()
            assert "40.0 µs · peak 36.00 GiB" in rendered(app.query_one("#trajectory-detail"))
            pane.show(without)
            await pilot.pause()
            headers, _ = cells(table)
            assert "peak mem" not in headers and headers[3:6] == ["latency", "incumbent", "vs incumbent"]
            assert "peak" not in rendered(app.query_one("#trajectory-detail"))

    run(scenario())


def test_the_app_shows_the_peaks_in_the_trajectory_and_in_history(tmp_path):
    ws = fixed_workspace(tmp_path / "ws")
    with_peaks(ws.root, {1: PEAK}, baseline=SMALL)
    app = app_for(ws.root)

    async def scenario():
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_until(pilot, lambda: run_state(app).startswith("idle"), 60, "idle")
            table = app.main_screen.query_one(TrajectoryTable)
            await wait_until(pilot, lambda: table.row_count == 4, 30, "the verdict rows")
            headers, body = cells(table)
            assert [r[headers.index("peak mem")] for r in body] == ["36.00 GiB", NA, NA, NA]
            await pilot.press("h")
            screen = app.screen
            assert isinstance(screen, HistoryScreen)
            info = screen.query_one("#detail-info")
            await wait_until(pilot, lambda: "peak 36.00 GiB" in rendered(info), 30, "the newest version's detail")
            await pilot.press("down")  # the baseline
            await wait_until(pilot, lambda: "peak 5.0 MiB" in rendered(info), 30, "the baseline's detail")
            await pilot.press("q")

    run(scenario())


def test_the_best_pane_names_a_labelled_start_while_it_is_the_best(tmp_path):
    import json
    import shutil

    from kernel_tui.core.workspace import Workspace
    from tests.conftest import FIXTURES

    task_dir = tmp_path / "task"
    shutil.copytree(FIXTURES / "vector_add", task_dir)
    raw = json.loads((task_dir / "task.json").read_text())
    raw["baseline"] = {"filename": "baseline.py", "language": "triton", "label": "torch.compile's kernels (Inductor, torch 2.11)"}
    (task_dir / "task.json").write_text(json.dumps(raw))
    labelled = present.best_view(Workspace.create(task_dir, path=tmp_path / "ws"), "cpu")
    assert labelled.label == "baseline: torch.compile's kernels (Inductor, torch 2.11)"
    assert "torch.compile's kernels" in labelled.titles[-1]
    plain = present.best_view(Workspace.create(FIXTURES / "vector_add", path=tmp_path / "plain"), "cpu")
    assert plain.label == "baseline"
