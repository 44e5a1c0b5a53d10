#include "models/bert/params.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace gpuvs::models::bert {

namespace {

int64_t round_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

struct Pending {
  ParamEntry entry;
  int64_t* offset;  // where the layout records the entry's offset
};

}  // namespace

ParamLayout::ParamLayout() {
  offsets_.layers.resize(kLayers);
  std::vector<Pending> decay, plain;
  const auto weight = [&](const std::string& name, std::vector<int64_t> shape, int64_t rows,
                          int64_t* off) {
    ParamEntry e;
    e.name = name;
    e.shape = std::move(shape);
    e.rows_stored = rows;
    e.decay = true;
    decay.push_back({e, off});
  };
  const auto vec = [&](const std::string& name, int64_t n, int64_t n_stored, ParamEntry::Init init,
                       int64_t* off) {
    ParamEntry e;
    e.name = name;
    e.shape = {n};
    e.rows_stored = n_stored;
    e.init = init;
    plain.push_back({e, off});
  };
  const auto layer_norm = [&](const std::string& prefix, int64_t* off) {
    vec(prefix + ".weight", kHidden, kHidden, ParamEntry::Init::kOne, off);
    vec(prefix + ".bias", kHidden, kHidden, ParamEntry::Init::kZero, nullptr);
  };
  const auto zero = ParamEntry::Init::kZero;

  Offsets& o = offsets_;
  weight("bert.embeddings.word_embeddings.weight", {kVocab, kHidden}, kVocabPadded, &o.word);
  weight("bert.embeddings.position_embeddings.weight", {kMaxPositions, kHidden}, kMaxPositions,
         &o.pos);
  weight("bert.embeddings.token_type_embeddings.weight", {kTypeVocab, kHidden}, kTypeVocab,
         &o.type);
  layer_norm("bert.embeddings.LayerNorm", &o.emb_ln);
  for (int l = 0; l < kLayers; ++l) {
    LayerOffsets& lo = o.layers[l];
    const std::string p = fmt::format("bert.encoder.layer.{}.", l);
    weight(p + "attention.self.query.weight", {kHidden, kHidden}, kHidden, &lo.qkv_w);
    weight(p + "attention.self.key.weight", {kHidden, kHidden}, kHidden, nullptr);
    weight(p + "attention.self.value.weight", {kHidden, kHidden}, kHidden, nullptr);
    vec(p + "attention.self.query.bias", kHidden, kHidden, zero, &lo.qkv_b);
    vec(p + "attention.self.key.bias", kHidden, kHidden, zero, nullptr);
    vec(p + "attention.self.value.bias", kHidden, kHidden, zero, nullptr);
    weight(p + "attention.output.dense.weight", {kHidden, kHidden}, kHidden, &lo.ao_w);
    vec(p + "attention.output.dense.bias", kHidden, kHidden, zero, &lo.ao_b);
    layer_norm(p + "attention.output.LayerNorm", &lo.ln1);
    weight(p + "intermediate.dense.weight", {kFfn, kHidden}, kFfn, &lo.ff1_w);
    vec(p + "intermediate.dense.bias", kFfn, kFfn, zero, &lo.ff1_b);
    weight(p + "output.dense.weight", {kHidden, kFfn}, kHidden, &lo.ff2_w);
    vec(p + "output.dense.bias", kHidden, kHidden, zero, &lo.ff2_b);
    layer_norm(p + "output.LayerNorm", &lo.ln2);
  }
  weight("bert.pooler.dense.weight", {kHidden, kHidden}, kHidden, &o.pool_w);
  vec("bert.pooler.dense.bias", kHidden, kHidden, zero, &o.pool_b);
  vec("cls.predictions.bias", kVocab, kVocabPadded, zero, &o.dec_b);
  weight("cls.predictions.transform.dense.weight", {kHidden, kHidden}, kHidden, &o.tr_w);
  vec("cls.predictions.transform.dense.bias", kHidden, kHidden, zero, &o.tr_b);
  layer_norm("cls.predictions.transform.LayerNorm", &o.tr_ln);
  weight("cls.seq_relationship.weight", {2, kHidden}, kNspPadded, &o.nsp_w);
  vec("cls.seq_relationship.bias", 2, kNspPadded, zero, &o.nsp_b);

  // Adjacent tensors (query/key/value, LayerNorm weight/bias) need sizes that are
  // multiples of kAlign: true of every hidden-sized tensor here.
  static_assert(kHidden % kAlign == 0 && kFfn % kAlign == 0);
  int64_t off = 0;
  for (auto* group : {&decay, &plain}) {
    for (Pending& p : *group) {
      ParamEntry& e = p.entry;
      e.count = e.rows_stored;
      for (size_t i = 1; i < e.shape.size(); ++i)
        e.count *= e.shape[i];
      e.offset = off;
      if (p.offset) *p.offset = off;
      off = round_up(off + e.count, kAlign);
      entries_.push_back(e);
    }
    if (group == &decay) decay_end_ = off;
  }
  total_ = off;
}

const ParamEntry* ParamLayout::find(const std::string& name) const {
  std::string n = name;
  if (n == "cls.predictions.decoder.weight") n = "bert.embeddings.word_embeddings.weight";
  if (n == "cls.predictions.decoder.bias") n = "cls.predictions.bias";
  for (const auto& e : entries_)
    if (e.name == n) return &e;
  return nullptr;
}

int64_t ParamLayout::real_count() const {
  int64_t n = 0;
  for (const auto& e : entries_) {
    int64_t c = 1;
    for (int64_t d : e.shape)
      c *= d;
    n += c;
  }
  return n;
}

std::vector<float> ParamLayout::to_stored(const ParamEntry& e, const HostTensor& t) const {
  if (t.shape != e.shape) {
    std::string want;
    for (int64_t d : e.shape)
      want += fmt::format("{}{}", want.empty() ? "" : ", ", d);
    throw Error(fmt::format("{}: shape ({}) expected", e.name, want));
  }
  std::vector<float> stored(size_t(e.count), 0.0f);
  std::copy(t.data.begin(), t.data.end(), stored.begin());  // padded rows stay zero
  return stored;
}

HostTensor ParamLayout::from_stored(const ParamEntry& e, const std::vector<float>& stored) const {
  HostTensor t;
  t.shape = e.shape;
  t.data.assign(stored.begin(), stored.begin() + t.numel());
  return t;
}

}  // namespace gpuvs::models::bert
