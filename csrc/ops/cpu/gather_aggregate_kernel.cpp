// CPU kernels of gather_aggregate: parallel over destination rows (forward, grad_weight), over
// source rows of the transposed CSR (sum/mean grad_x_src) and over feature columns (max/min
// grad_x_src), so every output element is written by one thread in a fixed order: results are
// deterministic for any thread count.
//
// The gathers read one random row per edge (x_src in the forward, grad_out in the backward), far
// beyond cache on large graphs, so the loops are bound by memory latency, not bandwidth. They
// software-prefetch the rows of upcoming edges (GatherPrefetch): the whole row a few edges ahead
// into L2, and the first cache line of a row further ahead, which starts its page walk and DRAM
// access early. Prefetches only move data into cache; the summation order per output element is
// untouched (ascending edges).
//
// Dtypes: rows x_src are read in their dtype T and widened on load (host_device.h's widen); every
// sum, product and comparison, the weights, grad_out and every output are in A = at::opmath_type
// of T (float32 for bfloat16 / float16; T itself for float32 / float64, where nothing changes).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "../gather_aggregate.h"
#include "parallel.h"

namespace pyg_sar {
namespace ops {

namespace {

namespace gam = gather_aggregate_math;

constexpr int64_t kCacheLine = 64;

// GCC's pure/const discovery treats a function whose only effect is __builtin_prefetch as const
// and deletes calls to it before inlining, dropping the prefetches; forcing the helpers inline
// keeps them in the loops.
#if defined(__GNUC__) || defined(__clang__)
#define PYG_SAR_PREFETCH_INLINE __attribute__((always_inline)) inline
#else
#define PYG_SAR_PREFETCH_INLINE inline
#endif

// A read hint for the cache lines of [p, p + bytes), into L2 (locality 1: prefetcht2 on x86).
PYG_SAR_PREFETCH_INLINE void prefetch_bytes(const void* p, int64_t bytes) {
#if defined(__GNUC__) || defined(__clang__)
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t last = a + static_cast<uintptr_t>(bytes);
  for (a &= ~static_cast<uintptr_t>(kCacheLine - 1); a < last; a += kCacheLine) {
    __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 1);
  }
#else
  (void)p;
  (void)bytes;
#endif
}

// Prefetches the gathered rows of upcoming edges: data + idx(k) * F for k < end. At step k, the
// whole row of step k + row_ahead (about kLinesInFlight cache lines of rows in flight) and, for
// rows wider than two lines, the first line of step k + line_ahead. `idx` maps a step to a row
// (col[k] in the forward). (The distances were tuned on 1 KiB rows; whole rows into L2 beat L1.)
template <typename T>
struct GatherPrefetch {
  static constexpr int64_t kLinesInFlight = 80;
  const T* data;
  int64_t F, end, row_bytes, row_ahead, line_ahead;

  GatherPrefetch(const T* data_, int64_t num_feat, int64_t end_)
      : data(data_), F(num_feat), end(end_), row_bytes(num_feat * int64_t(sizeof(T))) {
    const int64_t lines = std::max<int64_t>(1, (row_bytes + kCacheLine - 1) / kCacheLine);
    row_ahead = std::clamp<int64_t>(kLinesInFlight / lines, 1, 32);
    line_ahead = lines > 2 ? 3 * row_ahead + 1 : 0;
  }

