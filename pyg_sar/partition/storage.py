"""Safe tensor files for the partition format: ``.npy`` with SHA-256, no pickle, atomic folders.

Tensors are written with :func:`numpy.save` (``allow_pickle=False``) through a writer that hashes
the bytes as they go, and read back with :func:`numpy.load` (``allow_pickle=False``) after the
file's hash has been checked against the one recorded in ``meta.json``. Torch dtypes numpy cannot
represent (``bfloat16``, ``float16``, float8) are stored as a same-size integer view; the real
dtype is recorded in the metadata and restored on load.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch
from torch import Tensor

_CHUNK = 1 << 20
_NPY_MAGIC = b"\x93NUMPY"

# Stored as an integer view of the same size; everything else goes through ``Tensor.numpy()``.
_VIEW_DTYPES = {torch.bfloat16, torch.float16}
for _name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
    if hasattr(torch, _name):
        _VIEW_DTYPES.add(getattr(torch, _name))
_INT_OF_SIZE = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


class ChecksumError(RuntimeError):
    """A partition file does not match the SHA-256 recorded in ``meta.json``."""


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``"float32"``."""
    return str(dtype).removeprefix("torch.")


def parse_dtype(name: object) -> torch.dtype:
    """Inverse of :func:`dtype_name`; raises ``ValueError`` on anything that is not a dtype."""
    dtype = getattr(torch, name, None) if isinstance(name, str) and name.isidentifier() else None
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown tensor dtype {name!r} in partition metadata")
    return dtype


def to_storage(tensor: Tensor) -> np.ndarray:
    """A C-contiguous numpy array holding ``tensor``'s bytes (integer view where needed)."""
    tensor = tensor.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    tensor = tensor.contiguous()
    if tensor.dtype in _VIEW_DTYPES:
        tensor = tensor.view(_INT_OF_SIZE[tensor.element_size()])
    try:
        return tensor.numpy()
    except TypeError as err:
        raise ValueError(f"cannot store a tensor of dtype {tensor.dtype} "
                         f"in the partition format") from err


def storage_dtype_name(dtype: torch.dtype) -> str:
    """The numpy dtype name a tensor of ``dtype`` is stored as."""
    return str(to_storage(torch.empty(0, dtype=dtype)).dtype)


def from_storage(array: np.ndarray, dtype: torch.dtype) -> Tensor:
    """Inverse of :func:`to_storage`."""
    tensor = torch.from_numpy(array)
    if tensor.dtype != dtype:
        tensor = tensor.view(dtype)
    return tensor


class _HashingWriter:
    """File-like object that forwards writes to ``fp`` and hashes them on the way."""

    def __init__(self, fp: BinaryIO) -> None:
        self._fp = fp
        self.sha256 = hashlib.sha256()

    def write(self, data) -> int:
        self.sha256.update(data)
        return self._fp.write(data)


def save_npy(path: Path, array: np.ndarray) -> str:
    """Write ``array`` to ``path`` as ``.npy`` (no pickle, fsynced); return its SHA-256 hex."""
    with open(path, "xb") as fp:
        writer = _HashingWriter(fp)
        np.save(writer, np.ascontiguousarray(array), allow_pickle=False)
        fp.flush()
        os.fsync(fp.fileno())
    return writer.sha256.hexdigest()


def load_npy(path: Path, expected_sha256: str) -> np.ndarray:
    """Read an ``.npy`` file after checking its SHA-256; never unpickles.

    Raises:
        ChecksumError: the file's hash differs from ``expected_sha256``.
        ValueError: the file is not a plain ``.npy`` array (e.g. a pickled object array).
    """
    with open(path, "rb") as fp:
        digest = hashlib.sha256()
        while chunk := fp.read(_CHUNK):
            digest.update(chunk)
        if digest.hexdigest() != expected_sha256:
            raise ChecksumError(f"checksum mismatch for partition file '{path}': expected sha256 "
                                f"{expected_sha256}, got {digest.hexdigest()} (file corrupted "
                                f"or modified after partitioning)")
        fp.seek(0)
        if fp.read(len(_NPY_MAGIC)) != _NPY_MAGIC:  # np.load would take it for a pickle or npz
            raise ValueError(f"partition file '{path}' is not a valid .npy array (bad magic)")
        fp.seek(0)
        try:
            array = np.load(fp, allow_pickle=False)
        except ValueError as err:
            raise ValueError(f"refusing to load partition file '{path}': {err}") from err
        except Exception as err:  # malformed header, truncated data, ...
            raise ValueError(f"partition file '{path}' is not a valid .npy array: {err}") from err
    if not isinstance(array, np.ndarray) or array.dtype.hasobject:
        raise ValueError(f"refusing to load partition file '{path}': not a plain array")
    return array


def write_file_atomic(path: Path, data: bytes) -> str:
    """Write ``data`` to a new file ``path`` (fsynced); return its SHA-256 hex."""
    with open(path, "xb") as fp:
        fp.write(data)
        fp.flush()
        os.fsync(fp.fileno())
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def check_out_dir(out_dir: Path, overwrite: bool) -> None:
    """Refuse a target that is a file, or a non-empty folder unless ``overwrite``."""
    if out_dir.exists() or out_dir.is_symlink():
        if not out_dir.is_dir():
            raise ValueError(f"partition output '{out_dir}' exists and is not a directory")
        if any(out_dir.iterdir()) and not overwrite:
            raise ValueError(f"partition output directory '{out_dir}' is not empty "
                             f"(pass overwrite=True to replace it)")


def make_temp_dir(out_dir: Path) -> Path:
    """A fresh hidden sibling of ``out_dir`` to write into before the final rename."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{uuid.uuid4().hex[:12]}"
    tmp.mkdir()
    return tmp


@contextlib.contextmanager
def staged_dir(out_dir: Path, overwrite: bool) -> Iterator[Path]:
    """Write a folder atomically: yields a fresh temporary sibling of ``out_dir``
    (:func:`make_temp_dir`), which replaces ``out_dir`` when the block ends normally
    (:func:`commit_dir`) and is removed when it raises."""
    tmp = make_temp_dir(out_dir)
    try:
        yield tmp
        commit_dir(tmp, out_dir, overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def commit_dir(tmp: Path, out_dir: Path, overwrite: bool) -> None:
    """Move the finished ``tmp`` folder to ``out_dir``.

    An empty (or absent) ``out_dir`` is replaced by one ``rename``. A non-empty one (only with
    ``overwrite``) is first renamed aside, then ``tmp`` is renamed into place, then the old
    folder is deleted: at every instant ``out_dir`` is either the complete old or the complete
    new partition, or briefly absent.
    """
    _fsync_dir(tmp)
    check_out_dir(out_dir, overwrite)  # the folder may have changed while we were writing
    if out_dir.is_dir() and any(out_dir.iterdir()):
        old = out_dir.parent / f".{out_dir.name}.old-{uuid.uuid4().hex[:12]}"
        os.replace(out_dir, old)
        try:
            os.replace(tmp, out_dir)
        except BaseException:
            os.replace(old, out_dir)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out_dir)  # rename(2) replaces an empty directory atomically
    _fsync_dir(out_dir.parent)
