// The verdicts of `gpuvs check` levels 2 and 3 (docs/check.md) from what they measured:
// plain C++ over plain figures, so that every rule is tested on the CPU; the levels'
// runners (check/gpu_levels.h) measure on the GPU and call these. Every verdict is a
// TestVerdict of check/health.h (status, reason in words, threshold, source), under
// the invariants written there (a figure that was not measured skips, never passes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "check/health.h"
#include "check/memtest_ranges.h"
#include "check/node_compare.h"
#include "check/sustained_judge.h"

namespace gpuvs::check {

// A PCI bus id as NVML writes it ("00000000:1B:00.0", 8 hex digits of domain) or CUDA
// ("0000:1b:00.0", 4, lower case) as one number (domain, bus, device, function), so
// that the two name the same device equally; nullopt for a malformed id.
std::optional<uint64_t> pci_bus_key(std::string_view id);

// For each NVML PCI bus id (in NVML index order), the CUDA ordinal whose bus id is the
// same, or nullopt (hidden by CUDA_VISIBLE_DEVICES, or a malformed id).
std::vector<std::optional<int>> match_cuda_devices(const std::vector<std::string>& nvml_bus_ids,
                                                   const std::vector<std::string>& cuda_bus_ids);

// What a memory test found (check/memtest.h's MemtestResult, without CUDA types).
struct MemtestSummary {
  size_t free_bytes = 0;
  size_t tested_bytes = 0;
  double seconds = 0;
  uint64_t errors = 0;                // mismatching words, every pass
  std::vector<MemErrorRange> ranges;  // the recorded ones, merged
  bool truncated = false;             // more errors than were recorded
  // Rounds repeated under load (0: one test); tested and free bytes are then those of
  // the round that covered the least.
  int rounds = 0;
};

// The share of free memory a memory test must cover (the issue's and DCGM's "at least
// 90 %" of what is free).
inline constexpr double kMemtestMinFraction = 0.90;

// Test `test` ("memtest", "sustained.memtest"): fail with any error (the reason names
// the count and the first ranges, hex addresses and flipped bit lanes); warn when less
// than `min_fraction` of free memory was tested; pass otherwise.
TestVerdict judge_memtest(const MemtestSummary& m, std::string_view test = "memtest",
                          double min_fraction = kMemtestMinFraction);

// The GEMM consistency of one GPU for one precision (p = "bf16", "fp32"): three tests,
// "gemm.<p>.result" (D against the reference: fail when !valid, with `validation`),
// "gemm.<p>.repeatable" (every run the same bits: fail otherwise), "gemm.<p>.node"
// (the same bits as the node's other GPUs of the model, fail otherwise; more than
// kSlowFraction below the node's median rate: fail, as DCGM's diagnostic flags it; one
// GPU: pass, saying there was nothing to compare with).
std::vector<TestVerdict> judge_gemm(const GemmNodeVerdict& node, bool valid,
                                    std::string_view validation);

// Floors of the bandwidth tests (documented in docs/check.md with their source):
// HBM copy at least kHbmFloorFactor x the datasheet's memory bandwidth; host link per
// direction at least kHostFloorFactor x the PCIe link's rate (pcie_bytes_per_s).
inline constexpr double kHbmFloorFactor = 0.80;
inline constexpr double kHostFloorFactor = 0.70;

// The data rate of one direction of a PCIe link, bytes/s, from its generation (1-6) and
// width (lanes): GT/s per lane 2.5, 5, 8, 16, 32, 64; encoding 8b/10b (gen 1-2),
// 128b/130b (gen 3-5), 242/256 (gen 6's FLIT mode). nullopt for an unknown gen or a
// width below 1.
std::optional<double> pcie_bytes_per_s(int gen, int width);

// A measured bandwidth against a floor: test `test` ("hbm.bandwidth", "host.h2d"),
// fail below the floor, pass at or above it; skip (with the reason) when either is
// missing. `floor_from` says where the floor comes from ("0.80 x the H200 datasheet's
// 4.80 TB/s"); the reason gives both figures with SI units (format_si).
TestVerdict judge_floor(std::string_view test, std::optional<double> measured_bytes_per_s,
                        std::optional<double> floor_bytes_per_s, std::string_view floor_from,
                        std::string_view source);

// The sustained load of level 3: "sustained.load" from judge_sustained (pass; fail with
// every failure line joined by "; "; the notes, such as power capping, in the reason
// of a pass), and "sustained.rate" when `flops` is known (skip otherwise) giving the
// mean GEMM rate (always pass: a figure, the node comparison judges rates).
std::vector<TestVerdict> judge_sustained_load(const SustainedVerdict& v, double seconds,
                                              std::optional<double> flops);

}  // namespace gpuvs::check
