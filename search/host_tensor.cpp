#include <Halide.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "common/parallel_chunks.h"
#include "search/workload.h"

namespace fusekit {

int64_t HostTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

HostTensor HostTensor::make(DType dtype, std::vector<int64_t> dims) {
  HostTensor t = unfilled(dtype, std::move(dims));
  std::fill(t.bytes.begin(), t.bytes.end(), uint8_t{0});
  return t;
}

HostTensor HostTensor::unfilled(DType dtype, std::vector<int64_t> dims) {
  HostTensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.bytes.resize(static_cast<size_t>(t.elements()) * dtype_bytes(dtype));
  return t;
}

float HostTensor::get(int64_t i) const {
  switch (dtype) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, bytes.data() + i * 4, 4);
      return f;
    }
    case DType::kF16: {
      uint16_t b;
      std::memcpy(&b, bytes.data() + i * 2, 2);
      return static_cast<float>(Halide::float16_t::make_from_bits(b));
    }
    case DType::kBF16: {
      uint16_t b;
      std::memcpy(&b, bytes.data() + i * 2, 2);
      return static_cast<float>(Halide::bfloat16_t::make_from_bits(b));
    }
  }
  return 0.0f;
}

void HostTensor::set(int64_t i, float value) {
  switch (dtype) {
    case DType::kF32: std::memcpy(bytes.data() + i * 4, &value, 4); break;
    case DType::kF16: {
      uint16_t b = Halide::float16_t(value).to_bits();
      std::memcpy(bytes.data() + i * 2, &b, 2);
      break;
    }
    case DType::kBF16: {
      uint16_t b = Halide::bfloat16_t(value).to_bits();
      std::memcpy(bytes.data() + i * 2, &b, 2);
      break;
    }
  }
}

int64_t Problem::elements() const {
  int64_t n = 1;
  for (int64_t d : domain) n *= d;
  return n;
}

double Problem::bytes_moved(size_t bytes_per_element) const {
  double elems = 0;
  for (const auto* list : {&input_dims, &output_dims})
    for (const auto& dims : *list) {
      double n = 1;
      for (int64_t d : dims) n *= static_cast<double>(d);
      elems += n;
    }
  return elems * static_cast<double>(bytes_per_element);
}

Tolerance Workload::tolerance(const Problem&) const { return tolerance_for(dtype()); }

void Workload::reference_slack(const Problem&, const std::vector<HostTensor>&, const std::vector<HostTensor>&,
                               std::vector<HostTensor>* slack) const {
  slack->clear();
}

Tolerance tolerance_for(DType dtype) {
  // Math is f32 everywhere; what differs between implementations is a few
  // f32 ulps before the final rounding to storage, which can move the stored
  // value by one storage ulp. rtol is two storage ulps.
  switch (dtype) {
    case DType::kF32: return {1e-5, 1e-5};
    case DType::kF16: return {1e-4, 2.0 * 0.0009765625};
    case DType::kBF16: return {1e-4, 2.0 * 0.0078125};
  }
  return {0, 0};
}

