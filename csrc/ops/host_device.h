// PYG_SAR_HOST_DEVICE marks the per-edge arithmetic shared by the CPU and the CUDA kernels, and
// widen() reads a stored value in its accumulator type (at::opmath_type): float32 and float64
// stay as they are, bfloat16 and float16 become float32. Torch-free, so nvcc compiles the kernel
// files without ATen.
//
// The kernels read their inputs in the input dtype T and do every operation, sum and state in
// widen(T)'s type A. On the CPU, T is at::BFloat16 / at::Half (converted by their operator float);
// on CUDA it is __nv_bfloat16 / __half (converted by the cuda_bf16.h / cuda_fp16.h intrinsics,
// since torch builds CUDA extensions with __CUDA_NO_HALF_CONVERSIONS__ and
// __CUDA_NO_BFLOAT16_CONVERSIONS__, which remove the implicit conversions).
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define PYG_SAR_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PYG_SAR_HOST_DEVICE inline
#endif

#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace pyg_sar {
namespace ops {

PYG_SAR_HOST_DEVICE float widen(float v) { return v; }
PYG_SAR_HOST_DEVICE double widen(double v) { return v; }

#if defined(__CUDACC__)
PYG_SAR_HOST_DEVICE float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
PYG_SAR_HOST_DEVICE float widen(__half v) { return __half2float(v); }
#endif

// Host half types with a conversion to float (at::BFloat16, at::Half).
template <typename T>
PYG_SAR_HOST_DEVICE float widen(T v) {
  return static_cast<float>(v);
}

// The accumulator type of the stored floating type T: double for double, float otherwise (float,
// bfloat16, float16), as at::opmath_type.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

}  // namespace ops
}  // namespace pyg_sar
