// Schemas, argument checks and dispatcher calls of the fused attention op family (GAT, GATv2).
// Backend kernels register themselves in cpu/ and cuda/ (TORCH_LIBRARY_IMPL) through
// register_attention_kernels, which calls check_attention_args once per call. gat_finalize is
// composite (ATen ops on any backend); gat_transpose and gat_dropout_mask have one
// CompositeExplicitAutograd kernel for every backend (their shape functions for tracing live in
// pyg_sar/ops/_fake.py).
#include "gat_attention.h"

#include <ATen/Dispatch.h>
#include <ATen/TensorUtils.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <string>

#include "checks.h"

namespace pyg_sar {
namespace ops {

namespace {

at::Tensor opt(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? *t : at::Tensor();
}

std::string shape_str(std::initializer_list<int64_t> dims) {
  std::string s = "[";
  bool first = true;
  for (int64_t d : dims) {
    s += (first ? "" : ", ") + std::to_string(d);
    first = false;
  }
  return s + "]";
}

// `t` must be defined with exactly the shape `dims` and the device of `ref`; an input (`state`
// false) has ref's dtype (ValueError otherwise), the softmax state (m, l, acc / out) ref's
// accumulator dtype (RuntimeError naming both dtypes otherwise).
void check_tensor(const char* op, const at::Tensor& t, const char* name,
                  std::initializer_list<int64_t> dims, const at::Tensor& ref, bool state = false) {
  TORCH_CHECK_VALUE(t.defined(), op, ": ", name, " is required");
  TORCH_CHECK_VALUE(t.sizes().equals(at::IntArrayRef(dims)), op, ": ", name, " must have shape ",
                    shape_str(dims), " (got ", t.sizes(), ")");
  const at::ScalarType xt = ref.scalar_type(), acc = accumulate_type(xt);
  if (!state) {
    TORCH_CHECK_VALUE(t.scalar_type() == xt, op, ": ", name,
                      " and x_src must have the same dtype (got ", dtype_name(t.scalar_type()),
                      " and ", dtype_name(xt), ")");
  } else if (acc == xt) {
    TORCH_CHECK(t.scalar_type() == xt, op, ": ", name, " and x_src must have the same dtype (got ",
                dtype_name(t.scalar_type()), " and ", dtype_name(xt), ")");
  } else {
    TORCH_CHECK(t.scalar_type() == acc, op, ": ", name, " must be ", dtype_name(acc),
                ", the accumulator dtype of x_src's ", dtype_name(xt), " (got ", name, " ",
                dtype_name(t.scalar_type()), " and x_src ", dtype_name(xt), ")");
  }
  TORCH_CHECK_VALUE(t.device() == ref.device(), op, ": ", name,
                    " and x_src must be on the same device (got ", t.device(), " and ",
                    ref.device(), ")");
}

void check_ids(const char* op, const at::Tensor& ids, const char* name, int64_t n,
               const at::Tensor& ref) {
  TORCH_CHECK_VALUE(ids.defined(), op, ": ", name, " is required when dropout > 0");
  TORCH_CHECK_VALUE(ids.dim() == 1 && ids.size(0) == n && ids.scalar_type() == at::kLong, op,
                    ": ", name, " must be int64 [", n, "] (got ", ids.scalar_type(), " ",
                    ids.sizes(), ")");
  TORCH_CHECK_VALUE(ids.device() == ref.device(), op, ": ", name,
                    " and x_src must be on the same device (got ", ids.device(), " and ",
                    ref.device(), ")");
}

}  // namespace

void check_attention_args(const char* op, const AttentionArgs& a, bool backward) {
  TORCH_CHECK_VALUE(a.x_src.defined() && a.rowptr.defined() && a.col.defined(), op,
                    ": rowptr, col and x_src are required");
  TORCH_CHECK_VALUE(a.x_src.dim() == 3, op, ": x_src must be [S, H, C] (got ", a.x_src.sizes(),
                    ")");
  check_kernel_dtype(op, a.x_src, "x_src");
  TORCH_CHECK_VALUE(a.rowptr.device() == a.x_src.device(), op,
                    ": rowptr and x_src must be on the same device (got ", a.rowptr.device(),
                    " and ", a.x_src.device(), ")");
  check_csr(op, a.rowptr, a.col, a.num_src(), "x_src.size(0)");
  const int64_t N = a.num_dst(), S = a.num_src(), E = a.num_edges(), H = a.heads(),
                C = a.channels();
  TORCH_CHECK_VALUE(a.dropout >= 0.0 && a.dropout <= 1.0, op, ": dropout must lie in [0, 1] (got ",
                    a.dropout, ")");
  if (a.kind == AttentionKind::kGat) {
    check_tensor(op, a.a_src, "a_src", {S, H}, a.x_src);
    check_tensor(op, a.a_dst, "a_dst", {N, H}, a.x_src);
    if (a.a_edge.defined()) check_tensor(op, a.a_edge, "a_edge", {E, H}, a.x_src);
  } else {
    check_tensor(op, a.x_dst, "x_dst", {N, H, C}, a.x_src);
    check_tensor(op, a.att, "att", {H, C}, a.x_src);
    if (a.x_edge.defined()) check_tensor(op, a.x_edge, "x_edge", {E, H, C}, a.x_src);
  }
  check_tensor(op, a.m, "m", {N, H}, a.x_src, /*state=*/true);
  check_tensor(op, a.l, "l", {N, H}, a.x_src, /*state=*/true);
  check_tensor(op, a.acc, backward ? "out" : "acc", {N, H, C}, a.x_src, /*state=*/true);
  if (backward) {
    // grad_out: the dtype of out (the accumulator's) or of x_src
    const bool as_out = a.grad_out.defined() && a.grad_out.scalar_type() == a.acc.scalar_type();
    check_tensor(op, a.grad_out, "grad_out", {N, H, C}, a.x_src, /*state=*/as_out);
  } else {
    TORCH_CHECK_VALUE(a.m.is_contiguous() && a.l.is_contiguous() && a.acc.is_contiguous(), op,
                      ": m, l and acc are updated in place and must be contiguous");
  }
  if (backward && a.transposed.defined()) {
    const at::Tensor& t = a.transposed;
    TORCH_CHECK_VALUE(t.dim() == 1 && t.scalar_type() == at::kLong && t.numel() == S + 1 + 2 * E,
                      op, ": transposed must be gat_transpose(rowptr, col, ", S,
                      "): int64 [S + 1 + 2 E] = [", S + 1 + 2 * E, "] (got ", t.scalar_type(), " ",
                      t.sizes(), ")");
    TORCH_CHECK_VALUE(t.device() == a.x_src.device(), op,
                      ": transposed and x_src must be on the same device (got ", t.device(),
                      " and ", a.x_src.device(), ")");
  }
  if (a.dropout > 0.0) {
    check_ids(op, a.src_ids, "src_ids", S, a.x_src);
    check_ids(op, a.dst_ids, "dst_ids", N, a.x_src);
  }
}

AttentionArgs gat_args(const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& x_src,
                       const at::Tensor& a_src, const at::Tensor& a_dst,
                       const std::optional<at::Tensor>& a_edge, const at::Tensor& m,
                       const at::Tensor& l, const at::Tensor& acc, double negative_slope,
                       double dropout, int64_t seed, const std::optional<at::Tensor>& src_ids,
                       const std::optional<at::Tensor>& dst_ids) {
  AttentionArgs a;
  a.kind = AttentionKind::kGat;
  a.rowptr = rowptr, a.col = col, a.x_src = x_src, a.a_src = a_src, a.a_dst = a_dst;
  a.a_edge = opt(a_edge), a.m = m, a.l = l, a.acc = acc;
  a.negative_slope = negative_slope, a.dropout = dropout, a.seed = seed;
  a.src_ids = opt(src_ids), a.dst_ids = opt(dst_ids);
  return a;
}

AttentionArgs gatv2_args(const at::Tensor& rowptr, const at::Tensor& col,
                         const at::Tensor& x_src, const at::Tensor& x_dst,
                         const std::optional<at::Tensor>& x_edge, const at::Tensor& att,
                         const at::Tensor& m, const at::Tensor& l, const at::Tensor& acc,
                         double negative_slope, double dropout, int64_t seed,
                         const std::optional<at::Tensor>& src_ids,
                         const std::optional<at::Tensor>& dst_ids) {
  AttentionArgs a;
  a.kind = AttentionKind::kGatV2;
  a.rowptr = rowptr, a.col = col, a.x_src = x_src, a.x_dst = x_dst, a.x_edge = opt(x_edge);
  a.att = att, a.m = m, a.l = l, a.acc = acc;
  a.negative_slope = negative_slope, a.dropout = dropout, a.seed = seed;
  a.src_ids = opt(src_ids), a.dst_ids = opt(dst_ids);
  return a;
}

at::Tensor gat_transpose(const at::Tensor& rowptr, const at::Tensor& col, int64_t num_src) {
  TORCH_CHECK_VALUE(num_src >= 0, "gat_transpose: num_src must be >= 0 (got ", num_src, ")");
  check_csr("gat_transpose", rowptr, col, num_src, "num_src");
  const int64_t N = rowptr.numel() - 1, E = col.numel();
  const auto opts = col.options();
  // A stable sort keeps edges of one source in ascending position (the order pass 2 sums in).
  const at::Tensor perm = at::argsort(col, /*stable=*/true);
  const at::Tensor colptr =
      at::cat({at::zeros({1}, opts), at::bincount(col, {}, num_src).cumsum(0)});
  const at::Tensor row =
      at::repeat_interleave(at::arange(N, opts), rowptr.diff(), /*dim=*/0, /*output_size=*/E);
  return at::cat({colptr.to(at::kLong), perm, row.index_select(0, perm)});
}

at::Tensor gat_finalize(const at::Tensor& acc, const at::Tensor& l) {
  check_kernel_dtype("gat_finalize", acc, "acc");
  TORCH_CHECK(acc.scalar_type() == l.scalar_type(), "gat_finalize: acc and l must have the same "
              "dtype (got ", dtype_name(acc.scalar_type()), " and ", dtype_name(l.scalar_type()),
              ")");
  TORCH_CHECK_VALUE(acc.dim() == 3 && l.dim() == 2 && acc.size(0) == l.size(0) &&
                        acc.size(1) == l.size(1),
                    "gat_finalize: acc must be [N, H, C] and l [N, H] (got ", acc.sizes(),
                    " and ", l.sizes(), ")");
  const at::Tensor safe = at::where(l > 0, l, at::ones_like(l));
  return acc / safe.unsqueeze(-1);
}

at::Tensor gat_dropout_mask(const at::Tensor& src_ids, const at::Tensor& dst_ids, int64_t heads,
                            double dropout, int64_t seed, at::ScalarType dtype) {
  const char* op = "gat_dropout_mask";
  TORCH_CHECK_VALUE(src_ids.dim() == 1 && dst_ids.dim() == 1 && src_ids.numel() == dst_ids.numel() &&
                        src_ids.scalar_type() == at::kLong && dst_ids.scalar_type() == at::kLong,
                    op, ": src_ids and dst_ids must be int64 [E] of equal length (got ",
                    src_ids.sizes(), " and ", dst_ids.sizes(), ")");
  TORCH_CHECK_VALUE(heads >= 1, op, ": heads must be >= 1 (got ", heads, ")");
  TORCH_CHECK_VALUE(dropout >= 0.0 && dropout <= 1.0, op, ": dropout must lie in [0, 1] (got ",
                    dropout, ")");
  check_kernel_dtype(op, dtype, "dtype");
  const at::Tensor s = src_ids.cpu().contiguous(), d = dst_ids.cpu().contiguous();
  const int64_t E = s.numel();
  at::Tensor out = at::empty({E, heads}, at::TensorOptions().dtype(dtype));
  // bfloat16 / float16: the kernels' float32 multiplier, rounded once to the dtype
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, dtype, "gat_dropout_mask", [&] {
    const int64_t* sp = s.const_data_ptr<int64_t>();
    const int64_t* dp = d.const_data_ptr<int64_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    for (int64_t e = 0; e < E; ++e) {
      for (int64_t h = 0; h < heads; ++h) {
        o[e * heads + h] = static_cast<scalar_t>(
            gat_math::dropout_scale<acc_t<scalar_t>>(dropout, seed, sp[e], dp[e], h));
      }
    }
  });
  return out.to(src_ids.device());
}

void gat_block_forward_(const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& x_src,
                        const at::Tensor& a_src, const at::Tensor& a_dst,
                        const std::optional<at::Tensor>& a_edge, at::Tensor& m, at::Tensor& l,
                        at::Tensor& acc, double negative_slope, double dropout, int64_t seed,
                        const std::optional<at::Tensor>& src_ids,
                        const std::optional<at::Tensor>& dst_ids) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::gat_block_forward_", "")
                       .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                   const at::Tensor&, const at::Tensor&,
                                   const std::optional<at::Tensor>&, at::Tensor&, at::Tensor&,
                                   at::Tensor&, double, double, int64_t,
                                   const std::optional<at::Tensor>&,
                                   const std::optional<at::Tensor>&)>();
  op.call(rowptr, col, x_src, a_src, a_dst, a_edge, m, l, acc, negative_slope, dropout, seed,
          src_ids, dst_ids);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> gat_block_backward(
    const at::Tensor& grad_out, const at::Tensor& out, const at::Tensor& m, const at::Tensor& l,
    const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& x_src,
    const at::Tensor& a_src, const at::Tensor& a_dst, const std::optional<at::Tensor>& a_edge,
    double negative_slope, double dropout, int64_t seed, const std::optional<at::Tensor>& src_ids,
    const std::optional<at::Tensor>& dst_ids, const std::optional<at::Tensor>& transposed) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::gat_block_backward", "")
                       .typed<decltype(gat_block_backward)>();
  return op.call(grad_out, out, m, l, rowptr, col, x_src, a_src, a_dst, a_edge, negative_slope,
                 dropout, seed, src_ids, dst_ids, transposed);
}

