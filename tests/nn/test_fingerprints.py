"""PyG classes verified by content (pyg_sar.nn.fingerprints), not by torch_geometric's version:
the stored fingerprints are those of the installed PyG, ``convert`` refuses exactly the classes
whose code changed (naming the function), ignores the version string, and trusted_layers
overrides a refusal."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import torch_geometric
from torch_geometric.nn import GAT, GATConv, GCNConv, HeteroBatchNorm, SAGEConv, aggr
from torch_geometric.nn.conv import gcn_conv
from torch_geometric.nn.models import basic_gnn

import pyg_sar
from pyg_sar.nn import fingerprints
from pyg_sar.nn.conversion import registry
from pyg_sar.nn.fingerprints import class_path

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh_caches():
    fingerprints.clear_caches()
    yield
    fingerprints.clear_caches()  # after monkeypatch restored PyG's code (fixture order)


def refused_classes() -> set[str]:
    return {class_path(c) for c in fingerprints.covered_classes()
            if fingerprints.refusal(c) is not None}


def edited(original, replacement):
    """``replacement``'s code under ``original``'s name and module, as if PyG had edited it."""
    replacement.__module__ = original.__module__
    replacement.__qualname__ = original.__qualname__
    return replacement


# ------------------------------------------------------------------------------------ (a)
def test_stored_fingerprints_are_those_of_the_installed_pyg():
    """The data file is current: every class pyg_sar runs has a verified set recorded for the
    installed torch_geometric, and it equals the installed code (else regenerate it after the
    zoo: python -m pyg_sar.nn.fingerprints --write --zoo-results ...)."""
    version = torch_geometric.__version__
    stored = fingerprints.verified_sets()
    recorded = {v for sets in stored.values() for s in sets for v in s["verified_on"]}
    if version not in recorded:
        pytest.skip(f"torch_geometric {version} is not among the verified versions "
                    f"{sorted(recorded)}")
    covered = fingerprints.covered_classes()
    assert len(covered) > 60
    stale = []
    for cls in covered:
        sets = [s for s in stored.get(class_path(cls), []) if version in s["verified_on"]]
        if [s["functions"] for s in sets] != [fingerprints.class_fingerprints(cls)]:
            stale.append(class_path(cls))
    assert stale == []
    assert refused_classes() == set()


def test_the_rule_covers_what_the_adapters_use():
    keys = fingerprints.class_functions(GATConv)
    for name in ("__init__", "forward", "message", "edge_update"):
        assert f"torch_geometric.nn.conv.gat_conv.GATConv.{name}" in keys
    assert "torch_geometric.nn.conv.gat_conv.GATConv.reset_parameters" not in keys
    assert "torch_geometric.utils._softmax.softmax" in keys  # a helper read by name
    assert ("torch_geometric.nn.conv.message_passing.MessagePassing.propagate"
            + fingerprints.SIGNATURE) in keys
    gcn = fingerprints.class_functions(GCNConv)
    assert "torch_geometric.nn.conv.gcn_conv.gcn_norm" in gcn
    assert "torch_geometric.utils.loop.add_remaining_self_loops" in gcn  # gcn_norm's helper
    # SAGEConv inherits MessagePassing's aggregate and update: the engine relies on them.
    sage = fingerprints.class_functions(SAGEConv)
    assert "torch_geometric.nn.conv.message_passing.MessagePassing.update" in sage
    # Formatting, comments and docstrings do not count.
    a = "def f(x):\n    '''Doc.'''\n    return x + 1  # one\n"
    b = "def f(x):\n    return (x +\n            1)\n"
    ns_a, ns_b = {}, {}
    exec(compile(a, "<a>", "exec"), ns_a)
    exec(compile(b, "<b>", "exec"), ns_b)
    import linecache
    for name, text in (("<a>", a), ("<b>", b)):
        linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    assert fingerprints.normalised_source(ns_a["f"]) == fingerprints.normalised_source(ns_b["f"])


# ------------------------------------------------------------------------------------ (b)
def test_an_edited_method_refuses_exactly_its_class(monkeypatch):
    def message(self, x_j, alpha):  # an "edited" GATConv.message
        return alpha.unsqueeze(-1) * x_j * 2

    monkeypatch.setattr(GATConv, "message", edited(GATConv.message, message))
    fingerprints.clear_caches()
    assert refused_classes() == {class_path(GATConv)}
    with pytest.raises(pyg_sar.UnsupportedLayerError,
                       match=r"GATConv.*torch_geometric\.nn\.conv\.gat_conv\.GATConv\.message"
                             r".*trusted_layers"):
        pyg_sar.convert(GAT(4, 8, num_layers=2))
    pyg_sar.convert(GCNConv(3, 3))  # the others still convert
    pyg_sar.convert(SAGEConv(3, 3))


def test_an_edited_edge_update_is_named(monkeypatch):
    def edge_update(self, alpha_j, alpha_i, edge_attr, index, ptr, dim_size):
        return alpha_j if alpha_i is None else alpha_j + alpha_i

    monkeypatch.setattr(GATConv, "edge_update", edited(GATConv.edge_update, edge_update))
    fingerprints.clear_caches()
    with pytest.raises(pyg_sar.UnsupportedLayerError, match=r"GATConv\.edge_update"):
        pyg_sar.convert(GATConv(3, 3))


def gcn_norm_edited(edge_index, edge_weight=None, num_nodes=None, improved=False,
                    add_self_loops=True, flow="source_to_target", dtype=None):
    raise NotImplementedError("an edited gcn_norm (never run: only convert is called)")


def test_an_edited_helper_refuses_every_class_that_reads_it(monkeypatch):
    """A PyG helper edited in place (every module that imported it sees the new code):
    exactly the classes whose code reads it, directly or through another helper, are
    refused, each naming it."""
    readers = {class_path(c) for c in fingerprints.covered_classes()
               if "torch_geometric.nn.conv.gcn_conv.gcn_norm" in fingerprints.class_functions(c)}
    assert class_path(GCNConv) in readers and class_path(GATConv) not in readers
    assert len(readers) >= 8  # GCNConv, APPNP, SGConv, TAGConv, GCN2Conv, ...
    monkeypatch.setattr(gcn_conv.gcn_norm, "__code__", gcn_norm_edited.__code__)
    fingerprints.clear_caches()
    assert refused_classes() == readers
    for path in readers:
        cls = next(c for c in fingerprints.covered_classes() if class_path(c) == path)
        assert "torch_geometric.nn.conv.gcn_conv.gcn_norm" in fingerprints.refusal(cls)
    with pytest.raises(pyg_sar.UnsupportedLayerError, match=r"GCNConv.*gcn_norm"):
        pyg_sar.convert(GCNConv(3, 3))
    pyg_sar.convert(GAT(4, 8, num_layers=2))


def test_an_edited_passthrough_model_is_refused(monkeypatch):
    """Modules pyg_sar lets the graph pass through are fingerprinted too (BasicGNN's
    forward, shared by GCN, GAT, GraphSAGE, ...)."""
    def forward(self, x, edge_index, **kwargs):
        return x

    monkeypatch.setattr(basic_gnn.BasicGNN, "forward",
                        edited(basic_gnn.BasicGNN.forward, forward))
    fingerprints.clear_caches()
    with pytest.raises(pyg_sar.UnsupportedLayerError, match=r"\(GAT\).*BasicGNN\.forward"):
        pyg_sar.convert(GAT(4, 8, num_layers=2))
    pyg_sar.convert(GAT(4, 8, num_layers=2),
                    pyg_sar.SARConfig(trusted_layers=(basic_gnn.GAT,)))


def test_an_edited_aggregation_refuses_the_layers_that_use_it(monkeypatch):
    """The aggregation modules the engine rebuilds from per-node statistics are fingerprinted
    as modules of their own: an edited MeanAggregation refuses a mean-aggregating layer,
    naming the aggregation's function, while a sum-aggregating one still converts."""
    def forward(self, x, index=None, ptr=None, dim_size=None, dim=-2):
        return self.reduce(x, index, ptr, dim_size, dim, reduce="sum")

    monkeypatch.setattr(aggr.MeanAggregation, "forward",
                        edited(aggr.MeanAggregation.forward, forward))
    fingerprints.clear_caches()
    assert refused_classes() == {class_path(aggr.MeanAggregation)}
    with pytest.raises(pyg_sar.UnsupportedLayerError,
                       match=r"\(MeanAggregation\).*aggr\.basic\.MeanAggregation\.forward"
                             r".*trusted_layers"):
        pyg_sar.convert(SAGEConv(3, 3, aggr="mean"))
    pyg_sar.convert(SAGEConv(3, 3, aggr="sum"))


