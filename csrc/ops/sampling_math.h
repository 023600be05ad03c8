// Keyed counter-based random numbers of the bulk samplers (SplitMix64), shared by the CPU and
// CUDA kernels and bit-identical to pyg_sar/ops/sampling_rng.py: dart(key, t) is SplitMix64's
// output for the state key + (t + 1) * GOLDEN, as 53 random bits in [0, 1). Torch-free.
#pragma once

#include <cstdint>

#include "host_device.h"

namespace pyg_sar {
namespace ops {
namespace sampling_math {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

PYG_SAR_HOST_DEVICE uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform double in [0, 1): dart number t of the row keyed by `key`.
PYG_SAR_HOST_DEVICE double dart(int64_t key, int64_t t) {
  const uint64_t state = static_cast<uint64_t>(key) + (static_cast<uint64_t>(t) + 1u) * kGolden;
  return static_cast<double>(mix64(state) >> 11) * 0x1.0p-53;
}

// Position hit by a uniform dart in a row of `deg` equally likely entries.
PYG_SAR_HOST_DEVICE int64_t uniform_pick(int64_t key, int64_t t, int64_t deg) {
  const int64_t j = static_cast<int64_t>(dart(key, t) * static_cast<double>(deg));
  return j < deg - 1 ? j : deg - 1;
}

// First index i in [0, n) with prefix[i] > x (std::upper_bound; torch.searchsorted(right=True)).
PYG_SAR_HOST_DEVICE int64_t upper_bound(const double* prefix, int64_t n, double x) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (prefix[mid] > x) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// Whether `value` occurs in the ascending array [begin, begin + n).
PYG_SAR_HOST_DEVICE bool sorted_contains(const int64_t* begin, int64_t n, int64_t value) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (begin[mid] < value) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < n && begin[lo] == value;
}

// Sorts a short array ascending in place (insertion sort: rows hold a fanout's worth).
PYG_SAR_HOST_DEVICE void sort_small(int64_t* a, int64_t n) {
  for (int64_t i = 1; i < n; ++i) {
    const int64_t v = a[i];
    int64_t j = i - 1;
    while (j >= 0 && a[j] > v) {
      a[j + 1] = a[j];
      --j;
    }
    a[j + 1] = v;
  }
}

// Uniform dart throwing for one row: fills out[0, fanout) with distinct positions in [0, deg)
// (deg > fanout), rejecting darts that hit a position already taken, then sorts them.
PYG_SAR_HOST_DEVICE void uniform_row(int64_t key, int64_t deg, int64_t fanout, int64_t* out) {
  int64_t count = 0;
  for (int64_t t = 0; count < fanout; ++t) {
    const int64_t j = uniform_pick(key, t, deg);
    bool seen = false;
    for (int64_t i = 0; i < count; ++i) {
      if (out[i] == j) {
        seen = true;
        break;
      }
    }
    if (!seen) out[count++] = j;
  }
  sort_small(out, fanout);
}

}  // namespace sampling_math
}  // namespace ops
}  // namespace pyg_sar
