"""Start a program with default SIGINT/SIGTERM handling, then exec it.

`dagster dev` copies the SIGINT disposition onto SIGTERM; started from a non-interactive shell
both are ignored and it cannot be stopped cleanly. Restoring the defaults first fixes that.
"""

import os
import signal
import sys

signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])
