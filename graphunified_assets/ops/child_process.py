"""A function run in a fresh interpreter: what it allocates leaves with the process.

`index` ran the per-document run over every partition and then the global run in one process.
On the 12.6K-passage build that process already held 2.8 GB when the global run began and peaked
at 4.4 GB: memory freed by one run (Dagster's captured outputs and events, pymalloc and glibc
arenas, ONNX Runtime's arena, spaCy) mostly stays in the process's RSS. Each document run of a
large update now happens in a child started with ``spawn`` (no inherited threads, SQLite handles
or heap), which exits when its run ends; the parent keeps the index lock, plans and reports, and
runs the global run, the last, itself: its heap holds no earlier run, and a child would hold a
second copy of every import beside it. A child dies with its parent
(``PR_SET_PDEATHSIG``), so a killed `index` leaves no run writing behind a released lock.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import TypeVar

from graphunified_assets.lib.parent_death import die_with

T = TypeVar("T")
_FORWARD_AFTER_S = 2.0  # a child still running this long after Ctrl-C did not get it: send it
_STOP_GRACE_S = 60.0  # after Ctrl-C, how long the child may take to close its Dagster run


class ChildKilled(RuntimeError):
    """The child ended without an answer: killed by a signal (the OOM killer's is SIGKILL)."""

    def __init__(self, what: str, exitcode: int | None) -> None:
        self.exitcode = exitcode
        if exitcode is not None and exitcode < 0:
            name = signal.Signals(-exitcode).name
            hint = " (the system may have run out of memory)" if -exitcode == signal.SIGKILL else ""
            how = f"was killed by {name}{hint}"
        else:
            how = f"exited with code {exitcode} before reporting a result"
        super().__init__(f"the process running {what} {how}")


def in_child(what: str, function: Callable[..., T], *args: object) -> T:
    """``function(*args)`` in a new interpreter: its result, or its exception raised here.

    ``function`` and ``args`` must pickle (a module-level function, plain data); ``what`` names the
    work in the error when the child is killed. Ctrl-C reaches the child too (same process group):
    it is given time to stop its run cleanly before the interrupt continues here.
    """
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(
        target=_serve, args=(send, os.getpid(), function, args), name=f"graphunified: {what}"
    )
    child.start()
    send.close()  # only the child writes: its death closes the pipe, which ends recv()
    try:
        try:
            succeeded, value = receive.recv()
        except EOFError:
            child.join()
            raise ChildKilled(what, child.exitcode) from None
        child.join()
    except KeyboardInterrupt:
        _stop(child)
        raise
    finally:
        receive.close()
    if succeeded:
        return value
    raise value


def _stop(child: multiprocessing.process.BaseProcess) -> None:
    """After Ctrl-C here: the child got it too from the terminal, unless only this process was
    signalled; either way it stops its run (Dagster marks it) before the interrupt goes on."""
    child.join(_FORWARD_AFTER_S)
    if child.is_alive() and child.pid is not None:
        os.kill(child.pid, signal.SIGINT)
    child.join(_STOP_GRACE_S)
    if child.is_alive():
        child.terminate()
        child.join()


def _serve(send: Connection, parent: int, function: Callable[..., object], args: tuple[object, ...]) -> None:
    die_with(parent)
    try:
        answer: tuple[bool, object] = (True, function(*args))
    except BaseException as error:  # Ctrl-C included: the parent decides what each means
        answer = (False, _picklable(error))
    try:
        send.send(answer)
    except (pickle.PicklingError, TypeError, AttributeError) as error:  # an unpicklable result
        send.send((False, RuntimeError(f"{function.__name__} returned what cannot cross processes: {error}")))
    send.close()


def _picklable(error: BaseException) -> BaseException:
    """The exception itself when it crosses processes intact, else a RuntimeError with its text."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # whatever cannot cross processes is described instead
        return RuntimeError(str(error) or type(error).__name__)
    return error
