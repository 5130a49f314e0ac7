"""Loaded by every Python process the reliability tests start (its folder is on their PYTHONPATH):
with GU_KILL_ON_RENAME=<table>, the process SIGKILLs itself when a finished temporary file of that
table is about to be renamed into place (mid-write). Every process, because `index` runs each
Dagster run in a child process of its own (graphunified_assets/ops/child_process.py)."""

import os
import signal
import sys

_target = os.environ.get("GU_KILL_ON_RENAME")


def _hook(event: str, args: tuple[object, ...]) -> None:
    if _target and event == "os.rename":
        name = os.path.basename(os.fsdecode(args[0]))  # type: ignore[arg-type]
        if name.startswith("." + _target + ".") and name.endswith(".tmp"):
            with open(os.environ["GU_KILL_MARK"], "w") as mark:
                mark.write(os.fsdecode(args[0]))  # type: ignore[arg-type]
            os.kill(os.getpid(), signal.SIGKILL)


if _target:
    sys.addaudithook(_hook)