def test_an_edited_batch_norm_is_refused_before_anything_changes(monkeypatch):
    """HeteroBatchNorm, whose statistics pyg_sar takes over all ranks, is fingerprinted: an
    edited forward refuses the model (naming it) and leaves it as it was; trusted_layers
    overrides."""
    def forward(self, x, type_vec):
        return x

    monkeypatch.setattr(HeteroBatchNorm, "forward", edited(HeteroBatchNorm.forward, forward))
    fingerprints.clear_caches()
    model = torch.nn.ModuleDict({"conv": GCNConv(4, 4), "norm": HeteroBatchNorm(4, 2)})
    with pytest.raises(pyg_sar.UnsupportedLayerError,
                       match=r"layer 'norm' \(HeteroBatchNorm\).*HeteroBatchNorm\.forward"):
        pyg_sar.convert(model)
    assert type(model["norm"]) is HeteroBatchNorm and type(model["conv"]) is GCNConv
    pyg_sar.convert(model, pyg_sar.SARConfig(trusted_layers=(HeteroBatchNorm,)))
    assert type(model["norm"]) is not HeteroBatchNorm  # now pyg_sar's distributed one


# ------------------------------------------------------------------------------------ (c)
def test_the_version_string_alone_refuses_nothing(monkeypatch):
    monkeypatch.setattr(torch_geometric, "__version__", "2.9.0")
    fingerprints.clear_caches()
    assert refused_classes() == set()
    model = pyg_sar.convert(GAT(4, 8, num_layers=3))
    pyg_sar.convert(GCNConv(3, 3))
    x, edge_index = torch.randn(5, 4), torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])
    assert model(x, edge_index).shape == (5, 8)  # PyG's own code on a plain edge_index


