// CPU kernels of the fused attention ops. Forward and the first backward pass run in parallel
// over destination rows; the second backward pass (gradients of source rows) runs in parallel
// over source rows of the transposed CSR (gat_transpose, cached per block by the caller), from
// per-edge coefficients the first pass stores. Every output element is written by one thread in a
// fixed order, so results do not depend on the thread count. Inner loops run over the C channels
// of one head (contiguous), which the compiler vectorises.
//
// Dtypes: the inputs are read in their dtype T (widened on load: host_device.h); the state m, l,
// acc, grad_out, out, the per-edge coefficients and every gradient are in A = acc_t<T> (float32
// for bfloat16 / float16; T itself for float32 / float64).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "../gat_attention.h"
#include "parallel.h"

namespace pyg_sar {
namespace ops {

namespace {

namespace gm = gat_math;

// `omp simd` lets the compiler split the sum into vector lanes (a fixed order: the result does
// not depend on threads), which plain -O3 may not do for floating point.
// (a in the accumulator type A, b stored as A or as a half type widened on load)
template <typename A, typename B>
A dot(const A* __restrict__ a, const B* __restrict__ b, int64_t n) {
  A s = A(0);
#pragma omp simd reduction(+ : s)
  for (int64_t c = 0; c < n; ++c) s += a[c] * widen(b[c]);
  return s;
}

template <typename T>
using Ptrs = gm::Inputs<T, acc_t<T>>;

// The gathers (source rows in forward and pass 1, grad_out rows in pass 2) are random accesses
// that miss the cache on large graphs; fetching them a few edges ahead overlaps the misses.
constexpr int64_t kPrefetchAhead = 4;

inline void prefetch_bytes(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(c + b);
}

// Prefetches the score and value inputs of source row col[e] when e < e_end.
template <typename T>
inline void prefetch_source(const Ptrs<T>& P, int64_t e, int64_t e_end) {
  if (e >= e_end) return;
  const int64_t j = P.col[e];
  prefetch_bytes(P.x_src + j * P.H * P.C, P.H * P.C * static_cast<int64_t>(sizeof(T)));
  if (P.a_src != nullptr) __builtin_prefetch(P.a_src + j * P.H);
}

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
          static_cast<acc_t<T>>(a.negative_slope), a.dropout, a.seed};
}

// Forward over destination rows [begin, end): online softmax per (row, head) into m, l, acc.
template <typename T, typename A = acc_t<T>>
void forward_rows(const Ptrs<T>& P, A* m, A* l, A* acc, int64_t begin, int64_t end) {
  const int64_t H = P.H, C = P.C;
  for (int64_t i = begin; i < end; ++i) {
    const int64_t e0 = P.rowptr[i], e1 = P.rowptr[i + 1];
    if (e0 == e1) continue;
    for (int64_t h = 0; h < H; ++h) {
      gm::OnlineSoftmax<A> st{m[i * H + h], l[i * H + h]};
      A* __restrict__ a = acc + (i * H + h) * C;
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t j = P.col[e];
        A w;
        const A rescale = st.push(P.score(e, j, i, h), w);
        if (rescale != A(1)) {
          for (int64_t c = 0; c < C; ++c) a[c] *= rescale;
        }
        const A wd = w * P.drop(j, i, h);
        const T* __restrict__ x = P.x_src + (j * H + h) * C;
        for (int64_t c = 0; c < C; ++c) a[c] += wd * widen(x[c]);
      }
      m[i * H + h] = st.m;
      l[i * H + h] = st.l;
    }
  }
}

void run_forward(const char* op, const AttentionArgs& a) {
  const Contig c = contiguous(a);
  const int64_t N = a.num_dst(), E = a.num_edges(), H = a.heads(), C = a.channels();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, a.x_src.scalar_type(),
                                  "gat_attention_cpu", [&] {
    using A = acc_t<scalar_t>;
    const Ptrs<scalar_t> P = pointers<scalar_t>(c, a);
    A* m = a.m.mutable_data_ptr<A>();
    A* l = a.l.mutable_data_ptr<A>();
    A* acc = a.acc.mutable_data_ptr<A>();
    at::parallel_for(0, N, grain_for(N, E, H * C), [&](int64_t begin, int64_t end) {
      forward_rows<scalar_t>(P, m, l, acc, begin, end);
    });
  });
}

// The block's CSR grouped by source row (gat_transpose's layout): colptr [S + 1], perm [E] (edge
// ids, ascending within a source) and row [E] (the destination of every perm entry, stored in
// perm order so that pass 2 reads it sequentially).
struct TransposedView {
  const int64_t *colptr, *perm, *row;
};

