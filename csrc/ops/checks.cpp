// Shared argument checks (see checks.h): host scans for CPU tensors, device-side assertions for
// the others, so no check copies a value from the device to the host.
#include "checks.h"

#include <ATen/TensorUtils.h>

#include <cmath>
#include <string>
#include <utility>

namespace pyg_sar {
namespace ops {

namespace {

bool on_host(const at::Tensor& t) { return t.device().is_cpu(); }

// Queues a device-side assertion that the one-element tensor `ok` holds true; no host sync.
void assert_on_device(const at::Tensor& ok, const std::string& message) {
  at::_assert_async(ok, message + " (checked on the device)");
}

// min and max of a non-empty int64 CPU tensor, in one pass without allocating.
std::pair<int64_t, int64_t> host_min_max(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  const int64_t* p = c.const_data_ptr<int64_t>();
  int64_t lo = p[0], hi = p[0];
  for (int64_t i = 1, n = c.numel(); i < n; ++i) {
    lo = p[i] < lo ? p[i] : lo;
    hi = p[i] > hi ? p[i] : hi;
  }
  return {lo, hi};
}

// The first i with p[i + 1] < p[i], or -1.
int64_t first_decrease(const int64_t* p, int64_t steps) {
  for (int64_t i = 0; i < steps; ++i) {
    if (p[i + 1] < p[i]) return i;
  }
  return -1;
}

at::Tensor non_decreasing(const at::Tensor& ptr) {
  const int64_t k = ptr.numel() - 1;
  return (ptr.narrow(0, 1, k) >= ptr.narrow(0, 0, k)).all();
}

}  // namespace

void check_same_device(const char* op, const at::Tensor& ref, const char* ref_name,
                       const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.device() == ref.device(), op, ": ", name, " and ", ref_name,
              " must be on the same device (got ", t.device(), " and ", ref.device(), ")");
}

std::string dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kBFloat16: return "bfloat16";
    case at::kHalf: return "float16";
    case at::kByte: return "uint8";
    case at::kChar: return "int8";
    case at::kShort: return "int16";
    case at::kInt: return "int32";
    case at::kLong: return "int64";
    case at::kBool: return "bool";
    case at::kComplexHalf: return "complex32";
    case at::kComplexFloat: return "complex64";
    case at::kComplexDouble: return "complex128";
    default: return c10::toString(t);
  }
}

bool is_kernel_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kBFloat16 || t == at::kHalf;
}

bool is_low_precision(at::ScalarType t) { return t == at::kBFloat16 || t == at::kHalf; }

at::ScalarType accumulate_type(at::ScalarType t) { return is_low_precision(t) ? at::kFloat : t; }

void check_kernel_dtype(const char* op, at::ScalarType dtype, const char* name) {
  TORCH_CHECK(is_kernel_dtype(dtype), op, ": ", name, " has dtype ", dtype_name(dtype),
              ", which the native kernels do not support (supported: ", kKernelDtypes, ")");
}

void check_kernel_dtype(const char* op, const at::Tensor& t, const char* name) {
  check_kernel_dtype(op, t.scalar_type(), name);
}

void check_dtype_is(const char* op, const at::Tensor& t, const char* name, at::ScalarType want,
                    const std::string& why) {
  TORCH_CHECK(t.scalar_type() == want, op, ": ", name, " must be ", dtype_name(want), ", ", why,
              " (got ", dtype_name(t.scalar_type()), ")");
}

void check_index(const char* op, const at::Tensor& t, const char* name) {
  TORCH_CHECK_VALUE(t.defined(), op, ": ", name, " is undefined");
  TORCH_CHECK_VALUE(t.dim() == 1, op, ": ", name, " must be 1-D (got shape ", t.sizes(), ")");
  TORCH_CHECK_VALUE(t.scalar_type() == at::kLong, op, ": ", name, " must be int64 (got ",
                    t.scalar_type(), ")");
}

