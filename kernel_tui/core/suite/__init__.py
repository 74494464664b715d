"""Suites: many tasks run headless, each task's best kernel scored against PyTorch (KernelBench's fast_p).

`runner` drives every task through the one Session loop and scores it; `score` holds the pure scoring
(fast_p, strict fast_p, geometric mean, the interval of S); `sources` writes the PyTorch sides as launch
sources; `run` chooses where the tasks run; `report` writes suite-report.md and its figure. The `kernel-tui
suite` command (arguments, signals, printed lines) is the front end's: kernel_tui/cli/suite.py.
"""
