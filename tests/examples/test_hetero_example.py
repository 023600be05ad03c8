"""examples/hetero_rgcn.py on 2 ranks: the accuracy and loss it prints at every epoch equal
those of single-process PyG on the whole HeteroData, which rank 0 trains in the same run (same
seed, same initial parameters).

One launch runs R-GCN (``RGCNConv`` on ``part.to_homogeneous()``), ``to_hetero(GraphSAGE)``
and HGT (``HGTConv``; both on ``x_dict`` / ``edge_index_dict``) on a small OGB-MAG-shaped graph
in float64: the losses agree to 1e-10 (relative) and every printed accuracy is the same string.
The oracle is PyG's own run of the model on the whole graph, not the example's distributed half.
"""
from __future__ import annotations

import re

import pytest

from tests.examples.test_examples import launch, needs_mpi, runner_command, sections

EPOCH = re.compile(r"Epoch: (\d+), Loss: (\S+), Train: (\S+), Val: (\S+), Test: (\S+) \| "
                   r"PyG, 1 process: Loss: (\S+), Test: (\S+)$")
COMMON = ["--dataset", "mag-like", "--num_papers", "1500", "--epochs", "4", "--float64",
          "--hidden_channels", "16"]
CASES = [(["hetero_rgcn.py", *COMMON, "--model", "rgcn"], None),
         (["hetero_rgcn.py", *COMMON, "--model", "sage"], None),
         (["hetero_rgcn.py", *COMMON, "--model", "hgt"], None)]


def epochs_of(lines: list[str]) -> list[tuple[str, ...]]:
    return [m.groups() for line in lines if (m := EPOCH.search(line))]


@needs_mpi
def test_hetero_example_equals_single_process_pyg(tmp_path):
    out = launch(runner_command(CASES, max_epochs=None), tmp_path, ranks=2, timeout=600)
    runs = sections(out)
    assert [name for name, _ in runs] == ["hetero_rgcn.py"] * len(CASES), out[-3000:]
    for (argv, _), (_, lines) in zip(CASES, runs):
        model = argv[-1]
        parts = [x for x in lines if x.startswith("Rank part:")]
        assert parts and "'paper': 750" in parts[0], (model, parts)  # 1,500 papers, 2 ranks
        epochs = epochs_of(lines)
        assert [int(e[0]) for e in epochs] == [1, 2, 3, 4], (model, lines)
        for _, loss, _, _, test, ref_loss, ref_test in epochs:
            assert test == ref_test, (model, test, ref_test)
            assert float(loss) == pytest.approx(float(ref_loss), rel=1e-6), (model, loss)
        rel = [float(m) for x in lines
               for m in re.findall(r"Largest relative loss difference vs PyG: (\S+)", x)]
        assert rel and rel[0] <= 1e-10, (model, rel)
        # it learns: the loss falls over the 4 epochs
        assert float(epochs[-1][1]) < float(epochs[0][1]), (model, epochs)
