"""A small node-classification graph written in ogbn-products' raw layout (the folder ``ogb``
unpacks: ``raw/*.csv.gz`` with every undirected edge listed once, ``split/sales_ranking/``),
for the port of PyG's ``correct_and_smooth.py``; no download at test time."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import torch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")


def write_products_like(folder: Path, num_nodes: int = 240, num_features: int = 8,
                        num_classes: int = 4, seed: int = 0) -> None:
    """``folder`` (``.../ogbn_products``): a class-clustered graph whose features carry the
    class, each undirected edge once (OGB adds the reverses for ogbn-products)."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, num_classes, (num_nodes,), generator=g)
    centres = torch.randn(num_classes, num_features, generator=g)
    x = centres[y] + 1.5 * torch.randn(num_nodes, num_features, generator=g)
    src = torch.randint(0, num_nodes, (6 * num_nodes,), generator=g)
    dst = torch.randint(0, num_nodes, (6 * num_nodes,), generator=g)
    same = (y[src] == y[dst]) | (torch.rand(src.numel(), generator=g) < 0.2)
    pairs = torch.stack([src, dst])[:, same & (src < dst)]
    pairs = torch.unique(pairs, dim=1)
    raw = folder / "raw"
    _write(raw / "edge.csv.gz", [f"{s},{d}" for s, d in pairs.t().tolist()])
    _write(raw / "node-feat.csv.gz", [",".join(f"{v:.6f}" for v in row) for row in x.tolist()])
    _write(raw / "node-label.csv.gz", [str(v) for v in y.tolist()])
    _write(raw / "num-node-list.csv.gz", [str(num_nodes)])
    _write(raw / "num-edge-list.csv.gz", [str(pairs.shape[1])])
    order = torch.randperm(num_nodes, generator=g)
    cut = [int(num_nodes * 0.4), int(num_nodes * 0.6)]
    for name, ids in zip(("train", "valid", "test"),
                         (order[:cut[0]], order[cut[0]:cut[1]], order[cut[1]:])):
        _write(folder / "split" / "sales_ranking" / f"{name}.csv.gz",
               [str(v) for v in sorted(ids.tolist())])


def prepare_correct_and_smooth_example(root: Path) -> Path:
    """``root/examples/correct_and_smooth.py`` (a copy of the port) with the generated graph
    where the script looks for ogbn-products (``root/data/OGB/ogbn_products``). Returns the
    script's path."""
    script = root / "examples" / "correct_and_smooth.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(EXAMPLES / "correct_and_smooth.py", script)
    write_products_like(root / "data" / "OGB" / "ogbn_products")
    return script
