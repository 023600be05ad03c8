// Fused attention ops (GAT and GATv2) over one CSR block: an online edge-softmax that updates the
// running max m, denominator l and accumulator acc of every (destination, head) in place, a
// finalisation out = acc / l, and explicit backward ops that recompute the attention from the
// saved (m, l). No E x H x C tensor is ever built; nothing per edge is kept between the passes.
// C++ API, the argument checks, and the registration every backend shares (the checks run once
// per call, before any kernel touches data).
//
// Dtypes: the inputs (x_src, a_src, a_dst, a_edge; x_dst, x_edge, att) share one dtype T, float32,
// float64, bfloat16 or float16; the state m, l, acc (and out in backward) has T's accumulator dtype
// A (float32 for bfloat16 / float16, T otherwise), in which every score, exponential, sum and
// gradient is computed. grad_out has dtype A or T; the gradients are returned in T. A mismatch
// raises a RuntimeError naming the tensors and dtypes.
//
// Shapes (S source rows, N destinations, E edges, H heads, C channels per head):
//   rowptr int64 [N + 1], col int64 [E] in [0, S); x_src [S, H, C]; m, l [N, H]; acc [N, H, C].
//   GAT:   a_src [S, H], a_dst [N, H], a_edge [E, H] or None.
//   GATv2: x_dst [N, H, C], x_edge [E, H, C] or None, att [H, C].
// Attention dropout (probability `dropout`) multiplies each coefficient by 0 or 1 / (1 - p),
// decided by a counter-based hash of (seed, src_ids[j], dst_ids[i], head) (gat_attention_math.h),
// so backward regenerates exactly the forward mask; src_ids [S] and dst_ids [N] (int64, e.g.
// global node ids) are required when dropout > 0.
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

#include "checks.h"
#include "gat_attention_math.h"

namespace pyg_sar {
namespace ops {

enum class AttentionKind : int { kGat = 0, kGatV2 = 1 };

// The tensors of one attention op call; optional ones are undefined tensors when absent.
struct AttentionArgs {
  AttentionKind kind;
  at::Tensor rowptr, col, x_src;
  at::Tensor a_src, a_dst, a_edge;  // GAT
  at::Tensor x_dst, x_edge, att;    // GATv2
  at::Tensor m, l, acc;             // acc is `out` in backward
  at::Tensor grad_out;              // backward only
  double negative_slope = 0.2, dropout = 0.0;
  int64_t seed = 0;
  at::Tensor src_ids, dst_ids;
  at::Tensor transposed;  // backward only: gat_transpose's output, or undefined

  int64_t num_dst() const { return rowptr.numel() - 1; }
  int64_t num_src() const { return x_src.size(0); }
  int64_t num_edges() const { return col.numel(); }
  int64_t heads() const { return x_src.size(1); }
  int64_t channels() const { return x_src.size(2); }
};

// Validates dtypes, shapes, devices, the CSR structure, dropout in [0, 1] and the ids; raises
// ValueError (c10::ValueError) naming `op` and the offending values. In-place tensors (m, l, acc
// in forward) must be contiguous.
void check_attention_args(const char* op, const AttentionArgs& a, bool backward);

void gat_block_forward_(const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& x_src,
                        const at::Tensor& a_src, const at::Tensor& a_dst,
                        const std::optional<at::Tensor>& a_edge, at::Tensor& m, at::Tensor& l,
                        at::Tensor& acc, double negative_slope, double dropout, int64_t seed,
                        const std::optional<at::Tensor>& src_ids,
                        const std::optional<at::Tensor>& dst_ids);

// out = acc / l, 0 where l == 0.
at::Tensor gat_finalize(const at::Tensor& acc, const at::Tensor& l);

// Returns (grad_x_src [S, H, C], grad_a_src [S, H], grad_a_dst [N, H], grad_a_edge [E, H] or an
// empty tensor without a_edge). `transposed`: gat_transpose(rowptr, col, S) or None.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> gat_block_backward(
    const at::Tensor& grad_out, const at::Tensor& out, const at::Tensor& m, const at::Tensor& l,
    const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& x_src,
    const at::Tensor& a_src, const at::Tensor& a_dst, const std::optional<at::Tensor>& a_edge,
    double negative_slope, double dropout, int64_t seed, const std::optional<at::Tensor>& src_ids,
    const std::optional<at::Tensor>& dst_ids, const std::optional<at::Tensor>& transposed);

void gatv2_block_forward_(const at::Tensor& rowptr, const at::Tensor& col,
                          const at::Tensor& x_src, const at::Tensor& x_dst,
                          const std::optional<at::Tensor>& x_edge, const at::Tensor& att,
                          at::Tensor& m, at::Tensor& l, at::Tensor& acc, double negative_slope,
                          double dropout, int64_t seed, const std::optional<at::Tensor>& src_ids,
                          const std::optional<at::Tensor>& dst_ids);

// Returns (grad_x_src [S, H, C], grad_x_dst [N, H, C], grad_x_edge [E, H, C] or empty,
// grad_att [H, C]).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> gatv2_block_backward(
    const at::Tensor& grad_out, const at::Tensor& out, const at::Tensor& m, const at::Tensor& l,
    const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& x_src,
    const at::Tensor& x_dst, const std::optional<at::Tensor>& x_edge, const at::Tensor& att,
    double negative_slope, double dropout, int64_t seed, const std::optional<at::Tensor>& src_ids,
    const std::optional<at::Tensor>& dst_ids, const std::optional<at::Tensor>& transposed);

