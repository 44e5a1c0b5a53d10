// Shared by the ResNet-50 dev check's files (dev/resnet50/check.cpp, stages.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/model.h"

namespace gpuvs_check {

// Prints PASS/FAIL and counts failures.
void check(bool ok, const std::string& what);
std::unique_ptr<gpuvs::models::Model> build(gpuvs::models::Precision p, gpuvs::models::Mode m,
                                            int batch, uint64_t seed = 1);
double rel_l2(const std::vector<double>& got, const std::vector<double>& want);
std::vector<double> as_double(const std::vector<float>& v);
// The top of the fp32 backward (and the forward convolutions it reads) recomputed on
// the host, stage by stage (stages.cpp).
void backward_stages(int batch);

}  // namespace gpuvs_check
