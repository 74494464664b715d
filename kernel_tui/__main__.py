import sys

from kernel_tui.cli import main

sys.exit(main())
