// A tuned result for the tests of tune/: one GPU's DeviceTune with a setting of every
// ParamValue type, an environment variable, evidence and an absent section.
#pragma once

#include <string>

#include "tune/tune_result.h"

namespace gpuvs_test {

inline gpuvs::tune::Fingerprint sample_fingerprint(const std::string& uuid = "GPU-0a1b2c3d-test") {
  gpuvs::tune::Fingerprint f;
  f.uuid = uuid;
  f.name = "NVIDIA H200";
  f.driver_version = "580.159.04";
  f.cuda_driver_version = "13.0";
  f.cuda_runtime_version = "13.0";
  f.cublas_version = "13.1.0";
  f.cudnn_version = "9.14.0";
  f.nccl_version = "2.28.3";
  f.power_limit_w = 700.0;
  f.mig_enabled = false;
  f.ecc_enabled = true;
  return f;
}

inline gpuvs::tune::DeviceTune sample_device(const std::string& uuid = "GPU-0a1b2c3d-test") {
  using namespace gpuvs::tune;
  DeviceTune d;
  d.fingerprint = sample_fingerprint(uuid);
  d.gpu_index = 0;
  d.request.models = {"bert-large", "resnet50"};
  d.request.gemm_shapes = {"8192x8192x8192:bf16"};
  d.created_at = "2026-12-01T09:30:00Z";
  d.tool_version = "0.1.0";
  d.git_sha = "0123456789ab";
  d.run_file = "gpuvs-results/tune-20261201T093000Z-host.json";
  d.measure_seconds = 241.5;
  Evidence e;
  e.result_id = "model.bert-large.train.bf16";
  e.parameters = {
      {"batch", int64_t{856}}, {"graph", true}, {"precision", std::string("bf16")}, {"ratio", 1.0}};
  e.value = 1856.25;
  e.unit = "seq/s";
  d.settings.push_back(
      {{"bert-large", "train"}, "precision", std::string("bf16"), "", "best", "", {e}});
  d.settings.push_back({{"bert-large", "train"}, "batch", int64_t{856}, "", "largest", "", {e}});
  d.settings.push_back({{"bert-large", "train"}, "cuda_graph", true, "", "1.04x eager", "", {e}});
  d.settings.push_back({{"bert-large", "train"}, "gain", 1.1, "", "fp8 gain", "an estimate", {}});
  d.settings.push_back({{"nccl", "all_reduce", "1GiB-8GiB"},
                        "NCCL_ALGO",
                        std::string("Tree"),
                        "NCCL_ALGO",
                        "1.06x Ring",
                        "",
                        {}});
  d.absent.push_back({"host", "host.link was not measured"});
  return d;
}

}  // namespace gpuvs_test
