"""Runs in flight, so that maple-ci ending early cancels what it started. A bot job cancelled on
GitHub (the runner sends SIGINT, then SIGTERM, then kills) would otherwise leave its pipelines
running at the center and its batch jobs in the queue, spending allocation hours for nobody.

A backend registers how to cancel its run while it waits on it (`cancellable`) and waits with
`wait`, which returns early once everything is being cancelled; `run_all` runs a request's
verifications at once and cancels them all on SIGTERM or an error.
"""

import contextlib
import itertools
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable, Iterator, TypeVar

from ..errors import MapleError

_lock = threading.Lock()
_running: dict[int, Callable[[], None]] = {}
_ids = itertools.count()
_stopping = threading.Event()
T = TypeVar("T")


def _cancel(cancel: Callable[[], None]) -> None:
    try:
        cancel()
    except Exception as error:  # best effort: the others must still be cancelled
        print(f"maple: could not cancel a verification run: {error}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def cancellable(cancel: Callable[[], None]) -> Iterator[None]:
    """While the block waits on a run, cancel_all() calls `cancel` to end it; an exception out of
    the block (Ctrl-C, an error while polling) ends it too."""
    key = next(_ids)
    with _lock:
        _running[key] = cancel
    try:
        yield
    except BaseException:
        with _lock:
            mine = _running.pop(key, None)
        if mine:
            _cancel(mine)
        raise
    finally:
        with _lock:
            _running.pop(key, None)


def cancel_all() -> None:
    """Cancel every run in flight and wake every `wait`."""
    _stopping.set()
    with _lock:
        cancels = list(_running.values())
        _running.clear()
    for cancel in cancels:
        _cancel(cancel)


def wait(seconds: float) -> None:
    """Sleep between two polls of a run; MapleError at once when the runs are being cancelled."""
    if _stopping.wait(seconds):
        raise MapleError("verification stopped: its runs were cancelled")


def run_all(tasks: list[Callable[[], T]], done: Callable[[int, T], None]) -> None:
    """Run every task at once, each in a thread of its own (each waits on a run at a center);
    done(index, its value) is called in this thread as each ends. SIGTERM or SIGINT (in the main
    thread), or an exception out of a task or of done, cancels every run in flight and is raised."""

    def stop(signum, frame):
        raise MapleError(f"maple-ci received {signal.Signals(signum).name}: the verification runs in flight were cancelled")

    _stopping.clear()
    main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)} if main else {}
    pool = ThreadPoolExecutor(max_workers=max(1, len(tasks)), thread_name_prefix="maple-verify")
    try:
        futures = {pool.submit(task): index for index, task in enumerate(tasks)}
        for future in as_completed(futures):
            done(futures[future], future.result())
    except BaseException:
        cancel_all()
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        pool.shutdown(wait=True)  # quick after cancel_all: every task's wait() has returned
        _stopping.clear()
