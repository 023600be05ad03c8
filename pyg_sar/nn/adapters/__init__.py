"""Per-family adapters: what each family of PyG layers needs over a DistGraph (degree
normalisations, aggregations, attention softmax, heterogeneous wrappers, label propagation,
linear and global attention), used by the registry of :mod:`pyg_sar.nn.conversion`."""
