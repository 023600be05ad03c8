// CUDA kernels of the quantisation ops: encode with one block per row (a shared-memory min/max
// reduction, then each thread packs whole bytes of codes), decode with one thread per value. The
// arithmetic is quantize_math.h (keyed noise, products and sums rounded one at a time), so a
// row's bytes equal the CPU kernel's and the pure-torch reference's. No torch header.
#include "quantize_kernel.cuh"

#include "../quantize_math.h"
#include "launch.cuh"

namespace pyg_sar {
namespace ops {
namespace cuda {

namespace {

namespace qm = quantize_math;

__device__ __forceinline__ int64_t packed_bytes(int64_t n, int bits) {
  return (n * bits + 7) / 8;
}

template <typename T>
__global__ void encode_kernel(const T* __restrict__ x, int64_t num_rows, int64_t n, int bits,
                              int64_t seed, uint8_t* __restrict__ out, int64_t width) {
  __shared__ T s_lo[kThreads];
  __shared__ T s_hi[kThreads];
  __shared__ int s_nan[kThreads];
  const int64_t levels = (int64_t(1) << bits) - 1;
  const int64_t body = packed_bytes(n, bits);
  for (int64_t r = blockIdx.x; r < num_rows; r += gridDim.x) {
    const T* row = x + r * n;
    uint8_t* o = out + r * width;
    T lo = n > 0 ? row[0] : T(0), hi = lo;
    int nan = 0;
    for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
      const T v = row[c];
      nan |= v != v;
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    s_lo[threadIdx.x] = lo;
    s_hi[threadIdx.x] = hi;
    s_nan[threadIdx.x] = nan;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        const T a = s_lo[threadIdx.x + half], b = s_hi[threadIdx.x + half];
        s_lo[threadIdx.x] = a < s_lo[threadIdx.x] ? a : s_lo[threadIdx.x];
        s_hi[threadIdx.x] = b > s_hi[threadIdx.x] ? b : s_hi[threadIdx.x];
        s_nan[threadIdx.x] |= s_nan[threadIdx.x + half];
      }
      __syncthreads();
    }
    lo = s_lo[0];
    hi = s_hi[0];
    if (s_nan[0]) lo = hi = T(0) / T(0);
    __syncthreads();  // s_* are reused by the next row
    const T step = qm::row_step(lo, hi, levels);
    const T inv = T(1) / step;
    const uint64_t key = qm::row_key(seed, r);
    if (bits == 16) {
      for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
        const uint32_t q = qm::code(row[c], lo, inv, qm::uniform<T>(key, c), levels) ^ 0x8000u;
        o[2 * c] = static_cast<uint8_t>(q & 0xFFu);
        o[2 * c + 1] = static_cast<uint8_t>(q >> 8);
      }
    } else {
      const int per = 8 / bits;
      for (int64_t k = threadIdx.x; k < body; k += blockDim.x) {
        uint32_t byte = 0;
        for (int j = 0; j < per && k * per + j < n; ++j) {
          const int64_t c = k * per + j;
          byte |= qm::code(row[c], lo, inv, qm::uniform<T>(key, c), levels) << (j * bits);
        }
        o[k] = static_cast<uint8_t>(byte);
      }
    }
    if (threadIdx.x == 0) {
      const uint8_t* l = reinterpret_cast<const uint8_t*>(&lo);
      const uint8_t* s = reinterpret_cast<const uint8_t*>(&step);
      for (int b = 0; b < int(sizeof(T)); ++b) {
        o[body + b] = l[b];
        o[body + sizeof(T) + b] = s[b];
      }
    }
  }
}

template <typename T>
__global__ void decode_kernel(const uint8_t* __restrict__ in, int64_t in_stride,
                              int64_t num_rows, int64_t n, int bits, T* __restrict__ x) {
  const int64_t body = packed_bytes(n, bits);
  const int64_t total = num_rows * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / n, c = i - r * n;
    const uint8_t* row = in + r * in_stride;
    T lo, step;  // the header may sit at any byte offset
    uint8_t* l = reinterpret_cast<uint8_t*>(&lo);
    uint8_t* s = reinterpret_cast<uint8_t*>(&step);
    for (int b = 0; b < int(sizeof(T)); ++b) {
      l[b] = row[body + b];
      s[b] = row[body + sizeof(T) + b];
    }
    x[i] = qm::value<T>(qm::unpack_code(row, c, bits), lo, step);
  }
}

}  // namespace

template <typename T>
cudaError_t launch_quantize_encode(const T* x, int64_t num_rows, int64_t n, int bits,
                                   int64_t seed, uint8_t* out, int64_t width,
                                   cudaStream_t stream) {
  if (num_rows == 0) return cudaSuccess;
  const int blocks = static_cast<int>(num_rows < 65535 ? num_rows : 65535);
  encode_kernel<T><<<blocks, kThreads, 0, stream>>>(x, num_rows, n, bits, seed, out, width);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_quantize_decode(const uint8_t* in, int64_t in_stride, int64_t num_rows,
                                   int64_t n, int bits, T* x, cudaStream_t stream) {
  if (num_rows * n == 0) return cudaSuccess;
  decode_kernel<T><<<blocks_for(num_rows * n), kThreads, 0, stream>>>(in, in_stride, num_rows,
                                                                      n, bits, x);
  return cudaGetLastError();
}

template cudaError_t launch_quantize_encode<float>(const float*, int64_t, int64_t, int, int64_t,
                                                   uint8_t*, int64_t, cudaStream_t);
template cudaError_t launch_quantize_encode<double>(const double*, int64_t, int64_t, int,
                                                    int64_t, uint8_t*, int64_t, cudaStream_t);
template cudaError_t launch_quantize_decode<float>(const uint8_t*, int64_t, int64_t, int64_t,
                                                   int, float*, cudaStream_t);
template cudaError_t launch_quantize_decode<double>(const uint8_t*, int64_t, int64_t, int64_t,
                                                    int, double*, cudaStream_t);

}  // namespace cuda
}  // namespace ops
}  // namespace pyg_sar
