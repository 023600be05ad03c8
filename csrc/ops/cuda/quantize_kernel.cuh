// Launchers of the quantisation CUDA kernels. Torch-free (raw device pointers and sizes), so the
// kernel file compiles with plain `nvcc -c`; the binding (quantize_cuda.cpp) checks arguments
// and allocates with ATen. The per-value arithmetic is quantize_math.h, shared with the CPU
// kernels (same bytes).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace pyg_sar {
namespace ops {
namespace cuda {

// rows x [R, n] (contiguous) -> payload out [R, width] (contiguous), one block per row.
template <typename T>
cudaError_t launch_quantize_encode(const T* x, int64_t num_rows, int64_t n, int bits,
                                   int64_t seed, uint8_t* out, int64_t width,
                                   cudaStream_t stream);

// payload in (row r at in + r * in_stride, its bytes adjacent) -> rows x [R, n] (contiguous).
template <typename T>
cudaError_t launch_quantize_decode(const uint8_t* in, int64_t in_stride, int64_t num_rows,
                                   int64_t n, int bits, T* x, cudaStream_t stream);

}  // namespace cuda
}  // namespace ops
}  // namespace pyg_sar