void gatv2_block_forward_(const at::Tensor& rowptr, const at::Tensor& col,
                          const at::Tensor& x_src, const at::Tensor& x_dst,
                          const std::optional<at::Tensor>& x_edge, const at::Tensor& att,
                          at::Tensor& m, at::Tensor& l, at::Tensor& acc, double negative_slope,
                          double dropout, int64_t seed, const std::optional<at::Tensor>& src_ids,
                          const std::optional<at::Tensor>& dst_ids) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::gatv2_block_forward_", "")
                       .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                   const at::Tensor&, const std::optional<at::Tensor>&,
                                   const at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&,
                                   double, double, int64_t, const std::optional<at::Tensor>&,
                                   const std::optional<at::Tensor>&)>();
  op.call(rowptr, col, x_src, x_dst, x_edge, att, m, l, acc, negative_slope, dropout, seed,
          src_ids, dst_ids);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> gatv2_block_backward(
    const at::Tensor& grad_out, const at::Tensor& out, const at::Tensor& m, const at::Tensor& l,
    const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& x_src,
    const at::Tensor& x_dst, const std::optional<at::Tensor>& x_edge, const at::Tensor& att,
    double negative_slope, double dropout, int64_t seed, const std::optional<at::Tensor>& src_ids,
    const std::optional<at::Tensor>& dst_ids, const std::optional<at::Tensor>& transposed) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::gatv2_block_backward", "")
                       .typed<decltype(gatv2_block_backward)>();
  return op.call(grad_out, out, m, l, rowptr, col, x_src, x_dst, x_edge, att, negative_slope,
                 dropout, seed, src_ids, dst_ids, transposed);
}

