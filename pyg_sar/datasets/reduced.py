"""``svd_features``: a graph's node features replaced by their truncated SVD (a frozen input
projection, for workloads whose wide sparse features dominate the compute).

The features become the first ``dim`` left singular components ``X V_dim`` (= ``U_dim S_dim``)
of the feature matrix, computed without centring (a sparse bag of words stays sparse), then
each column standardised to mean 0 and standard deviation 1. Exact (float64 Gram matrix) up to
4,096 feature columns, randomised SVD above. The sign of every component is fixed (its
largest-magnitude entry is positive), so the result does not depend on a routine's sign
convention.
"""
from __future__ import annotations

import copy
import warnings

import torch
from torch import Tensor
from torch_geometric.data import Data

# Widest features given the exact (Gram matrix) route: 4096^2 float64 is 128 MB, eigh ~10 s.
EXACT_MAX_FEATURES = 4096
# Randomised route for wider features: extra random directions and power iterations.
_OVERSAMPLE = 16
_POWER_ITERATIONS = 6


def _check(data: Data, dim: int) -> Tensor:
    if not isinstance(data, Data):
        raise ValueError(f"svd_features: expected a homogeneous torch_geometric Data "
                         f"(got {type(data).__name__})")
    x = getattr(data, "x", None)
    if not isinstance(x, Tensor) or x.dim() != 2:
        shape = None if not isinstance(x, Tensor) else tuple(x.shape)
        raise ValueError(f"svd_features: data.x must be a 2-D tensor (got shape {shape})")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise ValueError(f"svd_features: dim must be an int (got {dim!r})")
    if not 1 <= dim < min(x.shape):
        raise ValueError(f"svd_features: dim must be in [1, {min(x.shape) - 1}] for features "
                         f"of shape {tuple(x.shape)} (got {dim})")
    return x


def svd_components(x: Tensor, dim: int, seed: int = 0) -> Tensor:
    """The ``dim`` leading components ``X V_dim`` of ``x`` (float64, ``[N, dim]``), ordered by
    singular value, each sign fixed so that its largest-magnitude entry is positive.

    Up to :data:`EXACT_MAX_FEATURES` columns, ``V`` comes from an exact eigendecomposition of
    the Gram matrix ``X^T X`` (float64; ``seed`` is unused): bag-of-words spectra are flat, and a
    randomised SVD's trailing components would then depend on its seed. Wider features use
    ``torch.svd_lowrank`` seeded by ``seed``.
    """
    a = x.detach().to(torch.float64)
    a = a if a.is_sparse else a.to_sparse()
    if x.shape[1] <= EXACT_MAX_FEATURES:
        with warnings.catch_warnings():  # torch's "sparse CSR is beta" notice, not ours
            warnings.simplefilter("ignore", UserWarning)
            gram = torch.sparse.mm(a.t(), a).to_dense()
        _, vecs = torch.linalg.eigh(gram)  # ascending eigenvalues
        v = vecs[:, -dim:].flip(1)
    else:
        q = min(dim + _OVERSAMPLE, min(x.shape))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            _, _, v = torch.svd_lowrank(a, q=q, niter=_POWER_ITERATIONS)
        v = v[:, :dim]
    comp = torch.sparse.mm(a, v)
    comp = comp[:, torch.argsort(comp.norm(dim=0), descending=True, stable=True)]
    peak = comp.abs().argmax(dim=0)
    signs = torch.sign(comp[peak, torch.arange(dim)])
    return comp * torch.where(signs == 0, torch.ones_like(signs), signs)


def svd_features(data: Data, dim: int, seed: int = 0) -> Data:
    """A copy of ``data`` whose ``x`` is the standardised truncated SVD of ``data.x``.

    Args:
        data: a homogeneous graph with 2-D ``x`` (dense or sparse); it is not modified.
        dim: number of components, ``1 <= dim < min(x.shape)``.
        seed: seed of the randomised SVD (used only above 4,096 feature columns).

    Returns:
        A shallow copy of ``data`` (edges, labels and masks shared) with ``x`` float32
        ``[N, dim]``: component ``j`` is ``X v_j`` for the ``j``-th right singular vector,
        standardised to mean 0 and (population) standard deviation 1; a constant column is
        left at 0.

    Raises:
        ValueError: ``data`` is not a ``Data`` with 2-D ``x``, or ``dim`` is out of range.
    """
    x = _check(data, dim)
    comp = svd_components(x, dim, seed)
    mean = comp.mean(dim=0)
    std = comp.std(dim=0, unbiased=False)
    std = torch.where(std > 0, std, torch.ones_like(std))
    out = copy.copy(data)  # shallow: the new x does not touch the caller's Data
    out.x = ((comp - mean) / std).to(torch.float32)
    return out
