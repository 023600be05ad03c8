// CPU kernels of the fused attention ops. Forward and the first backward pass run in parallel
// over destination rows; the second backward pass (gradients of source rows) runs in parallel
// over source rows of the transposed CSR. Every output element is written by one thread in a
// fixed order, so results do not depend on the thread count. Inner loops run over the C channels
// of one head (contiguous), which the compiler vectorises.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "../gat_attention.h"

namespace pyg_sar {
namespace ops {

namespace {

namespace gm = gat_math;

int64_t grain_for(int64_t num_rows, int64_t num_items, int64_t work_per_item) {
  const int64_t per_row =
      (num_items / std::max<int64_t>(num_rows, 1) + 1) * std::max<int64_t>(work_per_item, 1);
  return std::max<int64_t>(1, at::internal::GRAIN_SIZE / per_row);
}

template <typename T>
T dot(const T* __restrict__ a, const T* __restrict__ b, int64_t n) {
  T s = T(0);
  for (int64_t c = 0; c < n; ++c) s += a[c] * b[c];
  return s;
}

template <typename T>
using Ptrs = gm::Inputs<T>;

struct Contig {
  at::Tensor rowptr, col, x_src, a_src, a_dst, a_edge, x_dst, x_edge, att, src_ids, dst_ids, m,
      l, acc, grad_out;
};

at::Tensor cont(const at::Tensor& t) { return t.defined() ? t.contiguous() : t; }

Contig contiguous(const AttentionArgs& a) {
  return {cont(a.rowptr), cont(a.col), cont(a.x_src), cont(a.a_src), cont(a.a_dst),
          cont(a.a_edge), cont(a.x_dst), cont(a.x_edge), cont(a.att), cont(a.src_ids),
          cont(a.dst_ids), cont(a.m), cont(a.l), cont(a.acc), cont(a.grad_out)};
}

template <typename T>
const T* ptr(const at::Tensor& t) {
  return t.defined() ? t.const_data_ptr<T>() : nullptr;
}

template <typename T>
Ptrs<T> pointers(const Contig& c, const AttentionArgs& a) {
  return {c.rowptr.const_data_ptr<int64_t>(), c.col.const_data_ptr<int64_t>(), ptr<T>(c.x_src),
          ptr<T>(c.a_src), ptr<T>(c.a_dst), ptr<T>(c.a_edge), ptr<T>(c.x_dst), ptr<T>(c.x_edge),
          ptr<T>(c.att), a.dropout > 0 ? c.src_ids.const_data_ptr<int64_t>() : nullptr,
          a.dropout > 0 ? c.dst_ids.const_data_ptr<int64_t>() : nullptr, a.heads(), a.channels(),
          static_cast<T>(a.negative_slope), a.dropout, a.seed};
}

// Forward over destination rows [begin, end): online softmax per (row, head) into m, l, acc.
template <typename T>
void forward_rows(const Ptrs<T>& P, T* m, T* l, T* acc, int64_t begin, int64_t end) {
  const int64_t H = P.H, C = P.C;
  for (int64_t i = begin; i < end; ++i) {
    const int64_t e0 = P.rowptr[i], e1 = P.rowptr[i + 1];
    if (e0 == e1) continue;
    for (int64_t h = 0; h < H; ++h) {
      gm::OnlineSoftmax<T> st{m[i * H + h], l[i * H + h]};
      T* __restrict__ a = acc + (i * H + h) * C;
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t j = P.col[e];
        T w;
        const T rescale = st.push(P.score(e, j, i, h), w);
        if (rescale != T(1)) {
          for (int64_t c = 0; c < C; ++c) a[c] *= rescale;
        }
        const T wd = w * P.drop(j, i, h);
        const T* __restrict__ x = P.x_src + (j * H + h) * C;
        for (int64_t c = 0; c < C; ++c) a[c] += wd * x[c];
      }
      m[i * H + h] = st.m;
      l[i * H + h] = st.l;
    }
  }
}

void run_forward(const char* op, const AttentionArgs& a) {
  check_attention_args(op, a, /*backward=*/false);
  const Contig c = contiguous(a);
  const int64_t N = a.num_dst(), E = a.num_edges(), H = a.heads(), C = a.channels();
  AT_DISPATCH_FLOATING_TYPES(a.x_src.scalar_type(), "gat_attention_cpu", [&] {
    const Ptrs<scalar_t> P = pointers<scalar_t>(c, a);
    scalar_t* m = a.m.mutable_data_ptr<scalar_t>();
    scalar_t* l = a.l.mutable_data_ptr<scalar_t>();
    scalar_t* acc = a.acc.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, N, grain_for(N, E, H * C), [&](int64_t begin, int64_t end) {
      forward_rows<scalar_t>(P, m, l, acc, begin, end);
    });
  });
}

// Edges grouped by source row (stable counting sort: ascending edge position per source) and
// the destination row of every edge.
struct TransposedCsr {
  std::vector<int64_t> colptr, perm, row;
};

TransposedCsr transpose(const int64_t* rowptr, const int64_t* col, int64_t num_dst,
                        int64_t num_src, int64_t num_edges) {
  TransposedCsr t{std::vector<int64_t>(num_src + 1, 0), std::vector<int64_t>(num_edges),
                  std::vector<int64_t>(num_edges)};
  for (int64_t e = 0; e < num_edges; ++e) ++t.colptr[col[e] + 1];
  for (int64_t s = 0; s < num_src; ++s) t.colptr[s + 1] += t.colptr[s];
  std::vector<int64_t> cursor(t.colptr.begin(), t.colptr.end() - 1);
  for (int64_t e = 0; e < num_edges; ++e) t.perm[cursor[col[e]]++] = e;
  for (int64_t i = 0; i < num_dst; ++i) {
    std::fill(t.row.data() + rowptr[i], t.row.data() + rowptr[i + 1], i);
  }
  return t;
}

// Backward pass 1 over destination rows: D = <dout, out>, the gradients of the destination-side
// inputs (a_dst or x_dst), of the edge inputs (a_edge or x_edge) and, for GATv2, each row's share
// of grad_att (summed over rows afterwards, in a fixed order).
template <typename T>
void backward_dst_rows(const Ptrs<T>& P, const T* go, const T* out, const T* m, const T* l,
                       T* big_d, T* g_dst, T* g_edge, T* g_att_rows, int64_t begin, int64_t end) {
  const int64_t H = P.H, C = P.C;
  const bool v2 = P.att != nullptr;
  for (int64_t i = begin; i < end; ++i) {
    const int64_t e0 = P.rowptr[i], e1 = P.rowptr[i + 1];
    for (int64_t h = 0; h < H; ++h) {
      const int64_t ih = i * H + h;
      const T* __restrict__ g = go + ih * C;
      const T D = dot(g, out + ih * C, C);
      big_d[ih] = D;
      if (!v2) {
        T acc = T(0);
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t j = P.col[e];
          const T pre = gm::gat_pre(P.a_src[j * H + h], P.a_dst[ih], P.a_edge, e * H + h);
          const T a = gm::attention(gm::leaky_relu(pre, P.slope), m[ih], l[ih]);
          const T ds = gm::score_grad(a, P.drop(j, i, h), dot(g, P.x_src + (j * H + h) * C, C), D);
          const T dpre = ds * gm::leaky_relu_grad(pre, P.slope);
          acc += dpre;
          if (g_edge != nullptr) g_edge[e * H + h] = dpre;
        }
        g_dst[ih] = acc;
        continue;
      }
      T* __restrict__ gd = g_dst + ih * C;
      T* __restrict__ gat = g_att_rows + ih * C;
      std::fill(gd, gd + C, T(0));
      std::fill(gat, gat + C, T(0));
      const T* __restrict__ att = P.att + h * C;
      const T* __restrict__ xd = P.x_dst + ih * C;
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t j = P.col[e];
        const T* __restrict__ xs = P.x_src + (j * H + h) * C;
        const T* xe = P.x_edge == nullptr ? nullptr : P.x_edge + (e * H + h) * C;
        const T a = gm::attention(P.score(e, j, i, h), m[ih], l[ih]);
        const T ds = gm::score_grad(a, P.drop(j, i, h), dot(g, xs, C), D);
        T* ge = g_edge == nullptr ? nullptr : g_edge + (e * H + h) * C;
        for (int64_t c = 0; c < C; ++c) {
          const T pre = gm::gatv2_pre(xs[c], xd[c], xe, c);
          const T gp = ds * att[c] * gm::leaky_relu_grad(pre, P.slope);
          gd[c] += gp;
          gat[c] += ds * gm::leaky_relu(pre, P.slope);
          if (ge != nullptr) ge[c] = gp;
        }
      }
    }
  }
}

