// Helpers shared by the memory, host-link, peer and launch benchmarks: Timed
// implementations for host-clock timings and per-item figures, results that are not
// timings (capacity) or not applicable (peer links on one GPU), and the memory peak
// the driver's figures imply.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>
#include <string>

#include "bench/benchmarks.h"
#include "core/run_file.h"
#include "measure/harness.h"

namespace gpuvs {

// run(k): finish() (drains earlier work), then k calls of body() and one finish(),
// timed on the host's steady clock. For work whose cost is on the host (pageable
// copies, launch latency as a caller sees it): device events would not see it.
class HostClockTimed final : public Timed {
 public:
  HostClockTimed(std::function<void()> body, std::function<void()> finish);
  double run(int64_t iterations) override;

 private:
  std::function<void()> body_;
  std::function<void()> finish_;
};

// Wraps a Timed whose iteration does `items` equal pieces of work (the nodes of a
// graph) so that the harness's iteration becomes one piece: run(k) runs k inner
// iterations and returns their time divided by `items`. Pair it with
// per_item_options(), which lowers min_sample_s by the same factor so that a sample
// still lasts the real minimum.
class PerItemTimed final : public Timed {
 public:
  PerItemTimed(Timed& inner, double items) : inner_(inner), items_(items) {}
  double run(int64_t iterations) override { return inner_.run(iterations) / items_; }
  void flush() override { inner_.flush(); }

 private:
  Timed& inner_;
  double items_;
};
MeasureOptions per_item_options(MeasureOptions options, double items);

// Options for a short preliminary timing (choosing a launch variant): a few samples,
// caps in the tens of milliseconds.
MeasureOptions tuning_options(bool quick);

// A result for something this machine cannot measure: status unsupported, the
// reason in one line, no value (the report never shows it as a number).
Result unsupported_result(std::string id, std::string name, std::vector<int> devices,
                          std::string reason);

// A result that is a quantity rather than a timing (bytes of memory): one sample,
// no timing, validated by `validation`.
Result quantity_result(std::string id, std::string name, std::vector<int> devices, double value,
                       std::string unit, std::optional<Peak> peak, const Validation& validation);

// A figure more than `tolerance` times its peak means the measurement is wrong (work
// the compiler removed, bytes counted that never moved): the result becomes invalid,
// with the reason. For peaks that bound the figure for certain (memory clock x bus
// width, banks x clock), not for peaks that depend on a guess about the link.
void reject_above_peak(Result& result, double tolerance = 1.05);

// 2 x memory clock x bus width / 8, as the driver reports them, labelled "derived";
// nullopt where the driver does not say.
std::optional<Peak> derived_memory_peak(int device);

// One direction of the GPU's PCIe link at its maximum generation and width (NVML):
// lanes x transfer rate x encoding efficiency / 8, labelled "derived"; nullopt
// where NVML does not say. `directions` 2 doubles it for both ways at once.
std::optional<Peak> pcie_peak(const GpuInfo& gpu, int directions);

// A human figure for a notes string: "4.31 TB/s", "55.2 GB/s", "1.23 us".
std::string short_figure(double value, const std::string& unit);

}  // namespace gpuvs
