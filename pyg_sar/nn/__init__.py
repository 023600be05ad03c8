"""PyG integration: model conversion, distributed norm, global losses."""
from pyg_sar.nn import functional
from pyg_sar.nn.convert import convert
from pyg_sar.nn.layers import UnsupportedLayerError
from pyg_sar.nn.norm import DistributedBatchNorm

__all__ = ["convert", "functional", "DistributedBatchNorm", "UnsupportedLayerError"]
