"""Heterogeneous datasets: WordNet (synsets + definition words), the OGB-MAG-shaped generator,
ogbn-mag's folder layout read by the OGB loader, the hetero validator and the registry."""
import gzip

import numpy as np
import pytest
import torch
from torch_geometric.data import HeteroData
from torch_geometric.utils import scatter

from pyg_sar.datasets import (
    KNOWN_NAMES,
    MAG_EDGE_TYPES,
    MAG_NODE_TYPES,
    check_hetero,
    is_hetero_dataset,
    load_dataset,
    mag_like,
    ogb_hetero_dataset,
    ogb_node_dataset,
    random_split_masks,
    wordnet_hetero,
)
from pyg_sar.datasets.registry import is_known_dataset
from pyg_sar.datasets.wordnet30 import WORDNET_PATH

MASKS = ("train_mask", "val_mask", "test_mask")


def _ids_in_range(data):
    for (src, rel, dst), store in zip(data.edge_types, data.edge_stores):
        e = store.edge_index
        assert e.dtype == torch.long and e.dim() == 2 and e.size(0) == 2, (src, rel, dst)
        if e.numel():
            assert int(e.min()) >= 0, (src, rel, dst)
            assert int(e[0].max()) < data[src].num_nodes, (src, rel, dst)
            assert int(e[1].max()) < data[dst].num_nodes, (src, rel, dst)


def _sorted_distinct(e, num_dst):
    keys = e[0] * num_dst + e[1]
    return bool((keys[1:] > keys[:-1]).all())


# ---------------------------------------------------------------- WordNet, synsets + words

def _tiny_wordnet_npz(path):
    x = np.zeros((5, 4), dtype=np.float32)
    x[0, [1, 3]] = 1
    x[2, 0] = 1
    x[3, [0, 1, 2]] = 1  # synset 4 has an empty definition bag, word 2 one synset
    y = np.array([0, 1, 1, 2, 0], dtype=np.int64)
    edge_index = np.array([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]], dtype=np.int64)
    np.savez_compressed(path, x=x, y=y, edge_index=edge_index)
    return x, y, edge_index


def test_wordnet_hetero_from_a_small_file(tmp_path):
    x, y, edge_index = _tiny_wordnet_npz(tmp_path / "wn.npz")
    data = wordnet_hetero(path=tmp_path / "wn.npz", split_seed=3)
    assert data.node_types == ["synset", "word"]
    assert data.edge_types == [("synset", "related_to", "synset"),
                               ("synset", "defined_by", "word"),
                               ("word", "rev_defined_by", "synset")]
    assert torch.equal(data["synset"].x, torch.from_numpy(x))
    assert torch.equal(data["synset"].y, torch.from_numpy(y))
    assert torch.equal(data["word"].x, torch.eye(4))
    assert data["synset", "related_to", "synset"].edge_index.tolist() == edge_index.tolist()
    # An unsorted file is sorted (the shipped one is not).
    np.savez_compressed(tmp_path / "shuffled.npz", x=x, y=y, edge_index=edge_index[:, ::-1])
    assert torch.equal(wordnet_hetero(path=tmp_path / "shuffled.npz")[
        "synset", "related_to", "synset"].edge_index, torch.from_numpy(edge_index))
    assert data["synset", "defined_by", "word"].edge_index.tolist() == \
        [[0, 0, 2, 3, 3, 3], [1, 3, 0, 0, 1, 2]]
    assert data["word", "rev_defined_by", "synset"].edge_index.tolist() == \
        [[0, 0, 1, 1, 2, 3], [2, 3, 0, 3, 3, 0]]
    for name, mask in zip(MASKS, random_split_masks(5, 0.6, 0.2, 3)):
        assert torch.equal(data["synset"][name], mask)
    check_hetero(data)

    bare = wordnet_hetero(path=tmp_path / "wn.npz", word_features="none", add_reverse=False)
    assert "x" not in bare["word"] and bare["word"].num_nodes == 4
    assert bare.edge_types == data.edge_types[:2]
    with pytest.raises(ValueError, match="word_features must be one of"):
        wordnet_hetero(path=tmp_path / "wn.npz", word_features="glove")
    np.savez_compressed(tmp_path / "bad.npz", x=x, y=y,
                        edge_index=np.array([[0], [5]], dtype=np.int64))
    with pytest.raises(ValueError, match=r"ids in \[0, 5\] but there are 5 synsets"):
        wordnet_hetero(path=tmp_path / "bad.npz")
    np.savez_compressed(tmp_path / "short.npz", x=x, y=y)
    with pytest.raises(ValueError, match=r"lacks arrays \['edge_index'\]"):
        wordnet_hetero(path=tmp_path / "short.npz")


