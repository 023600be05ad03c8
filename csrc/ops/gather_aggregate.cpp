// Schemas, argument checks and dispatcher calls of the gather_aggregate op family. Backend kernels
// register themselves in cpu/ and cuda/ (TORCH_LIBRARY_IMPL) through
// register_gather_aggregate_kernels, which runs the checks below once per call.
#include "gather_aggregate.h"

#include <string>

#include "checks.h"

#include <ATen/TensorUtils.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace pyg_sar {
namespace ops {

namespace {

// weight: [E], on ref's device, of dtype x_dtype or its accumulator dtype.
void check_weight(const char* op, const std::optional<at::Tensor>& weight, const at::Tensor& ref,
                  const char* ref_name, at::ScalarType x_dtype, int64_t num_edges) {
  if (!weight.has_value() || !weight->defined()) return;
  TORCH_CHECK_VALUE(weight->dim() == 1 && weight->size(0) == num_edges, op,
                    ": weight must have shape [E] = [", num_edges, "] (got ", weight->sizes(), ")");
  const at::ScalarType wt = weight->scalar_type(), acc = accumulate_type(x_dtype);
  if (acc == x_dtype) {
    TORCH_CHECK_VALUE(wt == x_dtype, op, ": weight and x_src must have the same dtype (got ",
                      dtype_name(wt), " and ", dtype_name(x_dtype), ")");
  } else {
    TORCH_CHECK_VALUE(wt == x_dtype || wt == acc, op, ": weight must have x_src's dtype ",
                      dtype_name(x_dtype), " or its accumulator dtype ", dtype_name(acc),
                      " (got ", dtype_name(wt), ")");
  }
  check_same_device(op, ref, ref_name, *weight, "weight");
}

}  // namespace

Reduce parse_reduce(std::string_view reduce, const char* op) {
  if (reduce == "sum") return Reduce::kSum;
  if (reduce == "mean") return Reduce::kMean;
  if (reduce == "max") return Reduce::kMax;
  if (reduce == "min") return Reduce::kMin;
  TORCH_CHECK_VALUE(false, op, ": reduce must be one of 'sum', 'mean', 'max', 'min' (got '",
                    reduce, "')");
}

Reduce check_gather_aggregate_args(const at::Tensor& rowptr, const at::Tensor& col,
                                   const at::Tensor& x_src,
                                   const std::optional<at::Tensor>& weight,
                                   std::string_view reduce) {
  const char* op = "gather_aggregate";
  const Reduce r = parse_reduce(reduce, op);
  at::CheckedFrom c{op};
  at::TensorArg rowptr_arg{rowptr, "rowptr", 1}, col_arg{col, "col", 2}, x_arg{x_src, "x_src", 3};
  at::checkAllDefined(c, {rowptr_arg, col_arg, x_arg});
  at::checkDim(c, x_arg, 2);
  check_kernel_dtype(op, x_src, "x_src");
  check_same_device(op, x_src, "x_src", rowptr, "rowptr");
  check_csr(op, rowptr, col, x_src.size(0), "x_src.size(0)");
  check_weight(op, weight, x_src, "x_src", x_src.scalar_type(), col.numel());
  return r;
}

Reduce check_gather_aggregate_backward_args(const at::Tensor& grad_out, const at::Tensor& rowptr,
                                            const at::Tensor& col,
                                            const std::optional<at::Tensor>& x_src,
                                            const std::optional<at::Tensor>& weight,
                                            const at::Tensor& arg, std::string_view reduce,
                                            int64_t num_src, bool weight_requires_grad,
                                            std::optional<at::ScalarType> x_dtype,
                                            at::ScalarType& x_dtype_out) {
  const char* op = "gather_aggregate_backward";
  const Reduce r = parse_reduce(reduce, op);
  at::CheckedFrom c{op};
  at::TensorArg g_arg{grad_out, "grad_out", 1}, rowptr_arg{rowptr, "rowptr", 2},
      col_arg{col, "col", 3};
  at::checkAllDefined(c, {g_arg, rowptr_arg, col_arg});
  at::checkDim(c, g_arg, 2);
  const bool has_x = x_src.has_value() && x_src->defined();
  // x_dtype: given, else x_src's, else grad_out's
  const at::ScalarType xt = x_dtype.has_value() ? *x_dtype
                            : has_x             ? x_src->scalar_type()
                                                : grad_out.scalar_type();
  check_kernel_dtype(op, xt, x_dtype.has_value() ? "x_dtype" : has_x ? "x_src" : "grad_out");
  const at::ScalarType acc = accumulate_type(xt);
  check_kernel_dtype(op, grad_out, "grad_out");
  TORCH_CHECK_VALUE(grad_out.scalar_type() == xt || grad_out.scalar_type() == acc, op,
                    ": grad_out must have x_src's dtype ", dtype_name(xt),
                    (acc == xt ? std::string() : " or its accumulator dtype " + dtype_name(acc)),
                    " (got ", dtype_name(grad_out.scalar_type()), ")");
  x_dtype_out = xt;
  check_same_device(op, grad_out, "grad_out", rowptr, "rowptr");
  TORCH_CHECK_VALUE(num_src >= 0, op, ": num_src must be >= 0 (got ", num_src, ")");
  check_csr(op, rowptr, col, num_src, "num_src");
  const int64_t num_dst = rowptr.numel() - 1, num_feat = grad_out.size(1);
  TORCH_CHECK_VALUE(grad_out.size(0) == num_dst, op,
                    ": grad_out must have N = rowptr.numel() - 1 = ", num_dst, " rows (got ",
                    grad_out.sizes(), ")");
  check_weight(op, weight, grad_out, "grad_out", xt, col.numel());
  TORCH_CHECK_VALUE(has_x || !weight_requires_grad, op,
                    ": x_src is required when weight_requires_grad is true");
  TORCH_CHECK_VALUE(!weight_requires_grad || (weight.has_value() && weight->defined()), op,
                    ": weight_requires_grad is true but weight is None");
  if (has_x) {
    TORCH_CHECK_VALUE(x_src->dim() == 2 && x_src->size(0) == num_src && x_src->size(1) == num_feat,
                      op, ": x_src must have shape [num_src, F] = [", num_src, ", ", num_feat,
                      "] (got ", x_src->sizes(), ")");
    TORCH_CHECK_VALUE(x_src->scalar_type() == xt, op, ": x_src must have x_dtype ",
                      dtype_name(xt), " (got ", dtype_name(x_src->scalar_type()), ")");
    check_same_device(op, grad_out, "grad_out", *x_src, "x_src");
  }
  if (r == Reduce::kMax || r == Reduce::kMin) {
    TORCH_CHECK_VALUE(arg.defined() && arg.scalar_type() == at::kLong && arg.dim() == 2 &&
                          arg.size(0) == num_dst && arg.size(1) == num_feat,
                      op, ": reduce='", reduce, "' needs arg as int64 [N, F] = [", num_dst, ", ",
                      num_feat, "] (got ", (arg.defined() ? arg.sizes() : at::IntArrayRef{}),
                      " of dtype ", (arg.defined() ? arg.scalar_type() : at::kLong), ")");
    check_same_device(op, grad_out, "grad_out", arg, "arg");
    // kernels index col with arg: keep it in range
    check_in_range(op, arg, "arg values", -1, col.numel(),
                   "[-1, E) = [-1, " + std::to_string(col.numel()) + ")");
  }
  return r;
}

std::tuple<at::Tensor, at::Tensor> gather_aggregate(const at::Tensor& rowptr,
                                                    const at::Tensor& col,
                                                    const at::Tensor& x_src,
                                                    const std::optional<at::Tensor>& weight,
                                                    std::string_view reduce) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::gather_aggregate", "")
                       .typed<decltype(gather_aggregate)>();
  return op.call(rowptr, col, x_src, weight, reduce);
}

