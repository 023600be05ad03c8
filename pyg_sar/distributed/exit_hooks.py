r"""Exit handling for failure supervision: the process-wide hooks, installed only when
supervision is asked for and removed by a clean :func:`pyg_sar.shutdown`.

* ``sys.excepthook``: an uncaught exception is reported to every rank (a ``KeyboardInterrupt``
  as an interrupt) before the previous hook prints it;
* an ``atexit`` handler: a process that failed, or learnt that another rank failed, skips what
  can block on a dead peer at exit (MPI finalisation, process-group teardown) and exits at once
  (status 1, or 130 after an interrupt);
* a grace timer: once another rank's failure is known, a process that has not ended
  ``grace`` seconds later is ended with status 1 (its main thread may be stuck where no wait
  of pyg_sar can see the failure).
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import Optional

from pyg_sar.distributed.hub import FailureHub, PeerFailure

GRACE_S = 10.0


class ExitHooks:
    """The hooks of one supervised rank; :meth:`install` them, :meth:`uninstall` after a clean
    end.

    Args:
        hub: the rank's failure hub (what it knows of failures decides how the process exits).
        grace: seconds between learning of another rank's failure and ending the process.
        report_failure: called with an uncaught exception (not an interrupt).
        report_interrupt: called for an uncaught ``KeyboardInterrupt``.
    """

    def __init__(self, hub: FailureHub, grace: float = GRACE_S, *,
                 report_failure: Callable[[BaseException], None],
                 report_interrupt: Callable[[], None]) -> None:
        self.hub, self.grace = hub, grace
        self._report_failure, self._report_interrupt = report_failure, report_interrupt
        self._previous_hook: Optional[Callable] = None
        self._installed = False
        self._timers: list[threading.Timer] = []
        self._lock = threading.Lock()

    @property
    def installed(self) -> bool:
        return self._installed

    def install(self) -> None:
        """Replace ``sys.excepthook`` (chaining the current one) and register the exit
        handler. Call it after :func:`pyg_sar.init` registered its shutdown, so that the
        exit handler runs first."""
        if self._installed:
            return
        self._previous_hook = sys.excepthook
        sys.excepthook = self._excepthook
        atexit.register(self._exit_fast)
        self._installed = True

    def uninstall(self) -> None:
        """Put back the previous ``sys.excepthook`` (if ours is still in place), unregister
        the exit handler and cancel a pending grace timer. Idempotent."""
        with self._lock:
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()
        if not self._installed:
            return
        if sys.excepthook == self._excepthook:
            sys.excepthook = self._previous_hook
        atexit.unregister(self._exit_fast)
        self._installed = False

    def arm(self, message: str) -> None:
        """Another rank failed (``message``): end this process if it still runs ``grace``
        seconds from now."""
        timer = threading.Timer(self.grace, self._hard_exit, args=(message,))
        timer.daemon = True
        timer.name = "pyg_sar-failure-grace"
        with self._lock:
            self._timers.append(timer)
        timer.start()

    # --------------------------------------------------------------------------- hooks
    def _excepthook(self, exc_type, exc, tb) -> None:
        if issubclass(exc_type, KeyboardInterrupt) and not issubclass(exc_type, PeerFailure):
            try:
                self._report_interrupt()  # interrupted, not failed
            except Exception:  # noqa: BLE001 - never hide the original error
                pass
        elif not issubclass(exc_type, (KeyboardInterrupt, PeerFailure)):
            try:
                self._report_failure(exc)
            except Exception:  # noqa: BLE001 - never hide the original error
                pass
        previous = self._previous_hook or sys.__excepthook__
        previous(exc_type, exc, tb)
        self.hub.exiting_with_error = True

    def _exit_fast(self) -> None:
        """At exit of a failed job, skip what can block on a dead peer (MPI_Finalize, gloo
        teardown). Registered after mpi4py's and pyg_sar's own handlers, so it runs first."""
        hub = self.hub
        if hub.failure is not None or hub.exiting_with_error:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130 if hub.interrupted else 1)  # 128 + SIGINT after an interrupt

    def _hard_exit(self, message: str) -> None:
        sys.stderr.write(f"{message}\npyg_sar: the process did not end within "
                         f"{self.grace:.0f} s of the failure; exiting with status 1\n")
        sys.stderr.flush()
        os._exit(1)