def test_wordnet_hetero_shipped():
    data = wordnet_hetero()  # (its time is not asserted: speed is measured in benchmarks/)
    synset, word = data["synset"], data["word"]
    assert synset.x.shape == (117659, 2000) and synset.x.dtype == torch.float32
    assert word.x.shape == (2000, 2000)
    with np.load(WORDNET_PATH, allow_pickle=False) as z:
        assert torch.equal(synset.y, torch.from_numpy(z["y"]))
        shipped = torch.from_numpy(z["edge_index"])
    related = data["synset", "related_to", "synset"].edge_index
    assert _sorted_distinct(related, 117659)  # the homogeneous edges, sorted
    assert torch.equal(related[0] * 117659 + related[1],
                       torch.sort(shipped[0] * 117659 + shipped[1]).values)
    assert int(synset.y.max()) + 1 == 45
    for name, mask in zip(MASKS, random_split_masks(117659, 0.6, 0.2, 0)):
        assert torch.equal(synset[name], mask)
    defined = data["synset", "defined_by", "word"].edge_index
    assert defined.size(1) == int((synset.x != 0).sum()) == 475749
    assert bool((synset.x[defined[0], defined[1]] == 1).all())
    assert _sorted_distinct(defined, 2000)
    rev = data["word", "rev_defined_by", "synset"].edge_index
    assert torch.equal(torch.sort(rev[0] * 117659 + rev[1]).values,
                       rev[0] * 117659 + rev[1])
    assert torch.equal(torch.sort(rev[1] * 2000 + rev[0]).values, defined[0] * 2000 + defined[1])
    _ids_in_range(data)
    assert check_hetero(data) == {"synset": 117659, "word": 2000}


# ---------------------------------------------------------------- MAG-shaped generator

def test_mag_like_shape_and_determinism():
    data = mag_like(3000, seed=7)
    assert data.node_types == list(MAG_NODE_TYPES)
    assert data.edge_types == list(MAG_EDGE_TYPES)
    paper = data["paper"]
    assert paper.x.shape == (3000, 128) and paper.x.dtype == torch.float32
    assert paper.y.dtype == torch.long and paper.year.dtype == torch.long
    for t in ("author", "institution", "field_of_study"):
        assert set(data[t].keys()) == {"num_nodes"}  # only papers have features, like MAG
    assert data["author"].num_nodes == round(3000 * 1134649 / 736389)
    _ids_in_range(data)
    for edge_type in data.edge_types:
        assert _sorted_distinct(data[edge_type].edge_index, data[edge_type[2]].num_nodes)
    cites = data["paper", "cites", "paper"].edge_index
    assert not bool((cites[0] == cites[1]).any())
    assert bool((paper.year[cites[1]] <= paper.year[cites[0]]).all())  # no citing the future
    # Every author writes, every paper has an author and a field.
    assert torch.unique(data["author", "writes", "paper"].edge_index[0]).numel() == \
        data["author"].num_nodes
    assert torch.unique(data["author", "writes", "paper"].edge_index[1]).numel() == 3000
    assert torch.unique(data["paper", "has_topic", "field_of_study"].edge_index[0]).numel() \
        == 3000
    # OGB's time split.
    assert torch.equal(paper.train_mask, paper.year < 2018)
    assert torch.equal(paper.val_mask, paper.year == 2018)
    assert torch.equal(paper.test_mask, paper.year == 2019)
    assert bool((paper.train_mask.int() + paper.val_mask.int() + paper.test_mask.int()
                 == 1).all())
    assert check_hetero(data)["paper"] == 3000

    again = mag_like(3000, seed=7)
    other = mag_like(3000, seed=8)
    for store, same in zip(data.stores, again.stores):
        for key, value in store.items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(value, same[key]), key
    assert not torch.equal(data["paper"].x, other["paper"].x)
    assert not torch.equal(cites, other["paper", "cites", "paper"].edge_index)