  template <typename Idx>
  PYG_SAR_PREFETCH_INLINE void operator()(int64_t k, Idx idx) const {
    if (line_ahead != 0 && k + line_ahead < end) prefetch_bytes(data + idx(k + line_ahead) * F, 1);
    if (k + row_ahead < end) prefetch_bytes(data + idx(k + row_ahead) * F, row_bytes);
  }
};

// Asks the kernel to back a large, freshly allocated output with transparent huge pages before its
// first touch: the first write to each 4 KiB page of a fresh buffer is a page fault, which costs
// a large fraction of a gather pass over a 100+ MB output. A hint only (ignored where THP is off).
void advise_huge_pages(void* p, int64_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t(2) << 20;
  if (bytes < int64_t(8 * kHuge)) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = (a + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (a + static_cast<uintptr_t>(bytes)) & ~(kHuge - 1);
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

// o[f] += w_e * x[col[e], f] over the edges [e0, e1), ascending. Without weights the message
// is x itself (w = 1 multiplies exactly), so the multiply is left out.
template <typename T, typename A, bool kWeighted>
inline void accumulate_edges(const int64_t* col, const T* x, const A* weight, A* __restrict__ o,
                             int64_t F, int64_t e0, int64_t e1, const GatherPrefetch<T>& pf) {
  const auto col_at = [col](int64_t k) { return col[k]; };
  for (int64_t e = e0; e < e1; ++e) {
    pf(e, col_at);
    const T* __restrict__ xr = x + col[e] * F;
    if constexpr (kWeighted) {
      const A w = weight[e];
      for (int64_t f = 0; f < F; ++f) o[f] += gam::message(widen(xr[f]), w);
    } else {
      for (int64_t f = 0; f < F; ++f) o[f] += widen(xr[f]);
    }
  }
}

template <typename T, typename A, Reduce R>
void forward_rows(const int64_t* rowptr, const int64_t* col, const T* x, const A* weight, A* out,
                  int64_t* arg, int64_t num_feat, int64_t begin, int64_t end) {
  const int64_t F = num_feat;
  const GatherPrefetch<T> pf(x, F, rowptr[end]);
  const auto col_at = [col](int64_t k) { return col[k]; };
  for (int64_t i = begin; i < end; ++i) {
    const int64_t e0 = rowptr[i], e1 = rowptr[i + 1];
    A* __restrict__ o = out + i * F;
    if constexpr (gam::kHasArg<R>) {
      int64_t* __restrict__ a = arg + i * F;
      if (e0 == e1) {
        std::fill(o, o + F, A(0));
        std::fill(a, a + F, int64_t(-1));
        continue;
      }
      pf(e0, col_at);
      const T* __restrict__ x0 = x + col[e0] * F;
      const A w0 = gam::edge_weight(weight, e0);
      for (int64_t f = 0; f < F; ++f) {
        o[f] = gam::message(widen(x0[f]), w0);
        a[f] = e0;
      }
      for (int64_t e = e0 + 1; e < e1; ++e) {
        pf(e, col_at);
        const T* __restrict__ xr = x + col[e] * F;
        const A w = gam::edge_weight(weight, e);
        for (int64_t f = 0; f < F; ++f) {
          const A v = gam::message(widen(xr[f]), w);
          const bool take = gam::replaces<R>(v, o[f]);
          o[f] = take ? v : o[f];
          a[f] = take ? e : a[f];
        }
      }
    } else {
      std::fill(o, o + F, A(0));
      if (weight != nullptr) {
        accumulate_edges<T, A, true>(col, x, weight, o, F, e0, e1, pf);
      } else {
        accumulate_edges<T, A, false>(col, x, weight, o, F, e0, e1, pf);
      }
      if constexpr (R == Reduce::kMean) {
        for (int64_t f = 0; f < F; ++f) o[f] = gam::finalize<R>(o[f], e1 - e0);
      }
    }
  }
}

// Forward (GatherAggregateOps::forward has checked the arguments, made them contiguous and
// converted the weights to the accumulator dtype).
std::tuple<at::Tensor, at::Tensor> gather_aggregate_cpu(const at::Tensor& rowptr_c,
                                                        const at::Tensor& col_c,
                                                        const at::Tensor& x_c,
                                                        const at::Tensor& w_c, Reduce r) {
  const int64_t N = rowptr_c.numel() - 1, F = x_c.size(1), E = col_c.numel();
  const bool has_arg = r == Reduce::kMax || r == Reduce::kMin;

  at::Tensor out = at::empty({N, F}, x_c.options().dtype(accumulate_type(x_c.scalar_type())));
  advise_huge_pages(out.mutable_data_ptr(), static_cast<int64_t>(out.nbytes()));
  at::Tensor arg = at::empty({has_arg ? N : 0, has_arg ? F : 0}, rowptr_c.options());
  if (!has_arg) arg = arg.view({0});
  const int64_t grain = grain_for(N, E, F);

  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x_c.scalar_type(),
                                  "gather_aggregate_cpu", [&] {
    using A = acc_t<scalar_t>;
    const A* w = w_c.defined() ? w_c.const_data_ptr<A>() : nullptr;
    PYG_SAR_DISPATCH_REDUCE(r, [&] {
      at::parallel_for(0, N, grain, [&](int64_t begin, int64_t end) {
        forward_rows<scalar_t, A, R>(rowptr_c.const_data_ptr<int64_t>(),
                                     col_c.const_data_ptr<int64_t>(),
                                     x_c.const_data_ptr<scalar_t>(), w,
                                     out.mutable_data_ptr<A>(),
                                     has_arg ? arg.mutable_data_ptr<int64_t>() : nullptr, F,
                                     begin, end);
      });
    });
  });
  return {out, arg};
}

// sum/mean backward. The edges grouped by source row (a stable counting sort by col, so edge
// positions ascend within a source) and the destination row of every edge.
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
  at::parallel_for(0, num_dst, grain_for(num_dst, num_edges, 1), [&](int64_t begin, int64_t end) {
    int64_t* row = t.row.data();
    for (int64_t i = begin; i < end; ++i) std::fill(row + rowptr[i], row + rowptr[i + 1], i);
  });
  return t;
}

// grad_x[s] = sum over edges e of source s of (w_e * scale_i) * grad_out[i], parallel over s.
// The destination of step k is row[perm[k]], itself a random read: it is prefetched (with the
// edge's weight and row pointer) further ahead than the grad_out row it selects.
template <typename T, Reduce R>
void grad_x_sum_rows(const TransposedCsr& t, const int64_t* rowptr, const T* grad_out,
                     const T* weight, T* grad_x, int64_t num_feat, int64_t begin, int64_t end) {
  const int64_t F = num_feat;
  const int64_t* perm = t.perm.data();
  const int64_t* row = t.row.data();
  const int64_t ke = t.colptr[end];
  const GatherPrefetch<T> pf(grad_out, F, ke);
  const int64_t index_ahead = 2 * std::max(pf.row_ahead, pf.line_ahead);
  const auto dst_at = [perm, row](int64_t k) { return row[perm[k]]; };
  for (int64_t s = begin; s < end; ++s) {
    T* __restrict__ g = grad_x + s * F;
    std::fill(g, g + F, T(0));
    for (int64_t k = t.colptr[s]; k < t.colptr[s + 1]; ++k) {
      if (k + index_ahead < ke) {
        const int64_t ea = perm[k + index_ahead];
        prefetch_bytes(row + ea, sizeof(int64_t));
        if (weight != nullptr) prefetch_bytes(weight + ea, sizeof(T));
      }
      if (R == Reduce::kMean && k + pf.row_ahead < ke) {
        prefetch_bytes(rowptr + dst_at(k + pf.row_ahead), 2 * sizeof(int64_t));
      }
      pf(k, dst_at);
      const int64_t e = perm[k], i = row[e];
      const T* __restrict__ go = grad_out + i * F;
      const T c = gam::message(gam::message_grad_scale<R, T>(rowptr[i + 1] - rowptr[i]),
                               gam::edge_weight(weight, e));
      for (int64_t f = 0; f < F; ++f) g[f] += c * go[f];
    }
  }
}

// grad_weight[e] = scale_i * <x[col[e]], grad_out[i]>, parallel over destination rows i.
template <typename T, typename A, Reduce R>
void grad_weight_sum_rows(const int64_t* rowptr, const int64_t* col, const T* x,
                          const A* grad_out, A* grad_w, int64_t num_feat, int64_t begin,
                          int64_t end) {
  const int64_t F = num_feat;
  const GatherPrefetch<T> pf(x, F, rowptr[end]);
  const auto col_at = [col](int64_t k) { return col[k]; };
  for (int64_t i = begin; i < end; ++i) {
    const A* __restrict__ go = grad_out + i * F;
    const A scale = gam::message_grad_scale<R, A>(rowptr[i + 1] - rowptr[i]);
    for (int64_t e = rowptr[i]; e < rowptr[i + 1]; ++e) {
      pf(e, col_at);
      const T* __restrict__ xr = x + col[e] * F;
      A acc = A(0);
      for (int64_t f = 0; f < F; ++f) acc += widen(xr[f]) * go[f];
      grad_w[e] = acc * scale;
    }
  }
}

// max/min backward: element (i, f) sends its whole gradient to the one winning edge arg[i, f], so
// the work is O(N F), not O(E F). grad_x: parallel over feature columns [fb, fe), destinations in
// ascending order within each, so every grad_x element is summed in a fixed order (deterministic
// for any thread count) without atomics.
template <typename T>
void grad_x_arg_cols(const int64_t* col, const T* grad_out, const T* weight, const int64_t* arg,
                     T* grad_x, int64_t num_dst, int64_t num_feat, int64_t fb, int64_t fe) {
  const int64_t F = num_feat;
  for (int64_t i = 0; i < num_dst; ++i) {
    const int64_t* a = arg + i * F;
    const T* go = grad_out + i * F;
    for (int64_t f = fb; f < fe; ++f) {
      const int64_t e = a[f];
      if (e >= 0) grad_x[col[e] * F + f] += gam::message(go[f], gam::edge_weight(weight, e));
    }
  }
}

// grad_weight for max/min: row i only touches its own edges, so rows run in parallel.
template <typename T, typename A>
void grad_weight_arg_rows(const int64_t* rowptr, const int64_t* col, const T* x,
                          const A* grad_out, const int64_t* arg, A* grad_w, int64_t num_feat,
                          int64_t begin, int64_t end) {
  const int64_t F = num_feat;
  for (int64_t i = begin; i < end; ++i) {
    const int64_t* a = arg + i * F;
    const A* go = grad_out + i * F;
    for (int64_t f = 0; f < F; ++f) {
      const int64_t e = a[f];
      if (e < 0) continue;
      // another row's edge would make two threads write one grad_weight entry
      TORCH_CHECK_VALUE(e >= rowptr[i] && e < rowptr[i + 1], "gather_aggregate_backward: arg[", i,
                        ", ", f, "] = ", e, " is not an edge of row ", i, " (its edges are [",
                        rowptr[i], ", ", rowptr[i + 1], "))");
      grad_w[e] += widen(x[col[e] * F + f]) * go[f];
    }
  }
}

// Backward (arguments checked and contiguous; x_c defined only when weight_requires_grad, arg_c
// only for max/min; g_c and w_c in the accumulator dtype, as the outputs).
std::tuple<at::Tensor, at::Tensor> gather_aggregate_backward_cpu(
    const at::Tensor& g_c, const at::Tensor& rowptr_c, const at::Tensor& col_c,
    const at::Tensor& x_c, const at::Tensor& w_c, const at::Tensor& arg_c, Reduce r,
    int64_t num_src, bool weight_requires_grad) {
  const bool has_arg = r == Reduce::kMax || r == Reduce::kMin;
  const int64_t N = rowptr_c.numel() - 1, F = g_c.size(1), E = col_c.numel();
  const int64_t* rp = rowptr_c.const_data_ptr<int64_t>();
  const int64_t* cp = col_c.const_data_ptr<int64_t>();
  const int64_t* ap = has_arg ? arg_c.const_data_ptr<int64_t>() : nullptr;

  // max/min scatter into their outputs (zero-filled); sum/mean write every element once
  auto alloc = [&](at::IntArrayRef size) {
    at::Tensor t = at::empty(size, g_c.options());
    advise_huge_pages(t.mutable_data_ptr(), static_cast<int64_t>(t.nbytes()));
    return has_arg ? t.zero_() : t;
  };
  at::Tensor grad_x = alloc({num_src, F});
  at::Tensor grad_w = alloc({weight_requires_grad ? E : 0});

  // x's dtype picks the instantiation (only grad_weight reads x); the rest runs in g_c's.
  const at::ScalarType xt = x_c.defined() ? x_c.scalar_type() : g_c.scalar_type();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, xt,
                                  "gather_aggregate_backward_cpu", [&] {
    using A = acc_t<scalar_t>;
    const A* w = w_c.defined() ? w_c.const_data_ptr<A>() : nullptr;
    const A* go = g_c.const_data_ptr<A>();
    A* gx = grad_x.mutable_data_ptr<A>();
    A* gw = weight_requires_grad ? grad_w.mutable_data_ptr<A>() : nullptr;
    const scalar_t* xp = weight_requires_grad ? x_c.const_data_ptr<scalar_t>() : nullptr;
    if (has_arg) {
      const int64_t col_grain =
          std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(N, 1));
      at::parallel_for(0, F, col_grain, [&](int64_t fb, int64_t fe) {
        grad_x_arg_cols<A>(cp, go, w, ap, gx, N, F, fb, fe);
      });
      if (weight_requires_grad) {
        at::parallel_for(0, N, grain_for(N, 0, F), [&](int64_t begin, int64_t end) {
          grad_weight_arg_rows<scalar_t, A>(rp, cp, xp, go, ap, gw, F, begin, end);
        });
      }
      return;
    }
    const TransposedCsr t = transpose(rp, cp, N, num_src, E);
    PYG_SAR_DISPATCH_REDUCE(r, [&] {
      if constexpr (!gam::kHasArg<R>) {
        at::parallel_for(0, num_src, grain_for(num_src, E, F), [&](int64_t begin, int64_t end) {
          grad_x_sum_rows<A, R>(t, rp, go, w, gx, F, begin, end);
        });
        if (weight_requires_grad) {
          at::parallel_for(0, N, grain_for(N, E, F), [&](int64_t begin, int64_t end) {
            grad_weight_sum_rows<scalar_t, A, R>(rp, cp, xp, go, gw, F, begin, end);
          });
        }
      }
    });
  });
  return {grad_x, grad_w};
}

struct CpuKernels {
  static constexpr auto forward = &gather_aggregate_cpu;
  static constexpr auto backward = &gather_aggregate_backward_cpu;
};

}  // namespace

TORCH_LIBRARY_IMPL(pyg_sar, CPU, m) { register_gather_aggregate_kernels<CpuKernels>(m); }

}  // namespace ops
}  // namespace pyg_sar
