"""Import KernelBench problems (a `Model`, `get_inputs`, `get_init_inputs` per file) as task directories."""

from kernel_tui.core.kernelbench.importer import Imported, import_problem, task_name

__all__ = ["Imported", "import_problem", "task_name"]