// Stable counting sort, for calls without a cached gat_transpose (tests, one-off calls).
at::Tensor transpose_cpu(const int64_t* rowptr, const int64_t* col, int64_t num_dst,
                         int64_t num_src, int64_t num_edges) {
  at::Tensor out = at::empty({num_src + 1 + 2 * num_edges}, at::kLong);
  int64_t* colptr = out.mutable_data_ptr<int64_t>();
  int64_t* perm = colptr + num_src + 1;
  int64_t* row = perm + num_edges;
  std::fill(colptr, colptr + num_src + 1, 0);
  for (int64_t e = 0; e < num_edges; ++e) ++colptr[col[e] + 1];
  for (int64_t s = 0; s < num_src; ++s) colptr[s + 1] += colptr[s];
  std::vector<int64_t> cursor(colptr, colptr + num_src);
  for (int64_t i = 0; i < num_dst; ++i) {
    for (int64_t e = rowptr[i]; e < rowptr[i + 1]; ++e) {
      const int64_t k = cursor[col[e]]++;
      perm[k] = e;
      row[k] = i;
    }
  }
  return out;
}

// Backward pass 1 over destination rows: D = <dout, out>, the gradients of the destination-side
// inputs (a_dst or x_dst), of the edge inputs (a_edge or x_edge) and, for GATv2, each row's share
// of grad_att (summed over rows afterwards, in a fixed order). Also stores, per (edge, head), the
// two coefficients pass 2 needs, coef[2 (e H + h) + {0, 1}] = (drop a, ds) (GAT: ds times the
// leaky_relu slope, i.e. the gradient of the pre-activation), so pass 2 does not recompute the
// attention (which would re-gather a_dst, m, l, D and grad_out rows and redo the dot products).
template <typename T, typename A = acc_t<T>>
void backward_dst_rows(const Ptrs<T>& P, const A* go, const A* out, const A* m, const A* l,
                       A* big_d, A* g_dst, A* g_edge, A* g_att_rows, A* coef, int64_t begin,
                       int64_t end) {
  const int64_t H = P.H, C = P.C;
  const bool v2 = P.att != nullptr;
  const int64_t e_end = P.rowptr[end];
  for (int64_t i = begin; i < end; ++i) {
    const int64_t e0 = P.rowptr[i], e1 = P.rowptr[i + 1];
    if (!v2) {
      // GAT: heads inner, so each source row and coefficient pair is touched once per edge.
      const A* __restrict__ g = go + i * H * C;
      A* __restrict__ gd = g_dst + i * H;
      for (int64_t h = 0; h < H; ++h) {
        big_d[i * H + h] = dot(g + h * C, out + (i * H + h) * C, C);
        gd[h] = A(0);
      }
      for (int64_t e = e0; e < e1; ++e) {
        prefetch_source(P, e + kPrefetchAhead, e_end);
        const int64_t j = P.col[e];
        const T* __restrict__ xs = P.x_src + j * H * C;
        A* __restrict__ ce = coef + 2 * e * H;
        for (int64_t h = 0; h < H; ++h) {
          const int64_t ih = i * H + h;
          const A pre = gm::gat_pre(widen(P.a_src[j * H + h]), widen(P.a_dst[ih]), P.a_edge,
                                    e * H + h);
          const A a = gm::attention(gm::leaky_relu(pre, P.slope), m[ih], l[ih]);
          const A drop = P.drop(j, i, h);
          const A ds = gm::score_grad(a, drop, dot(g + h * C, xs + h * C, C), big_d[ih]);
          const A dpre = ds * gm::leaky_relu_grad(pre, P.slope);
          gd[h] += dpre;
          if (g_edge != nullptr) g_edge[e * H + h] = dpre;
          ce[2 * h] = a * drop;
          ce[2 * h + 1] = dpre;
        }
      }
      continue;
    }
    for (int64_t h = 0; h < H; ++h) {
      const int64_t ih = i * H + h;
      const A* __restrict__ g = go + ih * C;
      const A D = dot(g, out + ih * C, C);
      big_d[ih] = D;
      const A mi = m[ih], li = l[ih];
      A* __restrict__ gd = g_dst + ih * C;
      A* __restrict__ gat = g_att_rows + ih * C;
      std::fill(gd, gd + C, A(0));
      std::fill(gat, gat + C, A(0));
      const T* __restrict__ att = P.att + h * C;
      const T* __restrict__ xd = P.x_dst + ih * C;
      for (int64_t e = e0; e < e1; ++e) {
        if (h == 0) prefetch_source(P, e + kPrefetchAhead, e_end);
        const int64_t j = P.col[e];
        const T* __restrict__ xs = P.x_src + (j * H + h) * C;
        const T* xe = P.x_edge == nullptr ? nullptr : P.x_edge + (e * H + h) * C;
        const A a = gm::attention(P.score(e, j, i, h), mi, li);
        const A drop = P.drop(j, i, h);
        const A ds = gm::score_grad(a, drop, dot(g, xs, C), D);
        coef[2 * (e * H + h)] = a * drop;
        coef[2 * (e * H + h) + 1] = ds;
        A* ge = g_edge == nullptr ? nullptr : g_edge + (e * H + h) * C;
        for (int64_t c = 0; c < C; ++c) {
          const A pre = gm::gatv2_pre(widen(xs[c]), widen(xd[c]), xe, c);
          const A gp = ds * widen(att[c]) * gm::leaky_relu_grad(pre, P.slope);
          gd[c] += gp;
          gat[c] += ds * gm::leaky_relu(pre, P.slope);
          if (ge != nullptr) ge[c] = gp;
        }
      }
    }
  }
}

