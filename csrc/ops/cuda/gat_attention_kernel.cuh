// Launchers of the fused attention CUDA kernels (GAT and GATv2). Torch-free (raw device pointers
// and sizes, the shared gat_math::Inputs), so the kernel file compiles with plain `nvcc -c` and
// only the binding file needs ATen.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "../gat_attention_math.h"

namespace pyg_sar {
namespace ops {
namespace cuda {

// T: the inputs' type (float, double, __nv_bfloat16, __half); the state, grad_out, out and every
// gradient are in its accumulator type acc_t<T> (host_device.h: float for the half types).
template <typename T>
using AttentionInputs = gat_math::Inputs<T, acc_t<T>>;

// Folds the block into m, l [N, H] and acc [N, H, C] in place.
template <typename T>
cudaError_t launch_attention_forward(const AttentionInputs<T>& in, acc_t<T>* m, acc_t<T>* l,
                                     acc_t<T>* acc, int64_t num_dst, cudaStream_t stream);

// Backward pass 1 over destinations: big_d [N, H], grad of the destination input (a_dst [N, H]
// or x_dst [N, H, C]), of the edge input (null when absent) and, for GATv2, each row's share of
// grad_att [N, H, C].
template <typename T>
cudaError_t launch_attention_backward_dst(const AttentionInputs<T>& in, const acc_t<T>* grad_out,
                                          const acc_t<T>* out, const acc_t<T>* m,
                                          const acc_t<T>* l, acc_t<T>* big_d,
                                          acc_t<T>* grad_dst, acc_t<T>* grad_edge,
                                          acc_t<T>* grad_att_rows, int64_t num_dst,
                                          cudaStream_t stream);

// Backward pass 2 over sources of the transposed CSR (edges perm[colptr[s]..colptr[s+1]),
// row[k] the destination of edge perm[k]): grad_x_src [S, H, C] and, for GAT, grad_a_src [S, H].
template <typename T>
cudaError_t launch_attention_backward_src(const AttentionInputs<T>& in, const int64_t* colptr,
                                          const int64_t* perm, const int64_t* row,
                                          const acc_t<T>* grad_out, const acc_t<T>* m,
                                          const acc_t<T>* l, const acc_t<T>* big_d,
                                          acc_t<T>* grad_x, acc_t<T>* grad_a_src,
                                          int64_t num_src, cudaStream_t stream);

#define PYG_SAR_ATTENTION_LAUNCHERS(PREFIX, T)                                                 \
  PREFIX template cudaError_t launch_attention_forward<T>(                                     \
      const AttentionInputs<T>&, acc_t<T>*, acc_t<T>*, acc_t<T>*, int64_t, cudaStream_t);      \
  PREFIX template cudaError_t launch_attention_backward_dst<T>(                                \
      const AttentionInputs<T>&, const acc_t<T>*, const acc_t<T>*, const acc_t<T>*,            \
      const acc_t<T>*, acc_t<T>*, acc_t<T>*, acc_t<T>*, acc_t<T>*, int64_t, cudaStream_t);     \
  PREFIX template cudaError_t launch_attention_backward_src<T>(                                \
      const AttentionInputs<T>&, const int64_t*, const int64_t*, const int64_t*,               \
      const acc_t<T>*, const acc_t<T>*, const acc_t<T>*, const acc_t<T>*, acc_t<T>*,           \
      acc_t<T>*, int64_t, cudaStream_t);
PYG_SAR_ATTENTION_LAUNCHERS(extern, float)
PYG_SAR_ATTENTION_LAUNCHERS(extern, double)
PYG_SAR_ATTENTION_LAUNCHERS(extern, __nv_bfloat16)
PYG_SAR_ATTENTION_LAUNCHERS(extern, __half)

}  // namespace cuda
}  // namespace ops
}  // namespace pyg_sar
