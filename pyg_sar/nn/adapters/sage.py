"""GraphSAGE with the neighbour projection applied before aggregation where that is cheaper.

PyG's :class:`~torch_geometric.nn.conv.SAGEConv` computes ``lin_l(aggr_j x_j)``. For the sum
and mean aggregations this equals ``aggr_j (W x_j) + b`` exactly in real arithmetic (only the
rounding differs), and when the layer narrows (``out_channels < in_channels``) the projected
rows are smaller: every fetched block, every message and the transient aggregation buffers
shrink by ``out / in``. DGL's ``SAGEConv`` does the same (``lin_before_mp``).
"""
from __future__ import annotations

from typing import Optional, Union

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.parameter import UninitializedParameter
from torch_geometric.nn import SAGEConv


def projects_first(layer: SAGEConv) -> bool:
    """Whether ``layer`` can and should project before aggregating: a sum or mean
    aggregation (the projection commutes with it) and a narrowing, initialised ``lin_l``."""
    aggr = layer.aggr if isinstance(layer.aggr, str) else None
    weight = layer.lin_l.weight
    return (aggr in ("mean", "add", "sum") and not isinstance(weight, UninitializedParameter)
            and weight.shape[0] < weight.shape[1])


def sage_forward(self: SAGEConv, x: Union[Tensor, tuple[Tensor, Optional[Tensor]]],
                 edge_index, size=None) -> Tensor:
    """:meth:`SAGEConv.forward`, projecting the neighbour features first when
    :func:`projects_first` says so (bound to converted layers by :func:`pyg_sar.convert`)."""
    config = getattr(self, "_sar_config", None)
    if config is None or not config.project_first or not projects_first(self):
        return self._sar_base.forward(self, x, edge_index, size)
    if isinstance(x, Tensor):
        x = (x, x)
    if self.project and hasattr(self, "lin"):
        x = (self.lin(x[0]).relu(), x[1])
    x_r = x[1]
    root = None
    if self.root_weight and x_r is x[0]:
        # One product with [W_l; W_r]: backward then makes one N x in gradient of x, not
        # two that autograd adds (the layer's peak memory).
        out_channels = self.lin_l.weight.shape[0]
        both = F.linear(x[0], torch.cat([self.lin_l.weight, self.lin_r.weight]))
        projected, root = both[:, :out_channels].contiguous(), both[:, out_channels:]
        if self.lin_r.bias is not None:  # added in the product's dtype, as F.linear does
            root = root + self.lin_r.bias.to(root.dtype)
    else:
        projected = F.linear(x[0], self.lin_l.weight)
    out = self.propagate(edge_index, x=(projected, x_r), size=size)
    if self.lin_l.bias is not None:  # (under autocast PyG's lin_l returns its bf16 dtype)
        out = out + self.lin_l.bias.to(out.dtype)
    if root is not None:
        out = out + root
    elif self.root_weight and x_r is not None:
        out = out + self.lin_r(x_r)
    if self.normalize:
        out = F.normalize(out, p=2.0, dim=-1)
    return out


__all__ = ["projects_first", "sage_forward"]
