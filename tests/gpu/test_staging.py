"""Host staging of the transports and the device each rank picks, without a GPU.

The staging decision is a pure function of two devices; the copy paths are exercised with
``meta`` tensors (a device that is not the carrier) and a ``meta`` carrier, which need no GPU.
A CPU tensor on a host carrier is never copied (the no-op path on CPU-only runs).
"""
from __future__ import annotations

import pytest
import torch

from pyg_sar.distributed.context import check_nccl_devices, select_device
from pyg_sar.distributed.transport.staging import Staging, carrier_of


def test_carriers_of_the_backends():
    assert carrier_of("mpi") == torch.device("cpu")
    assert carrier_of("gloo") == torch.device("cpu")
    assert carrier_of("local") == torch.device("cpu")
    assert carrier_of("nccl", "cuda:1") == torch.device("cuda:1")
    with pytest.raises(ValueError, match="backend 'nccl' carries CUDA tensors"):
        carrier_of("nccl", "cpu")
    with pytest.raises(ValueError, match="unknown backend 'ucc'"):
        carrier_of("ucc")


def test_staging_decision():
    host = Staging("cpu")
    assert not host.needed("cpu")
    assert host.needed("cuda:0") and host.needed(torch.device("cuda", 1)) and host.needed("meta")
    gpu = Staging("cuda:1")
    assert gpu.needed("cpu") and gpu.needed("cuda:0") and not gpu.needed("cuda:1")


def test_host_tensors_on_a_host_carrier_are_not_copied():
    s = Staging("cpu")
    t = torch.arange(6.0).view(2, 3)
    assert s.outgoing(t).data_ptr() == t.data_ptr()
    buf, finish = s.incoming(t)
    assert buf.data_ptr() == t.data_ptr() and finish is None
    assert (s.copies, s.bytes) == (0, 0)


def test_non_contiguous_host_tensors_get_a_contiguous_buffer_without_counting_as_staged():
    s = Staging("cpu")
    holder = torch.zeros(3, 4)
    view = holder[:, 1:]
    out = s.outgoing(view)
    assert out.is_contiguous() and torch.equal(out, view)
    buf, finish = s.incoming(view)
    assert buf.is_contiguous() and finish is not None
    buf.copy_(torch.arange(9.0).view(3, 3))
    finish()
    assert torch.equal(holder[:, 1:], torch.arange(9.0).view(3, 3))
    assert torch.equal(holder[:, 0], torch.zeros(3))
    assert s.copies == 0


def test_an_outgoing_tensor_off_the_carrier_is_copied_onto_it_and_counted():
    s = Staging("meta")  # any device that is not the tensor's stands in for the GPU
    t = torch.ones(4, 2, dtype=torch.bfloat16)
    out = s.outgoing(t)
    assert out.device.type == "meta" and out.shape == t.shape and out.dtype == t.dtype
    assert (s.copies, s.bytes) == (1, 4 * 2 * 2)


def test_an_incoming_tensor_off_the_carrier_is_received_on_it_and_copied_back():
    s = Staging("cpu")
    target = torch.empty(5, 3, dtype=torch.float64, device="meta")  # stands in for the GPU
    buf, finish = s.incoming(target)
    assert buf.device.type == "cpu" and buf.shape == target.shape and buf.dtype == target.dtype
    assert finish is not None
    finish()  # copies the host buffer into the tensor
    assert (s.copies, s.bytes) == (1, 5 * 3 * 8)


def test_the_transports_stage_through_their_carrier():
    from pyg_sar.distributed.transport import MPICommunicator

    class FakeComm:  # only what MPICommunicator's constructor reads
        def Get_rank(self):
            return 0

        def Get_size(self):
            return 1

    comm = MPICommunicator(FakeComm())
    assert comm.staging.carrier == torch.device("cpu")
    t = torch.arange(3.0)
    assert comm._host(t).data_ptr() == t.data_ptr()


def test_device_selection_shares_gpus_by_local_rank():
    assert select_device(None, "gloo", 3) == torch.device("cpu")
    assert select_device(None, "mpi", 0) == torch.device("cpu")
    assert select_device("cpu", "gloo", 2) == torch.device("cpu")
    # more ranks than GPUs: they share them, round robin
    assert [select_device("cuda", "gloo", r, device_count=1) for r in range(3)] == \
        [torch.device("cuda:0")] * 3
    assert [select_device("cuda", "mpi", r, device_count=2) for r in range(4)] == \
        [torch.device(f"cuda:{i}") for i in (0, 1, 0, 1)]
    assert select_device(None, "nccl", 1, device_count=2) == torch.device("cuda:1")
    assert select_device("cuda:1", "gloo", 0, device_count=2) == torch.device("cuda:1")
    with pytest.raises(ValueError, match=r"device 'cuda:2' does not exist \(2 CUDA"):
        select_device("cuda:2", "gloo", 0, device_count=2)
    with pytest.raises(ValueError, match="backend 'nccl' computes on CUDA devices"):
        select_device("cpu", "nccl", 0, device_count=2)
    with pytest.raises(RuntimeError, match="none is visible"):
        select_device("cuda", "gloo", 0, device_count=0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without "
                                                      "CUDA")
def test_cuda_asked_for_without_cuda_is_an_error_naming_it():
    with pytest.raises(RuntimeError, match="device 'cuda' was asked for, but CUDA is not"):
        select_device("cuda", "gloo", 0)


def test_nccl_needs_one_gpu_per_rank():
    check_nccl_devices(0, 2, device_count=2)
    check_nccl_devices(1, None, device_count=2)
    with pytest.raises(RuntimeError, match=r"one GPU per rank.*2 rank\(s\).*1 GPU\(s\).*"
                                           r"backend='gloo'"):
        check_nccl_devices(0, 2, device_count=1)
    with pytest.raises(RuntimeError, match=r"local rank 1"):
        check_nccl_devices(1, None, device_count=1)
