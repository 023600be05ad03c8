// CUDA kernels of gather_aggregate, registered through the shared
// register_gather_aggregate_kernels (which checks the arguments once): allocation and the
// transposed CSR with ATen, arithmetic in the torch-free launchers of gather_aggregate_kernel.cu.
// Compiled only in a CUDA build.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../gather_aggregate.h"
#include "dtypes.h"
#include "gather_aggregate_kernel.cuh"

namespace pyg_sar {
namespace ops {

namespace {

// Forward (GatherAggregateOps::forward has checked the arguments and made them contiguous).
std::tuple<at::Tensor, at::Tensor> gather_aggregate_cuda(const at::Tensor& rowptr_c,
                                                         const at::Tensor& col_c,
                                                         const at::Tensor& x_c,
                                                         const at::Tensor& w_c, Reduce r) {
  const c10::cuda::CUDAGuard guard(x_c.device());
  const int64_t N = rowptr_c.numel() - 1, F = x_c.size(1);
  const bool has_arg = r == Reduce::kMax || r == Reduce::kMin;

  at::Tensor out = at::empty({N, F}, x_c.options().dtype(accumulate_type(x_c.scalar_type())));
  at::Tensor arg = has_arg ? at::empty({N, F}, rowptr_c.options())
                           : at::empty({0}, rowptr_c.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x_c.scalar_type(),
                                  "gather_aggregate_cuda", [&] {
    using A = acc_t<scalar_t>;
    C10_CUDA_CHECK(cuda::launch_gather_aggregate_forward<cuda::cuda_t<scalar_t>>(
        r, rowptr_c.const_data_ptr<int64_t>(), col_c.const_data_ptr<int64_t>(),
        cuda::cptr<scalar_t>(x_c), cuda::cptr<A>(w_c), out.mutable_data_ptr<A>(),
        has_arg ? arg.mutable_data_ptr<int64_t>() : nullptr, N, F,
        c10::cuda::getCurrentCUDAStream()));
  });
  return {out, arg};
}

// Backward (arguments checked and contiguous; x_c defined only when weight_requires_grad, arg_c
// only for max/min; g_c and w_c in the accumulator dtype, as the outputs).
std::tuple<at::Tensor, at::Tensor> gather_aggregate_backward_cuda(
    const at::Tensor& g_c, const at::Tensor& rowptr_c, const at::Tensor& col_c,
    const at::Tensor& x_c, const at::Tensor& w_c, const at::Tensor& arg_c, Reduce r,
    int64_t num_src, bool weight_requires_grad) {
  const c10::cuda::CUDAGuard guard(g_c.device());
  const bool has_arg = r == Reduce::kMax || r == Reduce::kMin;
  const int64_t N = rowptr_c.numel() - 1, F = g_c.size(1), E = col_c.numel();

  // Transposed CSR without a host sync: a stable sort keeps ascending edge positions per source.
  auto [sorted_col, perm] = at::sort(col_c, /*stable=*/true, /*dim=*/0, /*descending=*/false);
  const at::Tensor colptr = at::searchsorted(sorted_col, at::arange(num_src + 1, col_c.options()));
  // The destination of each edge: arange(N) repeated by in-degree (the (self, repeats, dim,
  // output_size) overload; repeat_interleave(repeats_tensor, E) would repeat each degree E
  // times, an [N * E] tensor of degrees).
  const at::Tensor row = at::repeat_interleave(at::arange(N, rowptr_c.options()),
                                               rowptr_c.diff(), /*dim=*/0, /*output_size=*/E);

  at::Tensor grad_x = at::empty({num_src, F}, g_c.options());
  at::Tensor grad_w =
      weight_requires_grad ? at::empty({E}, g_c.options()) : at::empty({0}, g_c.options());
  const auto stream = c10::cuda::getCurrentCUDAStream();
  // x's dtype picks the instantiation (only grad_weight reads x); the rest runs in g_c's.
  const at::ScalarType xt = x_c.defined() ? x_c.scalar_type() : g_c.scalar_type();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, xt,
                                  "gather_aggregate_backward_cuda", [&] {
    using A = acc_t<scalar_t>;
    using T = cuda::cuda_t<scalar_t>;
    const A* w = w_c.defined() ? w_c.const_data_ptr<A>() : nullptr;
    const int64_t* ap = has_arg ? arg_c.const_data_ptr<int64_t>() : nullptr;
    C10_CUDA_CHECK(cuda::launch_gather_aggregate_grad_x<T>(
        r, rowptr_c.const_data_ptr<int64_t>(), colptr.const_data_ptr<int64_t>(),
        perm.const_data_ptr<int64_t>(), row.const_data_ptr<int64_t>(), g_c.const_data_ptr<A>(),
        w, ap, grad_x.mutable_data_ptr<A>(), num_src, F, stream));
    if (weight_requires_grad) {
      C10_CUDA_CHECK(cuda::launch_gather_aggregate_grad_weight<T>(
          r, rowptr_c.const_data_ptr<int64_t>(), col_c.const_data_ptr<int64_t>(),
          row.const_data_ptr<int64_t>(), cuda::cptr<scalar_t>(x_c), g_c.const_data_ptr<A>(), ap,
          grad_w.mutable_data_ptr<A>(), E, F, stream));
    }
  });
  return {grad_x, grad_w};
}

struct CudaKernels {
  static constexpr auto forward = &gather_aggregate_cuda;
  static constexpr auto backward = &gather_aggregate_backward_cuda;
};

}  // namespace

TORCH_LIBRARY_IMPL(pyg_sar, CUDA, m) { register_gather_aggregate_kernels<CudaKernels>(m); }

}  // namespace ops
}  // namespace pyg_sar
