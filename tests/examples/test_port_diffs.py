"""The ported PyG scripts differ from PyG's originals by at most 10 changed lines
(correct_and_smooth.py: 14, see ``LIMITS``).

``tests/examples/ported/<name>.diff`` records PyG's original (commit and SHA-256) and the
unified diff to ``examples/<name>.py``. Applied backwards to the port, it must rebuild a text
with exactly that SHA-256 and be exactly the diff of the two texts (so a port that changes
without its diff fails), and it must change at most 10 lines, counted as lines removed plus
lines added (a line that is edited counts twice). Regenerate the diffs with
``python tests/examples/compare_with_pyg.py --pyg PATH/TO/pytorch_geometric --write-diffs``.
"""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIFFS = Path(__file__).with_name("ported")
PORTED = ("gcn", "gat", "tagcn", "sgc", "mixhop", "pmlp", "gcn2_cora", "link_pred",
          "infomax_transductive", "autoencoder", "rgcn_link_pred", "correct_and_smooth")
# correct_and_smooth.py: its torch-sparse guard goes (4 lines with its blank: the port needs no
# torch-sparse, pyg_sar's graph does the adj_t arithmetic) and OGB's import becomes pyg_sar's
# stand-ins (2); the port itself is 8 lines.
LIMITS = {"correct_and_smooth": 14}


def _portdiff():
    spec = importlib.util.spec_from_file_location("portdiff", ROOT / "docs/_ext/portdiff.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _counts(pd, diff: str) -> tuple[int, int]:
    _, hunks = pd.parse(diff)
    added = sum(line[:1] == "+" for _, _, body in hunks for line in body)
    removed = sum(line[:1] == "-" for _, _, body in hunks for line in body)
    return added, removed


@pytest.mark.parametrize("name", PORTED)
def test_port_is_pygs_script_plus_its_recorded_diff(name):
    pd = _portdiff()
    diff = (DIFFS / f"{name}.diff").read_text(encoding="utf-8")
    port = (ROOT / "examples" / f"{name}.py").read_text(encoding="utf-8")
    meta, _ = pd.parse(diff)
    try:
        original = pd.original_text(diff, port)
    except ValueError as err:
        pytest.fail(f"{DIFFS / name}.diff no longer applies to examples/{name}.py: {err}")
    assert pd.sha256(original) == meta["sha"], (
        f"examples/{name}.py changed outside its recorded diff: regenerate the diffs")
    assert pd.make_diff_file(original, port, name, meta["commit"]) == diff
    # The only Planetoid import is pyg_sar's (PyG's downloads; the shipped files do not).
    if "Planetoid" in original:
        assert "from torch_geometric.datasets import Planetoid" in original
        assert "from pyg_sar.datasets import Planetoid" in port
    added, removed = _counts(pd, diff)
    limit = LIMITS.get(name, 10)
    assert added + removed <= limit, f"{name}: {added} lines added, {removed} removed"


def test_gcn_diff_matches_the_docs_page():
    """The docs' porting page shows the same diff of gcn.py as recorded here."""
    docs = ROOT / "docs" / "porting" / "gcn.diff"
    if not docs.exists():
        pytest.skip("docs/porting/gcn.diff is not in this tree")
    assert docs.read_text(encoding="utf-8") == (DIFFS / "gcn.diff").read_text(encoding="utf-8")
