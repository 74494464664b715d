"""The Textual front end of kernel-tui. Entry point: `kernel_tui.tui.app.run_tui`.

This package imports neither torch, triton nor litellm, and loads the core only inside thread workers,
so the screen paints before any of it is imported.
"""
