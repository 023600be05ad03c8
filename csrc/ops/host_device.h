// PYG_SAR_HOST_DEVICE marks the per-edge arithmetic shared by the CPU and the CUDA kernels.
// Torch-free, so nvcc compiles the kernel files without ATen.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define PYG_SAR_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PYG_SAR_HOST_DEVICE inline
#endif
