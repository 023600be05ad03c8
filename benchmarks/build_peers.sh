#!/usr/bin/env bash
# Build the optional benchmark peer torch-sparse 0.6.18 (PyG NeighborLoader's CPU sampler; pyg-lib
# has no PyPI wheel) from its PyPI source distribution against the repo's .venv torch, and install
# it into benchmarks/.cache/peers -- never into .venv: the package and its tests run without it.
# benchmarks/sampling.py puts benchmarks/.cache/peers on sys.path when the folder exists.
#
#   bash benchmarks/build_peers.sh          # idempotent: every finished step is reused
#
# Caches (all under the git-ignored benchmarks/.cache):
#   sdist/   torch_sparse-0.6.18.tar.gz (pip download, --no-binary :all:)
#   build/   the unpacked source tree; its build/ folder keeps compiled objects, so an interrupted
#            build resumes with the extensions that are not built yet
#   wheels/  the finished wheel, reused by later runs (and copied to other checkouts)
#   peers/   the installed package (pip install --target, --no-deps)
# A CPU-only build of 12 C++ extensions; on 2 shared cores it takes an hour or more, so it runs
# under `nice -n 10` with MAX_JOBS=2 and logs to benchmarks/.cache/build/torch_sparse.log.
# Patches: none were needed for torch 2.13.0 (CPU, gcc 12, -std=c++20 from torch's flags).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
CACHE="$HERE/.cache"
VERSION=0.6.18
SRC="$CACHE/build/torch_sparse-$VERSION"
LOG="$CACHE/build/torch_sparse.log"
mkdir -p "$CACHE/sdist" "$CACHE/build" "$CACHE/wheels" "$CACHE/peers"

if "$PY" - "$CACHE/peers" <<'EOF'
import sys
sys.path.append(sys.argv[1])
import torch_sparse  # noqa: F401  (fails if absent or built against another torch)
EOF
then
    echo "torch-sparse already importable from $CACHE/peers"
    exit 0
fi

wheel="$(ls "$CACHE"/wheels/torch_sparse-"$VERSION"-*.whl 2>/dev/null | head -n 1 || true)"
if [[ -z "$wheel" ]]; then
    sdist="$CACHE/sdist/torch_sparse-$VERSION.tar.gz"
    if [[ ! -f "$sdist" ]]; then
        # setup.py imports torch, so even reading its metadata needs the .venv (no isolation)
        "$PY" -m pip download "torch-sparse==$VERSION" --no-binary :all: --no-deps --no-build-isolation \
            -d "$CACHE/sdist"
    fi
    if [[ ! -f "$SRC/setup.py" ]]; then
        tar -xzf "$sdist" -C "$CACHE/build"
    fi
    echo "building torch-sparse $VERSION (log: $LOG)"
    # --no-build-isolation: compile against the .venv's torch, not a fresh one from PyPI;
    # a local directory is built in place, so $SRC/build keeps finished extensions.
    FORCE_ONLY_CPU=1 MAX_JOBS="${MAX_JOBS:-2}" nice -n 10 "$PY" -m pip wheel \
        --no-build-isolation --no-deps -v -w "$CACHE/wheels" "$SRC" >>"$LOG" 2>&1 || {
        echo "torch-sparse build failed; see $LOG" >&2
        tail -n 40 "$LOG" >&2
        exit 1
    }
    wheel="$(ls "$CACHE"/wheels/torch_sparse-"$VERSION"-*.whl | head -n 1)"
fi
"$PY" -m pip install --target "$CACHE/peers" --no-deps --upgrade "$wheel"
# torch-sparse's Python layer imports torch-scatter at import time; building torch-scatter too
# costs another hour of compilation here. NeighborLoader only calls the compiled
# torch.ops.torch_sparse.neighbor_sample, so a small pure-torch torch_scatter with the five
# functions torch_sparse imports (exact, slower) is installed instead, unless a real one exists.
if [[ ! -d "$CACHE/peers/torch_scatter" || -f "$CACHE/peers/torch_scatter/SHIM" ]]; then
    mkdir -p "$CACHE/peers/torch_scatter"
    touch "$CACHE/peers/torch_scatter/SHIM"
    cat >"$CACHE/peers/torch_scatter/__init__.py" <<'PYEOF'
"""Pure-torch stand-in for torch-scatter (benchmarks/build_peers.sh): only the functions that
torch_sparse 0.6.18 imports, in plain torch ops (TorchScript-compatible, as torch_sparse scripts
its callers); exact, not fast."""
from typing import Optional

import torch
from torch import Tensor

__version__ = "0.0.0+benchmark-shim"


def scatter(src: Tensor, index: Tensor, dim: int = -1, out: Optional[Tensor] = None,
            dim_size: Optional[int] = None, reduce: str = "sum") -> Tensor:
    if out is not None or index.dim() != 1:  # torch_sparse passes a 1-D index, no out=
        raise NotImplementedError("torch_scatter shim: 1-D index, no out=")
    if dim < 0:
        dim = src.dim() + dim
    size = list(src.size())
    if dim_size is not None:
        size[dim] = dim_size
    else:
        size[dim] = int(index.max()) + 1 if index.numel() > 0 else 0
    shape = [1] * src.dim()
    shape[dim] = -1
    idx = index.reshape(shape).expand_as(src)
    res = torch.zeros(size, dtype=src.dtype, device=src.device)
    if reduce == "sum" or reduce == "add":
        return res.scatter_add_(dim, idx, src)
    if reduce == "mean":
        return res.scatter_reduce_(dim, idx, src, "mean", include_self=False)
    if reduce == "max":
        return res.scatter_reduce_(dim, idx, src, "amax", include_self=False)
    if reduce == "min":
        return res.scatter_reduce_(dim, idx, src, "amin", include_self=False)
    if reduce == "mul":
        return res.scatter_reduce_(dim, idx, src, "prod", include_self=False)
    raise ValueError("torch_scatter shim: unknown reduce " + reduce)


def scatter_add(src: Tensor, index: Tensor, dim: int = -1, out: Optional[Tensor] = None,
                dim_size: Optional[int] = None) -> Tensor:
    return scatter(src, index, dim, out, dim_size, "sum")


def _csr_index(indptr: Tensor) -> Tensor:
    counts = indptr[1:] - indptr[:-1]
    return torch.repeat_interleave(torch.arange(counts.numel(), device=indptr.device), counts)


def segment_csr(src: Tensor, indptr: Tensor, out: Optional[Tensor] = None,
                reduce: str = "sum") -> Tensor:
    if out is not None or indptr.dim() != 1:
        raise NotImplementedError("torch_scatter shim: 1-D indptr, no out=")
    end = int(indptr[-1])
    return scatter(src[:end], _csr_index(indptr), dim=0, dim_size=indptr.numel() - 1,
                    reduce=reduce)


def gather_csr(src: Tensor, indptr: Tensor, out: Optional[Tensor] = None) -> Tensor:
    if out is not None or indptr.dim() != 1:
        raise NotImplementedError("torch_scatter shim: 1-D indptr, no out=")
    return src.index_select(0, _csr_index(indptr))
PYEOF
fi
"$PY" - "$CACHE/peers" <<'EOF'
import sys
sys.path.append(sys.argv[1])
import torch_geometric.typing as tgt
assert tgt.WITH_TORCH_SPARSE, "torch_geometric does not see torch_sparse"
print("torch-sparse installed; torch_geometric.typing.WITH_TORCH_SPARSE =", tgt.WITH_TORCH_SPARSE)
EOF
