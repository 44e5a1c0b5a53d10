#include "models/resnet50/params.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "core/error.h"

namespace gpuvs::models::resnet50 {

namespace {

int64_t align_up(int64_t v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}

// splitmix64 (Steele, Lea, Flood 2014) as a seedable generator, with Box-Muller:
// the same numbers on every platform (std::normal_distribution is not specified).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return (double(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }  // (0,1)
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace

size_t ParamLayout::add_conv(const std::string& name, int k, int c, int r, int c_stored) {
  ParamEntry e;
  e.name = name + ".weight";
  e.kind = ParamKind::kConv;
  e.torch_shape = {k, c, r, r};
  e.count = int64_t(k) * r * r * c_stored;
  e.k = k;
  e.c = c;
  e.r = r;
  e.c_stored = c_stored;
  e.decay = true;
  entries_.push_back(e);
  return entries_.size() - 1;
}

size_t ParamLayout::add_bn(const std::string& prefix, int c) {
  ParamEntry w;
  w.name = prefix + ".weight";
  w.kind = ParamKind::kBnWeight;
  w.torch_shape = {c};
  w.count = c;
  w.c = c;
  entries_.push_back(w);
  ParamEntry b = w;
  b.name = prefix + ".bias";
  b.kind = ParamKind::kBnBias;
  entries_.push_back(b);
  buffers_.push_back(BufferEntry{prefix, c, 0});
  return entries_.size() - 2;
}

size_t ParamLayout::add_fc(const std::string& prefix, int out, int in) {
  ParamEntry w;
  w.name = prefix + ".weight";
  w.kind = ParamKind::kFcWeight;
  w.torch_shape = {out, in};
  w.count = int64_t(out) * in;
  w.k = out;
  w.c = in;
  w.decay = true;
  entries_.push_back(w);
  ParamEntry b;
  b.name = prefix + ".bias";
  b.kind = ParamKind::kFcBias;
  b.torch_shape = {out};
  b.count = out;
  b.k = out;
  b.c = in;
  entries_.push_back(b);
  return entries_.size() - 2;
}

void ParamLayout::finish() {
  int64_t off = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& e : entries_) {
      if (e.decay != (pass == 0)) continue;
      e.offset = off;
      off = align_up(off + e.count);
    }
    if (pass == 0) decay_end_ = off;
  }
  total_ = off;
  int64_t b = 0;
  for (auto& e : buffers_) {
    e.offset = b;
    b += 2 * int64_t(e.c);
  }
  buffer_total_ = b;
}

const ParamEntry* ParamLayout::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

const BufferEntry* ParamLayout::find_buffer(const std::string& prefix) const {
  for (const auto& e : buffers_)
    if (e.prefix == prefix) return &e;
  return nullptr;
}

int64_t ParamLayout::real_count() const {
  int64_t n = 0;
  for (const auto& e : entries_) {
    int64_t m = 1;
    for (int64_t d : e.torch_shape)
      m *= d;
    n += m;
  }
  return n;
}

std::vector<float> ParamLayout::to_stored(const ParamEntry& e, const HostTensor& t) const {
  if (t.shape != e.torch_shape)
    throw Error(fmt::format("tensor {}: shape [{}] given, [{}] expected", e.name,
                            fmt::join(t.shape, ","), fmt::join(e.torch_shape, ",")));
  if (e.kind != ParamKind::kConv) return t.data;
  std::vector<float> out(static_cast<size_t>(e.count), 0.0f);
  // OIHW -> KRSC (C padded to c_stored)
  for (int k = 0; k < e.k; ++k)
    for (int c = 0; c < e.c; ++c)
      for (int y = 0; y < e.r; ++y)
        for (int x = 0; x < e.r; ++x)
          out[((size_t(k) * e.r + y) * e.r + x) * e.c_stored + c] =
              t.data[((size_t(k) * e.c + c) * e.r + y) * e.r + x];
  return out;
}

HostTensor ParamLayout::from_stored(const ParamEntry& e, const std::vector<float>& stored) const {
  HostTensor t;
  t.shape = e.torch_shape;
  if (e.kind != ParamKind::kConv) {
    t.data.assign(stored.begin(), stored.begin() + e.count);
    return t;
  }
  t.data.resize(size_t(e.k) * e.c * e.r * e.r);
  for (int k = 0; k < e.k; ++k)
    for (int c = 0; c < e.c; ++c)
      for (int y = 0; y < e.r; ++y)
        for (int x = 0; x < e.r; ++x)
          t.data[((size_t(k) * e.c + c) * e.r + y) * e.r + x] =
              stored[((size_t(k) * e.r + y) * e.r + x) * e.c_stored + c];
  return t;
}

std::vector<float> ParamLayout::init_params(uint64_t seed) const {
  std::vector<float> flat(static_cast<size_t>(total_), 0.0f);
  Rng rng(seed);
  for (const auto& e : entries_) {
    float* p = flat.data() + e.offset;
    switch (e.kind) {
      case ParamKind::kConv: {
        // kaiming_normal_(mode="fan_out", nonlinearity="relu"): std = sqrt(2 / fan_out)
        const double std = std::sqrt(2.0 / (double(e.k) * e.r * e.r));
        for (int k = 0; k < e.k; ++k)
          for (int y = 0; y < e.r; ++y)
            for (int x = 0; x < e.r; ++x)
              for (int c = 0; c < e.c; ++c)
                p[((size_t(k) * e.r + y) * e.r + x) * e.c_stored + c] =
                    static_cast<float>(std * rng.normal());
        break;
      }
      case ParamKind::kFcWeight:
      case ParamKind::kFcBias: {
        // nn.Linear's default: kaiming_uniform_(a=sqrt(5)) and bias, both +-1/sqrt(in)
        const double bound = 1.0 / std::sqrt(double(e.c));
        for (int64_t i = 0; i < e.count; ++i)
          p[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
        break;
      }
      case ParamKind::kBnWeight:
        for (int64_t i = 0; i < e.count; ++i)
          p[i] = 1.0f;
        break;
      case ParamKind::kBnBias:
        break;
    }
  }
  return flat;
}

std::vector<float> ParamLayout::init_buffers() const {
  std::vector<float> b(static_cast<size_t>(buffer_total_), 0.0f);
  for (const auto& e : buffers_)
    for (int i = 0; i < e.c; ++i)
      b[size_t(e.offset + e.c + i)] = 1.0f;
  return b;
}

}  // namespace gpuvs::models::resnet50