std::tuple<at::Tensor, at::Tensor> gather_aggregate_backward(
    const at::Tensor& grad_out, const at::Tensor& rowptr, const at::Tensor& col,
    const std::optional<at::Tensor>& x_src, const std::optional<at::Tensor>& weight,
    const at::Tensor& arg, std::string_view reduce, int64_t num_src, bool weight_requires_grad,
    std::optional<at::ScalarType> x_dtype) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::gather_aggregate_backward", "")
                       .typed<decltype(gather_aggregate_backward)>();
  return op.call(grad_out, rowptr, col, x_src, weight, arg, reduce, num_src,
                 weight_requires_grad, x_dtype);
}

TORCH_LIBRARY_FRAGMENT(pyg_sar, m) {
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::gather_aggregate(Tensor rowptr, Tensor col, Tensor x_src, Tensor? weight, "
      "str reduce) -> (Tensor out, Tensor arg)"));
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::gather_aggregate_backward(Tensor grad_out, Tensor rowptr, Tensor col, "
      "Tensor? x_src, Tensor? weight, Tensor arg, str reduce, int num_src, "
      "bool weight_requires_grad, ScalarType? x_dtype=None) -> "
      "(Tensor grad_x_src, Tensor grad_weight)"));
}

}  // namespace ops
}  // namespace pyg_sar
