"""The torch_geometric range pyg_sar verified its layer table against: declared, installed,
and enforced by ``convert``."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch_geometric
from torch_geometric.nn import GCNConv

import pyg_sar
from pyg_sar.nn import registry

ROOT = Path(__file__).resolve().parents[2]


def test_declared_range_is_the_registry_range():
    low, high = registry.PYG_RANGE
    for name in ("pyproject.toml", "requirements.txt"):
        text = (ROOT / name).read_text()
        assert re.search(rf"torch-geometric>={re.escape(low)},<{re.escape(high)}\b", text), name


def test_installed_version_is_in_range():
    assert registry.pyg_version_supported(torch_geometric.__version__)


@pytest.mark.parametrize("version, ok", [("2.8.0", True), ("2.8.1", True), ("2.8.10", True),
                                         ("2.7.9", False), ("2.9.0", False),
                                         ("3.0.0rc1", False)])
def test_range_check(version, ok):
    assert registry.pyg_version_supported(version) is ok


def test_convert_refuses_verified_classes_outside_the_range(monkeypatch):
    monkeypatch.setattr(torch_geometric, "__version__", "2.9.0")
    with pytest.raises(pyg_sar.UnsupportedLayerError, match=r"GCNConv.*not 2\.9\.0"):
        pyg_sar.convert(GCNConv(3, 3))
    layer = GCNConv(3, 3)  # a user who vouches for the class may still run it
    pyg_sar.convert(layer, pyg_sar.SARConfig(trusted_layers=(GCNConv,)))