// Backward pass 2 over source rows [begin, end) of the transposed CSR, from pass 1's per-edge
// coefficients: grad of x_src (values and, for GATv2, the score input) and, for GAT, of a_src.
// Returns false when the transposed structure holds an out-of-range index.
template <typename T, typename A = acc_t<T>>
bool backward_src_rows(const Ptrs<T>& P, const TransposedView& t, int64_t num_dst,
                       int64_t num_edges, const A* go, const A* coef, A* g_x, A* g_asrc,
                       int64_t begin, int64_t end) {
  const int64_t H = P.H, C = P.C;
  const bool v2 = P.att != nullptr;
  // bound of the prefetch look-ahead (clamped: colptr is validated row by row below)
  const int64_t k_end = std::min<int64_t>(std::max<int64_t>(t.colptr[end], 0), num_edges);
  for (int64_t j = begin; j < end; ++j) {
    A* __restrict__ gx = g_x + j * H * C;
    std::fill(gx, gx + H * C, A(0));
    A* gas = v2 ? nullptr : g_asrc + j * H;
    if (!v2) std::fill(gas, gas + H, A(0));
    const int64_t k0 = t.colptr[j], k1 = t.colptr[j + 1];
    if (k0 < 0 || k1 < k0 || k1 > num_edges) return false;
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t e = t.perm[k], i = t.row[k];
      if (e < 0 || e >= num_edges || i < 0 || i >= num_dst) return false;
      if (k + kPrefetchAhead < k_end) {
        const int64_t ea = t.perm[k + kPrefetchAhead], ia = t.row[k + kPrefetchAhead];
        if (ea >= 0 && ea < num_edges && ia >= 0 && ia < num_dst) {
          prefetch_bytes(go + ia * H * C, H * C * static_cast<int64_t>(sizeof(A)));
          prefetch_bytes(coef + 2 * ea * H, 2 * H * static_cast<int64_t>(sizeof(A)));
        }
      }
      const A* __restrict__ ce = coef + 2 * e * H;
      if (!v2) {
        for (int64_t h = 0; h < H; ++h) gas[h] += ce[2 * h + 1];
        if (H == 1) {  // the common single-head case: one contiguous axpy of C
          const A ad = ce[0];
          const A* __restrict__ g = go + i * C;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) gx[c] += ad * g[c];
          continue;
        }
        const A* __restrict__ g = go + i * H * C;
        for (int64_t h = 0; h < H; ++h) {
          const A ad = ce[2 * h];
          A* __restrict__ gxh = gx + h * C;
          const A* __restrict__ gh = g + h * C;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) gxh[c] += ad * gh[c];
        }
        continue;
      }
      for (int64_t h = 0; h < H; ++h) {
        const int64_t ih = i * H + h;
        const A ad = ce[2 * h], ds = ce[2 * h + 1];
        const A* __restrict__ g = go + ih * C;
        const T* __restrict__ xs = P.x_src + (j * H + h) * C;
        const T* __restrict__ att = P.att + h * C;
        const T* __restrict__ xd = P.x_dst + ih * C;
        const T* xe = P.x_edge == nullptr ? nullptr : P.x_edge + (e * H + h) * C;
        A* __restrict__ gxh = gx + h * C;
        for (int64_t c = 0; c < C; ++c) {
          const A pre = gm::gatv2_pre(widen(xs[c]), widen(xd[c]), xe, c);
          gxh[c] += ds * widen(att[c]) * gm::leaky_relu_grad(pre, P.slope) + ad * g[c];
        }
      }
    }
  }
  return true;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> run_backward(const char* op,
                                                                        const AttentionArgs& a) {
  const Contig c = contiguous(a);
  const int64_t N = a.num_dst(), S = a.num_src(), E = a.num_edges(), H = a.heads(),
                C = a.channels();
  const bool v2 = a.kind == AttentionKind::kGatV2;
  const bool has_edge = v2 ? a.x_edge.defined() : a.a_edge.defined();
  // every gradient in the accumulator dtype (AttentionOps casts them to the inputs' dtype)
  const auto opts = a.x_src.options().dtype(accumulate_type(a.x_src.scalar_type()));
  at::Tensor g_x = at::empty({S, H, C}, opts);
  at::Tensor g_asrc = v2 ? at::empty({0}, opts) : at::empty({S, H}, opts);
  at::Tensor g_dst = v2 ? at::empty({N, H, C}, opts) : at::empty({N, H}, opts);
  at::Tensor g_edge = !has_edge ? at::empty({0}, opts)
                                : (v2 ? at::empty({E, H, C}, opts) : at::empty({E, H}, opts));
  at::Tensor g_att_rows = v2 ? at::empty({N, H, C}, opts) : at::empty({0}, opts);
  at::Tensor big_d = at::empty({N, H}, opts);
  // Per-edge (drop a, ds) of this block: 2 E H values that live for this call only.
  at::Tensor coef = at::empty({E, H, 2}, opts);
  const at::Tensor tr = a.transposed.defined()
                            ? a.transposed.contiguous()
                            : transpose_cpu(c.rowptr.const_data_ptr<int64_t>(),
                                            c.col.const_data_ptr<int64_t>(), N, S, E);
  const int64_t* trp = tr.const_data_ptr<int64_t>();
  const TransposedView t{trp, trp + S + 1, trp + S + 1 + E};
  TORCH_CHECK_VALUE(t.colptr[0] == 0 && t.colptr[S] == E, op,
                    ": transposed is not gat_transpose(rowptr, col, ", S, ") (colptr runs from ",
                    t.colptr[0], " to ", t.colptr[S], ", expected 0 to ", E, ")");
  bool ok = true;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, a.x_src.scalar_type(),
                                  "gat_attention_cpu", [&] {
    using A = acc_t<scalar_t>;
    const Ptrs<scalar_t> P = pointers<scalar_t>(c, a);
    const A* go = c.grad_out.const_data_ptr<A>();
    const A* out = c.acc.const_data_ptr<A>();
    const A* m = c.m.const_data_ptr<A>();
    const A* l = c.l.const_data_ptr<A>();
    A* bd = big_d.mutable_data_ptr<A>();
    A* ge = has_edge ? g_edge.mutable_data_ptr<A>() : nullptr;
    A* gar = v2 ? g_att_rows.mutable_data_ptr<A>() : nullptr;
    A* gd = g_dst.mutable_data_ptr<A>();
    A* cf = coef.mutable_data_ptr<A>();
    at::parallel_for(0, N, grain_for(N, E, H * C), [&](int64_t begin, int64_t end) {
      backward_dst_rows<scalar_t>(P, go, out, m, l, bd, gd, ge, gar, cf, begin, end);
    });
    A* gas = v2 ? nullptr : g_asrc.mutable_data_ptr<A>();
    A* gx = g_x.mutable_data_ptr<A>();
    std::atomic<bool> valid{true};
    at::parallel_for(0, S, grain_for(S, E, H * C), [&](int64_t begin, int64_t end) {
      if (!backward_src_rows<scalar_t>(P, t, N, E, go, cf, gx, gas, begin, end)) valid = false;
    });
    ok = valid.load();
  });
  TORCH_CHECK_VALUE(ok, op, ": transposed is not gat_transpose(rowptr, col, ", S,
                    ") (an index out of range)");
  if (v2) return {g_x, g_dst, g_edge, g_att_rows.sum(0)};
  return {g_x, g_asrc, g_dst, g_edge};
}

struct CpuKernels {
  static constexpr auto forward = &run_forward;
  static constexpr auto backward = &run_backward;
};

}  // namespace

TORCH_LIBRARY_IMPL(pyg_sar, CPU, m) { register_attention_kernels<CpuKernels>(m); }

}  // namespace ops
}  // namespace pyg_sar
