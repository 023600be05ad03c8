// gather_aggregate: out[i] = REDUCE_{e in rowptr[i]..rowptr[i+1]} w_e * x_src[col[e]], computed
// without materialising the E x F tensor of gathered rows. C++ API and the argument checks that
// every backend kernel runs once before touching data.
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include <optional>
#include <string_view>
#include <tuple>

#include "gather_aggregate_math.h"

namespace pyg_sar {
namespace ops {

using gather_aggregate_math::Reduce;

// Forward. Returns (out [N, F], arg): arg is int64 [N, F] (edge position of the winner, -1 on
// empty rows) for max/min and an empty tensor for sum/mean.
std::tuple<at::Tensor, at::Tensor> gather_aggregate(const at::Tensor& rowptr,
                                                    const at::Tensor& col,
                                                    const at::Tensor& x_src,
                                                    const std::optional<at::Tensor>& weight,
                                                    std::string_view reduce);

// Backward. Returns (grad_x_src [num_src, F], grad_weight [E] or an empty tensor when
// weight_requires_grad is false). x_src is needed only when weight_requires_grad is true.
std::tuple<at::Tensor, at::Tensor> gather_aggregate_backward(
    const at::Tensor& grad_out, const at::Tensor& rowptr, const at::Tensor& col,
    const std::optional<at::Tensor>& x_src, const std::optional<at::Tensor>& weight,
    const at::Tensor& arg, std::string_view reduce, int64_t num_src, bool weight_requires_grad);

// Parses a reduce name ("sum", "mean", "max", "min"); raises ValueError naming `op` otherwise.
Reduce parse_reduce(std::string_view reduce, const char* op);

// Checks the forward arguments (dtypes, shapes, devices, rowptr monotone with rowptr[0] == 0 and
// rowptr[-1] == E, col within [0, x_src.size(0))). Returns the parsed reduce.
Reduce check_gather_aggregate_args(const at::Tensor& rowptr, const at::Tensor& col,
                                   const at::Tensor& x_src,
                                   const std::optional<at::Tensor>& weight,
                                   std::string_view reduce);

// Checks the backward arguments likewise. Returns the parsed reduce.
Reduce check_gather_aggregate_backward_args(const at::Tensor& grad_out, const at::Tensor& rowptr,
                                            const at::Tensor& col,
                                            const std::optional<at::Tensor>& x_src,
                                            const std::optional<at::Tensor>& weight,
                                            const at::Tensor& arg, std::string_view reduce,
                                            int64_t num_src, bool weight_requires_grad);

// Backend registration, shared by the CPU and CUDA kernels. The registered functions check the
// arguments once, make them contiguous and call `Kernels`, which provides
//   static std::tuple<at::Tensor, at::Tensor> forward(rowptr, col, x_src, weight, Reduce);
//   static std::tuple<at::Tensor, at::Tensor> backward(grad_out, rowptr, col, x_src, weight, arg,
//                                                      Reduce, num_src, weight_requires_grad);
// with every tensor contiguous, and an absent one (weight, or x_src / arg when unused) undefined.
template <typename Kernels>
struct GatherAggregateOps {
  static std::tuple<at::Tensor, at::Tensor> forward(const at::Tensor& rowptr,
                                                    const at::Tensor& col,
                                                    const at::Tensor& x_src,
                                                    const std::optional<at::Tensor>& weight,
                                                    std::string_view reduce) {
    const Reduce r = check_gather_aggregate_args(rowptr, col, x_src, weight, reduce);
    return Kernels::forward(rowptr.contiguous(), col.contiguous(), x_src.contiguous(),
                            contiguous_or_undefined(weight), r);
  }

  static std::tuple<at::Tensor, at::Tensor> backward(
      const at::Tensor& grad_out, const at::Tensor& rowptr, const at::Tensor& col,
      const std::optional<at::Tensor>& x_src, const std::optional<at::Tensor>& weight,
      const at::Tensor& arg, std::string_view reduce, int64_t num_src,
      bool weight_requires_grad) {
    const Reduce r = check_gather_aggregate_backward_args(grad_out, rowptr, col, x_src, weight,
                                                          arg, reduce, num_src,
                                                          weight_requires_grad);
    const bool has_arg = r == Reduce::kMax || r == Reduce::kMin;
    return Kernels::backward(grad_out.contiguous(), rowptr.contiguous(), col.contiguous(),
                             weight_requires_grad ? x_src->contiguous() : at::Tensor(),
                             contiguous_or_undefined(weight),
                             has_arg ? arg.contiguous() : at::Tensor(), r, num_src,
                             weight_requires_grad);
  }

 private:
  static at::Tensor contiguous_or_undefined(const std::optional<at::Tensor>& t) {
    return t.has_value() && t->defined() ? t->contiguous() : at::Tensor();
  }
};

// Registers `Kernels` (see GatherAggregateOps) for the dispatch key of the enclosing
// TORCH_LIBRARY_IMPL block.
template <typename Kernels>
void register_gather_aggregate_kernels(torch::Library& m) {
  using Ops = GatherAggregateOps<Kernels>;
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::gather_aggregate"), TORCH_FN(Ops::forward));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::gather_aggregate_backward"), TORCH_FN(Ops::backward));
}

}  // namespace ops
}  // namespace pyg_sar

// Runs the lambda __VA_ARGS__ with `constexpr Reduce R` set to the runtime value `reduce`.
#define PYG_SAR_DISPATCH_REDUCE(reduce, ...)                    \
  [&] {                                                         \
    using ::pyg_sar::ops::gather_aggregate_math::Reduce;       \
    switch (reduce) {                                           \
      case Reduce::kSum: {                                      \
        constexpr Reduce R = Reduce::kSum;                      \
        return __VA_ARGS__();                                   \
      }                                                         \
      case Reduce::kMean: {                                     \
        constexpr Reduce R = Reduce::kMean;                     \
        return __VA_ARGS__();                                   \
      }                                                         \
      case Reduce::kMax: {                                      \
        constexpr Reduce R = Reduce::kMax;                      \
        return __VA_ARGS__();                                   \
      }                                                         \
      case Reduce::kMin: {                                      \
        constexpr Reduce R = Reduce::kMin;                      \
        return __VA_ARGS__();                                   \
      }                                                         \
    }                                                           \
    TORCH_CHECK(false, "unknown reduce ", static_cast<int>(reduce)); \
  }()
