"""Exit statuses of every command.

0 the command ran and the candidate is ok, 1 the candidate (or task) failed a check, 2 bad input (one line
on stderr, never a traceback), 141 the reader of stdout went away (`| head`).
"""

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # what a shell reports for a process that SIGPIPE ended
