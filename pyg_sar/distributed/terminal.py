r"""Whether what a rank writes reaches a terminal, directly or through its launcher.

``torchrun`` passes its own terminal to the ranks, so ``isatty`` answers. MPICH's ``mpiexec``
(hydra) does not: every rank runs in a session of its own (no controlling terminal, so
``/dev/tty`` cannot be opened) with its standard streams piped to ``hydra_pmi_proxy``, which
forwards them, bytes as they come, to ``mpiexec``'s own streams. Open MPI's ``mpirun`` forwards
through ``orted``/``prted`` the same way. So a rank looks up its ancestors in ``/proc``: past
the forwarding proxies, the first one must be the launcher itself, and the launcher's stream
tells. Any other ancestor (a shell, a test harness reading the launcher through a pipe) ends
the search with "no": only a launcher writing straight to a terminal counts. Linux only
(elsewhere the answer is ``isatty``'s).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

# Processes that forward a rank's output to the launcher, and the launchers' front ends.
FORWARDERS = frozenset({"hydra_pmi_proxy", "orted", "prted"})
LAUNCHERS = frozenset({"mpiexec", "mpirun", "mpiexec.hydra", "mpiexec.mpich", "mpirun.mpich",
                       "orterun", "prterun"})
TERMINALS = ("/dev/pts/", "/dev/tty", "/dev/console")
MAX_DEPTH = 8  # proxies between a rank and its launcher (hydra: 1)


def _parent(pid: int, proc: Path) -> Optional[int]:
    try:
        stat = (proc / str(pid) / "stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[1])  # the name may hold spaces
    except (OSError, ValueError, IndexError):
        return None


def _name(pid: int, proc: Path) -> str:
    try:
        return (proc / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


def _is_terminal(pid: int, fd: int, proc: Path) -> bool:
    try:
        target = os.readlink(proc / str(pid) / "fd" / str(fd))
    except OSError:
        return False
    return target.startswith(TERMINALS)


def launcher_terminal(fd: int = 2, pid: Optional[int] = None,
                      proc: str | os.PathLike = "/proc") -> Optional[Path]:
    """``<proc>/<launcher>/fd/<fd>`` when the MPI launcher above process ``pid`` (default: this
    one) writes its stream ``fd`` to a terminal; ``None`` when there is no such launcher, it
    writes elsewhere, or it cannot be told."""
    root = Path(proc)
    current = os.getpid() if pid is None else pid
    for _ in range(MAX_DEPTH):
        current = _parent(current, root)
        if current is None or current <= 1:
            return None
        name = _name(current, root)
        if name in LAUNCHERS:
            return root / str(current) / "fd" / str(fd) if _is_terminal(current, fd, root) \
                else None
        if name not in FORWARDERS:
            return None
    return None


def _fileno(stream) -> Optional[int]:
    try:
        return stream.fileno()
    except (AttributeError, ValueError, OSError):  # closed, or not a file
        return None


def writes_to_terminal(stream) -> bool:
    """Whether ``stream`` (e.g. ``sys.stderr``) ends on a terminal: it is one, or it is
    forwarded by an MPI launcher that writes to one."""
    fd = _fileno(stream)
    if fd is None:
        return False
    return os.isatty(fd) or (fd in (1, 2) and launcher_terminal(fd) is not None)


def terminal_columns(stream) -> Optional[int]:
    """The width of the terminal ``stream`` ends on (see :func:`writes_to_terminal`), or
    ``None`` where there is none or it does not say."""
    fd = _fileno(stream)
    if fd is None:
        return None
    try:
        if os.isatty(fd):
            return os.get_terminal_size(fd).columns or None
        path = launcher_terminal(fd) if fd in (1, 2) else None
        if path is None:
            return None
        tty = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)  # only to ask its size
        try:
            return os.get_terminal_size(tty).columns or None
        finally:
            os.close(tty)
    except OSError:
        return None
