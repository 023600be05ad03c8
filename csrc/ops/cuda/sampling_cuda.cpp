// CUDA kernels of the per-row bulk-sampling ops (select, uniform and weighted picks, column
// extraction), registered through register_sampling_kernels (which checks the arguments once):
// allocation and row pointers with ATen (reading an output size back is the one host copy),
// arithmetic in the torch-free launchers of sampling_kernel.cu. bulk_ladies_weights and bulk_relabel have no
// CUDA kernel: on CUDA tensors pyg_sar.ops.sampling runs their pure-torch reference (torch ops
// on the GPU). Compiled only in a CUDA build.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../sampling.h"
#include "sampling_kernel.cuh"

namespace pyg_sar {
namespace ops {

namespace {

at::Tensor exclusive_ptr(const at::Tensor& counts) {
  return at::cat({at::zeros({1}, counts.options()), at::cumsum(counts, 0)});
}

std::tuple<at::Tensor, at::Tensor> select_rows_cuda(const at::Tensor& rowptr_in,
                                                    const at::Tensor& rows_in) {
  const c10::cuda::CUDAGuard guard(rows_in.device());
  const at::Tensor rowptr = rowptr_in.contiguous(), rows = rows_in.contiguous();
  const at::Tensor out_ptr = exclusive_ptr(rowptr.index_select(0, rows + 1) -
                                           rowptr.index_select(0, rows));
  at::Tensor pos = at::empty({out_ptr[-1].item<int64_t>()}, rows.options());
  C10_CUDA_CHECK(cuda::launch_bulk_select_rows(
      rowptr.const_data_ptr<int64_t>(), rows.const_data_ptr<int64_t>(),
      out_ptr.const_data_ptr<int64_t>(), pos.mutable_data_ptr<int64_t>(), rows.numel(),
      c10::cuda::getCurrentCUDAStream()));
  return {out_ptr, pos};
}

std::tuple<at::Tensor, at::Tensor> sample_uniform_cuda(const at::Tensor& rowptr_in,
                                                       const at::Tensor& rows_in,
                                                       const at::Tensor& keys_in,
                                                       int64_t fanout) {
  const c10::cuda::CUDAGuard guard(rows_in.device());
  const at::Tensor rowptr = rowptr_in.contiguous(), rows = rows_in.contiguous();
  const at::Tensor keys = keys_in.contiguous();
  at::Tensor deg = rowptr.index_select(0, rows + 1) - rowptr.index_select(0, rows);
  if (fanout >= 0) deg = at::clamp_max(deg, fanout);
  const at::Tensor out_ptr = exclusive_ptr(deg);
  at::Tensor pos = at::empty({out_ptr[-1].item<int64_t>()}, rows.options());
  C10_CUDA_CHECK(cuda::launch_bulk_sample_uniform(
      rowptr.const_data_ptr<int64_t>(), rows.const_data_ptr<int64_t>(),
      keys.const_data_ptr<int64_t>(), out_ptr.const_data_ptr<int64_t>(),
      pos.mutable_data_ptr<int64_t>(), rows.numel(), c10::cuda::getCurrentCUDAStream()));
  return {out_ptr, pos};
}

std::tuple<at::Tensor, at::Tensor> sample_weighted_cuda(const at::Tensor& ptr_in,
                                                        const at::Tensor& weight_in,
                                                        const at::Tensor& keys_in,
                                                        int64_t fanout) {
  const int64_t R = ptr_in.numel() - 1;
  const c10::cuda::CUDAGuard guard(weight_in.device());
  const at::Tensor ptr = ptr_in.contiguous(), keys = keys_in.contiguous();
  at::Tensor w = weight_in.contiguous().clone();
  at::Tensor prefix = at::empty_like(w);
  at::Tensor hit = at::empty({w.numel()}, ptr.options());
  at::Tensor counts = at::empty({R}, ptr.options());
  at::Tensor scratch = at::empty({w.numel()}, ptr.options());
  C10_CUDA_CHECK(cuda::launch_bulk_sample_weighted(
      ptr.const_data_ptr<int64_t>(), w.mutable_data_ptr<double>(),
      prefix.mutable_data_ptr<double>(), hit.mutable_data_ptr<int64_t>(),
      keys.const_data_ptr<int64_t>(), fanout, counts.mutable_data_ptr<int64_t>(),
      scratch.mutable_data_ptr<int64_t>(), R, c10::cuda::getCurrentCUDAStream()));
  // compact: row i's picks sit at scratch[ptr[i] .. ptr[i] + counts[i])
  const at::Tensor out_ptr = exclusive_ptr(counts);
  const at::Tensor row = at::repeat_interleave(counts);
  const at::Tensor within = at::arange(out_ptr[-1].item<int64_t>(), ptr.options()) -
                            out_ptr.index_select(0, row);
  return {out_ptr, scratch.index_select(0, ptr.index_select(0, row) + within)};
}

std::tuple<at::Tensor, at::Tensor> extract_columns_cuda(
    const at::Tensor& rowptr_in, const at::Tensor& col_in, const at::Tensor& rows_in,
    const at::Tensor& row_batch_in, const at::Tensor& keep_ptr_in, const at::Tensor& keep_in,
    int64_t num_cols) {
  const c10::cuda::CUDAGuard guard(rows_in.device());
  const at::Tensor rowptr = rowptr_in.contiguous(), col = col_in.contiguous();
  const at::Tensor rows = rows_in.contiguous(), row_batch = row_batch_in.contiguous();
  const at::Tensor keep_ptr = keep_ptr_in.contiguous(), keep = keep_in.contiguous();
  const auto stream = c10::cuda::getCurrentCUDAStream();
  at::Tensor counts = at::empty({rows.numel()}, rows.options());
  C10_CUDA_CHECK(cuda::launch_bulk_extract_columns(
      rowptr.const_data_ptr<int64_t>(), col.const_data_ptr<int64_t>(),
      rows.const_data_ptr<int64_t>(), row_batch.const_data_ptr<int64_t>(),
      keep_ptr.const_data_ptr<int64_t>(), keep.const_data_ptr<int64_t>(), nullptr,
      counts.mutable_data_ptr<int64_t>(), nullptr, rows.numel(), stream));
  const at::Tensor out_ptr = exclusive_ptr(counts);
  at::Tensor pos = at::empty({out_ptr[-1].item<int64_t>()}, rows.options());
  // The kernel counts when pos is null; an empty pos may have a null data pointer, so the
  // writing pass runs only when there is something to write (it would otherwise count into
  // the null counts pointer).
  if (pos.numel() == 0) return {out_ptr, pos};
  C10_CUDA_CHECK(cuda::launch_bulk_extract_columns(
      rowptr.const_data_ptr<int64_t>(), col.const_data_ptr<int64_t>(),
      rows.const_data_ptr<int64_t>(), row_batch.const_data_ptr<int64_t>(),
      keep_ptr.const_data_ptr<int64_t>(), keep.const_data_ptr<int64_t>(),
      out_ptr.const_data_ptr<int64_t>(), nullptr, pos.mutable_data_ptr<int64_t>(), rows.numel(),
      stream));
  return {out_ptr, pos};
}

// The kernels; SamplingOps has checked their arguments. No ladies_weights or relabel here.
struct CudaKernels {
  static constexpr auto select_rows = &select_rows_cuda;
  static constexpr auto sample_uniform = &sample_uniform_cuda;
  static constexpr auto sample_weighted = &sample_weighted_cuda;
  static constexpr auto extract_columns = &extract_columns_cuda;
};

}  // namespace

TORCH_LIBRARY_IMPL(pyg_sar, CUDA, m) { register_sampling_kernels<CudaKernels>(m); }

}  // namespace ops
}  // namespace pyg_sar
