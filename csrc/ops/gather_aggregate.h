// gather_aggregate: out[i] = REDUCE_{e in rowptr[i]..rowptr[i+1]} w_e * x_src[col[e]], computed
// without materialising the E x F tensor of gathered rows. C++ API and the argument checks that
// every backend kernel runs once before touching data.
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include <optional>
#include <string_view>
#include <tuple>

#include "checks.h"
#include "gather_aggregate_math.h"

namespace pyg_sar {
namespace ops {

using gather_aggregate_math::Reduce;

// Dtypes (every backend): x_src float32, float64, bfloat16 or float16; the sums, products and
// comparisons run in acc = at::opmath_type of x_src's dtype (float32 for bfloat16 / float16), and
// `out` is returned in acc (float32 for a bfloat16 input, so a caller folding several blocks sums
// in float32; the autograd wrapper pyg_sar.ops.gather_aggregate casts it back). weight has x_src's
// dtype or acc (a float32 weight with bfloat16 rows multiplies in float32, as torch's type
// promotion of w * x would). Other dtypes: RuntimeError naming the op, the dtype and the
// supported set.

// Forward. Returns (out [N, F] in acc, arg): arg is int64 [N, F] (edge position of the winner,
// -1 on empty rows) for max/min and an empty tensor for sum/mean.
std::tuple<at::Tensor, at::Tensor> gather_aggregate(const at::Tensor& rowptr,
                                                    const at::Tensor& col,
                                                    const at::Tensor& x_src,
                                                    const std::optional<at::Tensor>& weight,
                                                    std::string_view reduce);

// Backward. Returns (grad_x_src [num_src, F] in x_dtype, grad_weight [E] in weight's dtype, or an
// empty tensor when weight_requires_grad is false), computed in acc. x_src is needed only when
// weight_requires_grad is true. x_dtype: the dtype of x_src (and so of grad_x_src); when absent,
// x_src's dtype if given, else grad_out's. grad_out has x_dtype or its acc dtype (the forward's
// out dtype).
std::tuple<at::Tensor, at::Tensor> gather_aggregate_backward(
    const at::Tensor& grad_out, const at::Tensor& rowptr, const at::Tensor& col,
    const std::optional<at::Tensor>& x_src, const std::optional<at::Tensor>& weight,
    const at::Tensor& arg, std::string_view reduce, int64_t num_src, bool weight_requires_grad,
    std::optional<at::ScalarType> x_dtype);

// Parses a reduce name ("sum", "mean", "max", "min"); raises ValueError naming `op` otherwise.
Reduce parse_reduce(std::string_view reduce, const char* op);

// Checks the forward arguments (dtypes, shapes, devices, rowptr monotone with rowptr[0] == 0 and
// rowptr[-1] == E, col within [0, x_src.size(0))). Returns the parsed reduce.
Reduce check_gather_aggregate_args(const at::Tensor& rowptr, const at::Tensor& col,
                                   const at::Tensor& x_src,
                                   const std::optional<at::Tensor>& weight,
                                   std::string_view reduce);

// Checks the backward arguments likewise; sets `x_dtype_out` to the resolved x_dtype. Returns the
// parsed reduce.
Reduce check_gather_aggregate_backward_args(const at::Tensor& grad_out, const at::Tensor& rowptr,
                                            const at::Tensor& col,
                                            const std::optional<at::Tensor>& x_src,
                                            const std::optional<at::Tensor>& weight,
                                            const at::Tensor& arg, std::string_view reduce,
                                            int64_t num_src, bool weight_requires_grad,
                                            std::optional<at::ScalarType> x_dtype,
                                            at::ScalarType& x_dtype_out);

// Backend registration, shared by the CPU and CUDA kernels. The registered functions check the
// arguments once, make them contiguous, convert grad_out and weight to the accumulator dtype acc
// and call `Kernels`, which provides
//   static std::tuple<at::Tensor, at::Tensor> forward(rowptr, col, x_src, weight, Reduce);
//   static std::tuple<at::Tensor, at::Tensor> backward(grad_out, rowptr, col, x_src, weight, arg,
//                                                      Reduce, num_src, weight_requires_grad);
// with every tensor contiguous, an absent one (weight, or x_src / arg when unused) undefined,
// x_src in its own dtype and grad_out / weight in acc; they return out, grad_x_src and
// grad_weight in acc, which the registered backward casts to x_dtype and weight's dtype.
template <typename Kernels>
struct GatherAggregateOps {
  static std::tuple<at::Tensor, at::Tensor> forward(const at::Tensor& rowptr,
                                                    const at::Tensor& col,
                                                    const at::Tensor& x_src,
                                                    const std::optional<at::Tensor>& weight,
                                                    std::string_view reduce) {
    const Reduce r = check_gather_aggregate_args(rowptr, col, x_src, weight, reduce);
    const at::ScalarType acc = accumulate_type(x_src.scalar_type());
    return Kernels::forward(rowptr.contiguous(), col.contiguous(), x_src.contiguous(),
                            contiguous_or_undefined(weight, acc), r);
  }

  static std::tuple<at::Tensor, at::Tensor> backward(
      const at::Tensor& grad_out, const at::Tensor& rowptr, const at::Tensor& col,
      const std::optional<at::Tensor>& x_src, const std::optional<at::Tensor>& weight,
      const at::Tensor& arg, std::string_view reduce, int64_t num_src,
      bool weight_requires_grad, std::optional<at::ScalarType> x_dtype) {
    at::ScalarType xt = grad_out.scalar_type();
    const Reduce r = check_gather_aggregate_backward_args(grad_out, rowptr, col, x_src, weight,
                                                          arg, reduce, num_src,
                                                          weight_requires_grad, x_dtype, xt);
    const at::ScalarType acc = accumulate_type(xt);
    const bool has_arg = r == Reduce::kMax || r == Reduce::kMin;
    auto [grad_x, grad_w] = Kernels::backward(
        grad_out.contiguous().to(acc), rowptr.contiguous(), col.contiguous(),
        weight_requires_grad ? x_src->contiguous() : at::Tensor(),
        contiguous_or_undefined(weight, acc), has_arg ? arg.contiguous() : at::Tensor(), r,
        num_src, weight_requires_grad);
    if (grad_x.scalar_type() != xt) grad_x = grad_x.to(xt);
    if (weight_requires_grad && grad_w.scalar_type() != weight->scalar_type()) {
      grad_w = grad_w.to(weight->scalar_type());
    }
    return {grad_x, grad_w};
  }

 private:
  static at::Tensor contiguous_or_undefined(const std::optional<at::Tensor>& t,
                                            at::ScalarType dtype) {
    return t.has_value() && t->defined() ? t->contiguous().to(dtype) : at::Tensor();
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
