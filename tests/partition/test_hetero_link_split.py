"""Heterogeneous link prediction over a partition (issue 35): PyG's ``RandomLinkSplit(
edge_types=("user", "rates", "movie"), rev_edge_types=("movie", "rev_rates", "user"))``
triple, as PyG's examples/hetero/hetero_link_pred.py makes it, goes through
``pyg_sar.distribute`` and ``partition_graph`` + ``load_link_split``.

At P = 1 and 3, for both ``split_labels`` forms, with and without training negatives (and
with ratings as labels): every rank's pairs, mapped back to original ids of their node types,
are PyG's as multisets with their labels, each on the rank owning its source user; each
split's message-passing edges per edge type are PyG's; ``pyg_sar.gather`` with a node type's
``node_offsets_dict`` fetches the pair ends' rows; ``negative_sampling(part, keys,
edge_type=...)`` draws the pairs ``reference_negative_sampling(..., num_nodes=(U, M))`` draws;
and a few Adam steps of ``to_hetero`` GraphSAGE with the dot-product classifier and the global
BCE equal single-process PyG in float64 (losses and parameters within 1e-10).
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import torch

import pyg_sar
from pyg_sar.partition.link_split import load_link_split
from tests.partition import hetero_link_cases as hc

HERE = Path(__file__).resolve().parent

SPLITS, ET, REV = hc.SPLITS, hc.ET, hc.REV
TRAIN_FORMS = ["mixed_negatives", "mixed_no_train_negatives", "split_labels",
               "split_labels_negatives"]
TOL = 1e-10


def _multiset(pairs: list, labels: list) -> Counter:
    return Counter((a, b, json.dumps(lab)) for a, b, lab in zip(pairs[0], pairs[1], labels))


def _edges(pairs: list) -> Counter:
    return Counter(zip(pairs[0], pairs[1])) if pairs else Counter()


def _check_ranks(ref_triple, ranks: list) -> None:
    """``ranks``: per rank ``{split: {"sets": {set: {...}}, "mp": {et: [[src], [dst]]}}}``."""
    for split, ref in zip(SPLITS, ref_triple):
        want_sets = hc.sets_of(ref[ET])
        for r, res in enumerate(ranks):
            assert sorted(res[split]["sets"]) == sorted(want_sets), (split, r)
        for s in want_sets:
            ref_index, ref_label = ref[ET][f"{s}_index"], ref[ET][s]
            got, all_ids = Counter(), []
            for r, res in enumerate(ranks):
                one = res[split]["sets"][s]
                assert one["owns_sources"], (split, s, r)
                assert one.get("gathered", True), (split, s, r)
                assert one["dtype"] == str(ref_label.dtype), (split, s)
                ids = torch.tensor(one["ids"], dtype=torch.long)
                if one["ids"]:  # each pair is the input split's at its position
                    assert one["pairs"] == ref_index[:, ids].tolist(), (split, s)
                assert one["label"] == ref_label[ids].tolist(), (split, s)
                got += _multiset(one["pairs"] if one["ids"] else [[], []], one["label"])
                all_ids += one["ids"]
            assert sorted(all_ids) == list(range(ref_index.size(1))), (split, s)
            assert got == _multiset(ref_index.tolist(), ref_label.tolist()), (split, s)
        for et in ref.edge_types:  # message passing: the split's own edges, every edge type
            key = "/".join(et)
            got = sum((_edges(res[split]["mp"][key]) for res in ranks), Counter())
            assert got == _edges(ref[et].edge_index.tolist()), (split, et)
            for res in ranks:  # no pair tensor left among the edge tensors
                assert not any(k.endswith("label_index") or k == "link_mp_level"
                               for k in res[split]["edge_keys"][key]), (split, et)


def test_the_forms_hold_what_they_should():
    t = hc.make_triple("split_labels")
    assert hc.sets_of(t[0][ET]) == ["pos_edge_label"]
    assert hc.sets_of(t[1][ET]) == hc.sets_of(t[2][ET]) == ["pos_edge_label", "neg_edge_label"]
    t = hc.make_triple("split_labels_negatives")
    assert hc.sets_of(t[0][ET]) == ["pos_edge_label", "neg_edge_label"]
    t = hc.make_triple("mixed_no_train_negatives")
    assert hc.sets_of(t[0][ET]) == ["edge_label"] and bool((t[0][ET].edge_label == 1).all())
    t = hc.make_triple("ratings")
    assert int(t[0][ET].edge_label.max()) > 1 and "edge_label" not in t[0][REV]
    # the reverse edge type holds each split's message-passing edges reversed
    for d in t:
        assert torch.equal(d[REV].edge_index, d[ET].edge_index.flip(0))


def _offline(tmp_path, triple, num_parts: int) -> list:
    pyg_sar.partition_graph(triple, num_parts, tmp_path / "p", method="random")
    parts = [load_link_split(tmp_path / "p", r, world_size=num_parts) for r in range(num_parts)]
    orig = {t: torch.cat([p[0].node_ids_dict[t] for p in parts]) for t in ("user", "movie")}
    ranks = []
    for r, split_parts in enumerate(parts):
        off = split_parts[0].node_offsets_dict["user"]
        res = {}
        for split, p in zip(SPLITS, split_parts):
            sets = {}
            for s in hc.sets_of(p[ET]):
                index = p[ET][f"{s}_index"]
                sets[s] = {"pairs": torch.stack([orig["user"][index[0]],
                                                 orig["movie"][index[1]]]).tolist(),
                           "label": p[ET][s].tolist(), "ids": p[ET][f"{s}_ids"].tolist(),
                           "dtype": str(p[ET][s].dtype),
                           "owns_sources": bool(((index[0] >= off[r])
                                                 & (index[0] < off[r + 1])).all())}
            res[split] = {"sets": sets,
                          "mp": {"/".join(et): p.global_edge_index(et).tolist()
                                 for et in p.edge_types},
                          "edge_keys": {"/".join(et): sorted(p.edge_data_dict[et])
                                        for et in p.edge_types}}
        ranks.append(res)
    return parts, ranks


@pytest.mark.parametrize("form", sorted(hc.FORMS))
@pytest.mark.parametrize("num_parts", [1, 3])
def test_offline_partition_keeps_every_form(tmp_path, form, num_parts):
    triple = hc.make_triple(form)
    parts, ranks = _offline(tmp_path, triple, num_parts)
    _check_ranks(triple, ranks)
    meta = json.loads((tmp_path / "p" / "link.json").read_text())
    assert meta["version"] == 3 and meta["num_nodes"] == {"user": 60, "movie": 40}
    info = {tuple(e["edge_type"]): e for e in meta["edge_types"]}
    assert info[ET]["reverse_edge_types"] == [list(REV)]
    # train and val share the graph objects of an edge type whose edges they share
    for p in parts:
        for et in (ET, REV):
            same = info[et]["same_graph"]
            assert (p[0].edge_index_dict[et] is p[1].edge_index_dict[et]) == same["train_val"]
            assert (p[1].edge_index_dict[et] is p[2].edge_index_dict[et]) == same["val_test"]
        # a split's graph counts its own edges' in-degrees
        for split in p:
            g = split.edge_index_dict[ET]
            assert torch.equal(g.in_degree, torch.bincount(g.destinations(),
                                                           minlength=g.num_nodes))


def test_negatives_of_typed_pairs_in_one_process(tmp_path):
    """negative_sampling(part, keys, edge_type=...) of a one-part split equals the reference
    in original ids; a bipartite DistGraph alone is refused, naming the fix."""
    triple = hc.make_triple("split_labels")
    parts, _ = _offline(tmp_path, triple, 1)
    train = parts[0][0]
    keys = torch.arange(triple[0][ET].pos_edge_label_index.shape[1])
    orig = train.node_ids_dict
    for method in ("uniform", "degree"):
        for reject in (False, True):
            neg = pyg_sar.link.negative_sampling(train, keys, edge_type=ET, seed=3, epoch=1,
                                                 num_neg=2, method=method,
                                                 reject_existing=reject)
            ref = pyg_sar.link.reference_negative_sampling(
                triple[0][ET].edge_index, keys, num_nodes=(hc.NUM_USERS, hc.NUM_MOVIES),
                seed=3, epoch=1, num_neg=2, method=method, reject_existing=reject)
            assert torch.equal(torch.stack([orig["user"][neg[0]], orig["movie"][neg[1]]]), ref)
            assert int(neg[0].max()) < hc.NUM_USERS and int(neg[1].max()) < hc.NUM_MOVIES
    # rejection leaves no pair that is a training edge (with 20 tries on a sparse graph)
    ref = pyg_sar.link.reference_negative_sampling(
        triple[0][ET].edge_index, keys, num_nodes=(hc.NUM_USERS, hc.NUM_MOVIES), seed=3,
        epoch=1, num_neg=2, reject_existing=True)
    edges = set(map(tuple, triple[0][ET].edge_index.t().tolist()))
    assert not edges & set(map(tuple, ref.t().tolist()))
    with pytest.raises(ValueError, match="pass the HeteroPartition and the edge type"):
        pyg_sar.link.negative_sampling(train.edge_index_dict[ET], keys, seed=0, epoch=0)
    with pytest.raises(ValueError, match="needs edge_type="):
        pyg_sar.link.negative_sampling(train, keys, seed=0, epoch=0)
    with pytest.raises(ValueError, match="num_nodes must be an integer or a pair"):
        pyg_sar.link.reference_negative_sampling(triple[0][ET].edge_index, keys,
                                                 num_nodes=(1, 2, 3), seed=0, epoch=0)


def test_leakage_and_missing_pairs_are_refused(tmp_path):
    train, val, test = hc.make_triple("split_labels")
    pos = test[ET].pos_edge_label_index[:, :1]
    s, d = pos[:, 0].tolist()
    leaky = test.clone()
    leaky[ET].edge_index = torch.cat([test[ET].edge_index, pos], 1)
    leaky[REV].edge_index = torch.cat([test[REV].edge_index, pos.flip(0)], 1)
    with pytest.raises(ValueError, match=rf"test split leaks .*\({s}, {d}\) is an edge of the "
                                         rf"test split's .*edge_index"):
        pyg_sar.partition_graph((train, val, leaky), 2, tmp_path / "a")
    bad = val.clone()
    bad[ET].neg_edge_label = val[ET].neg_edge_label[:-1]
    with pytest.raises(ValueError, match=r"val split's \('user', 'rates', 'movie'\) "
                                         r"neg_edge_label must have one row"):
        pyg_sar.partition_graph((train, bad, test), 2, tmp_path / "a")
    none = val.clone()
    for key in ("pos_edge_label_index", "pos_edge_label", "neg_edge_label_index",
                "neg_edge_label"):
        del none[ET][key]
    with pytest.raises(ValueError, match="the val split has no supervision pairs"):
        pyg_sar.partition_graph((train, none, test), 2, tmp_path / "a")
    other = val.clone()
    other["user"].x = val["user"].x + 1
    with pytest.raises(ValueError, match="node tensor 'x' of node type 'user' differs"):
        pyg_sar.partition_graph((train, other, test), 2, tmp_path / "a")
    assert not (tmp_path / "a").exists()


def test_reverse_only_leak_is_refused(tmp_path):
    """A val positive whose reverse is an edge of the reverse type (and not of the type) is
    leakage, when that type is the reverse of the supervised one in test's graph."""
    train, val, test = hc.make_triple("split_labels")
    vpos = val[ET].pos_edge_label_index[:, :1]
    vs, vd = vpos[:, 0].tolist()
    leaky_val, leaky_test = val.clone(), test.clone()
    leaky_val[REV].edge_index = torch.cat([val[REV].edge_index, vpos.flip(0)], 1)
    # test's graph keeps the reverse type the exact reverse of the forward type
    leaky_test[REV].edge_index = torch.cat([test[REV].edge_index, vpos.flip(0)], 1)
    leaky_test[ET].edge_index = torch.cat([test[ET].edge_index, vpos], 1)
    leaky_val[ET].edge_index = val[ET].edge_index
    with pytest.raises(ValueError, match=rf"val split leaks .*\({vs}, {vd}\) is an edge of the "
                                         rf"val split's .*reverse edge type"):
        pyg_sar.partition_graph((train, leaky_val, leaky_test), 2, tmp_path / "a")


