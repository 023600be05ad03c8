"""Conversion: what is refused (with the layer and the reason named) and what stays intact."""
from __future__ import annotations

import copy

import pytest
import torch
import torch_geometric.datasets
from torch_geometric.nn import (
    GCN,
    GATConv,
    GraphSAGE,
    MessagePassing,
    SAGEConv,
    aggr,
)
from torch_geometric.nn.norm import GraphNorm, LayerNorm

import pyg_sar
from pyg_sar.nn import DistributedBatchNorm, UnsupportedLayerError
from pyg_sar.nn.conversion.converted import SARLayer


class CustomAggregate(MessagePassing):
    def forward(self, x, edge_index):
        return self.propagate(edge_index, x=x)

    def aggregate(self, inputs, index, dim_size=None):
        return torch.zeros(dim_size, inputs.shape[1]).index_reduce_(0, index, inputs, "prod")


class Wrapper(torch.nn.Module):
    def __init__(self, conv, norm=None):
        super().__init__()
        self.conv, self.norm = conv, norm or torch.nn.Identity()

    def forward(self, x, edge_index):
        return self.norm(self.conv(x, edge_index))


@pytest.mark.parametrize("model, needle", [
    (Wrapper(SAGEConv(4, 4, aggr="lstm")), "depend on the order of a node's messages"),
    (Wrapper(SAGEConv(4, 4, aggr=aggr.GRUAggregation(4, 4))), "GRUAggregation"),
    (Wrapper(CustomAggregate()), "overrides aggregate()"),
    (Wrapper(SAGEConv(4, 4, flow="target_to_source")), "flow='target_to_source'"),
    (Wrapper(SAGEConv(4, 4), GraphNorm(4)), "GraphNorm"),
    (Wrapper(SAGEConv(4, 4), LayerNorm(4)), "mode='graph'"),
])
def test_inexact_layers_are_refused_by_name(model, needle):
    before = copy.deepcopy(model.state_dict())
    with pytest.raises(UnsupportedLayerError, match="layer '") as info:
        pyg_sar.convert(model)
    assert needle in str(info.value)
    # Nothing was changed: a refused model is not half converted.
    assert not any(isinstance(m, SARLayer) for m in model.modules())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_converted_model_still_runs_on_a_plain_edge_index():
    torch.manual_seed(0)
    x = torch.randn(30, 5)
    edge_index = torch.randint(0, 30, (2, 90))
    for model in (GraphSAGE(5, 8, 2, 3, norm="batch_norm"), GCN(5, 8, 2, 3),
                  Wrapper(GATConv(5, 4, heads=2))):
        model.eval()
        expected = model(x, edge_index)
        pyg_sar.convert(model)
        assert torch.allclose(model(x, edge_index), expected, atol=1e-6)


def test_convert_replaces_batch_norm_and_is_idempotent():
    model = GraphSAGE(5, 8, 2, 3, norm="batch_norm")
    weight = model.norms[0].module.weight
    pyg_sar.convert(model, pyg_sar.SARConfig(mode="sa"))
    assert isinstance(model.norms[0].module, DistributedBatchNorm)
    assert model.norms[0].module.weight is weight  # parameters are shared, not copied
    pyg_sar.convert(model, pyg_sar.SARConfig(mode="halo"))
    assert model.convs[0]._sar_config.mode == "halo"
    assert sum(isinstance(m, DistributedBatchNorm) for m in model.modules()) == 1


