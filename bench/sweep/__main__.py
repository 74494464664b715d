"""`python -m bench.sweep ...` from the repo root, or `python bench/sweep ...` from anywhere."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a directory, the package's parent is not on the path
    sys.path.insert(0, str(ROOT))

from bench.sweep.cli import main  # noqa: E402

if __name__ == "__main__":  # a spawned pool process imports this module too: it must not run again
    sys.exit(main())
