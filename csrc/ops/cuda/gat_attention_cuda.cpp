// CUDA kernels of the fused attention ops, registered through the shared
// register_attention_kernels (which checks the arguments once): allocation and the transposed
// CSR with ATen, arithmetic in the torch-free launchers of gat_attention_kernel.cu. Compiled
// only in a CUDA build.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../gat_attention.h"
#include "dtypes.h"
#include "gat_attention_kernel.cuh"

namespace pyg_sar {
namespace ops {

namespace {

at::Tensor cont(const at::Tensor& t) { return t.defined() ? t.contiguous() : t; }


// Contiguous copies of the read-only inputs, kept alive while the launch uses their pointers.
struct Held {
  at::Tensor rowptr, col, x_src, a_src, a_dst, a_edge, x_dst, x_edge, att, src_ids, dst_ids;
};

Held hold(const AttentionArgs& a) {
  return {cont(a.rowptr), cont(a.col),    cont(a.x_src), cont(a.a_src),
          cont(a.a_dst),  cont(a.a_edge), cont(a.x_dst), cont(a.x_edge),
          cont(a.att),    cont(a.src_ids), cont(a.dst_ids)};
}

// The launchers' inputs for the ATen scalar type T (c10::BFloat16 read as __nv_bfloat16, ...).
template <typename T>
cuda::AttentionInputs<cuda::cuda_t<T>> inputs(const Held& h, const AttentionArgs& a) {
  return {h.rowptr.const_data_ptr<int64_t>(),
          h.col.const_data_ptr<int64_t>(),
          cuda::cptr<T>(h.x_src),
          cuda::cptr<T>(h.a_src),
          cuda::cptr<T>(h.a_dst),
          cuda::cptr<T>(h.a_edge),
          cuda::cptr<T>(h.x_dst),
          cuda::cptr<T>(h.x_edge),
          cuda::cptr<T>(h.att),
          a.dropout > 0 ? h.src_ids.const_data_ptr<int64_t>() : nullptr,
          a.dropout > 0 ? h.dst_ids.const_data_ptr<int64_t>() : nullptr,
          a.heads(),
          a.channels(),
          static_cast<acc_t<T>>(a.negative_slope),
          a.dropout,
          a.seed};
}

void run_forward(const char* op, const AttentionArgs& a) {
  const c10::cuda::CUDAGuard guard(a.x_src.device());
  const Held h = hold(a);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, a.x_src.scalar_type(),
                                  "gat_attention_cuda", [&] {
    using A = acc_t<scalar_t>;
    C10_CUDA_CHECK(cuda::launch_attention_forward<cuda::cuda_t<scalar_t>>(
        inputs<scalar_t>(h, a), a.m.mutable_data_ptr<A>(), a.l.mutable_data_ptr<A>(),
        a.acc.mutable_data_ptr<A>(), a.num_dst(), c10::cuda::getCurrentCUDAStream()));
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> run_backward(const char* op,
                                                                        const AttentionArgs& a) {
  const c10::cuda::CUDAGuard guard(a.x_src.device());
  const Held h = hold(a);
  const at::Tensor go = a.grad_out.contiguous(), out = a.acc.contiguous();
  const at::Tensor m = a.m.contiguous(), l = a.l.contiguous();
  const int64_t N = a.num_dst(), S = a.num_src(), E = a.num_edges(), H = a.heads(),
                C = a.channels();
  const bool v2 = a.kind == AttentionKind::kGatV2;
  const bool has_edge = v2 ? a.x_edge.defined() : a.a_edge.defined();
  // every gradient in the accumulator dtype (AttentionOps casts them to the inputs' dtype)
  const auto opts = a.x_src.options().dtype(accumulate_type(a.x_src.scalar_type()));
  at::Tensor g_x = at::empty({S, H, C}, opts);
  at::Tensor g_asrc = v2 ? at::empty({0}, opts) : at::empty({S, H}, opts);
  at::Tensor g_dst = v2 ? at::empty({N, H, C}, opts) : at::empty({N, H}, opts);
  at::Tensor g_edge = !has_edge ? at::empty({0}, opts)
                                : (v2 ? at::empty({E, H, C}, opts) : at::empty({E, H}, opts));
  at::Tensor g_att_rows = v2 ? at::empty({N, H, C}, opts) : at::empty({0}, opts);
  at::Tensor big_d = at::empty({N, H}, opts);
  // Transposed CSR (gat_transpose's layout): the caller's cached one, else built here (a stable
  // sort keeps ascending edge positions per source). Its row part is in perm order.
  const at::Tensor tr = a.transposed.defined() ? a.transposed.contiguous()
                                               : gat_transpose(h.rowptr, h.col, S);
  const at::Tensor colptr = tr.narrow(0, 0, S + 1), perm = tr.narrow(0, S + 1, E),
                   row = tr.narrow(0, S + 1 + E, E);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, a.x_src.scalar_type(),
                                  "gat_attention_backward_cuda", [&] {
    using A = acc_t<scalar_t>;
    using T = cuda::cuda_t<scalar_t>;
    const auto in = inputs<scalar_t>(h, a);
    C10_CUDA_CHECK(cuda::launch_attention_backward_dst<T>(
        in, go.const_data_ptr<A>(), out.const_data_ptr<A>(), m.const_data_ptr<A>(),
        l.const_data_ptr<A>(), big_d.mutable_data_ptr<A>(), g_dst.mutable_data_ptr<A>(),
        has_edge ? g_edge.mutable_data_ptr<A>() : nullptr,
        v2 ? g_att_rows.mutable_data_ptr<A>() : nullptr, N, stream));
    C10_CUDA_CHECK(cuda::launch_attention_backward_src<T>(
        in, colptr.const_data_ptr<int64_t>(), perm.const_data_ptr<int64_t>(),
        row.const_data_ptr<int64_t>(), go.const_data_ptr<A>(), m.const_data_ptr<A>(),
        l.const_data_ptr<A>(), big_d.const_data_ptr<A>(), g_x.mutable_data_ptr<A>(),
        v2 ? nullptr : g_asrc.mutable_data_ptr<A>(), S, stream));
  });
  if (v2) return {g_x, g_dst, g_edge, g_att_rows.sum(0)};
  return {g_x, g_asrc, g_dst, g_edge};
}

struct CudaKernels {
  static constexpr auto forward = &run_forward;
  static constexpr auto backward = &run_backward;
};

}  // namespace

TORCH_LIBRARY_IMPL(pyg_sar, CUDA, m) { register_attention_kernels<CudaKernels>(m); }

}  // namespace ops
}  // namespace pyg_sar