@pytest.mark.parametrize("kwargs, needle", [
    ({"mode": "ring"}, "mode must be one of"),
    ({"pipeline_depth": -1}, "pipeline_depth must be an integer >= 0"),
])
def test_config_validation(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        pyg_sar.SARConfig(**kwargs)


def test_convert_rejects_a_non_config():
    with pytest.raises(TypeError, match="SARConfig"):
        pyg_sar.convert(GCN(2, 2, 1), {"mode": "sar"})


@pytest.mark.parametrize("aggr, project", [("mean", False), ("sum", True), ("max", False)])
def test_narrowing_sage_projects_before_aggregating(aggr, project):
    """A narrowing SAGEConv with sum/mean aggregates W x_j (rows of width out_channels) and
    still matches PyG's lin_l(aggr x_j); max does not commute with W and keeps PyG's order.
    Multi-rank exactness of the same path: tests/core (sage_mean, basic_sage_bn_jk)."""
    torch.manual_seed(0)
    x = torch.randn(40, 16, dtype=torch.float64)
    edge_index = torch.randint(0, 40, (2, 200))
    layer = SAGEConv(16, 4, aggr=aggr, project=project).double()
    expected = layer(x, edge_index)
    widths = []
    pyg_sar.convert(layer)

    def spy(module, inputs):
        widths.append(inputs[-1]["x"][0].shape[1])
    layer.register_propagate_forward_pre_hook(spy)
    for project_first in (True, False):
        pyg_sar.convert(layer, pyg_sar.SARConfig(project_first=project_first))
        torch.testing.assert_close(layer(x, edge_index), expected, rtol=1e-12, atol=1e-12)
    assert widths == ([4, 16] if aggr != "max" else [16, 16])


def test_conversion_is_visible_in_the_type_and_keeps_repr_state_dict_and_deepcopy():
    from torch_geometric.nn import APPNP, GAT
    for model in (GraphSAGE(5, 8, 2, 3, norm="batch_norm"), GAT(5, 8, 2, 3, heads=2),
                  Wrapper(APPNP(K=2, alpha=0.1))):
        before_repr = repr(model)
        before_state = {k: v.clone() for k, v in model.state_dict().items()}
        classes = {name: type(m) for name, m in model.named_modules()}
        pyg_sar.convert(model)
        assert repr(model) == before_repr
        state = model.state_dict()
        assert list(state) == list(before_state)
        assert all(torch.equal(state[k], v) for k, v in before_state.items())
        for name, m in model.named_modules():
            if isinstance(m, MessagePassing):
                assert isinstance(m, SARLayer) and isinstance(m, classes[name])
                assert type(m).__name__ == classes[name].__name__
                assert type(m).__module__ == "pyg_sar.nn.conversion.converted"
        copy_ = copy.deepcopy(model)
        assert repr(copy_) == before_repr
        # PyG's __setstate__ must not have compiled its own propagate onto the class.
        assert all(type(m).propagate is SARLayer.propagate for m in model.modules()
                   if isinstance(m, MessagePassing))
        assert all(isinstance(m, SARLayer) for m in copy_.modules()
                   if isinstance(m, MessagePassing))
        assert all(torch.equal(copy_.state_dict()[k], v) for k, v in state.items())
        model.load_state_dict(before_state)  # the unconverted model's state loads as is


def test_user_classes_static_rule_and_trusted_layers():
    from torch_geometric.utils import degree

    class Plain(MessagePassing):
        def forward(self, x, edge_index):
            return self.propagate(edge_index, x=x)

    class UsesDegree(MessagePassing):
        def forward(self, x, edge_index):
            deg = degree(edge_index[1], x.size(0))
            return self.propagate(edge_index, x=x) / deg.clamp(min=1).view(-1, 1)

    pyg_sar.convert(Wrapper(Plain()))
    with pytest.raises(UnsupportedLayerError, match=r"UsesDegree\.forward uses degree"):
        pyg_sar.convert(Wrapper(UsesDegree()))
    pyg_sar.convert(Wrapper(UsesDegree()), pyg_sar.SARConfig(trusted_layers=(UsesDegree,)))
    with pytest.raises(ValueError, match="trusted_layers must be a tuple of classes"):
        pyg_sar.SARConfig(trusted_layers=("UsesDegree",))


def test_user_layers_normalising_in_message_run_by_destination_chunks():
    """The destination side of the structure (``index``, ``size_i``, a softmax or scatter over
    them inside message) runs by destination chunks, which see every in-edge of a node; the
    source side (``edge_index_j``), utilities outside message and aggregate, and an aggregate
    of the class's own (whose order a partition does not keep) are refused."""
    from torch_geometric.utils import add_self_loops, scatter, softmax

    from pyg_sar.nn.layers import PER_DESTINATION

    class SoftmaxInMessage(MessagePassing):
        def forward(self, x, edge_index):
            return self.propagate(edge_index, x=x)

        def message(self, x_j, x_i, index, size_i):
            return softmax((x_i * x_j).sum(-1), index, num_nodes=size_i).view(-1, 1) * x_j

    class CountsInDegree(SoftmaxInMessage):
        def message(self, x_j, index, dim_size):
            return x_j / scatter(torch.ones_like(index), index, dim_size=dim_size)[index]

    class ReadsSourceIds(SoftmaxInMessage):
        def message(self, x_j, edge_index_j):
            return x_j * edge_index_j.view(-1, 1)

    class LoopsInMessage(SoftmaxInMessage):
        def message(self, x_j, index):
            add_self_loops(torch.stack([index, index]))
            return x_j

    for cls in (SoftmaxInMessage, CountsInDegree):
        model = pyg_sar.convert(Wrapper(cls()))
        assert model.conv._sar_spec.adapter.per_destination is True
    for cls, needle in ((ReadsSourceIds, "takes edge_index_j"),
                        (LoopsInMessage, r"LoopsInMessage\.message uses add_self_loops"),
                        (CustomAggregate, r"overrides aggregate\(\)")):
        with pytest.raises(UnsupportedLayerError, match=needle):
            pyg_sar.convert(Wrapper(cls()))
    trusted = pyg_sar.convert(Wrapper(CustomAggregate()),
                              pyg_sar.SARConfig(trusted_layers=(CustomAggregate,)))
    assert trusted.conv._sar_spec.aggr == PER_DESTINATION


def test_a_layer_parameter_as_long_as_the_edges_is_not_cut_per_block():
    """The engine cuts message arguments with one row per edge into blocks; a layer's own
    parameter (or buffer) is passed whole however many rows it has, as PyG passes it: a rank
    may hold exactly as many edges as the parameter has rows."""
    from torch.nn import Parameter
    from torch_geometric.nn.conv import MessagePassing

    from pyg_sar.core.views import stored_view
    from pyg_sar.nn.conversion.propagate import _plan

    data = torch_geometric.datasets.FakeDataset(num_graphs=1, avg_num_nodes=12,
                                                num_channels=3)[0]
    graph = pyg_sar.distribute(data).edge_index

    class MixConv(MessagePassing):
        def __init__(self) -> None:
            super().__init__(aggr="add")
            self.mix = Parameter(torch.randn(graph.num_edges, 3))

        def message(self, x_j, mix, edge_attr):
            return x_j * mix.mean(0) * edge_attr

    layer = MixConv()
    plan, _, _, edge = _plan(layer, stored_view(graph), {
        "x": data.x, "mix": layer.mix, "edge_attr": torch.ones(graph.num_edges, 1)})
    roles = {name: role for name, role, _ in plan}
    assert roles == {"x_j": "src", "mix": "const", "edge_attr": "edge"}
    assert len(edge) == 1
