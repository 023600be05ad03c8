// Launch geometry shared by the element-wise CUDA kernels: threads per block, and a grid of
// at most 65535 blocks (the kernels loop with a grid stride beyond it).
#pragma once

#include <cstdint>

namespace pyg_sar {
namespace ops {
namespace cuda {

constexpr int kThreads = 256;

inline int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

}  // namespace cuda
}  // namespace ops
}  // namespace pyg_sar
