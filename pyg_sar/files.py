"""Atomic file writes: a reader sees the old content or the new, never a part of it."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Union


def atomic_write(path: Union[str, Path], data: Union[bytes, str], *,
                 durable: bool = False) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    Args:
        path: the file (its folder is created if missing).
        data: bytes, or text (written as UTF-8).
        durable: also ``fsync`` the file before the rename and the folder after it, so that
            the new content survives a crash of the machine (checkpoints), not just of the
            process.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(raw)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
