"""`kernel-tui run` (and `kernel-tui TASK|WORKSPACE`): bad input refused as one line, then the screen
(kernel_tui.tui) or, with --headless, headless.py."""

from __future__ import annotations

import shlex
from pathlib import Path

from kernel_tui.cli.options import add_unconfined_option, examples
from kernel_tui.core.errors import KernelTuiError


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run rounds on a task (new workspace) or resume a workspace",
                       **examples("kernel-tui run fixtures/vector_add --proposer search --max-steps 10",
                                  "kernel-tui run workspaces/vector_add-20261202-0930 --headless --max-steps 5"))
    p.add_argument("target", nargs="?", help="a task directory or an existing workspace (none: pick one)")
    p.add_argument("--headless", action="store_true", help="no screen: auto-approve every proposal")
    p.add_argument("--proposer", choices=["search", "llm", "replay"],
                   help="who proposes candidates: search (built-in transforms), llm (the agent; needs a model "
                        "configured), replay (the files in --candidates). Default: on resume the workspace's own, "
                        "else llm if a model is configured, else search")
    p.add_argument("--candidates", help="directory of *.py candidates for --proposer replay (name order)")
    p.add_argument("--max-steps", type=int,
                   help="the workspace's total budget of rounds, rounds already run included: on resume "
                        "--max-steps 6 after 4 rounds runs 2 more (default: the task's max_rounds; on resume, the "
                        "workspace's budget)")
    p.add_argument("--workspace", help="where to create the workspace (default workspaces/<task>-<time>)")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                   help="where candidates run (default: auto, the GPU if there is one); cpu = Triton's "
                        "interpreter (timings are not GPU timings)")
    p.add_argument("--gpus", help="evaluate a batch of proposals in parallel, one per GPU: all, a count (2) or "
                                  "ids (0,2); each is gated against the incumbent it was proposed from and re-gated "
                                  "after an accept (built-in search and replay; default: one GPU)")
    add_unconfined_option(p)
    p.set_defaults(func=cmd_run, evaluates=True)


def cmd_run(args) -> int:
    from kernel_tui.cli import headless
    from kernel_tui.core.config import AgentSettings
    from kernel_tui.core.opening import check_proposer, check_target, uses_settings

    if args.max_steps is not None and args.max_steps < 1:
        raise KernelTuiError("--max-steps must be at least 1")
    if args.headless and not args.target:
        raise KernelTuiError("--headless needs a task directory or a workspace")
    # Bad input is refused here, as one line: before a workspace is created (a half-made one would show in
    # the picker) and before the screen opens (it would draw a dead dashboard and wait for a key).
    target = Path(args.target) if args.target else None
    workspace = Path(args.workspace) if args.workspace else None
    candidates = Path(args.candidates) if args.candidates else None
    resumed = check_target(target, workspace) if target is not None else None
    # read once, here, and passed in; a bad value is refused now, not after the workspace exists
    settings = AgentSettings.load() if uses_settings(args.proposer, candidates, resumed) else None
    check_proposer(args.proposer, candidates, resumed, settings)
    if args.device == "cuda":  # auto is resolved by the run itself, so the screen opens without waiting on it
        from kernel_tui.core import environment

        environment.resolve("cuda")
    if not args.headless:
        from kernel_tui.tui.app import run_tui

        closed = run_tui(target, device=args.device, proposer=args.proposer, candidates=candidates,
                         max_steps=args.max_steps, workspace=workspace, gpus=args.gpus, settings=settings)
        if closed.workspace is not None:  # the screen is gone: say how to come back to where it was
            print(resume_line(closed.workspace))
        return closed.code
    return headless.run(args, settings)


def resume_line(workspace: Path) -> str:
    """`resume with: kernel-tui WORKSPACE`, the path as short as it can be typed from here."""
    path = workspace.absolute()
    try:
        path = path.relative_to(Path.cwd())
    except ValueError:
        pass
    return f"resume with: kernel-tui {shlex.quote(str(path))}"
