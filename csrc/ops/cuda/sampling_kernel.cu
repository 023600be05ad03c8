// CUDA kernels of the bulk-sampling ops: one thread per row of Q @ A, with the per-row
// arithmetic of sampling_math.h (keyed darts), so a row's picks equal the CPU kernels'.
// No torch header.
#include "sampling_kernel.cuh"

#include "../sampling_math.h"
#include "launch.cuh"

namespace pyg_sar {
namespace ops {
namespace cuda {

namespace {

namespace sm = sampling_math;

__global__ void select_rows_kernel(const int64_t* __restrict__ rowptr,
                                   const int64_t* __restrict__ rows,
                                   const int64_t* __restrict__ out_ptr, int64_t* __restrict__ pos,
                                   int64_t num_rows) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < num_rows;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t start = rowptr[rows[i]];
    for (int64_t e = out_ptr[i]; e < out_ptr[i + 1]; ++e) pos[e] = start + (e - out_ptr[i]);
  }
}

__global__ void sample_uniform_kernel(const int64_t* __restrict__ rowptr,
                                      const int64_t* __restrict__ rows,
                                      const int64_t* __restrict__ keys,
                                      const int64_t* __restrict__ out_ptr,
                                      int64_t* __restrict__ pos, int64_t num_rows) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < num_rows;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t start = rowptr[rows[i]], deg = rowptr[rows[i] + 1] - start;
    const int64_t n = out_ptr[i + 1] - out_ptr[i];
    int64_t* o = pos + out_ptr[i];
    if (n == deg) {
      for (int64_t j = 0; j < deg; ++j) o[j] = start + j;
    } else {
      sm::uniform_row(keys[i], deg, n, o);
      for (int64_t j = 0; j < n; ++j) o[j] += start;
    }
  }
}

__global__ void sample_weighted_kernel(const int64_t* __restrict__ ptr, double* __restrict__ w,
                                       double* __restrict__ prefix, int64_t* __restrict__ hit,
                                       const int64_t* __restrict__ keys, int64_t fanout,
                                       int64_t* __restrict__ counts, int64_t* __restrict__ pos,
                                       int64_t num_rows) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < num_rows;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t a = ptr[i], n = ptr[i + 1] - a;
    double* wi = w + a;
    double* pi = prefix + a;
    int64_t* hi = hit + a;
    int64_t* o = pos + a;
    int64_t positive = 0;
    for (int64_t j = 0; j < n; ++j) positive += wi[j] > 0;
    int64_t count = 0;
    if (fanout < 0 || positive <= fanout) {
      for (int64_t j = 0; j < n; ++j) {
        if (wi[j] > 0) o[count++] = a + j;
      }
      counts[i] = count;
      continue;
    }
    for (int64_t j = 0; j < n; ++j) hi[j] = -1;
    int64_t thrown = 0;
    for (int64_t round = 0; count < fanout; ++round) {
      double total = 0.0;
      int64_t last = -1;
      for (int64_t j = 0; j < n; ++j) {
        total += wi[j];
        pi[j] = total;
        if (wi[j] > 0) last = j;
      }
      const int64_t need = fanout - count;
      const int64_t first_new = count;
      for (int64_t t = thrown; t < thrown + need; ++t) {
        int64_t j = sm::upper_bound(pi, n, sm::dart(keys[i], t) * total);
        j = j < last ? j : last;
        if (hi[j] != round) {
          hi[j] = round;
          o[count++] = j;
        }
      }
      thrown += need;
      for (int64_t c = first_new; c < count; ++c) wi[o[c]] = 0.0;
    }
    sm::sort_small(o, count);
    for (int64_t c = 0; c < count; ++c) o[c] += a;
    counts[i] = count;
  }
}

__global__ void extract_columns_kernel(const int64_t* __restrict__ rowptr,
                                       const int64_t* __restrict__ col,
                                       const int64_t* __restrict__ rows,
                                       const int64_t* __restrict__ row_batch,
                                       const int64_t* __restrict__ keep_ptr,
                                       const int64_t* __restrict__ keep_cols,
                                       const int64_t* __restrict__ out_ptr,
                                       int64_t* __restrict__ counts, int64_t* __restrict__ pos,
                                       int64_t num_rows) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < num_rows;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = row_batch[i];
    const int64_t* keep = keep_cols + keep_ptr[b];
    const int64_t nk = keep_ptr[b + 1] - keep_ptr[b];
    int64_t c = 0;
    for (int64_t e = rowptr[rows[i]]; e < rowptr[rows[i] + 1]; ++e) {
      if (sm::sorted_contains(keep, nk, col[e])) {
        if (pos != nullptr) pos[out_ptr[i] + c] = e;
        ++c;
      }
    }
    if (pos == nullptr) counts[i] = c;
  }
}

}  // namespace

cudaError_t launch_bulk_select_rows(const int64_t* rowptr, const int64_t* rows,
                                    const int64_t* out_ptr, int64_t* pos, int64_t num_rows,
                                    cudaStream_t stream) {
  if (num_rows == 0) return cudaSuccess;
  select_rows_kernel<<<blocks_for(num_rows), kThreads, 0, stream>>>(rowptr, rows, out_ptr, pos,
                                                                     num_rows);
  return cudaGetLastError();
}

cudaError_t launch_bulk_sample_uniform(const int64_t* rowptr, const int64_t* rows,
                                       const int64_t* row_keys, const int64_t* out_ptr,
                                       int64_t* pos, int64_t num_rows, cudaStream_t stream) {
  if (num_rows == 0) return cudaSuccess;
  sample_uniform_kernel<<<blocks_for(num_rows), kThreads, 0, stream>>>(rowptr, rows, row_keys,
                                                                        out_ptr, pos, num_rows);
  return cudaGetLastError();
}

cudaError_t launch_bulk_sample_weighted(const int64_t* ptr, double* w, double* prefix,
                                        int64_t* hit, const int64_t* row_keys, int64_t fanout,
                                        int64_t* counts, int64_t* pos, int64_t num_rows,
                                        cudaStream_t stream) {
  if (num_rows == 0) return cudaSuccess;
  sample_weighted_kernel<<<blocks_for(num_rows), kThreads, 0, stream>>>(
      ptr, w, prefix, hit, row_keys, fanout, counts, pos, num_rows);
  return cudaGetLastError();
}

cudaError_t launch_bulk_extract_columns(const int64_t* rowptr, const int64_t* col,
                                        const int64_t* rows, const int64_t* row_batch,
                                        const int64_t* keep_ptr, const int64_t* keep_cols,
                                        const int64_t* out_ptr, int64_t* counts, int64_t* pos,
                                        int64_t num_rows, cudaStream_t stream) {
  if (num_rows == 0) return cudaSuccess;
  extract_columns_kernel<<<blocks_for(num_rows), kThreads, 0, stream>>>(
      rowptr, col, rows, row_batch, keep_ptr, keep_cols, out_ptr, counts, pos, num_rows);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace ops
}  // namespace pyg_sar
