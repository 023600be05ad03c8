// Launchers of the gather_aggregate CUDA kernels. Torch-free (raw device pointers and sizes), so
// the kernel file compiles with plain `nvcc -c` and only the binding file needs ATen.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "../gather_aggregate_math.h"

namespace pyg_sar {
namespace ops {
namespace cuda {

using gather_aggregate_math::Reduce;

// T: the dtype of x (float, double, __nv_bfloat16, __half); every other floating pointer and all
// arithmetic use its accumulator type acc_t<T> (host_device.h: float for the half types).

// out [num_dst, F]; arg [num_dst, F] for max/min (null otherwise); weight [E] or null.
template <typename T>
cudaError_t launch_gather_aggregate_forward(Reduce reduce, const int64_t* rowptr,
                                            const int64_t* col, const T* x,
                                            const acc_t<T>* weight, acc_t<T>* out, int64_t* arg,
                                            int64_t num_dst, int64_t num_feat,
                                            cudaStream_t stream);

// grad_x [num_src, F] over the transposed CSR: edges perm[colptr[s]..colptr[s+1]) come from
// source s (ascending edge position), row[e] is the destination of edge e. Reads no x: T only
// names the accumulator type.
template <typename T>
cudaError_t launch_gather_aggregate_grad_x(Reduce reduce, const int64_t* rowptr,
                                           const int64_t* colptr, const int64_t* perm,
                                           const int64_t* row, const acc_t<T>* grad_out,
                                           const acc_t<T>* weight, const int64_t* arg,
                                           acc_t<T>* grad_x, int64_t num_src, int64_t num_feat,
                                           cudaStream_t stream);

// grad_weight [E]: one warp per edge, a fixed-order dot product over features.
template <typename T>
cudaError_t launch_gather_aggregate_grad_weight(Reduce reduce, const int64_t* rowptr,
                                                const int64_t* col, const int64_t* row,
                                                const T* x, const acc_t<T>* grad_out,
                                                const int64_t* arg, acc_t<T>* grad_weight,
                                                int64_t num_edges, int64_t num_feat,
                                                cudaStream_t stream);

#define PYG_SAR_GATHER_AGGREGATE_LAUNCHERS(PREFIX, T)                                          \
  PREFIX template cudaError_t launch_gather_aggregate_forward<T>(                              \
      Reduce, const int64_t*, const int64_t*, const T*, const acc_t<T>*, acc_t<T>*, int64_t*,  \
      int64_t, int64_t, cudaStream_t);                                                         \
  PREFIX template cudaError_t launch_gather_aggregate_grad_x<T>(                               \
      Reduce, const int64_t*, const int64_t*, const int64_t*, const int64_t*,                  \
      const acc_t<T>*, const acc_t<T>*, const int64_t*, acc_t<T>*, int64_t, int64_t,           \
      cudaStream_t);                                                                           \
  PREFIX template cudaError_t launch_gather_aggregate_grad_weight<T>(                          \
      Reduce, const int64_t*, const int64_t*, const int64_t*, const T*, const acc_t<T>*,       \
      const int64_t*, acc_t<T>*, int64_t, int64_t, cudaStream_t);
PYG_SAR_GATHER_AGGREGATE_LAUNCHERS(extern, float)
PYG_SAR_GATHER_AGGREGATE_LAUNCHERS(extern, double)
PYG_SAR_GATHER_AGGREGATE_LAUNCHERS(extern, __nv_bfloat16)
PYG_SAR_GATHER_AGGREGATE_LAUNCHERS(extern, __half)

}  // namespace cuda
}  // namespace ops
}  // namespace pyg_sar
