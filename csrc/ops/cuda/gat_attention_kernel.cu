// CUDA kernels of the fused attention ops. No torch header: raw pointers and sizes, the per-edge
// arithmetic from gat_attention_math.h (the same the CPU kernels run), explicitly instantiated
// for inputs of float, double, __nv_bfloat16 and __half; the inputs are widened on load and the
// state, every sum and every gradient are in A = acc_t<T> (float for the half types). Forward: one warp per destination row (GAT: lanes over the H * C
// features, each lane running the online softmax of its head; GATv2: lanes over heads, since
// the score of a head needs all of its channels). Backward: one thread per (destination, head)
// and per (source, head) of the transposed CSR, so every gradient element is written by one
// thread in a fixed edge order: deterministic, no atomics.
#include "gat_attention_kernel.cuh"

namespace pyg_sar {
namespace ops {
namespace cuda {

namespace {

namespace gm = gat_math;

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int64_t kMaxBlocks = 65535;

int64_t num_blocks(int64_t work, int64_t per_block) {
  const int64_t b = (work + per_block - 1) / per_block;
  return b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b);
}

// (a in the accumulator type A, b stored as A or as a half type widened on load)
template <typename A, typename B>
__device__ A dot(const A* a, const B* b, int64_t n) {
  A s = A(0);
  for (int64_t c = 0; c < n; ++c) s += a[c] * widen(b[c]);
  return s;
}

// GAT forward: warp per destination row; lane f of a feature chunk keeps the (m, l) of its head
// in registers (recomputed identically by the C lanes of a head) and its own accumulator.
// The row loop is warp-uniform (i depends on the warp only).
template <typename T, typename A = acc_t<T>>
__global__ void gat_forward_kernel(gm::Inputs<T, A> in, A* __restrict__ m, A* __restrict__ l,
                                   A* __restrict__ acc, int64_t num_dst) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
  const int64_t H = in.H, C = in.C, F = H * C;
  for (int64_t i = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp; i < num_dst;
       i += warps) {
    const int64_t e0 = in.rowptr[i], e1 = in.rowptr[i + 1];
    if (e0 == e1) continue;
    // Uniform trip count over feature chunks so that __syncwarp is reached by every lane: all
    // lanes of a head read its initial (m, l) before the lane of its last channel writes them
    // (that lane sits in the last chunk touching the head).
    for (int64_t f0 = 0; f0 < F; f0 += kWarp) {
      const int64_t f = f0 + lane, h = f / C, c = f % C;
      const bool active = f < F;
      gm::OnlineSoftmax<A> st{A(0), A(0)};
      if (active) {
        st = gm::OnlineSoftmax<A>{m[i * H + h], l[i * H + h]};
        A a = acc[i * F + f];
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t j = in.col[e];
          A w;
          a *= st.push(in.score(e, j, i, h), w);
          a += w * in.drop(j, i, h) * widen(in.x_src[j * F + f]);
        }
        acc[i * F + f] = a;
      }
      __syncwarp();
      if (active && c == C - 1) {
        m[i * H + h] = st.m;
        l[i * H + h] = st.l;
      }
    }
  }
}

// GATv2 forward: warp per destination row, lanes over heads; each lane updates acc[i, h, :].
template <typename T, typename A = acc_t<T>>
__global__ void gatv2_forward_kernel(gm::Inputs<T, A> in, A* __restrict__ m, A* __restrict__ l,
                                     A* __restrict__ acc, int64_t num_dst) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
  const int64_t H = in.H, C = in.C;
  for (int64_t i = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp; i < num_dst;
       i += warps) {
    const int64_t e0 = in.rowptr[i], e1 = in.rowptr[i + 1];
    if (e0 == e1) continue;
    for (int64_t h = lane; h < H; h += kWarp) {
      gm::OnlineSoftmax<A> st{m[i * H + h], l[i * H + h]};
      A* a = acc + (i * H + h) * C;
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t j = in.col[e];
        A w;
        const A rescale = st.push(in.score(e, j, i, h), w);
        const A wd = w * in.drop(j, i, h);
        const T* x = in.x_src + (j * H + h) * C;
        for (int64_t c = 0; c < C; ++c) a[c] = a[c] * rescale + wd * widen(x[c]);
      }
      m[i * H + h] = st.m;
      l[i * H + h] = st.l;
    }
  }
}

