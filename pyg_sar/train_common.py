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


def epoch_log_path(metrics: str | Path) -> Path:
    """Where ``--metrics PATH`` streams its per-epoch records: ``PATH`` with its suffix
    replaced by ``.epochs.jsonl`` (``m.json`` -> ``m.epochs.jsonl``)."""
    path = Path(metrics)
    return path.with_name(path.stem + ".epochs.jsonl")


class EpochLog:
    """The per-epoch records of ``--metrics``, appended one JSON line each as epochs end, so
    that a run that stops early (Ctrl-C, a failure, a time limit) keeps the epochs it did; the
    whole metrics JSON is written at the end.

    A fresh run starts the file anew; a resumed run appends (an epoch redone after a restart
    appears again: the last line of an epoch is its record). Each line is written and flushed
    in one call, so a crash can cut only the last line short.
    """

    def __init__(self, metrics: str | Path, resume: bool) -> None:
        self.path = epoch_log_path(metrics)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a" if resume else "w", encoding="utf-8")  # noqa: SIM115

    def write(self, record: dict) -> None:
        """Append one epoch's record."""
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
