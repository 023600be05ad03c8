// Launchers of the bulk-sampling CUDA kernels. Torch-free (raw device pointers and sizes), so
// the kernel file compiles with plain `nvcc -c`; the binding (sampling_cuda.cpp) allocates the
// outputs and computes the row pointers with ATen. One thread per row of Q @ A; the per-row
// arithmetic is sampling_math.h, shared with the CPU kernels (same picks).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace pyg_sar {
namespace ops {
namespace cuda {

// pos[out_ptr[i] + j] = rowptr[rows[i]] + j for the edges of every selected row.
cudaError_t launch_bulk_select_rows(const int64_t* rowptr, const int64_t* rows,
                                    const int64_t* out_ptr, int64_t* pos, int64_t num_rows,
                                    cudaStream_t stream);

// Uniform picks (out_ptr from min(deg, fanout)); rows with deg <= fanout keep every edge.
cudaError_t launch_bulk_sample_uniform(const int64_t* rowptr, const int64_t* rows,
                                       const int64_t* row_keys, const int64_t* out_ptr,
                                       int64_t* pos, int64_t num_rows, cudaStream_t stream);

// Weighted picks, one thread per row (k rows): w and prefix are per-entry scratch buffers
// (w holds a copy of the weights, overwritten); hit is int64 scratch of the same length.
// counts[i] receives the number of picks, written to pos[ptr[i] ..] (at most min(fanout, n)).
cudaError_t launch_bulk_sample_weighted(const int64_t* ptr, double* w, double* prefix,
                                        int64_t* hit, const int64_t* row_keys, int64_t fanout,
                                        int64_t* counts, int64_t* pos, int64_t num_rows,
                                        cudaStream_t stream);

// Column extraction: with pos == nullptr, counts[i] = kept edges of row i; else writes them
// at pos[out_ptr[i] ..].
cudaError_t launch_bulk_extract_columns(const int64_t* rowptr, const int64_t* col,
                                        const int64_t* rows, const int64_t* row_batch,
                                        const int64_t* keep_ptr, const int64_t* keep_cols,
                                        const int64_t* out_ptr, int64_t* counts, int64_t* pos,
                                        int64_t num_rows, cudaStream_t stream);

}  // namespace cuda
}  // namespace ops
}  // namespace pyg_sar
