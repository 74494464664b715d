"""torch.compile's own kernels as a task's version 0: capture them in a child process (`capture`), rewrite
them (`rewrite`), check the result with the task's own evaluator, and only then install it. The task's
previous start is kept beside it (`baseline.before-inductor.py`); anything short of a correct Triton start
leaves the task as it was and says why in one line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_tui.core.inductor.generated import Generated, Refusal, parse_generated
from kernel_tui.core.inductor.launch import asserted_tensors, symbol_values
from kernel_tui.core.inductor.rewrite import rewrite
from kernel_tui.core.task.parts import INDUCTOR_LABEL

if TYPE_CHECKING:
    from kernel_tui.core.task.spec import TaskSpec

KEPT_NAME = "baseline.before-inductor.py"


@dataclass(frozen=True)
class Start:
    source: str  # the baseline.py to install
    label: str  # how the screen and the report name it
    notes: list[str] = field(default_factory=list)


def capture(task_dir: Path, device: str, timeout: float = 600.0, keep: Path | None = None) -> dict:
    """What Inductor generated for the task (capture.py's JSON), or Refusal with the child's one line.
    `keep`: a copy of that JSON (or of the child's error) is written there, whatever follows."""
    with tempfile.TemporaryDirectory(prefix="kt-inductor-") as tmp:
        out = Path(tmp) / "captured.json"
        cmd = [sys.executable, "-m", "kernel_tui.core.inductor.capture", str(task_dir), "--device", device,
               "--out", str(out)]
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(Path(tmp) / "inductor-cache")}
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise Refusal(f"torch.compile did not finish in {timeout:.0f} s: keep the eager start") from None
        if not out.is_file():
            last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            raise Refusal(f"torch.compile's process failed ({last[:200]}): keep the eager start")
        captured = json.loads(out.read_text(encoding="utf-8"))
    if keep is not None:
        keep.parent.mkdir(parents=True, exist_ok=True)
        keep.write_text(json.dumps(captured, indent=1) + "\n", encoding="utf-8")
    if captured.get("error"):
        raise Refusal(f"torch.compile failed on the reference ({captured['error']}): keep the eager start")
    if not captured.get("code"):
        raise Refusal("torch.compile generated no code for the reference: keep the eager start")
    return captured


def interpreter_gap(source: str) -> str | None:
    """The first libdevice function the start calls, where it calls one: the CPU interpreter runs `tl` math but
    no libdevice, and the check would fail with a TypeError that says nothing of why."""
    found = re.search(r"\blibdevice\.(\w+)\(", source)
    return f"libdevice.{found.group(1)}" if found else None


def fixed_input_size(generated: Generated, placeholders: list[str], spec: TaskSpec) -> str | None:
    """Where Inductor compiled an input's size as the number it had at the captured shape (a max pooling's
    sequence length, say) although the task's shapes move it: the kernels would index that input with the
    captured size at every shape. One line naming it, or None."""
    for op, tensor in asserted_tensors(generated, placeholders, spec):
        for axis, size in enumerate(op.sizes):
            if not size.isdigit():
                continue
            seen = {spec.tensor_shape(tensor, case.dims)[axis] for case in spec.all_shapes()}
            if len(seen) > 1:
                moves = ", ".join(str(v) for v in sorted(seen))
                return (f"torch.compile fixed dimension {axis} of {tensor.name} at {size}, its size at the captured "
                        f"shape, and the task's shapes move it ({moves})")
    return None


def inductor_start(task_dir: Path, device: str, timeout: float = 600.0, keep: Path | None = None) -> Start:
    """The rewritten start, not yet checked or installed (`keep`: see capture)."""
    from kernel_tui.core.task import load_spec

    spec = load_spec(task_dir / "task.json")
    captured = capture(task_dir, device, timeout, keep)
    unknown = [p for p in captured["placeholders"] if p.startswith("?")]
    if unknown:
        raise Refusal(f"the compiled graph reads {unknown[0][1:]}, which is no launch argument: keep the eager start")
    generated = parse_generated(captured["code"])
    single_shape = len({tuple(sorted(c.dims.items())) for c in spec.all_shapes()}) == 1
    if fixed := fixed_input_size(generated, list(captured["placeholders"]), spec):  # None at a single shape
        raise Refusal(f"{fixed}: keep the eager start")
    static: list[str] = []
    source = rewrite(
        generated,
        launch_arguments=list(spec.launch_arguments),
        placeholders=list(captured["placeholders"]),
        outputs=[t.name for t in spec.tensors if t.kind == "output"],
        configs=captured.get("configs") or None,
        single_shape=single_shape,
        notes=static,
        task_sizes=symbol_values(generated, list(captured["placeholders"]), spec),
    )
    if device == "cpu":
        gap = interpreter_gap(source)
        if gap:
            raise Refusal(f"the start calls {gap}, which Triton's CPU interpreter does not run (on a GPU it would "
                          "be checked): keep the eager start")
    label = INDUCTOR_LABEL.format(version=captured["torch"])
    notes = [f"captured on {captured['device_name']} at shape {captured['shape']!r}", *static]
    if captured.get("modules", 1) > 1:
        notes.append(f"the reference compiled to {captured['modules']} graphs; the start holds the first")
    if not captured.get("configs"):
        notes.append("no autotuned configuration was kept: block sizes and warps are the rewrite's defaults")
    header = f"# {label}: the kernels torch.compile generated for this task's reference, rewritten as a start.\n"
    return Start(source=header + source, label=label, notes=notes)


def install(task_dir: Path, start: Start) -> Callable[[], None]:
    """baseline.py := the start (the old one kept as KEPT_NAME); task.json's baseline: Triton, labelled.
    Returns the undo: the task exactly as it was."""
    spec_path = task_dir / "task.json"
    spec_text = spec_path.read_text(encoding="utf-8")
    raw = json.loads(spec_text)
    current = task_dir / raw.get("baseline", {}).get("filename", "baseline.py")
    new, kept = task_dir / "baseline.py", task_dir / KEPT_NAME
    before = {p: p.read_text(encoding="utf-8") if p.is_file() else None for p in (spec_path, current, new, kept)}
    if current.is_file() and not kept.exists():
        kept.write_text(before[current] or "", encoding="utf-8")
    new.write_text(start.source, encoding="utf-8")
    raw["baseline"] = {"filename": "baseline.py", "language": "triton", "label": start.label}
    spec_path.write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")

    def undo() -> None:
        for path, text in before.items():
            if text is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(text, encoding="utf-8")

    return undo
