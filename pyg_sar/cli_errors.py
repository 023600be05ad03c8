"""One line per error for the command-line tools (``python -m pyg_sar.train``, ``partition``).

A user's mistake (a missing folder, a partition made for another number of ranks, a missing
extra) is reported as the cause in one line, ``prog: error: <cause>``, not as a traceback per
rank; ``--debug`` shows the traceback. Errors of other types (a ``TypeError`` or an
``IndexError``) are bugs: they keep their traceback.

Under a launcher the rank that failed prints its line (``prog: rank R: error: ...``) and tells
the others; each of them prints the one line it already prints for a peer's failure
(``pyg_sar: rank Q stops: rank R failed in ...: <cause>``) and exits with status 1 too, without
a traceback of its own.
"""
from __future__ import annotations

import sys

# What a user's input or environment causes: reported as one line.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, RuntimeError, OSError, ImportError)

DEBUG_HINT = "(--debug shows the traceback)"


def describe(exc: BaseException) -> str:
    """The cause in one line: the message, after the exception's type where the type says
    something the message may not (``FileNotFoundError: ...``)."""
    message = str(exc).strip() or type(exc).__name__
    if type(exc) in (ValueError, RuntimeError):
        return message
    return f"{type(exc).__name__}: {message}"


def report_error(prog: str, exc: BaseException, rank: int | None = None,
                 world_size: int = 1) -> int:
    """Print ``exc`` as one line on stderr, tell the other ranks (when the job is supervised)
    and return the exit status (1).

    A :class:`~pyg_sar.distributed.hub.PeerFailure`, or any error after another rank's failure
    was reported, prints nothing: the rank's supervisor has already printed the failing rank's
    line, so each rank prints one line.

    Args:
        prog: the command's name, e.g. ``"pyg_sar.train"``.
        exc: the error.
        rank: this process's rank, named in the line when ``world_size > 1``.
        world_size: the number of ranks of the job.
    """
    from pyg_sar.distributed.hub import PeerFailure  # sockets and json only, no torch

    if isinstance(exc, PeerFailure):
        return 1
    if "pyg_sar.distributed.context" in sys.modules:  # a job exists: tell its other ranks
        from pyg_sar.distributed.context import get_context, report_failure
        ctx = get_context()
        hub = getattr(getattr(ctx, "supervisor", None), "hub", None)
        if hub is not None and hub.failure is not None and hub.failed_rank != hub.rank:
            # Another rank failed first and this rank's supervisor printed its line (the
            # same cause, usually: every rank reads the same arguments).
            return 1
        try:
            report_failure(exc)
        except Exception:  # noqa: BLE001 - the user's error is the one to report
            pass
        # The first failure declared wins (under the supervisor's lock): if a peer's was first
        # after all, its line is the one this rank printed.
        if hub is not None and hub.failure is not None and hub.failed_rank != hub.rank:
            return 1
    where = f"rank {rank}: " if rank is not None and world_size > 1 else ""
    print(f"{prog}: {where}error: {describe(exc)} {DEBUG_HINT}", file=sys.stderr, flush=True)
    return 1
