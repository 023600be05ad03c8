"""The memory limit of this process's cgroup, and how often the kernel's OOM killer fired in it.

A rank on a host with a memory budget (a Slurm job, a container, a test host of
:mod:`pyg_sar.testing.netns` with ``memory=``) lives in a memory cgroup. When the rank
allocates past the limit, the kernel's OOM killer ends it with SIGKILL: the rank cannot say
anything, and its launcher only sees a killed process. The rank's witness
(:mod:`pyg_sar.distributed.witness`) reads the limit and the cgroup's OOM-kill counter when the
rank starts and again when it has ended, and names the cause when the counter rose.

Both cgroup versions: v2 (``memory.max``, ``memory.events``'s ``oom_kill``) and v1 (the
``memory`` controller: ``memory.limit_in_bytes``, ``memory.oom_control``'s ``oom_kill``). The
limit is the smallest one on the path from this process's cgroup up to the root (a parent's
limit binds its children too).

Standard library only: the witness process loads this file by path (``python -I -S``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

CGROUP_ROOT = Path("/sys/fs/cgroup")
_UNLIMITED = 1 << 60  # v1 reports "no limit" as a page-rounded 2^63 - 1


@dataclass(frozen=True)
class MemoryLimit:
    """The binding memory limit of a cgroup.

    Attributes:
        limit_bytes: the limit.
        cgroup: the directory of the cgroup that sets it (this process's or an ancestor).
        own: the directory of this process's own cgroup (where its OOM kills are counted).
        version: 1 or 2.
    """

    limit_bytes: int
    cgroup: str
    own: str
    version: int

    @property
    def limit_gib(self) -> float:
        return self.limit_bytes / 2**30

    def oom_kills(self) -> Optional[int]:
        """The OOM-kill counter of this process's cgroup (``None``: unreadable)."""
        return oom_kills(self.own, self.version)


def cgroup_version(root: Path = CGROUP_ROOT) -> Optional[int]:
    """2 on a unified hierarchy, 1 with a v1 ``memory`` controller, ``None`` without either."""
    if (root / "cgroup.controllers").exists():
        return 2
    if (root / "memory" / "memory.limit_in_bytes").exists():
        return 1
    return None


def own_cgroup(pid: int | str = "self", root: Path = CGROUP_ROOT) -> Optional[tuple[Path, int]]:
    """The memory cgroup directory of process ``pid`` and the cgroup version, or ``None``."""
    version = cgroup_version(root)
    if version is None:
        return None
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        hid, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if version == 2 and hid == "0" and controllers == "":
            return root / path.lstrip("/"), 2
        if version == 1 and "memory" in controllers.split(","):
            return root / "memory" / path.lstrip("/"), 1
    return None


def _read_limit(cgroup: Path, version: int) -> Optional[int]:
    name = "memory.max" if version == 2 else "memory.limit_in_bytes"
    try:
        text = (cgroup / name).read_text().strip()
    except OSError:
        return None
    if text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return None if value >= _UNLIMITED else value


def oom_kills(cgroup: str | Path, version: int) -> Optional[int]:
    """How many processes the OOM killer ended in ``cgroup`` (v2: ``memory.events``, which
    counts its descendants too; v1: ``memory.oom_control``, this cgroup's own)."""
    name = "memory.events" if version == 2 else "memory.oom_control"
    try:
        lines = (Path(cgroup) / name).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def cgroup_limit(pid: int | str = "self", root: Path = CGROUP_ROOT) -> Optional[MemoryLimit]:
    """The memory limit that binds process ``pid`` (default: this one), or ``None`` when no
    cgroup on its path has one (or cgroups cannot be read here)."""
    found = own_cgroup(pid, root)
    if found is None:
        return None
    own, version = found
    top = root if version == 2 else root / "memory"
    best: Optional[tuple[int, Path]] = None
    cgroup = own
    while True:
        limit = _read_limit(cgroup, version)
        if limit is not None and (best is None or limit < best[0]):
            best = (limit, cgroup)
        if cgroup == top or top not in cgroup.parents:
            break
        cgroup = cgroup.parent
    if best is None:
        return None
    return MemoryLimit(limit_bytes=best[0], cgroup=str(best[1]), own=str(own), version=version)


def describe_limit(limit: MemoryLimit) -> str:
    """``memory limit X GiB of cgroup PATH`` (how the witness names the limit a rank hit)."""
    return f"memory limit {limit.limit_gib:.2f} GiB of cgroup {limit.cgroup}"


def hostname() -> str:
    """This host's name (``os.uname().nodename``)."""
    return os.uname().nodename