// Backward pass 1: one thread per (destination, head).
template <typename T, typename A = acc_t<T>>
__global__ void backward_dst_kernel(gm::Inputs<T, A> in, const A* __restrict__ go,
                                    const A* __restrict__ out, const A* __restrict__ m,
                                    const A* __restrict__ l, A* __restrict__ big_d,
                                    A* __restrict__ g_dst, A* __restrict__ g_edge,
                                    A* __restrict__ g_att_rows, int64_t num_dst) {
  const int64_t H = in.H, C = in.C;
  const bool v2 = in.att != nullptr;
  for (int64_t ih = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; ih < num_dst * H;
       ih += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = ih / H, h = ih % H;
    const A* g = go + ih * C;
    const A D = dot(g, out + ih * C, C);
    big_d[ih] = D;
    const int64_t e0 = in.rowptr[i], e1 = in.rowptr[i + 1];
    if (!v2) {
      A acc = A(0);
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t j = in.col[e];
        const A pre = gm::gat_pre(widen(in.a_src[j * H + h]), widen(in.a_dst[ih]), in.a_edge,
                                  e * H + h);
        const A a = gm::attention(gm::leaky_relu(pre, in.slope), m[ih], l[ih]);
        const A ds = gm::score_grad(a, in.drop(j, i, h), dot(g, in.x_src + (j * H + h) * C, C), D);
        const A dpre = ds * gm::leaky_relu_grad(pre, in.slope);
        acc += dpre;
        if (g_edge != nullptr) g_edge[e * H + h] = dpre;
      }
      g_dst[ih] = acc;
      continue;
    }
    A* gd = g_dst + ih * C;
    A* gat = g_att_rows + ih * C;
    for (int64_t c = 0; c < C; ++c) gd[c] = gat[c] = A(0);
    const T* att = in.att + h * C;
    const T* xd = in.x_dst + ih * C;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t j = in.col[e];
      const T* xs = in.x_src + (j * H + h) * C;
      const T* xe = in.x_edge == nullptr ? nullptr : in.x_edge + (e * H + h) * C;
      const A a = gm::attention(in.score(e, j, i, h), m[ih], l[ih]);
      const A ds = gm::score_grad(a, in.drop(j, i, h), dot(g, xs, C), D);
      for (int64_t c = 0; c < C; ++c) {
        const A pre = gm::gatv2_pre(widen(xs[c]), widen(xd[c]), xe, c);
        const A gp = ds * widen(att[c]) * gm::leaky_relu_grad(pre, in.slope);
        gd[c] += gp;
        gat[c] += ds * gm::leaky_relu(pre, in.slope);
        if (g_edge != nullptr) g_edge[(e * H + h) * C + c] = gp;
      }
    }
  }
}