// Backward pass 2 over source rows [begin, end) of the transposed CSR: grad of x_src (values and,
// for GATv2, the score input) and, for GAT, of a_src.
template <typename T>
void backward_src_rows(const Ptrs<T>& P, const TransposedCsr& t, const T* go, const T* m,
                       const T* l, const T* big_d, T* g_x, T* g_asrc, int64_t begin,
                       int64_t end) {
  const int64_t H = P.H, C = P.C;
  const bool v2 = P.att != nullptr;
  for (int64_t j = begin; j < end; ++j) {
    T* __restrict__ gx = g_x + j * H * C;
    std::fill(gx, gx + H * C, T(0));
    if (!v2) std::fill(g_asrc + j * H, g_asrc + (j + 1) * H, T(0));
    for (int64_t k = t.colptr[j]; k < t.colptr[j + 1]; ++k) {
      const int64_t e = t.perm[k], i = t.row[e];
      for (int64_t h = 0; h < H; ++h) {
        const int64_t ih = i * H + h;
        const T* __restrict__ g = go + ih * C;
        const T* __restrict__ xs = P.x_src + (j * H + h) * C;
        T* __restrict__ gxh = gx + h * C;
        const T drop = P.drop(j, i, h);
        if (!v2) {
          const T pre = gm::gat_pre(P.a_src[j * H + h], P.a_dst[ih], P.a_edge, e * H + h);
          const T a = gm::attention(gm::leaky_relu(pre, P.slope), m[ih], l[ih]);
          const T ds = gm::score_grad(a, drop, dot(g, xs, C), big_d[ih]);
          g_asrc[j * H + h] += ds * gm::leaky_relu_grad(pre, P.slope);
          const T ad = a * drop;
          for (int64_t c = 0; c < C; ++c) gxh[c] += ad * g[c];
          continue;
        }
        const T* __restrict__ att = P.att + h * C;
        const T* __restrict__ xd = P.x_dst + ih * C;
        const T* xe = P.x_edge == nullptr ? nullptr : P.x_edge + (e * H + h) * C;
        const T a = gm::attention(P.score(e, j, i, h), m[ih], l[ih]);
        const T ds = gm::score_grad(a, drop, dot(g, xs, C), big_d[ih]);
        const T ad = a * drop;
        for (int64_t c = 0; c < C; ++c) {
          const T pre = gm::gatv2_pre(xs[c], xd[c], xe, c);
          gxh[c] += ds * att[c] * gm::leaky_relu_grad(pre, P.slope) + ad * g[c];
        }
      }
    }
  }
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> run_backward(const char* op,
                                                                        const AttentionArgs& a) {
  check_attention_args(op, a, /*backward=*/true);
  const Contig c = contiguous(a);
  const int64_t N = a.num_dst(), S = a.num_src(), E = a.num_edges(), H = a.heads(),
                C = a.channels();
  const bool v2 = a.kind == AttentionKind::kGatV2;
  const bool has_edge = v2 ? a.x_edge.defined() : a.a_edge.defined();
  const auto opts = a.x_src.options();
  at::Tensor g_x = at::empty({S, H, C}, opts);
  at::Tensor g_asrc = v2 ? at::empty({0}, opts) : at::empty({S, H}, opts);
  at::Tensor g_dst = v2 ? at::empty({N, H, C}, opts) : at::empty({N, H}, opts);
  at::Tensor g_edge = !has_edge ? at::empty({0}, opts)
                                : (v2 ? at::empty({E, H, C}, opts) : at::empty({E, H}, opts));
  at::Tensor g_att_rows = v2 ? at::empty({N, H, C}, opts) : at::empty({0}, opts);
  at::Tensor big_d = at::empty({N, H}, opts);
  AT_DISPATCH_FLOATING_TYPES(a.x_src.scalar_type(), "gat_attention_cpu", [&] {
    const Ptrs<scalar_t> P = pointers<scalar_t>(c, a);
    const scalar_t* go = c.grad_out.const_data_ptr<scalar_t>();
    const scalar_t* out = c.acc.const_data_ptr<scalar_t>();
    const scalar_t* m = c.m.const_data_ptr<scalar_t>();
    const scalar_t* l = c.l.const_data_ptr<scalar_t>();
    scalar_t* bd = big_d.mutable_data_ptr<scalar_t>();
    scalar_t* ge = has_edge ? g_edge.mutable_data_ptr<scalar_t>() : nullptr;
    scalar_t* gar = v2 ? g_att_rows.mutable_data_ptr<scalar_t>() : nullptr;
    scalar_t* gd = g_dst.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, N, grain_for(N, E, H * C), [&](int64_t begin, int64_t end) {
      backward_dst_rows<scalar_t>(P, go, out, m, l, bd, gd, ge, gar, begin, end);
    });
    const TransposedCsr t = transpose(P.rowptr, P.col, N, S, E);
    scalar_t* gas = v2 ? nullptr : g_asrc.mutable_data_ptr<scalar_t>();
    scalar_t* gx = g_x.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, S, grain_for(S, E, H * C), [&](int64_t begin, int64_t end) {
      backward_src_rows<scalar_t>(P, t, go, m, l, bd, gx, gas, begin, end);
    });
  });
  if (v2) return {g_x, g_dst, g_edge, g_att_rows.sum(0)};
  return {g_x, g_asrc, g_dst, g_edge};
}

