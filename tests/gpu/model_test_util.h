// Shared by the model GPU tests (ResNet-50, BERT-large): the PyTorch reference file,
// tensor comparison, a few optimizer steps and the printing of their losses.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "models/model.h"
#include "models/tensor_compare.h"
#include "models/tensor_file.h"

namespace gpuvs::models {

// Relative L2 error per tensor, ||got - ref|| / ||ref||, and the largest elementwise
// error relative to the largest reference magnitude, max|got - ref| / max|ref|.
using Errors = TensorErrors;

// The reference file named by the environment variable `env`, checked to be a
// `model` reference; nullptr with `error` saying why when it is not set or missing
// (the tests then skip). A file that exists but is broken or of another model throws:
// a failure, not a skip.
inline std::unique_ptr<TensorFile> load_reference(const char* env, const std::string& model,
                                                  const std::string& how_to_dump,
                                                  std::string* error) {
  const char* path = std::getenv(env);
  if (path == nullptr || *path == '\0') {
    *error = std::string(env) + " is not set (dump one with " + how_to_dump + ")";
    return nullptr;
  }
  if (!std::filesystem::exists(path)) {
    *error = std::string(env) + "=" + path + " does not exist";
    return nullptr;
  }
  auto f = std::make_unique<TensorFile>(load_tensor_file(path));
  const auto m = f->metadata.find("model");
  if (m == f->metadata.end() || m->second != model)
    throw Error(std::string(path) + ": not a " + model + " reference");
  return f;
}

// Skips without a GPU or without the reference; else `ref` is the file. Needs a
// `const TensorFile* reference(std::string* why)` in the test file.
#define GPUVS_REQUIRE_REFERENCE(ref)        \
  GPUVS_REQUIRE_GPU();                      \
  std::string why_;                         \
  const TensorFile* ref = reference(&why_); \
  if (ref == nullptr) GTEST_SKIP() << why_;

inline Errors compare(const HostTensor& got, const HostTensor& ref, const std::string& what) {
  const Errors e = compare_tensors(got, ref);
  EXPECT_TRUE(e.same_shape) << what;
  EXPECT_EQ(got.data.size(), ref.data.size()) << what;
  return e;
}

inline HostTensor minus(HostTensor a, const HostTensor& b) {
  return tensor_difference(std::move(a), b);
}

// Losses of `steps` optimizer steps (one micro-step each) on the model's current batch.
inline std::vector<double> step_losses(Model& model, int steps) {
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    model.forward_backward(false);
    model.optimizer_step(1);
    losses.push_back(model.loss());
  }
  return losses;
}

// "6.995376 6.197284 ..." with `digits` decimals.
inline std::string join(const std::vector<double>& v, int digits = 6) {
  std::string s;
  char buf[48];
  for (double x : v) {
    std::snprintf(buf, sizeof buf, "%s%.*f", s.empty() ? "" : " ", digits, x);
    s += buf;
  }
  return s;
}

}  // namespace gpuvs::models