// Backward pass 2: one thread per (source row, head) over the transposed CSR.
template <typename T, typename A = acc_t<T>>
__global__ void backward_src_kernel(gm::Inputs<T, A> in, const int64_t* __restrict__ colptr,
                                    const int64_t* __restrict__ perm,
                                    const int64_t* __restrict__ row, const A* __restrict__ go,
                                    const A* __restrict__ m, const A* __restrict__ l,
                                    const A* __restrict__ big_d, A* __restrict__ g_x,
                                    A* __restrict__ g_asrc, int64_t num_src) {
  const int64_t H = in.H, C = in.C;
  const bool v2 = in.att != nullptr;
  for (int64_t jh = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; jh < num_src * H;
       jh += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = jh / H, h = jh % H;
    A* gx = g_x + jh * C;
    const T* xs = in.x_src + jh * C;
    for (int64_t c = 0; c < C; ++c) gx[c] = A(0);
    A gas = A(0);
    for (int64_t k = colptr[j]; k < colptr[j + 1]; ++k) {
      const int64_t e = perm[k], i = row[k], ih = i * H + h;
      const A* g = go + ih * C;
      const A drop = in.drop(j, i, h);
      if (!v2) {
        const A pre = gm::gat_pre(widen(in.a_src[jh]), widen(in.a_dst[ih]), in.a_edge, e * H + h);
        const A a = gm::attention(gm::leaky_relu(pre, in.slope), m[ih], l[ih]);
        gas += gm::score_grad(a, drop, dot(g, xs, C), big_d[ih]) *
               gm::leaky_relu_grad(pre, in.slope);
        for (int64_t c = 0; c < C; ++c) gx[c] += a * drop * g[c];
        continue;
      }
      const T* att = in.att + h * C;
      const T* xd = in.x_dst + ih * C;
      const T* xe = in.x_edge == nullptr ? nullptr : in.x_edge + (e * H + h) * C;
      const A a = gm::attention(in.score(e, j, i, h), m[ih], l[ih]);
      const A ds = gm::score_grad(a, drop, dot(g, xs, C), big_d[ih]);
      for (int64_t c = 0; c < C; ++c) {
        const A pre = gm::gatv2_pre(widen(xs[c]), widen(xd[c]), xe, c);
        gx[c] += ds * widen(att[c]) * gm::leaky_relu_grad(pre, in.slope) + a * drop * g[c];
      }
    }
    if (!v2) g_asrc[jh] = gas;
  }
}

}  // namespace

template <typename T>
cudaError_t launch_attention_forward(const AttentionInputs<T>& in, acc_t<T>* m, acc_t<T>* l,
                                     acc_t<T>* acc, int64_t num_dst, cudaStream_t stream) {
  if (num_dst == 0) return cudaSuccess;
  const int64_t blocks = num_blocks(num_dst * kWarp, kThreads);
  if (in.att == nullptr) {
    gat_forward_kernel<T><<<blocks, kThreads, 0, stream>>>(in, m, l, acc, num_dst);
  } else {
    gatv2_forward_kernel<T><<<blocks, kThreads, 0, stream>>>(in, m, l, acc, num_dst);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_attention_backward_dst(const AttentionInputs<T>& in, const acc_t<T>* grad_out,
                                          const acc_t<T>* out, const acc_t<T>* m,
                                          const acc_t<T>* l, acc_t<T>* big_d,
                                          acc_t<T>* grad_dst, acc_t<T>* grad_edge,
                                          acc_t<T>* grad_att_rows, int64_t num_dst,
                                          cudaStream_t stream) {
  if (num_dst * in.H == 0) return cudaSuccess;
  backward_dst_kernel<T><<<num_blocks(num_dst * in.H, kThreads), kThreads, 0, stream>>>(
      in, grad_out, out, m, l, big_d, grad_dst, grad_edge, grad_att_rows, num_dst);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_attention_backward_src(const AttentionInputs<T>& in, const int64_t* colptr,
                                          const int64_t* perm, const int64_t* row,
                                          const acc_t<T>* grad_out, const acc_t<T>* m,
                                          const acc_t<T>* l, const acc_t<T>* big_d,
                                          acc_t<T>* grad_x, acc_t<T>* grad_a_src,
                                          int64_t num_src, cudaStream_t stream) {
  if (num_src * in.H == 0) return cudaSuccess;
  backward_src_kernel<T><<<num_blocks(num_src * in.H, kThreads), kThreads, 0, stream>>>(
      in, colptr, perm, row, grad_out, m, l, big_d, grad_x, grad_a_src, num_src);
  return cudaGetLastError();
}

PYG_SAR_ATTENTION_LAUNCHERS(, float)
PYG_SAR_ATTENTION_LAUNCHERS(, double)
PYG_SAR_ATTENTION_LAUNCHERS(, __nv_bfloat16)
PYG_SAR_ATTENTION_LAUNCHERS(, __half)
#undef PYG_SAR_ATTENTION_LAUNCHERS

}  // namespace cuda
}  // namespace ops
}  // namespace pyg_sar
