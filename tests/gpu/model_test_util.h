// Shared by the model GPU tests (ResNet-50, BERT-large): a few optimizer steps and the
// printing of their losses.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "models/model.h"

namespace gpuvs::models {

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
