"""The suite's own summary, report and fast_p figure over the tasks it has scored so far.

A suite writes `suite-report.md` when its last task is done; one run in parts across sessions has only its
per-task results (`<out>/results/*.json`) until then. This renders them with the suite's own code (fast_p,
geometric means, the count past torch.compile), so a partial table is never summed by hand.

    python bench/suite_report_so_far.py RESULTS_DIR OUT_DIR    # writes OUT_DIR/suite-report.md and its figure

The report names the suite's task folder as `tasks` beside the suite's out folder (read from the results), as
bench/gpu_inductor_suite.sh lays them out.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kernel_tui.core.suite.models import SuiteResult, TaskResult
from kernel_tui.core.suite.report import write_suite_report
from kernel_tui.core.suite.score import suite_result


def suite_so_far(results_dir: Path) -> SuiteResult:
    results = [TaskResult.model_validate_json(p.read_text(encoding="utf-8"))
               for p in sorted(results_dir.glob("*.json"))]
    if not results:
        raise SystemExit(f"no task results (*.json) in {results_dir}")
    out = Path(results[0].workspace).parent.parent  # <out>/workspaces/<task>
    first = results[0]
    return suite_result(results, tasks_dir=str(out.parent / "tasks"), out=str(out), device=first.device,
                        proposer=first.proposer, max_steps=first.max_steps, runs=first.runs)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python bench/suite_report_so_far.py RESULTS_DIR OUT_DIR")
    target = Path(sys.argv[2])
    target.mkdir(parents=True, exist_ok=True)
    for path in write_suite_report(suite_so_far(Path(sys.argv[1])), target):
        print(path)