// The block's CSR grouped by source row, for the backward ops' second pass (it depends on the
// graph only, so callers build it once per block and pass it to every backward call; without it
// the backward ops build it themselves on every call). int64 [S + 1 + 2 E]: colptr [S + 1], then
// perm [E] (edge ids grouped by source, ascending within a source), then the destination row of
// every perm entry [E].
at::Tensor gat_transpose(const at::Tensor& rowptr, const at::Tensor& col, int64_t num_src);

// The dropout multipliers [E, heads] of edges (src_ids[e], dst_ids[e]): what the kernels apply.
at::Tensor gat_dropout_mask(const at::Tensor& src_ids, const at::Tensor& dst_ids, int64_t heads,
                            double dropout, int64_t seed, at::ScalarType dtype);

// Builds AttentionArgs from op arguments.
AttentionArgs gat_args(const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& x_src,
                       const at::Tensor& a_src, const at::Tensor& a_dst,
                       const std::optional<at::Tensor>& a_edge, const at::Tensor& m,
                       const at::Tensor& l, const at::Tensor& acc, double negative_slope,
                       double dropout, int64_t seed, const std::optional<at::Tensor>& src_ids,
                       const std::optional<at::Tensor>& dst_ids);
AttentionArgs gatv2_args(const at::Tensor& rowptr, const at::Tensor& col,
                         const at::Tensor& x_src, const at::Tensor& x_dst,
                         const std::optional<at::Tensor>& x_edge, const at::Tensor& att,
                         const at::Tensor& m, const at::Tensor& l, const at::Tensor& acc,
                         double negative_slope, double dropout, int64_t seed,
                         const std::optional<at::Tensor>& src_ids,
                         const std::optional<at::Tensor>& dst_ids);

// Backend registration, shared by the CPU and CUDA kernels: the registered functions gather the
// op's arguments into AttentionArgs, check them once and call `Kernels` (backward: with grad_out
// converted to the accumulator dtype; the gradients it returns in that dtype are cast to the
// inputs' dtype), which provides
//   static void forward(const char* op, const AttentionArgs& a);   // updates a.m, a.l, a.acc
//   static std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> backward(
//       const char* op, const AttentionArgs& a);                  // a.acc is `out`
template <typename Kernels>
struct AttentionOps {
  static void gat_block_forward_(const at::Tensor& rowptr, const at::Tensor& col,
                                 const at::Tensor& x_src, const at::Tensor& a_src,
                                 const at::Tensor& a_dst, const std::optional<at::Tensor>& a_edge,
                                 at::Tensor& m, at::Tensor& l, at::Tensor& acc,
                                 double negative_slope, double dropout, int64_t seed,
                                 const std::optional<at::Tensor>& src_ids,
                                 const std::optional<at::Tensor>& dst_ids) {
    forward("gat_block_forward_", gat_args(rowptr, col, x_src, a_src, a_dst, a_edge, m, l, acc,
                                           negative_slope, dropout, seed, src_ids, dst_ids));
  }