# ------------------------------------------------------------------------------------ (d)
def test_trusted_layers_override_a_fingerprint_refusal(monkeypatch):
    def message(self, x_j, alpha):
        return alpha.unsqueeze(-1) * x_j

    monkeypatch.setattr(GATConv, "message", edited(GATConv.message, message))
    fingerprints.clear_caches()
    with pytest.raises(pyg_sar.UnsupportedLayerError, match="trusted_layers"):
        pyg_sar.convert(GATConv(3, 3))
    pyg_sar.convert(GATConv(3, 3), pyg_sar.SARConfig(trusted_layers=(GATConv,)))


def test_a_class_without_verified_fingerprints_is_refused(monkeypatch):
    monkeypatch.setitem(fingerprints.verified_sets(), class_path(GCNConv), [])
    with pytest.raises(pyg_sar.UnsupportedLayerError,
                       match=r"GCNConv.*no verified fingerprints.*trusted_layers"):
        pyg_sar.convert(GCNConv(3, 3))


# ---------------------------------------------------------------------------- the command
def test_write_merges_a_version_into_an_equal_set():
    current = {class_path(GCNConv): fingerprints.class_fingerprints(GCNConv)}
    data = fingerprints.merged({"classes": {}}, current, "2.8.1")
    data = fingerprints.merged(data, current, "2.9.0.dev1")
    assert data["classes"][class_path(GCNConv)] == [
        {"verified_on": ["2.8.1", "2.9.0.dev1"], "functions": current[class_path(GCNConv)]}]
    changed = {class_path(GCNConv): {**current[class_path(GCNConv)], "x.y": "0" * 16}}
    data = fingerprints.merged(data, changed, "2.10.0")
    assert [s["verified_on"] for s in data["classes"][class_path(GCNConv)]] == [
        ["2.8.1", "2.9.0.dev1"], ["2.10.0"]]
    text = fingerprints.render(data)
    scope: dict = {}
    exec(text, scope)
    assert scope["FINGERPRINTS"] == data


def test_write_needs_zoo_results_of_the_installed_version(tmp_path, capsys):
    results = tmp_path / "zoo.json"
    results.write_text('{"versions": {"torch_geometric": "0.0.1"}, "recipes": []}')
    assert fingerprints.main(["--write", "--zoo-results", str(results)]) == 1
    assert "the zoo ran on torch_geometric 0.0.1, not" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        fingerprints.main(["--write"])


def test_declared_requirement_starts_at_the_lowest_verified_version():
    versions = {v for sets in fingerprints.verified_sets().values() for s in sets
                for v in s["verified_on"]}
    lowest = min(versions, key=lambda v: tuple(int(p) for p in re.findall(r"\d+", v)[:3]))
    low = ".".join(lowest.split(".")[:2])
    for name in ("pyproject.toml", "requirements.txt"):
        text = (ROOT / name).read_text()
        assert re.search(rf"torch-geometric>={re.escape(low)}\b", text), name
    assert registry.VERIFIED  # the table the fingerprints cover
