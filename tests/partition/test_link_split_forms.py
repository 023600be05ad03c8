"""Every homogeneous ``RandomLinkSplit`` form partitions: ``split_labels=True`` (pos_ / neg_
pair sets, as PyG's examples/autoencoder.py), with and without training negatives, any
``neg_sampling_ratio`` and ``disjoint_train_ratio``. At P = 1 and 3 (``pyg_sar.distribute``
on real ranks, and ``partition_graph`` + ``load_link_split`` in one process) the pairs of all
ranks, mapped back to original ids, are PyG's, as multisets with their labels; each pair sits
on the rank owning its source. (The heterogeneous ``RandomLinkSplit`` triple:
tests/partition/test_hetero_link_split.py.)"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import torch

import pyg_sar
from pyg_sar.partition.link_split import load_link_split
from tests.partition import link_forms_cases as lf

HERE = Path(__file__).resolve().parent

SPLITS = lf.SPLITS


def _sets_of(d) -> list[str]:
    return [s for s in lf.PAIR_SETS if f"{s}_index" in d]


def _multiset(pairs: list, labels: list) -> Counter:
    return Counter((a, b, json.dumps(lab)) for a, b, lab in zip(pairs[0], pairs[1], labels))


def _check_ranks(ref_triple, ranks: list) -> None:
    """``ranks``: per rank ``{split: {set: {pairs, label, ids, owns_sources, dtype}}}``."""
    for split, ref in zip(SPLITS, ref_triple):
        want_sets = _sets_of(ref)
        for r, res in enumerate(ranks):
            assert sorted(res[split]) == sorted(want_sets), (split, r)
        for s in want_sets:
            ref_index, ref_label = ref[f"{s}_index"], ref[s]
            got = Counter()
            all_ids = []
            for r, res in enumerate(ranks):
                one = res[split][s]
                assert one["owns_sources"], (split, s, r)
                assert one["dtype"] == str(ref_label.dtype), (split, s)
                ids = torch.tensor(one["ids"], dtype=torch.long)
                # each pair is the input split's pair at its position, with its label
                assert one["pairs"] == ref_index[:, ids].tolist() or not one["ids"], (split, s)
                assert one["label"] == ref_label[ids].tolist(), (split, s)
                got += _multiset(one["pairs"] if one["ids"] else [[], []], one["label"])
                all_ids += one["ids"]
            assert sorted(all_ids) == list(range(ref_index.size(1))), (split, s)
            assert got == _multiset(ref_index.tolist(), ref_label.tolist()), (split, s)


def test_the_forms_hold_what_they_should():
    """The cases cover split_labels with and without negatives in train."""
    t = lf.make_triple("split_labels")
    assert _sets_of(t[0]) == ["pos_edge_label"]
    assert _sets_of(t[1]) == _sets_of(t[2]) == ["pos_edge_label", "neg_edge_label"]
    t = lf.make_triple("split_labels_negatives")
    assert _sets_of(t[0]) == ["pos_edge_label", "neg_edge_label"]
    assert t[0].neg_edge_label_index.size(1) == 2 * t[0].pos_edge_label_index.size(1)
    assert _sets_of(lf.make_triple("mixed_no_train_negatives")[0]) == ["edge_label"]


@pytest.mark.parametrize("form", sorted(lf.FORMS))
@pytest.mark.parametrize("num_parts", [1, 3])
def test_offline_partition_keeps_every_form(tmp_path, form, num_parts):
    triple = lf.make_triple(form)
    pyg_sar.partition_graph(triple, num_parts, tmp_path / "p", method="random")
    parts = [load_link_split(tmp_path / "p", r, world_size=num_parts) for r in range(num_parts)]
    new_to_orig = torch.cat([p[0].node_ids for p in parts])
    ranks = []
    for r, split_parts in enumerate(parts):
        g = split_parts[0].edge_index
        lo, hi = g.node_offsets[r], g.node_offsets[r + 1]
        res = {}
        for split, p in zip(SPLITS, split_parts):
            res[split] = {s: {"pairs": new_to_orig[p[f"{s}_index"]].tolist(),
                              "label": p[s].tolist(), "ids": p[f"{s}_ids"].tolist(),
                              "dtype": str(p[s].dtype),
                              "owns_sources": bool(((p[f"{s}_index"][0] >= lo)
                                                    & (p[f"{s}_index"][0] < hi)).all())}
                          for s in _sets_of(p)}
        ranks.append(res)
    _check_ranks(triple, ranks)


@pytest.fixture(scope="module")
def rank_results():
    from pyg_sar.testing import run_on_ranks
    return {p: run_on_ranks(f"{HERE / 'link_forms_cases.py'}:suite", p, timeout=300,
                            kwargs={"forms": sorted(lf.FORMS)})
            for p in (1, 3)}


@pytest.mark.parametrize("form", sorted(lf.FORMS))
@pytest.mark.parametrize("num_parts", [1, 3])
def test_distribute_gives_pygs_pairs_on_every_rank(rank_results, num_parts, form):
    ranks = [res[form] for res in rank_results[num_parts]]
    assert len(ranks) == num_parts
    _check_ranks(lf.make_triple(form), ranks)


def test_split_labels_positives_are_checked_for_leakage(tmp_path):
    train, val, test = lf.make_triple("split_labels")
    leaky = test.clone()
    pos = test.pos_edge_label_index[:, :1]
    leaky.edge_index = torch.cat([test.edge_index, pos, pos.flip(0)], 1)
    s, d = pos[:, 0].tolist()
    with pytest.raises(ValueError, match=rf"test split leaks .*\({s}, {d}\)"):
        pyg_sar.partition_graph((train, val, leaky), 2, tmp_path / "a")
    bad = val.clone()
    bad.neg_edge_label = val.neg_edge_label[:-1]
    with pytest.raises(ValueError, match="val split's neg_edge_label must have one row"):
        pyg_sar.partition_graph((train, bad, test), 2, tmp_path / "a")
    none = val.clone()
    for key in ("pos_edge_label_index", "pos_edge_label", "neg_edge_label_index",
                "neg_edge_label"):
        del none[key]
    with pytest.raises(ValueError, match="the val split has no supervision pairs"):
        pyg_sar.partition_graph((train, none, test), 2, tmp_path / "a")


def test_version_1_folders_still_load(tmp_path):
    """A folder written before pair sets (link.json version 1) loads as before."""
    triple = lf.make_triple("mixed_no_train_negatives")
    out = pyg_sar.partition_graph(triple, 2, tmp_path / "p", method="random")
    new = [load_link_split(out, r, world_size=2) for r in range(2)]
    meta = json.loads((out / "link.json").read_text())
    meta["version"] = 1
    meta["splits"] = {s: info["pair_sets"]["edge_label"] for s, info in meta["splits"].items()}
    (out / "link.json").write_text(json.dumps(meta))
    for r in range(2):
        for a, b in zip(new[r], load_link_split(out, r, world_size=2)):
            for k in ("edge_label_index", "edge_label", "edge_label_ids"):
                assert torch.equal(a[k], b[k])

