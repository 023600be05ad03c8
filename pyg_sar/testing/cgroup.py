"""Memory cgroups for test hosts: a budget per host, its peak, and the OOM kills in it.

:class:`MemoryCgroup` creates a child of the caller's own memory cgroup with a hard limit and
no swap (v2: ``memory.max``, ``memory.swap.max = 0``; v1: ``memory.limit_in_bytes`` and
``memory.memsw.limit_in_bytes``). A process joins with :meth:`MemoryCgroup.add` (or a shell
that runs ``echo $$ > CGROUP/cgroup.procs`` first, which is how :class:`~pyg_sar.testing.netns.
NetnsHosts` puts everything a host starts into its cgroup); its children inherit it.

:meth:`MemoryCgroup.peak` is the cgroup's high-water mark (v2 ``memory.peak``, v1
``memory.max_usage_in_bytes``): it counts **page cache** charged to the cgroup (files read or
written by its processes) as well as their anonymous memory, so it is at least the largest
sum of the members' resident sets. :meth:`MemoryCgroup.oom_kills` counts the processes the
kernel's OOM killer ended in it.

Creating cgroups needs a writable cgroup file system (root, or a delegated subtree); without one
the constructor raises :class:`RuntimeError` naming the path, which tests use as their skip
reason (:func:`unavailable_reason`).
"""
from __future__ import annotations

import functools
import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Optional

from pyg_sar.distributed.memory import CGROUP_ROOT, oom_kills, own_cgroup

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B?)?$", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def parse_size(size: int | str) -> int:
    """Bytes of ``size``: an int, or ``"3G"``, ``"512M"``, ``"1.5GiB"`` (powers of 1024)."""
    if isinstance(size, bool):
        raise ValueError(f"memory size must be bytes or a string like '3G' (got {size!r})")
    if isinstance(size, int):
        value = size
    elif isinstance(size, str) and _SIZE.match(size.strip()):
        number, unit, _ = _SIZE.match(size.strip()).groups()
        value = int(float(number) * 1024 ** " KMGT".index(unit.upper() or " "))
    else:
        raise ValueError(f"memory size must be bytes or a string like '3G' (got {size!r})")
    if value < 1 << 20:
        raise ValueError(f"memory size must be at least 1 MiB (got {size!r})")
    return value


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def kill_until_empty(list_pids: Callable[[], list[int]], tries: int) -> None:
    """SIGKILL every pid ``list_pids()`` returns, again until it returns none (a member may
    fork while we kill) or ``tries`` rounds have passed."""
    for _ in range(tries):
        pids = list_pids()
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)


class MemoryCgroup:
    """A child of the caller's memory cgroup limited to ``limit_bytes`` (swap off).

    Args:
        name: the child's directory name (letters, digits, ``_.-``); made unique with this
            process's id and a random suffix.
        limit_bytes: the limit, bytes or a size string (``"3G"``).
        root: where the cgroup file systems are mounted.

    Raises:
        RuntimeError: cgroups cannot be created here (the message names the path).
        ValueError: a bad name or size.
    """

    def __init__(self, name: str, limit_bytes: int | str, *,
                 root: Path = CGROUP_ROOT) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"MemoryCgroup: name must be letters, digits, '_', '.', '-' "
                             f"(got {name!r})")
        self.limit_bytes = parse_size(limit_bytes)
        found = own_cgroup("self", root)
        if found is None:
            raise RuntimeError(f"MemoryCgroup: no memory cgroup controller under {root} "
                               f"(neither cgroup v2 nor a v1 'memory' hierarchy)")
        parent, self.version = found
        self.path = parent / f"{name}-{os.getpid()}-{os.urandom(3).hex()}"
        self._closed = False
        try:
            if self.version == 2:
                self._enable_v2(parent)
            self.path.mkdir()
        except OSError as e:
            raise RuntimeError(f"MemoryCgroup: cannot create {self.path} ({e.strerror}); "
                               f"memory cgroups need root or a delegated, writable cgroup "
                               f"tree") from None
        try:
            if self.version == 2:
                _write(self.path / "memory.max", str(self.limit_bytes))
                try:
                    _write(self.path / "memory.swap.max", "0")
                except FileNotFoundError:
                    pass  # no swap accounting: no swap to forbid
            else:
                _write(self.path / "memory.limit_in_bytes", str(self.limit_bytes))
                try:
                    _write(self.path / "memory.memsw.limit_in_bytes", str(self.limit_bytes))
                except (FileNotFoundError, PermissionError):
                    pass  # no swap accounting (swapaccount=0): no swap to forbid
        except OSError as e:
            self.close()
            raise RuntimeError(f"MemoryCgroup: cannot set the limit of {self.path} "
                               f"({e.strerror})") from None

    @staticmethod
    def _enable_v2(parent: Path) -> None:
        controllers = (parent / "cgroup.subtree_control").read_text().split()
        if "memory" not in controllers:
            _write(parent / "cgroup.subtree_control", "+memory")

    # ------------------------------------------------------------------------- members
    @property
    def procs_file(self) -> Path:
        """``cgroup.procs``: writing a pid there moves that process in."""
        return self.path / "cgroup.procs"

    def add(self, pid: int) -> None:
        """Move process ``pid`` into the cgroup (its later children inherit it)."""
        self._check_open()
        try:
            _write(self.procs_file, str(int(pid)))
        except OSError as e:
            raise RuntimeError(f"MemoryCgroup: cannot add pid {pid} to {self.path} "
                               f"({e.strerror})") from None

    def pids(self) -> list[int]:
        """The processes in the cgroup now."""
        try:
            return [int(p) for p in self.procs_file.read_text().split()]
        except OSError:
            return []

    # ------------------------------------------------------------------------ counters
    def peak(self) -> int:
        """The cgroup's memory high-water mark in bytes (anonymous memory **and page cache**
        charged to it)."""
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        return int((self.path / name).read_text().split()[0])

    def usage(self) -> int:
        """The memory charged to the cgroup now, bytes."""
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        return int((self.path / name).read_text().split()[0])

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer ended in the cgroup."""
        value = oom_kills(self.path, self.version)
        if value is None:
            raise RuntimeError(f"MemoryCgroup: no oom_kill counter in {self.path} (the kernel "
                               f"predates it: 4.13)")
        return value

    # ------------------------------------------------------------------------- teardown
    def close(self) -> None:
        """Kill every member, then remove the cgroup (idempotent)."""
        if self._closed:
            return
        self._closed = True
        kill_until_empty(self.pids, tries=100)
        for _ in range(100):  # the last exits are asynchronous: rmdir fails with EBUSY
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.05)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"MemoryCgroup: {self.path} was already removed (close())")

    def __enter__(self) -> MemoryCgroup:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryCgroup({str(self.path)!r}, limit {self.limit_bytes} B, v{self.version})"


@functools.cache
def unavailable_reason() -> Optional[str]:
    """Why memory cgroups cannot be created here, or ``None`` when they can (probed once)."""
    try:
        MemoryCgroup("pyg_sar-probe", 64 << 20).close()
    except RuntimeError as e:
        return str(e)
    return None
