"""The pause the fault tests' job scripts share: a rank says it reached the point (the file
``MARKER_DIR/rank<r>`` holding its pid, written atomically) and waits until the test writes
``MARKER_DIR/go``. ``PYG_SAR_TEST_PAUSE_S`` (default 600 s) bounds the wait as a hang detector
only."""
import os
import time
from pathlib import Path

from pyg_sar.files import atomic_write


def mark_and_wait(markers: Path, rank, who: str) -> None:
    atomic_write(markers / f"rank{rank}", str(os.getpid()))
    deadline = time.monotonic() + float(os.environ.get("PYG_SAR_TEST_PAUSE_S", "600"))
    while not (markers / "go").exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{who}: no 'go' in {markers} (hang detector)")
        time.sleep(0.02)