  static void gatv2_block_forward_(const at::Tensor& rowptr, const at::Tensor& col,
                                   const at::Tensor& x_src, const at::Tensor& x_dst,
                                   const std::optional<at::Tensor>& x_edge, const at::Tensor& att,
                                   at::Tensor& m, at::Tensor& l, at::Tensor& acc,
                                   double negative_slope, double dropout, int64_t seed,
                                   const std::optional<at::Tensor>& src_ids,
                                   const std::optional<at::Tensor>& dst_ids) {
    forward("gatv2_block_forward_", gatv2_args(rowptr, col, x_src, x_dst, x_edge, att, m, l, acc,
                                               negative_slope, dropout, seed, src_ids, dst_ids));
  }

  static std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> gat_block_backward(
      const at::Tensor& grad_out, const at::Tensor& out, const at::Tensor& m, const at::Tensor& l,
      const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& x_src,
      const at::Tensor& a_src, const at::Tensor& a_dst, const std::optional<at::Tensor>& a_edge,
      double negative_slope, double dropout, int64_t seed,
      const std::optional<at::Tensor>& src_ids, const std::optional<at::Tensor>& dst_ids,
      const std::optional<at::Tensor>& transposed) {
    return backward("gat_block_backward", gat_args(rowptr, col, x_src, a_src, a_dst, a_edge, m, l,
                                                   out, negative_slope, dropout, seed, src_ids,
                                                   dst_ids),
                    grad_out, transposed);
  }

  static std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> gatv2_block_backward(
      const at::Tensor& grad_out, const at::Tensor& out, const at::Tensor& m, const at::Tensor& l,
      const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& x_src,
      const at::Tensor& x_dst, const std::optional<at::Tensor>& x_edge, const at::Tensor& att,
      double negative_slope, double dropout, int64_t seed,
      const std::optional<at::Tensor>& src_ids, const std::optional<at::Tensor>& dst_ids,
      const std::optional<at::Tensor>& transposed) {
    return backward("gatv2_block_backward", gatv2_args(rowptr, col, x_src, x_dst, x_edge, att, m,
                                                       l, out, negative_slope, dropout, seed,
                                                       src_ids, dst_ids),
                    grad_out, transposed);
  }

 private:
  static void forward(const char* op, const AttentionArgs& a) {
    check_attention_args(op, a, /*backward=*/false);
    Kernels::forward(op, a);
  }

  static std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> backward(
      const char* op, AttentionArgs a, const at::Tensor& grad_out,
      const std::optional<at::Tensor>& transposed) {
    a.grad_out = grad_out;
    if (transposed.has_value()) a.transposed = *transposed;
    check_attention_args(op, a, /*backward=*/true);
    const at::ScalarType xt = a.x_src.scalar_type(), acc = accumulate_type(xt);
    if (a.grad_out.scalar_type() != acc) a.grad_out = a.grad_out.to(acc);
    auto grads = Kernels::backward(op, a);
    if (acc == xt) return grads;
    // computed in the accumulator dtype, returned in the inputs' dtype
    return {std::get<0>(grads).to(xt), std::get<1>(grads).to(xt), std::get<2>(grads).to(xt),
            std::get<3>(grads).to(xt)};
  }
};

// Registers `Kernels` (see AttentionOps) for the dispatch key of the enclosing TORCH_LIBRARY_IMPL
// block.
template <typename Kernels>
void register_attention_kernels(torch::Library& m) {
  using Ops = AttentionOps<Kernels>;
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::gat_block_forward_"), TORCH_FN(Ops::gat_block_forward_));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::gat_block_backward"), TORCH_FN(Ops::gat_block_backward));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::gatv2_block_forward_"),
         TORCH_FN(Ops::gatv2_block_forward_));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::gatv2_block_backward"),
         TORCH_FN(Ops::gatv2_block_backward));
}

}  // namespace ops
}  // namespace pyg_sar
