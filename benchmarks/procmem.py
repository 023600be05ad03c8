"""Process memory probes shared by the benchmarks (Linux ``/proc``).

Peak RSS of a phase: :func:`reset_peak` (``echo 5 > /proc/self/clear_refs`` resets ``VmHWM``),
run the phase, read ``status_kib("VmHWM")``. :data:`MALLOC_ENV` makes glibc unmap every large
block when it is freed, so RSS follows live memory instead of the allocator's cache.
"""
from __future__ import annotations

from pathlib import Path

MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}


def status_kib(field: str) -> int:
    """A ``/proc/self/status`` field in KiB (``VmRSS``, ``VmHWM``, ...)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not found in /proc/self/status")


def reset_peak() -> None:
    """Reset ``VmHWM`` to the current RSS."""
    Path("/proc/self/clear_refs").write_text("5")