@pytest.fixture(scope="module")
def rank_results():
    from pyg_sar.testing import run_on_ranks
    return {p: run_on_ranks(f"{HERE / 'hetero_link_cases.py'}:suite", p, timeout=900,
                            kwargs={"forms": sorted(hc.FORMS), "train_forms": TRAIN_FORMS})
            for p in (1, 3)}


@pytest.mark.parametrize("form", sorted(hc.FORMS))
@pytest.mark.parametrize("num_parts", [1, 3])
def test_distribute_gives_pygs_pairs_on_every_rank(rank_results, num_parts, form):
    ranks = [res[form]["pairs"] for res in rank_results[num_parts]]
    assert len(ranks) == num_parts
    _check_ranks(hc.make_triple(form), ranks)


@pytest.mark.parametrize("num_parts", [1, 3])
def test_typed_negatives_are_the_same_for_every_p(rank_results, num_parts):
    for form in ("split_labels", "mixed_negatives"):
        for res in rank_results[num_parts]:
            assert res[form]["negatives"] and not any(res[form]["negatives"].values()), \
                (form, res[form]["negatives"])


@pytest.mark.parametrize("form", TRAIN_FORMS)
@pytest.mark.parametrize("num_parts", [1, 3])
def test_training_equals_single_process_pyg(rank_results, num_parts, form):
    for r, res in enumerate(rank_results[num_parts]):
        t = res[form]["train"]
        assert t["drew_negatives"] == (form in ("mixed_no_train_negatives", "split_labels"))
        for step, (a, b) in enumerate(zip(t["losses"], t["losses_ref"])):
            assert abs(a - b) <= TOL * abs(b), (r, step, a, b)
        assert t["param_err"] <= TOL, (r, t["param_err"])
        assert max(t["scores"].values()) <= TOL, (r, t["scores"])
