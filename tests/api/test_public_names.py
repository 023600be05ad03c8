"""The top-level namespace: ``__all__`` lists the documented names, each resolves, and a name
moved out of it keeps working for one release with a ``DeprecationWarning`` naming where to
import it from."""
import re
from pathlib import Path

import pytest

import pyg_sar

ROOT = Path(__file__).resolve().parents[2]


def test_every_exported_name_resolves():
    for name in pyg_sar.__all__:
        assert getattr(pyg_sar, name) is not None, name


def test_every_exported_class_or_function_is_documented():
    api = (ROOT / "docs" / "api.rst").read_text()
    # pyg_sar.predict_pairs is documented where it is defined (pyg_sar.predict.predict_pairs).
    documented = {part for path in re.findall(r"pyg_sar(?:\.\w+)+", api)
                  for part in path.split(".")[1:]}
    missing = [n for n in pyg_sar.__all__ if n != "__version__" and n not in documented]
    assert not missing, f"exported but not in docs/api.rst: {missing}"


def test_block_moved_to_pyg_sar_graph_with_a_warning():
    from pyg_sar.graph import Block
    assert "Block" not in pyg_sar.__all__ and "Block" not in dir(pyg_sar)
    with pytest.warns(DeprecationWarning, match=r"import it from pyg_sar\.graph"):
        assert pyg_sar.Block is Block
    with pytest.warns(DeprecationWarning):  # every use warns, not only the first
        assert pyg_sar.Block is Block


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Blocks'"):
        pyg_sar.Blocks  # noqa: B018