TORCH_LIBRARY_FRAGMENT(pyg_sar, m) {
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::gat_block_forward_(Tensor rowptr, Tensor col, Tensor x_src, Tensor a_src, "
      "Tensor a_dst, Tensor? a_edge, Tensor(a!) m, Tensor(b!) l, Tensor(c!) acc, "
      "float negative_slope, float dropout, int seed, Tensor? src_ids, Tensor? dst_ids) -> ()"));
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::gat_block_backward(Tensor grad_out, Tensor out, Tensor m, Tensor l, "
      "Tensor rowptr, Tensor col, Tensor x_src, Tensor a_src, Tensor a_dst, Tensor? a_edge, "
      "float negative_slope, float dropout, int seed, Tensor? src_ids, Tensor? dst_ids, "
      "Tensor? transposed=None) -> "
      "(Tensor grad_x_src, Tensor grad_a_src, Tensor grad_a_dst, Tensor grad_a_edge)"));
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::gatv2_block_forward_(Tensor rowptr, Tensor col, Tensor x_src, Tensor x_dst, "
      "Tensor? x_edge, Tensor att, Tensor(a!) m, Tensor(b!) l, Tensor(c!) acc, "
      "float negative_slope, float dropout, int seed, Tensor? src_ids, Tensor? dst_ids) -> ()"));
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::gatv2_block_backward(Tensor grad_out, Tensor out, Tensor m, Tensor l, "
      "Tensor rowptr, Tensor col, Tensor x_src, Tensor x_dst, Tensor? x_edge, Tensor att, "
      "float negative_slope, float dropout, int seed, Tensor? src_ids, Tensor? dst_ids, "
      "Tensor? transposed=None) -> "
      "(Tensor grad_x_src, Tensor grad_x_dst, Tensor grad_x_edge, Tensor grad_att)"));
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::gat_transpose(Tensor rowptr, Tensor col, int num_src) -> Tensor"));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::gat_transpose"),
         c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(gat_transpose));
  m.def(TORCH_SELECTIVE_SCHEMA("pyg_sar::gat_finalize(Tensor acc, Tensor l) -> Tensor"),
        TORCH_FN(gat_finalize));
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::gat_dropout_mask(Tensor src_ids, Tensor dst_ids, int heads, float dropout, "
      "int seed, ScalarType dtype) -> Tensor"));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::gat_dropout_mask"),
         c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(gat_dropout_mask));
}

}  // namespace ops
}  // namespace pyg_sar
