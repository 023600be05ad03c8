"""What the node-classification (:mod:`pyg_sar.train`) and link-prediction
(:mod:`pyg_sar.train_link`) scripts share: the model, the dtypes, the metrics file."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def build_model(args: argparse.Namespace, in_channels: int, num_classes: int) -> torch.nn.Module:
    """A PyG BasicGNN (GCN/GraphSAGE/GIN/GAT) exactly as a single-process user would build it."""
    from torch_geometric.nn import GAT, GCN, GIN, GraphSAGE
    kwargs = dict(in_channels=in_channels, hidden_channels=args.hidden, num_layers=args.layers,
                  out_channels=num_classes, dropout=args.dropout,
                  norm=None if args.norm == "none" else args.norm)
    if args.model == "gcn":
        return GCN(**kwargs)
    if args.model == "sage":
        return GraphSAGE(**kwargs)
    if args.model == "gin":
        return GIN(**kwargs)
    return GAT(heads=args.heads, **kwargs)


def peak_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def write_json(path: Path, obj: dict) -> None:
    from pyg_sar.files import atomic_write
    atomic_write(path, json.dumps(obj, indent=1))
