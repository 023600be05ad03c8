"""Shared pytest setup: make the repository's ``pyg_sar`` importable without installing it."""
import os
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# The suite runs against the built package: the native kernels must load (no silent fallback to
# the pure-torch reference). Set PYG_SAR_REQUIRE_NATIVE=0 to run it without a build.
os.environ.setdefault("PYG_SAR_REQUIRE_NATIVE", "1")
