"""The SAR engine: block-wise autograd Function, combine rules, halo mode (knows no PyG layers)."""
