// Argument checks shared by every op family. Each raises ValueError (TORCH_CHECK_VALUE) or
// RuntimeError (TORCH_CHECK, for device mismatches, as ATen does) naming the op, the rule and the
// offending values.
//
// Checks of tensor *metadata* (dimensions, dtypes, devices, sizes) run on every call and cost
// nothing. Checks of tensor *values* (a CSR row pointer that starts at 0, ends at E and never
// decreases; indices within range; finite weights) never copy from the device to the host:
//  * CPU tensors are scanned in place, and the error names the offending values;
//  * CUDA tensors are checked by a reduction on the device whose verdict goes to
//    at::_assert_async, queued on the current stream before the kernel that would read out of
//    range. A violation stops the stream with a device-side assertion carrying the same message
//    (without the values, which would need a copy); a valid input never waits for the device.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

namespace pyg_sar {
namespace ops {

// `t` and `ref` on the same device (RuntimeError otherwise).
void check_same_device(const char* op, const at::Tensor& ref, const char* ref_name,
                       const at::Tensor& t, const char* name);

// The floating dtypes every native kernel takes, as the error messages spell them. bfloat16 and
// float16 are computed in float32 (at::opmath_type): see accumulate_type.
constexpr const char* kKernelDtypes = "float32, float64, bfloat16, float16";

// torch's name of a dtype ("float32", "bfloat16", "int32", "complex64", ...).
std::string dtype_name(at::ScalarType t);

// Whether `t` is one of kKernelDtypes.
bool is_kernel_dtype(at::ScalarType t);

// Whether `t` is a low-precision dtype (bfloat16 or float16) that the kernels widen to float32.
bool is_low_precision(at::ScalarType t);

// The dtype the kernels accumulate `t` in: float32 for bfloat16 / float16, `t` itself otherwise
// (at::opmath_type).
at::ScalarType accumulate_type(at::ScalarType t);

// `t` (named `name`) has one of kKernelDtypes; otherwise a RuntimeError naming the op, the tensor,
// its dtype and the supported set.
void check_kernel_dtype(const char* op, const at::Tensor& t, const char* name);
void check_kernel_dtype(const char* op, at::ScalarType dtype, const char* name);

// `t` (named `name`) has dtype `want` (RuntimeError naming both tensors and dtypes otherwise);
// `why` says where the rule comes from, e.g. "the accumulator dtype of x_src (bfloat16)".
void check_dtype_is(const char* op, const at::Tensor& t, const char* name, at::ScalarType want,
                    const std::string& why);

// A defined, 1-D int64 tensor (ValueError otherwise).
void check_index(const char* op, const at::Tensor& t, const char* name);

// A CSR block: rowptr int64 [N + 1] with rowptr[0] == 0, non-decreasing, rowptr[N] == E; col
// int64 [E] with values in [0, num_src) (`num_src_name` says where num_src comes from).
void check_csr(const char* op, const at::Tensor& rowptr, const at::Tensor& col, int64_t num_src,
               const char* num_src_name);

// A pointer into `total` items: int64 [k + 1], ptr[0] == 0, ptr[k] == total, non-decreasing
// (`what` names the items).
void check_ptr(const char* op, const at::Tensor& ptr, const char* name, int64_t total,
               const char* what);

// rowptr[-1] == col.numel() (the edge count of a CSR whose other values are checked elsewhere).
void check_last_is_edge_count(const char* op, const at::Tensor& rowptr, const at::Tensor& col);

// Every value of the int64 tensor `t` lies in [lo, hi) (`range` spells the interval for the
// message, e.g. "[0, N) = [0, 7)").
void check_in_range(const char* op, const at::Tensor& t, const char* name, int64_t lo, int64_t hi,
                    const std::string& range);

// Every value of the float64 tensor `t` is finite and >= 0.
void check_finite_nonnegative(const char* op, const at::Tensor& t, const char* name);

}  // namespace ops
}  // namespace pyg_sar
