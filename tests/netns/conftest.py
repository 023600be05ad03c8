"""Tests on network-namespace hosts (pyg_sar.testing.netns): they need root, `ip`, `tc` and
`unshare`; elsewhere they are skipped with the reason."""
import pytest

from pyg_sar.testing.netns import unavailable_reason


def pytest_collection_modifyitems(config, items):
    reason = unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"network-namespace hosts unavailable: {reason}")
    for item in items:
        if "tests/netns/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