void gat_block_forward_cpu(const at::Tensor& rowptr, const at::Tensor& col,
                           const at::Tensor& x_src, const at::Tensor& a_src,
                           const at::Tensor& a_dst, const std::optional<at::Tensor>& a_edge,
                           at::Tensor& m, at::Tensor& l, at::Tensor& acc, double negative_slope,
                           double dropout, int64_t seed, const std::optional<at::Tensor>& src_ids,
                           const std::optional<at::Tensor>& dst_ids) {
  run_forward("gat_block_forward_", gat_args(rowptr, col, x_src, a_src, a_dst, a_edge, m, l, acc,
                                             negative_slope, dropout, seed, src_ids, dst_ids));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> gat_block_backward_cpu(
    const at::Tensor& grad_out, const at::Tensor& out, const at::Tensor& m, const at::Tensor& l,
    const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& x_src,
    const at::Tensor& a_src, const at::Tensor& a_dst, const std::optional<at::Tensor>& a_edge,
    double negative_slope, double dropout, int64_t seed, const std::optional<at::Tensor>& src_ids,
    const std::optional<at::Tensor>& dst_ids) {
  AttentionArgs a = gat_args(rowptr, col, x_src, a_src, a_dst, a_edge, m, l, out, negative_slope,
                             dropout, seed, src_ids, dst_ids);
  a.grad_out = grad_out;
  return run_backward("gat_block_backward", a);
}

void gatv2_block_forward_cpu(const at::Tensor& rowptr, const at::Tensor& col,
                             const at::Tensor& x_src, const at::Tensor& x_dst,
                             const std::optional<at::Tensor>& x_edge, const at::Tensor& att,
                             at::Tensor& m, at::Tensor& l, at::Tensor& acc, double negative_slope,
                             double dropout, int64_t seed,
                             const std::optional<at::Tensor>& src_ids,
                             const std::optional<at::Tensor>& dst_ids) {
  run_forward("gatv2_block_forward_", gatv2_args(rowptr, col, x_src, x_dst, x_edge, att, m, l,
                                                 acc, negative_slope, dropout, seed, src_ids,
                                                 dst_ids));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> gatv2_block_backward_cpu(
    const at::Tensor& grad_out, const at::Tensor& out, const at::Tensor& m, const at::Tensor& l,
    const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& x_src,
    const at::Tensor& x_dst, const std::optional<at::Tensor>& x_edge, const at::Tensor& att,
    double negative_slope, double dropout, int64_t seed, const std::optional<at::Tensor>& src_ids,
    const std::optional<at::Tensor>& dst_ids) {
  AttentionArgs a = gatv2_args(rowptr, col, x_src, x_dst, x_edge, att, m, l, out, negative_slope,
                               dropout, seed, src_ids, dst_ids);
  a.grad_out = grad_out;
  return run_backward("gatv2_block_backward", a);
}

}  // namespace

TORCH_LIBRARY_IMPL(pyg_sar, CPU, m) {
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::gat_block_forward_"), TORCH_FN(gat_block_forward_cpu));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::gat_block_backward"), TORCH_FN(gat_block_backward_cpu));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::gatv2_block_forward_"),
         TORCH_FN(gatv2_block_forward_cpu));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::gatv2_block_backward"),
         TORCH_FN(gatv2_block_backward_cpu));
}

}  // namespace ops
}  // namespace pyg_sar