def test_mag_like_ratios_and_heavy_tails():
    n = 20000
    data = mag_like(n, seed=0)
    per_paper = {rel: data[(s, rel, d)].edge_index.size(1) / n for s, rel, d in data.edge_types}
    # ogbn-mag: 9.70 writes, 7.36 cites, 10.19 has_topic, 1.42 affiliated_with per paper.
    assert 8.7 < per_paper["writes"] < 10.7, per_paper
    assert 6.8 < per_paper["cites"] < 7.9, per_paper
    assert 9.0 < per_paper["has_topic"] < 11.0, per_paper
    assert 1.2 < per_paper["affiliated_with"] < 1.6, per_paper
    frac = data["paper"].train_mask.float().mean().item()
    assert 0.83 < frac < 0.88, frac
    for (src, rel, dst), deg_of in ((("paper", "cites", "paper"), 1),
                                    (("author", "writes", "paper"), 0),
                                    (("paper", "has_topic", "field_of_study"), 1),
                                    (("author", "affiliated_with", "institution"), 1)):
        e = data[src, rel, dst].edge_index
        num = data[(src, dst)[deg_of]].num_nodes
        deg = torch.bincount(e[deg_of], minlength=num).double()
        # Heavy tail: the top 1 % of nodes hold far more than 1 % of the edges.
        top = torch.sort(deg, descending=True).values[:max(1, num // 100)].sum()
        assert top / deg.sum() > 0.05, (rel, float(top / deg.sum()))
        assert deg.max() > 10 * deg.mean(), (rel, float(deg.max()), float(deg.mean()))


def _nearest_centroid_accuracy(x, y, train, test, num_classes):
    centroids = scatter(x[train], y[train], 0, dim_size=num_classes, reduce="mean")
    return (torch.cdist(x[test], centroids).argmin(1) == y[test]).float().mean().item()


def test_mag_like_labels_are_learnable_from_features_and_better_with_structure():
    data = mag_like(10000, seed=1)
    paper = data["paper"]
    num_classes = int(paper.y.max()) + 1
    x, y = paper.x, paper.y
    train, test = paper.train_mask, paper.test_mask
    majority = (y[test] == torch.mode(y[train]).values).float().mean().item()
    feat = _nearest_centroid_accuracy(x, y, train, test, num_classes)
    cites = data["paper", "cites", "paper"].edge_index
    both = torch.cat([cites, cites.flip(0)], dim=1)
    neigh = scatter(x[both[0]], both[1], 0, dim_size=x.size(0), reduce="mean")
    writes = data["author", "writes", "paper"].edge_index
    author = scatter(x[writes[1]], writes[0], 0, dim_size=data["author"].num_nodes,
                     reduce="mean")
    coauthor = scatter(author[writes[0]], writes[1], 0, dim_size=x.size(0), reduce="mean")
    with_graph = _nearest_centroid_accuracy(x + neigh + coauthor, y, train, test, num_classes)
    # Measured (seed 1): majority 0.17, features 0.29, features + two hops of graph 0.66.
    assert feat > majority + 0.1, (feat, majority)
    assert with_graph > feat + 0.15, (with_graph, feat)


def test_mag_like_options_and_errors():
    data = mag_like(500, seed=0, num_classes=5, num_features=16, add_reverse_edges=True)
    assert data["paper"].x.shape == (500, 16) and int(data["paper"].y.max()) < 5
    assert ("paper", "rev_writes", "author") in data.edge_types
    cites = data["paper", "cites", "paper"].edge_index
    keys = set((cites[0] * 500 + cites[1]).tolist())
    assert keys == set((cites[1] * 500 + cites[0]).tolist())  # made symmetric
    _ids_in_range(data)
    tiny = mag_like(1, seed=0)
    assert {t: tiny[t].num_nodes for t in tiny.node_types} == \
        {"paper": 1, "author": 2, "institution": 1, "field_of_study": 1}
    _ids_in_range(tiny)
    for kwargs, match in (({"num_papers": 0}, "num_papers must be an integer >= 1"),
                          ({"num_papers": 2.5}, "num_papers must be an integer >= 1"),
                          ({"seed": -1}, "seed must be an integer >= 0"),
                          ({"homophily": 1.5}, r"homophily must be a number in \[0.0, 1.0\]"),
                          ({"cites_per_paper": float("nan")}, "cites_per_paper must be"),
                          ({"num_classes": 0}, "num_classes must be an integer >= 1")):
        kwargs = {"num_papers": 10, **kwargs}
        with pytest.raises(ValueError, match=match):
            mag_like(**kwargs)


# ---------------------------------------------------------------- ogbn-mag's folder layout

def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write("".join(f"{line}\n" for line in lines))


def _write_ogb_mag(data, folder, with_listings=True, edge_feat=None):
    """``data`` (a mag_like graph) in ogbn-mag's raw layout, as OGB unpacks it."""
    raw = folder / "raw"
    types = sorted(data.node_types)
    _write(raw / "num-node-dict.csv.gz",
           [",".join(types), ",".join(str(data[t].num_nodes) for t in types)])
    if with_listings:
        _write(raw / "triplet-type-list.csv.gz", [",".join(et) for et in data.edge_types])
        _write(raw / "nodetype-has-label.csv.gz",
               [",".join(types), ",".join(str(t == "paper") for t in types)])
        _write(folder / "split" / "time" / "nodetype-has-split.csv.gz",
               [",".join(types), ",".join(str(t == "paper") for t in types)])
    for et in data.edge_types:
        sub = raw / "relations" / "___".join(et)
        e = data[et].edge_index
        _write(sub / "edge.csv.gz", [f"{s},{d}" for s, d in e.t().tolist()])
        _write(sub / "num-edge-list.csv.gz", [str(e.size(1))])
        _write(sub / "edge_reltype.csv.gz", ["0"] * e.size(1))  # present in ogbn-mag, unused
        if edge_feat is not None and et == edge_feat:
            _write(sub / "edge-feat.csv.gz", [f"{i}.25,1" for i in range(e.size(1))])
    paper = data["paper"]
    _write(raw / "node-feat" / "paper" / "node-feat.csv.gz",
           [",".join(repr(float(v)) for v in row) for row in paper.x.tolist()])
    _write(raw / "node-feat" / "paper" / "node_year.csv.gz", [str(v) for v in paper.year.tolist()])
    _write(raw / "node-label" / "paper" / "node-label.csv.gz", [str(v) for v in paper.y.tolist()])
    for name, mask in (("train", paper.train_mask), ("valid", paper.val_mask),
                       ("test", paper.test_mask)):
        _write(folder / "split" / "time" / "paper" / f"{name}.csv.gz",
               [str(i) for i in mask.nonzero().view(-1).tolist()])
    return folder


def _assert_same(a, b):
    assert a.node_types == b.node_types and a.edge_types == b.edge_types
    for t in a.node_types:
        assert a[t].num_nodes == b[t].num_nodes, t
        for key in ("x", "y", "year", *MASKS):
            if key in a[t]:
                assert torch.equal(a[t][key], b[t][key]), (t, key)
            else:
                assert key not in b[t], (t, key)
    for et in a.edge_types:
        assert torch.equal(a[et].edge_index, b[et].edge_index), et


def test_ogb_mag_folder_round_trip(tmp_path):
    data = mag_like(120, seed=3, num_features=4)
    folder = _write_ogb_mag(data, tmp_path / "mag",
                            edge_feat=("author", "affiliated_with", "institution"))
    got = load_dataset(f"ogb:{folder}")
    assert isinstance(got, HeteroData)
    # Labelled type first, then in the order of the sorted edge types: PyG's OGB_MAG order.
    _assert_same(data, got)
    attr = got["author", "affiliated_with", "institution"].edge_attr
    assert attr.dtype == torch.float32 and attr.shape == (attr.size(0), 2)
    assert attr[:, 0].tolist() == [i + 0.25 for i in range(attr.size(0))]
    assert is_hetero_dataset(f"ogb:{folder}") and is_known_dataset(f"ogb:{folder}")

    # Without triplet-type-list / nodetype-has-* the folders decide; add_inverse_edge maps to
    # ToUndirected.
    bare = _write_ogb_mag(data, tmp_path / "bare", with_listings=False)
    _assert_same(data, ogb_hetero_dataset(bare))
    both = ogb_node_dataset(bare, add_inverse_edge=True)
    assert ("paper", "rev_writes", "author") in both.edge_types


def test_ogb_mag_folder_unlabelled_and_errors(tmp_path):
    data = mag_like(40, seed=0, num_features=3)
    data["paper"].y[5] = -1
    data["paper"].train_mask[5] = False
    data["paper"].val_mask[5] = False
    data["paper"].test_mask[5] = False
    folder = _write_ogb_mag(data, tmp_path / "m")
    _write(folder / "raw" / "node-label" / "paper" / "node-label.csv.gz",
           [("nan" if i == 5 else str(v)) for i, v in enumerate(data["paper"].y.tolist())])
    got = ogb_hetero_dataset(folder)
    assert int(got["paper"].y[5]) == -1 and not bool(got["paper"].train_mask[5])
    _assert_same(data, got)

    def broken(name, edit):
        bad = _write_ogb_mag(data, tmp_path / name)
        _write(bad / "raw" / "node-label" / "paper" / "node-label.csv.gz",
               [("nan" if i == 5 else str(v)) for i, v in enumerate(data["paper"].y.tolist())])
        edit(bad)
        return bad

    writes = "raw/relations/author___writes___paper"
    cases = [
        ("ids", lambda f: _write(f / writes / "edge.csv.gz", ["0,40"]) or
         _write(f / writes / "num-edge-list.csv.gz", ["1"]),
         r"edge type \('author', 'writes', 'paper'\): destination id 40 is out of range for "
         r"node type 'paper' \(40 nodes\)"),
        ("count", lambda f: _write(f / writes / "num-edge-list.csv.gz", ["3"]),
         r"edge.csv.gz has shape .* expected \(3, 2\) for edge type \('author', 'writes'"),
        ("type", lambda f: _write(f / "raw" / "triplet-type-list.csv.gz", ["author,writes,book"]),
         r"edge type \('author', 'writes', 'book'\): its destination node type 'book' is not"),
        ("feat", lambda f: _write(f / "raw/node-feat/paper/node-feat.csv.gz", ["1,2,3"]),
         r"has 1 rows, expected 40 for node type 'paper'"),
        ("split", lambda f: _write(f / "split/time/paper/test.csv.gz", ["5"]),
         r"lists 'paper' nodes without a label"),
        ("graphs", lambda f: _write(f / "raw/num-node-dict.csv.gz", ["paper", "40", "40"]),
         "must hold a header row and one value row"),
        ("year", lambda f: _write(f / "raw/node-feat/paper/node_year.csv.gz", ["2010"]),
         r"node_year.csv.gz has shape \(1, 1\), expected \(40, 1\)"),
    ]
    for name, edit, match in cases:
        with pytest.raises(ValueError, match=match):
            ogb_hetero_dataset(broken(name, edit))


# ---------------------------------------------------------------- validator and registry

def _small():
    data = HeteroData()
    data["a"].x = torch.zeros(3, 2)
    data["a"].y = torch.tensor([0, 1, -1])
    data["a"].train_mask = torch.tensor([True, True, False])
    data["b"].num_nodes = 2
    data["a", "to", "b"].edge_index = torch.tensor([[0, 2], [1, 0]])
    return data


@pytest.mark.parametrize("edit, match", [
    (lambda d: setattr(d["a"], "y", torch.tensor([0, 1])),
     r"node type 'a': its tensors disagree on the number of nodes \(x 3, y 2, "
     r"train_mask 3\)"),
    (lambda d: setattr(d["a", "to", "b"], "edge_index", torch.tensor([[0], [2]])),
     r"edge type \('a', 'to', 'b'\): destination id 2 is out of range for node type 'b' "
     r"\(2 nodes\)"),
    (lambda d: setattr(d["a", "to", "b"], "edge_index", torch.tensor([[-1], [0]])),
     r"source id -1 is out of range for node type 'a'"),
    (lambda d: setattr(d["c", "to", "b"], "edge_index", torch.tensor([[0], [0]])),
     r"edge type \('c', 'to', 'b'\): its source node type 'c' is missing"),
    (lambda d: setattr(d["a", "to", "b"], "edge_index", torch.tensor([[0.0], [1.0]])),
     r"edge_index must be an integer \[2, E\] tensor"),
    (lambda d: setattr(d["a", "to", "b"], "edge_attr", torch.zeros(3, 1)),
     r"edge_attr must have one row per edge \(2\)"),
    (lambda d: setattr(d["a"], "train_mask", torch.tensor([True, False, True])),
     r"train_mask holds node 2 whose label is -1"),
    (lambda d: setattr(d["a"], "y", torch.tensor([0.0, 1.0, 1.0])),
     "y must hold integer class labels"),
    (lambda d: setattr(d["a"], "val_mask", torch.tensor([1, 0, 0])),
     "val_mask must be a bool tensor"),
    (lambda d: setattr(d["b"], "num_nodes", -1), "num_nodes must be an integer >= 0"),
])
def test_check_hetero_errors(edit, match):
    data = _small()
    assert check_hetero(data) == {"a": 3, "b": 2}
    edit(data)
    with pytest.raises(ValueError, match=match):
        check_hetero(data)


def test_check_hetero_not_hetero():
    with pytest.raises(ValueError, match="expected a torch_geometric.data.HeteroData"):
        check_hetero(torch.zeros(2))
    with pytest.raises(ValueError, match="no node types"):
        check_hetero(HeteroData())


def test_registry_names_the_hetero_datasets():
    assert "wordnet-hetero" in KNOWN_NAMES and "mag-like" in KNOWN_NAMES
    assert is_known_dataset("MAG-like") and is_hetero_dataset("mag-like")
    assert is_hetero_dataset("wordnet-hetero") and not is_hetero_dataset("wordnet")
    data = load_dataset("mag-like", num_papers=200, seed=4)
    assert isinstance(data, HeteroData) and data["paper"].num_nodes == 200
    _assert_same(data, mag_like(200, seed=4))


def test_train_cli_refuses_hetero_names(capsys):
    from pyg_sar.train import parse_args
    with pytest.raises(SystemExit) as info:
        parse_args(["--dataset", "mag-like"])
    assert info.value.code == 2
    assert "'mag-like' is a heterogeneous graph (HeteroData)" in capsys.readouterr().err

