// Per-edge arithmetic of gather_aggregate, shared by the CPU and the CUDA kernels so that the CPU
// tests check the same arithmetic the GPU runs. Torch-free: nvcc compiles it without ATen.
#pragma once

#include <cstdint>

#include "host_device.h"

namespace pyg_sar {
namespace ops {
namespace gather_aggregate_math {

// The reduction over a destination's in-edges. The values are part of the launcher ABI.
enum class Reduce : int { kSum = 0, kMean = 1, kMax = 2, kMin = 3 };

// max and min record, per output element, the edge position of the winner.
template <Reduce R>
constexpr bool kHasArg = (R == Reduce::kMax || R == Reduce::kMin);

template <typename T>
PYG_SAR_HOST_DEVICE bool is_nan(T v) {
  return v != v;
}

// The weight of edge e (1 without weights).
template <typename T>
PYG_SAR_HOST_DEVICE T edge_weight(const T* weight, int64_t e) {
  return weight == nullptr ? T(1) : weight[e];
}

// The message of edge e: w_e * x. Multiplying by an absent weight (1) is exact.
template <typename T>
PYG_SAR_HOST_DEVICE T message(T x, T w) {
  return w * x;
}

// Whether `val` (a later edge) replaces the current winner `best` in a max/min reduction. Edges
// are visited in ascending position, so a strict comparison keeps the first of equal values. A
// NaN wins over every number and the first NaN stays, so NaN propagates as in torch.amax.
// Written without branches (bitwise &, |) so that the CPU feature loop can vectorise.
template <Reduce R, typename T>
PYG_SAR_HOST_DEVICE bool replaces(T val, T best) {
  const bool better = R == Reduce::kMax ? (val > best) : (val < best);  // false if either is NaN
  return better | (is_nan(val) & !is_nan(best));
}

// The output of a destination with `deg` in-edges from its accumulator (0 for empty rows).
template <Reduce R, typename T>
PYG_SAR_HOST_DEVICE T finalize(T acc, int64_t deg) {
  if (deg == 0) return T(0);
  return R == Reduce::kMean ? acc / static_cast<T>(deg) : acc;
}

// d out_i / d message_e for sum and mean (max/min route the whole gradient to the winner).
template <Reduce R, typename T>
PYG_SAR_HOST_DEVICE T message_grad_scale(int64_t deg) {
  return R == Reduce::kMean ? T(1) / static_cast<T>(deg) : T(1);
}

}  // namespace gather_aggregate_math
}  // namespace ops
}  // namespace pyg_sar