namespace {

// Widens element i of raw storage; templated so the hot loop has no switch.
template <DType D>
float load(const uint8_t* p, int64_t i) {
  if constexpr (D == DType::kF32) {
    float f;
    std::memcpy(&f, p + i * 4, 4);
    return f;
  } else {
    uint16_t b;
    std::memcpy(&b, p + i * 2, 2);
    if constexpr (D == DType::kBF16) {
      uint32_t u = static_cast<uint32_t>(b) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    } else {
      return static_cast<float>(Halide::float16_t::make_from_bits(b));
    }
  }
}

double element_ratio(double g, double r, Tolerance tol, double scale, double slack = 0.0) {
  if (std::isnan(r) || std::isnan(g)) return (std::isnan(r) && std::isnan(g)) ? 0.0 : INFINITY;
  if (std::isinf(r) || std::isinf(g)) return g == r ? 0.0 : INFINITY;
  return std::fabs(g - r) / (tol.atol * scale + tol.rtol * std::fabs(r) + slack);
}

template <DType D>
bool is_poison(const uint8_t* p, int64_t i) {
  constexpr int64_t size = D == DType::kF32 ? 4 : 2;
  for (int64_t b = 0; b < size; ++b)
    if (p[i * size + b] != kPoisonByte) return false;
  return true;
}

// min(1, max |ref|) over [begin, end), finite values only; a floor keeps an
// all-zero reference from dividing by zero.
template <DType D>
double reference_scale(const uint8_t* rp, int64_t begin, int64_t end) {
  double m = 0;
  for (int64_t i = begin; i < end; ++i) {
    const double v = std::fabs(load<D>(rp, i));
    if (std::isfinite(v)) m = std::max(m, v);
  }
  return std::max(std::min(1.0, m), 1e-30);
}

struct ChunkResult {
  double max_ratio = 0.0;
  int64_t first_bad = -1;  // lowest index with ratio > 1
  int64_t widened = 0;
};

template <DType D>
void compare_tensor(const HostTensor& got, const HostTensor& ref, const HostTensor* slack, size_t t, Tolerance tol,
                    Comparison* c) {
  const int64_t n = got.elements();
  const uint8_t* gp = got.bytes.data();
  const uint8_t* rp = ref.bytes.data();
  const int64_t row = tol.row_length > 0 && n % tol.row_length == 0 ? tol.row_length : n;
  std::vector<double> scales(static_cast<size_t>(n / std::max<int64_t>(row, 1)) + 1, 1.0);
  parallel_chunks(n / std::max<int64_t>(row, 1), [&](int64_t begin, int64_t end, size_t) {
    for (int64_t k = begin; k < end; ++k) scales[static_cast<size_t>(k)] = reference_scale<D>(rp, k * row, (k + 1) * row);
  });
  std::vector<ChunkResult> chunks(std::max(1u, std::thread::hardware_concurrency()));
  parallel_chunks(n, [&](int64_t begin, int64_t end, size_t k) {
    ChunkResult r;
    for (int64_t i = begin; i < end; ++i) {
      const double scale = scales[static_cast<size_t>(i / row)];
      double ratio = is_poison<D>(gp, i) ? INFINITY : element_ratio(load<D>(gp, i), load<D>(rp, i), tol, scale);
      if (ratio > 1.0 && slack && std::isfinite(ratio)) {
        ratio = element_ratio(load<D>(gp, i), load<D>(rp, i), tol, scale, load<DType::kF32>(slack->bytes.data(), i));
        r.widened += ratio <= 1.0;
      }
      if (!(ratio > r.max_ratio)) continue;
      if (ratio > 1.0 && r.first_bad < 0) r.first_bad = i;
      r.max_ratio = ratio;
    }
    chunks[k] = r;
  });
  int64_t first_bad = -1;
  for (const auto& r : chunks) {  // in index order: the first failure found is the lowest
    if (r.first_bad >= 0 && first_bad < 0) first_bad = r.first_bad;
    c->max_ratio = std::max(c->max_ratio, r.max_ratio);
    c->widened += r.widened;
  }
  if (first_bad >= 0 && c->detail.empty())
    c->detail = "output " + std::to_string(t) + " element " + std::to_string(first_bad) + ": got " +
                (is_poison<D>(gp, first_bad) ? std::string("nothing (never written)")
                                             : std::to_string(load<D>(gp, first_bad))) +
                ", reference " + std::to_string(load<D>(rp, first_bad));
}

}  // namespace

Comparison compare_outputs(const std::vector<HostTensor>& got, const std::vector<HostTensor>& ref, Tolerance tol,
                           const std::vector<HostTensor>& slack) {
  Comparison c;
  FUSEKIT_INTERNAL_ASSERT(got.size() == ref.size(), "output count mismatch");
  FUSEKIT_INTERNAL_ASSERT(slack.empty() || slack.size() == ref.size(), "slack count mismatch");
  for (size_t t = 0; t < got.size(); ++t) {
    FUSEKIT_INTERNAL_ASSERT(got[t].elements() == ref[t].elements() && got[t].dtype == ref[t].dtype,
                            "output shape or dtype mismatch");
    const HostTensor* s = slack.empty() ? nullptr : &slack[t];
    FUSEKIT_INTERNAL_ASSERT(!s || (s->dtype == DType::kF32 && s->elements() == ref[t].elements()),
                            "slack shape or dtype mismatch");
    switch (got[t].dtype) {
      case DType::kF32: compare_tensor<DType::kF32>(got[t], ref[t], s, t, tol, &c); break;
      case DType::kF16: compare_tensor<DType::kF16>(got[t], ref[t], s, t, tol, &c); break;
      case DType::kBF16: compare_tensor<DType::kBF16>(got[t], ref[t], s, t, tol, &c); break;
    }
  }
  return c;
}

void Workload::fill_input(size_t input, uint64_t seed, HostTensor* t) const {
  fill_uniform(t, seed, -input_magnitude(input), input_magnitude(input));
}

void fill_uniform(HostTensor* t, uint64_t seed, float lo, float hi) {
  // splitmix64 as a counter-based generator (element i uses state
  // seed + (i + 1) * gamma): seeded, and the same in any chunking.
  const float scale = (hi - lo) / 16777216.0f;
  parallel_chunks(t->elements(), [&](int64_t begin, int64_t end, size_t) {
    for (int64_t i = begin; i < end; ++i) {
      uint64_t z = seed + static_cast<uint64_t>(i + 1) * 0x9e3779b97f4a7c15ULL;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      z ^= z >> 31;
      t->set(i, lo + static_cast<float>(z >> 40) * scale);
    }
  });
}

}  // namespace fusekit