void check_csr(const char* op, const at::Tensor& rowptr, const at::Tensor& col, int64_t num_src,
               const char* num_src_name) {
  at::CheckedFrom c{op};
  at::TensorArg rowptr_arg{rowptr, "rowptr", 1}, col_arg{col, "col", 2};
  at::checkAllDefined(c, {rowptr_arg, col_arg});
  at::checkDim(c, rowptr_arg, 1);
  at::checkDim(c, col_arg, 1);
  at::checkScalarType(c, rowptr_arg, at::kLong);
  at::checkScalarType(c, col_arg, at::kLong);
  check_same_device(op, rowptr, "rowptr", col, "col");
  TORCH_CHECK_VALUE(rowptr.numel() >= 1, op, ": rowptr must have N + 1 >= 1 entries (got 0)");

  const int64_t num_edges = col.numel(), num_dst = rowptr.numel() - 1;
  const std::string col_rule = std::string(op) + ": col values must lie in [0, " + num_src_name +
                               ") = [0, " + std::to_string(num_src) + ")";
  if (!on_host(rowptr)) {
    assert_on_device((rowptr[0] == 0).logical_and_(rowptr[num_dst] == num_edges)
                         .logical_and_(non_decreasing(rowptr)),
                     std::string(op) + ": rowptr must start at 0, be non-decreasing and end at "
                     "the number of edges col.numel() = " + std::to_string(num_edges));
    if (num_edges > 0) {
      auto [lo, hi] = at::aminmax(col);
      assert_on_device((lo >= 0).logical_and_(hi < num_src), col_rule);
    }
    return;
  }
  const at::Tensor rp = rowptr.contiguous();
  const int64_t* p = rp.const_data_ptr<int64_t>();
  TORCH_CHECK_VALUE(p[0] == 0, op, ": rowptr[0] must be 0 (got ", p[0], ")");
  TORCH_CHECK_VALUE(p[num_dst] == num_edges, op, ": rowptr[-1] must equal the number of edges ",
                    "col.numel() = ", num_edges, " (got ", p[num_dst], "; rowptr has ",
                    rowptr.numel(), " entries, so N = ", num_dst, ")");
  const int64_t i = first_decrease(p, num_dst);
  TORCH_CHECK_VALUE(i < 0, op, ": rowptr must be non-decreasing (got rowptr[", i, "] = ", p[i],
                    " > rowptr[", i + 1, "] = ", p[i + 1], ")");
  if (num_edges > 0) {
    auto [lo, hi] = host_min_max(col);
    TORCH_CHECK_VALUE(lo >= 0 && hi < num_src, col_rule, " (got min ", lo, ", max ", hi, ")");
  }
}

void check_ptr(const char* op, const at::Tensor& ptr, const char* name, int64_t total,
               const char* what) {
  check_index(op, ptr, name);
  TORCH_CHECK_VALUE(ptr.numel() >= 1, op, ": ", name, " must have k + 1 >= 1 entries (got 0)");
  const int64_t k = ptr.numel() - 1;
  if (!on_host(ptr)) {
    assert_on_device((ptr[0] == 0).logical_and_(ptr[k] == total).logical_and_(non_decreasing(ptr)),
                     std::string(op) + ": " + name + " must run from 0 to the number of " + what +
                         " " + std::to_string(total) + " and be non-decreasing");
    return;
  }
  const at::Tensor c = ptr.contiguous();
  const int64_t* p = c.const_data_ptr<int64_t>();
  TORCH_CHECK_VALUE(p[0] == 0 && p[k] == total, op, ": ", name,
                    " must run from 0 to the number of ", what, " ", total, " (got ", p[0],
                    " .. ", p[k], ")");
  const int64_t i = first_decrease(p, k);
  TORCH_CHECK_VALUE(i < 0, op, ": ", name, " must be non-decreasing (got ", name, "[", i, "] = ",
                    p[i], " > ", name, "[", i + 1, "] = ", p[i + 1], ")");
}

void check_last_is_edge_count(const char* op, const at::Tensor& rowptr, const at::Tensor& col) {
  TORCH_CHECK_VALUE(rowptr.numel() >= 1, op, ": rowptr must have N + 1 >= 1 entries (got 0)");
  const int64_t n = rowptr.numel() - 1, num_edges = col.numel();
  if (!on_host(rowptr)) {
    assert_on_device(rowptr[n] == num_edges,
                     std::string(op) + ": rowptr[-1] must equal the number of edges "
                     "col.numel() = " + std::to_string(num_edges));
    return;
  }
  const int64_t last = rowptr[n].item<int64_t>();  // a host tensor: a read, not a copy
  TORCH_CHECK_VALUE(last == num_edges, op, ": rowptr[-1] = ", last,
                    " must equal the number of edges col.numel() = ", num_edges);
}

void check_in_range(const char* op, const at::Tensor& t, const char* name, int64_t lo, int64_t hi,
                    const std::string& range) {
  if (t.numel() == 0) return;
  if (!on_host(t)) {
    auto [min, max] = at::aminmax(t);
    assert_on_device((min >= lo).logical_and_(max < hi),
                     std::string(op) + ": " + name + " must lie in " + range);
    return;
  }
  auto [min, max] = host_min_max(t);
  TORCH_CHECK_VALUE(min >= lo && max < hi, op, ": ", name, " must lie in ", range, " (got min ",
                    min, ", max ", max, ")");
}

void check_finite_nonnegative(const char* op, const at::Tensor& t, const char* name) {
  if (t.numel() == 0) return;
  if (!on_host(t)) {
    assert_on_device((t.isfinite() & (t >= 0)).all(),
                     std::string(op) + ": " + name + " must be finite and >= 0");
    return;
  }
  const at::Tensor c = t.contiguous();
  const double* p = c.const_data_ptr<double>();
  for (int64_t i = 0, n = c.numel(); i < n; ++i) {
    TORCH_CHECK_VALUE(std::isfinite(p[i]) && p[i] >= 0.0, op, ": ", name,
                      " must be finite and >= 0 (got ", p[i], " at position ", i, ")");
  }
}

}  // namespace ops
}  // namespace pyg_sar
