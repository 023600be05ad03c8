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


import pytest  # noqa: E402 - after the path is set


@pytest.fixture(autouse=True)
def _no_context_leaks_between_tests():
    """A test that computes on a DistGraph in the pytest process creates the default
    single-process context (as a user's script would). Shut it down after the test, so the
    next test starts as a fresh process would: load_partition checks a P-part folder against
    the context's world size."""
    yield
    import pyg_sar
    if pyg_sar.get_context() is not None:
        pyg_sar.shutdown()
