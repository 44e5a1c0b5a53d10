// Where every BERT-large parameter lives in the flat arrays (FP32 master, working
// copy, FP32 gradients, AdamW moments) and how it maps to transformers'
// BertForPreTraining state_dict name and PyTorch layout ((out, in) for dense weights).
//
// Layout: tensors that take weight decay first (every ".weight" except LayerNorm's),
// then the others (biases, LayerNorm weight and bias), each starting on a multiple of
// kAlign elements; the gaps are zero and stay zero. So one AdamW kernel covers all
// with a single decay boundary. Within each group a layer's query, key and value
// tensors are adjacent, so that they form one (3C, C) weight and one (3C) bias for a
// fused QKV GEMM; a LayerNorm's weight is followed by its bias (one (2, C) gradient).
// The word embeddings and the MLM output bias are stored with the vocabulary padded
// to kVocabPadded rows (zeros), which keeps the logits' rows 16-byte aligned; the
// decoder weight is the word embeddings (tied, as in transformers). The NSP
// classifier likewise has kNspPadded rows (2 real). Padded rows get zero gradients
// and so stay zero.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/config.h"

namespace gpuvs::models::bert {

constexpr int kLayers = 24;
constexpr int kHidden = 1024;
constexpr int kHeads = 16;
constexpr int kHeadDim = kHidden / kHeads;  // 64
constexpr int kFfn = 4096;
constexpr int kVocab = 30522;
constexpr int kVocabPadded = 30528;  // multiple of 64
constexpr int kNspPadded = 8;        // NSP classes (2) stored as 8 rows, for 16-byte rows
constexpr int kMaxPositions = 512;
constexpr int kTypeVocab = 2;
constexpr float kLnEps = 1e-12f;
constexpr float kInitStd = 0.02f;  // BertConfig.initializer_range
constexpr int64_t kAlign = 64;

struct ParamEntry {
  std::string name;            // state_dict name
  std::vector<int64_t> shape;  // PyTorch shape
  int64_t rows_stored = 0;     // first dimension as stored (vocab padded), 1-D: numel
  int64_t offset = 0;          // into the flat arrays
  int64_t count = 0;           // elements stored
  bool decay = false;          // AdamW weight decay applies
  enum class Init { kNormal, kZero, kOne } init = Init::kNormal;
};

// Offsets (into the flat arrays) of one encoder layer's tensors.
struct LayerOffsets {
  int64_t qkv_w = 0, qkv_b = 0;  // (3C, C), (3C): query, key, value adjacent
  int64_t ao_w = 0, ao_b = 0;    // attention.output.dense (C, C), (C)
  int64_t ln1 = 0;               // attention.output.LayerNorm weight (C), bias (C) after it
  int64_t ff1_w = 0, ff1_b = 0;  // intermediate.dense (F, C), (F)
  int64_t ff2_w = 0, ff2_b = 0;  // output.dense (C, F), (C)
  int64_t ln2 = 0;               // output.LayerNorm weight, bias
};

struct Offsets {
  int64_t word = 0, pos = 0, type = 0, emb_ln = 0;
  std::vector<LayerOffsets> layers;
  int64_t pool_w = 0, pool_b = 0;  // bert.pooler.dense
  int64_t tr_w = 0, tr_b = 0;      // cls.predictions.transform.dense
  int64_t tr_ln = 0;               // cls.predictions.transform.LayerNorm
  int64_t dec_b = 0;               // cls.predictions.bias (kVocabPadded)
  int64_t nsp_w = 0, nsp_b = 0;    // cls.seq_relationship (kNspPadded, C), (kNspPadded)
};

class ParamLayout {
 public:
  ParamLayout();  // builds BERT-large's layout

  const std::vector<ParamEntry>& entries() const { return entries_; }
  const Offsets& offsets() const { return offsets_; }
  // The entry named `name`, also under the tied names "cls.predictions.decoder.weight"
  // (the word embeddings) and "cls.predictions.decoder.bias" (cls.predictions.bias);
  // null when there is none.
  const ParamEntry* find(const std::string& name) const;
  int64_t total() const { return total_; }          // flat elements (padded)
  int64_t decay_end() const { return decay_end_; }  // elements [0, decay_end) decay
  int64_t real_count() const;                       // parameters as PyTorch counts them

  // PyTorch layout <-> stored layout for one entry (pads or drops vocabulary rows).
  std::vector<float> to_stored(const ParamEntry& e, const HostTensor& t) const;
  HostTensor from_stored(const ParamEntry& e, const std::vector<float>& stored) const;

 private:
  std::vector<ParamEntry> entries_;
  Offsets offsets_;
  int64_t total_ = 0, decay_end_ = 0;
};

}  // namespace gpuvs::models::bert
