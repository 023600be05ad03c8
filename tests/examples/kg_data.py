"""A small knowledge graph in the raw format of PyG's ``RelLinkPredDataset`` (FB15k-237's:
``entities.dict``, ``relations.dict``, ``train.txt``, ``valid.txt``, ``test.txt``), generated
locally for ``examples/rgcn_link_pred.py`` (FB15k-237 itself is a download)."""
from __future__ import annotations

import shutil
from pathlib import Path

import torch

from tests.examples.test_examples import EXAMPLES

ENTITIES, RELATIONS, TRIPLES = 60, 4, 360


def write_raw(raw_dir: Path, seed: int = 0) -> None:
    """Write the five raw files: ``TRIPLES`` distinct triples without self-loops over
    ``ENTITIES`` entities and ``RELATIONS`` relations, 80% train, 10% valid, 10% test."""
    g = torch.Generator().manual_seed(seed)
    raw_dir.mkdir(parents=True, exist_ok=True)
    (raw_dir / "entities.dict").write_text("".join(f"{i}\t/m/e{i}\n" for i in range(ENTITIES)))
    (raw_dir / "relations.dict").write_text("".join(f"{i}\t/r/{i}\n"
                                                    for i in range(RELATIONS)))
    triples: list[tuple[int, int, int]] = []
    seen = set()
    while len(triples) < TRIPLES:
        h, t = torch.randint(0, ENTITIES, (2,), generator=g).tolist()
        r = int(torch.randint(0, RELATIONS, (1,), generator=g))
        if h != t and (h, r, t) not in seen:
            seen.add((h, r, t))
            triples.append((h, r, t))
    cut = [0, TRIPLES * 8 // 10, TRIPLES * 9 // 10, TRIPLES]
    for name, lo, hi in zip(("train", "valid", "test"), cut, cut[1:]):
        (raw_dir / f"{name}.txt").write_text(
            "".join(f"/m/e{h}\t/r/{r}\t/m/e{t}\n" for h, r, t in triples[lo:hi]))


def prepare_rgcn_example(root: Path) -> Path:
    """``root/examples/rgcn_link_pred.py`` (a copy of the port) with the generated graph where
    the script looks for FB15k-237 (``root/data/RLPD``), processed once here so that the
    ranks only load it. Returns the script's path."""
    from torch_geometric.datasets import RelLinkPredDataset
    script = root / "examples" / "rgcn_link_pred.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(EXAMPLES / "rgcn_link_pred.py", script)
    write_raw(root / "data" / "RLPD" / "FB15k-237" / "raw")
    RelLinkPredDataset(str(root / "data" / "RLPD"), "FB15k-237")
    return script
