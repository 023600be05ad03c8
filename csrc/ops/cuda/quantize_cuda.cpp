// CUDA kernels of the quantisation ops (registered through register_quantize_kernels, which
// checks the arguments once): allocation with ATen, the arithmetic in the torch-free launchers
// of quantize_kernel.cu. Compiled only in a CUDA build.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../quantize.h"
#include "quantize_kernel.cuh"

namespace pyg_sar {
namespace ops {

namespace {

at::Tensor encode_cuda(const at::Tensor& rows, int64_t bits, int64_t seed) {
  const c10::cuda::CUDAGuard guard(rows.device());
  const int64_t R = rows.size(0), n = rows.size(1);
  const int64_t width = quantize_row_bytes(n, bits, rows.scalar_type());
  at::Tensor payload = at::empty({R, width}, rows.options().dtype(at::kByte));
  AT_DISPATCH_FLOATING_TYPES(rows.scalar_type(), "quantize_encode", [&] {
    C10_CUDA_CHECK(cuda::launch_quantize_encode<scalar_t>(
        rows.const_data_ptr<scalar_t>(), R, n, int(bits), seed,
        payload.mutable_data_ptr<uint8_t>(), width, c10::cuda::getCurrentCUDAStream()));
  });
  return payload;
}

at::Tensor decode_cuda(const at::Tensor& payload, int64_t bits, int64_t count,
                       at::ScalarType dtype) {
  const c10::cuda::CUDAGuard guard(payload.device());
  const int64_t R = payload.size(0);
  at::Tensor rows = at::empty({R, count}, payload.options().dtype(dtype));
  AT_DISPATCH_FLOATING_TYPES(dtype, "quantize_decode", [&] {
    C10_CUDA_CHECK(cuda::launch_quantize_decode<scalar_t>(
        payload.const_data_ptr<uint8_t>(), payload.stride(0), R, count, int(bits),
        rows.mutable_data_ptr<scalar_t>(), c10::cuda::getCurrentCUDAStream()));
  });
  return rows;
}

struct CudaKernels {
  static constexpr auto encode = &encode_cuda;
  static constexpr auto decode = &decode_cuda;
};

}  // namespace

TORCH_LIBRARY_IMPL(pyg_sar, CUDA, m) { register_quantize_kernels<CudaKernels>(m); }

}  // namespace ops
}  // namespace pyg_sar
