"""What the report's figures and sections say, checked on their data: the record line after a restore, the
roofline's points, the profile table's order, a re-test of the baseline against itself, no "null" figures."""

from __future__ import annotations

import json
from dataclasses import replace

from kernel_tui.core.history import Version
from kernel_tui.core.metrics import Roof
from kernel_tui.core.profile import parse_ncu_csv
from kernel_tui.core.profile.store import ProfileRecord
from kernel_tui.core.report import load_records, write_report
from kernel_tui.core.report.figures import record_line, roofline_points
from kernel_tui.core.report.markdown import _section_profiles
from tests.core.profile.test_store import NCU_DATA
from tests.core.report.test_report import comparison, line, make_workspace


def restored(latency: float, source: str = "b" * 40) -> Version:
    return Version(commit="f" * 40, round=None, proposer="person:Ada", change="Restore", latency=latency,
                   vs_previous=None, vs_baseline=0.0, status="restored", restored_from=source)


def test_the_record_line_ends_at_a_restored_best(tmp_path):
    r = load_records(make_workspace(tmp_path / "ws", [line(1, accepted=True, latency=40e-6, improvement=0.2),
                                                      line(2, latency=45e-6, improvement=-0.1)]))
    rx, ry, note = record_line(r, [1.0, 2.0])
    assert (rx, ry, note) == ([1.0, 2.0, 2.5], [40e-6, 40e-6, 40e-6], None)
    r = replace(r, best=restored(50e-6))  # the person made the baseline the best again after round 2
    rx, ry, note = record_line(r, [1.0, 2.0])
    assert ry == [40e-6, 40e-6, 50e-6] and note == f"now {'b' * 8}, restored"
    assert record_line(r, []) == ([], [], None)


def test_roofline_points_are_achieved_flops_or_bytes_over_each_latency():
    versions = [("baseline", 2e-3, True), ("round 1", 1e-3, False)]
    compute = Roof(nbytes=1e8, flops=1e11, bandwidth=4e12, peak=1e15)
    assert roofline_points(compute, versions) == [("baseline", 1000.0, 5e13, True), ("round 1", 1000.0, 1e14, False)]
    memory = Roof(nbytes=1e8, bandwidth=4e12)  # no FLOPs counted: bytes/s in TB/s, one place per version
    assert roofline_points(memory, versions) == [("baseline", 0.0, 0.05, True), ("round 1", 1.0, 0.1, False)]


def test_the_profile_table_runs_baseline_rounds_then_on_demand_and_compares_accepted_versions_only(tmp_path):
    lines = [line(1, accepted=True, latency=40e-6, improvement=0.2, incumbent_commit="b" * 40),
             line(2, latency=45e-6, improvement=-0.1)]
    lines = [ln.model_copy(update={"commit": str(ln.round) * 40}) for ln in lines]
    r = load_records(make_workspace(tmp_path / "ws", lines))
    base = parse_ncu_csv((NCU_DATA / "vector_add.log").read_text())
    k = base.kernels[0]
    faster = base.model_copy(update={"kernels": [k.model_copy(update={"duration_s": k.duration_s / 2})]})

    def rec(sha: str, profile, created: str) -> ProfileRecord:
        return ProfileRecord(commit=sha, status="ok", profile=profile, shape="main", created=created)

    profiles = {"f" * 40: rec("f" * 40, base, "2026-12-01T11:00:00+00:00"),  # a restore of the baseline
                "2" * 40: rec("2" * 40, base, "2026-12-01T10:05:00+00:00"),
                "1" * 40: rec("1" * 40, faster, "2026-12-01T10:02:00+00:00"),
                "b" * 40: rec("b" * 40, base, "2026-12-01T10:00:00+00:00")}
    r = replace(r, profiles=profiles, best=restored(50e-6))
    text = "\n".join(_section_profiles(r))
    rows = [ln.split("|")[1].strip() for ln in text.splitlines() if ln.startswith("| ") and "version" not in ln]
    assert rows == ["baseline", "round 1 (accepted)", "round 2", f"`{'f' * 8}` (restore of `{'b' * 8}`)"]
    notes = [ln for ln in text.splitlines() if ln.startswith("- ")]
    assert len(notes) == 1 and notes[0].startswith(f"- `{'1' * 8}` against `{'b' * 8}`: ")  # not the restore's


def test_a_retest_of_the_baseline_against_itself_is_called_noise_not_slower(tmp_path):
    ws = make_workspace(tmp_path / "ws", speedup=0.985)
    same = comparison(0.985).model_copy(update={"same_code": True})
    (ws / "final-comparison.json").write_text(same.model_dump_json())
    write_report(ws)
    md = (ws / "report.md").read_text()
    assert "S measures only the noise between them" in md
    assert "slower** than the baseline" not in md
    other = make_workspace(tmp_path / "other", speedup=0.985)
    write_report(other)
    assert "slower** than the baseline" in (other / "report.md").read_text()  # two codes: it is a finding


def test_the_environment_lists_no_figure_a_run_did_not_have(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    (ws / "environment.json").write_text(json.dumps({"device": "cpu", "l2_bytes": None, "sm_count": None}))
    write_report(ws)
    md = (ws / "report.md").read_text()
    assert "- device: cpu" in md and "null" not in md and "l2_bytes" not in md
