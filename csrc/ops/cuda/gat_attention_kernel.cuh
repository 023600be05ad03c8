// Launchers of the fused attention CUDA kernels (GAT and GATv2). Torch-free (raw device pointers
// and sizes, the shared gat_math::Inputs), so the kernel file compiles with plain `nvcc -c` and
// only the binding file needs ATen.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "../gat_attention_math.h"

namespace pyg_sar {
namespace ops {
namespace cuda {

// Folds the block into m, l [N, H] and acc [N, H, C] in place.
template <typename T>
cudaError_t launch_attention_forward(const gat_math::Inputs<T>& in, T* m, T* l, T* acc,
                                     int64_t num_dst, cudaStream_t stream);

// Backward pass 1 over destinations: big_d [N, H], grad of the destination input (a_dst [N, H]
// or x_dst [N, H, C]), of the edge input (null when absent) and, for GATv2, each row's share of
// grad_att [N, H, C].
template <typename T>
cudaError_t launch_attention_backward_dst(const gat_math::Inputs<T>& in, const T* grad_out,
                                          const T* out, const T* m, const T* l, T* big_d,
                                          T* grad_dst, T* grad_edge, T* grad_att_rows,
                                          int64_t num_dst, cudaStream_t stream);

// Backward pass 2 over sources of the transposed CSR (edges perm[colptr[s]..colptr[s+1]),
// row[k] the destination of edge perm[k]): grad_x_src [S, H, C] and, for GAT, grad_a_src [S, H].
template <typename T>
cudaError_t launch_attention_backward_src(const gat_math::Inputs<T>& in, const int64_t* colptr,
                                          const int64_t* perm, const int64_t* row,
                                          const T* grad_out, const T* m, const T* l,
                                          const T* big_d, T* grad_x, T* grad_a_src,
                                          int64_t num_src, cudaStream_t stream);

}  // namespace cuda
}  // namespace ops
}  // namespace pyg_sar
