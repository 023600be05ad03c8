"""How a PyG model is converted: the registry of verified classes and their adapters, the
check of PyG's code by fingerprint, the converted layer class, and the seam where a converted
layer's ``propagate`` hands its messages to the engine (edge data, edge values, wires)."""
