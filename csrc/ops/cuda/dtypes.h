// ATen's scalar types as the torch-free CUDA launchers name them, for the binding files (*_cuda.cpp):
// c10::BFloat16 -> __nv_bfloat16 and c10::Half -> __half (same 16-bit layouts), float and double
// unchanged; cptr / mptr reinterpret a tensor's data pointer accordingly.
#pragma once

#include <ATen/ATen.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../host_device.h"

namespace pyg_sar {
namespace ops {
namespace cuda {

template <typename T>
struct CudaScalar {
  using type = T;
};
template <>
struct CudaScalar<c10::BFloat16> {
  using type = __nv_bfloat16;
};
template <>
struct CudaScalar<c10::Half> {
  using type = __half;
};

template <typename T>
using cuda_t = typename CudaScalar<T>::type;

static_assert(sizeof(__nv_bfloat16) == sizeof(c10::BFloat16), "bfloat16 layouts differ");
static_assert(sizeof(__half) == sizeof(c10::Half), "float16 layouts differ");

// t's data as the launchers' type for the ATen type T (null for an undefined tensor).
template <typename T>
const cuda_t<T>* cptr(const at::Tensor& t) {
  return t.defined() ? reinterpret_cast<const cuda_t<T>*>(t.const_data_ptr<T>()) : nullptr;
}
template <typename T>
cuda_t<T>* mptr(const at::Tensor& t) {
  return t.defined() ? reinterpret_cast<cuda_t<T>*>(t.mutable_data_ptr<T>()) : nullptr;
}

}  // namespace cuda
}  // namespace ops
}  // namespace pyg_sar
