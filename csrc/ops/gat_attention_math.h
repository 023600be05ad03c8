// Per-edge arithmetic of the fused attention ops (GAT and GATv2), shared by the CPU and the CUDA
// kernels so that the CPU tests check the same arithmetic the GPU runs. Torch-free: nvcc compiles
// it without ATen.
//
// Online softmax over a destination's in-edges, per head h:
//   m <- max(m, s_e);  l <- l * exp(m_old - m) + exp(s_e - m);
//   acc <- acc * exp(m_old - m) + drop_e * exp(s_e - m) * v_e;   out = acc / l (0 where l == 0)
// Backward with a_e = exp(s_e - m) / l and D = <dout_i, out_i>:
//   dv_e = drop_e a_e dout_i;   ds_e = a_e (drop_e <dout_i, v_e> - D).
//
// Attention dropout is a counter-based hash of (seed, src id, dst id, head): the same edge gets
// the same mask in the forward pass, the backward recomputation and on any number of ranks when
// the ids are global node ids.
//
// Dtypes: the functions below compute in the accumulator type A (float or double); Inputs<T, A>
// reads the stored inputs of type T (float, double, or a bfloat16 / float16 type) and widens each
// on load (host_device.h), so a bfloat16 call does every score, exponential and sum in float32.
#pragma once

#include <cmath>
#include <cstdint>

#include "host_device.h"

namespace pyg_sar {
namespace ops {
namespace gat_math {

template <typename T>
PYG_SAR_HOST_DEVICE T leaky_relu(T x, T slope) {
  return x > T(0) ? x : x * slope;
}

// d leaky_relu / dx as torch computes it (slope at x == 0).
template <typename T>
PYG_SAR_HOST_DEVICE T leaky_relu_grad(T x, T slope) {
  return x > T(0) ? T(1) : slope;
}

template <typename T>
PYG_SAR_HOST_DEVICE T exp_(T x) {
  using std::exp;  // the float overload for float
  return exp(x);
}

// The splitmix64 finaliser: a bijective 64-bit mixer with full avalanche.
PYG_SAR_HOST_DEVICE uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform double in [0, 1) from (seed, src, dst, head); independent of edge order and of ranks.
PYG_SAR_HOST_DEVICE double dropout_uniform(int64_t seed, int64_t src, int64_t dst, int64_t head) {
  uint64_t h = mix64(static_cast<uint64_t>(seed) + 0x9e3779b97f4a7c15ULL);
  h = mix64(h ^ static_cast<uint64_t>(src));
  h = mix64(h ^ (static_cast<uint64_t>(dst) * 0xd6e8feb86659fd93ULL));
  h = mix64(h ^ (static_cast<uint64_t>(head) + 0x632be59bd9b4e019ULL));
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);  // 53 random bits
}

// The dropout multiplier of an attention coefficient: 0 (dropped) or 1 / (1 - p); 1 when p == 0.
template <typename T>
PYG_SAR_HOST_DEVICE T dropout_scale(double p, int64_t seed, int64_t src, int64_t dst,
                                    int64_t head) {
  if (p <= 0.0) return T(1);
  if (p >= 1.0) return T(0);
  return dropout_uniform(seed, src, dst, head) < p ? T(0) : T(1) / (T(1) - static_cast<T>(p));
}

// Running (max, denominator) of one (destination, head). Feeding score s returns the factor by
// which the accumulator must be rescaled and sets `weight` to exp(s - m).
template <typename T>
struct OnlineSoftmax {
  T m, l;

  PYG_SAR_HOST_DEVICE T push(T s, T& weight) {
    T rescale = T(1);
    if (s > m) {
      // m == -inf before the first score: exp(-inf) is 0 and acc/l are 0 anyway
      rescale = isinf_neg(m) ? T(0) : exp_(m - s);
      l *= rescale;
      m = s;
    }
    weight = exp_(s - m);
    l += weight;
    return rescale;
  }

  PYG_SAR_HOST_DEVICE static bool isinf_neg(T v) { return v == -INFINITY; }
};

// a_e = exp(s - m) / l, 0 for a destination without edges (l == 0).
template <typename T>
PYG_SAR_HOST_DEVICE T attention(T s, T m, T l) {
  return l > T(0) ? exp_(s - m) / l : T(0);
}

// ds_e = a_e (drop_e <dout_i, v_e> - D_i).
template <typename T>
PYG_SAR_HOST_DEVICE T score_grad(T a, T drop, T dot, T big_d) {
  return a * (drop * dot - big_d);
}

// GAT: s = leaky_relu(pre), pre = a_src[j] + a_dst[i] (+ a_edge[e]) (a_edge stored as T).
template <typename A, typename T>
PYG_SAR_HOST_DEVICE A gat_pre(A a_src, A a_dst, const T* a_edge, int64_t idx) {
  return a_edge == nullptr ? a_src + a_dst : a_src + a_dst + widen(a_edge[idx]);
}

// GATv2: the pre-activation of one channel, x_src[j] + x_dst[i] (+ x_edge[e]).
template <typename A, typename T>
PYG_SAR_HOST_DEVICE A gatv2_pre(A x_src, A x_dst, const T* x_edge, int64_t idx) {
  return x_edge == nullptr ? x_src + x_dst : x_src + x_dst + widen(x_edge[idx]);
}

// Raw pointers of one op call (contiguous tensors; null for absent ones) and the per-edge score
// and dropout multiplier computed from them, in the accumulator type A: the one definition both
// backends use. GAT when att == nullptr, GATv2 otherwise. T: the stored inputs' type.
template <typename T, typename A = T>
struct Inputs {
  const int64_t *rowptr, *col;
  const T *x_src, *a_src, *a_dst, *a_edge, *x_dst, *x_edge, *att;
  const int64_t *src_ids, *dst_ids;
  int64_t H, C;
  A slope;
  double p;
  int64_t seed;

  // Dropout multiplier of edge j -> i, head h.
  PYG_SAR_HOST_DEVICE A drop(int64_t j, int64_t i, int64_t h) const {
    return p > 0.0 ? dropout_scale<A>(p, seed, src_ids[j], dst_ids[i], h) : A(1);
  }

  // Score of edge e (j -> i) for head h.
  PYG_SAR_HOST_DEVICE A score(int64_t e, int64_t j, int64_t i, int64_t h) const {
    if (att == nullptr) {
      return leaky_relu(gat_pre(widen(a_src[j * H + h]), widen(a_dst[i * H + h]), a_edge,
                                e * H + h),
                        slope);
    }
    const T* xs = x_src + (j * H + h) * C;
    const T* xd = x_dst + (i * H + h) * C;
    const T* xe = x_edge == nullptr ? nullptr : x_edge + (e * H + h) * C;
    const T* w = att + h * C;
    A s = A(0);
    for (int64_t c = 0; c < C; ++c) {
      s += widen(w[c]) * leaky_relu(gatv2_pre(widen(xs[c]), widen(xd[c]), xe, c), slope);
    }
    return s;
  }
};

}  // namespace gat_math
}  // namespace ops
}  // namespace pyg_sar
