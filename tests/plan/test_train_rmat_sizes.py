"""``python -m pyg_sar.train --dataset rmat --rmat-nodes N --rmat-edges E``: the sizes reach the
generated graph (the memory-limited-host benchmark trains plain PyG on larger R-MAT graphs with
them), and they are refused with another dataset."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pyg_sar import train, train_node
from pyg_sar.datasets import rmat


def test_sizes_reach_the_reference_graph():
    args = train.parse_args(["--dataset", "rmat", "--rmat-nodes", "600", "--rmat-edges", "2400",
                             "--reference"])
    part = train_node._load(args, SimpleNamespace(world_size=1))
    oracle = rmat(600, 2400)  # load_dataset("rmat", ...) is rmat with the default seed
    assert part.x.shape[0] == 600
    assert part.graph.equal(oracle.edge_index) and part.x.equal(oracle.x)


@pytest.mark.parametrize("argv", [["--dataset", "cora", "--rmat-nodes", "600"],
                                  ["--rmat-edges", "2400"]])
def test_sizes_need_dataset_rmat(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        train.parse_args(argv)
    assert exc.value.code == 2
    assert "--rmat-nodes / --rmat-edges size the generated graph of --dataset rmat" in (
        capsys.readouterr().err)
