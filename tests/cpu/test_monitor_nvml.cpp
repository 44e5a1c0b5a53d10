// NvmlSource's fallback path (monitor/nvml_source.h) on a machine without NVML, or
// with NVML pointed at a missing file: 0 GPUs, one note saying why, no throw. Runs on
// the CPU machine; on a GPU machine the library override makes NVML "missing" too.
#include <gtest/gtest.h>

#include <string>

#include "gpu/nvml.h"
#include "monitor/nvml_source.h"
#include "monitor/sampler.h"

namespace {

TEST(MonitorNvmlSource, MissingNvmlGivesNoGpusAndOneNote) {
  const gpuvs::nvml::Library missing({"libgpuvs-no-such-nvml.so.1"});
  ASSERT_FALSE(missing.available());
  gpuvs::monitor::NvmlSource source(missing);
  EXPECT_EQ(source.gpu_count(), 0);
  EXPECT_EQ(source.gpu_name(0), "");
  const gpuvs::monitor::GpuSample s = source.sample(0, 1.0);  // out of range: empty
  EXPECT_FALSE(s.gpu_util_pct.has_value());
  ASSERT_EQ(source.notes().size(), 1u);
  EXPECT_NE(source.notes()[0].find("NVML unavailable"), std::string::npos) << source.notes()[0];
  EXPECT_NE(source.notes()[0].find("libgpuvs-no-such-nvml.so.1"), std::string::npos);
  // The sampler runs over it without samples.
  gpuvs::monitor::Sampler sampler(source);
  sampler.start();
  sampler.stop();
  EXPECT_TRUE(sampler.timeline().empty());
}

TEST(MonitorNvmlSource, FactoryNeverThrows) {
  std::unique_ptr<gpuvs::monitor::Source> source;
  ASSERT_NO_THROW(source = gpuvs::monitor::make_nvml_source());
  ASSERT_NE(source, nullptr);
  if (!gpuvs::nvml::available()) {
    EXPECT_EQ(source->gpu_count(), 0);
    ASSERT_FALSE(source->notes().empty());
    EXPECT_NE(source->notes()[0].find("NVML unavailable"), std::string::npos);
  } else {
    for (int g = 0; g < source->gpu_count(); ++g) {
      EXPECT_FALSE(source->gpu_name(g).empty());
      // The identity a fleet's logs join on: NVML's UUID and PCI bus id.
      const gpuvs::monitor::GpuIdentity id = source->identity(g);
      EXPECT_EQ(id.name, source->gpu_name(g));
      EXPECT_EQ(id.uuid.rfind("GPU-", 0), 0u) << id.uuid;
      EXPECT_NE(id.pci_bus_id.find(':'), std::string::npos) << id.pci_bus_id;
    }
  }
}

TEST(MonitorNvmlSource, MissingGpmSymbolsAnswerNullopt) {
  const gpuvs::nvml::Library missing({"libgpuvs-no-such-nvml.so.1"});
  gpuvs::nvml::Return status = gpuvs::nvml::kSuccess;
  gpuvs::nvml::GpmSample sample = missing.gpm_sample_alloc(&status);
  EXPECT_FALSE(sample.valid());
  EXPECT_EQ(status, gpuvs::nvml::kErrorUninitialized);
  EXPECT_FALSE(missing.gpm_metrics(sample, sample, {gpuvs::nvml::kGpmMetricSmUtil}).has_value());
  const gpuvs::nvml::Device none = missing.device_by_index(0);
  EXPECT_FALSE(none.utilization().has_value());
  EXPECT_FALSE(none.gpm_supported().has_value());
  EXPECT_EQ(none.gpm_sample_get(sample), gpuvs::nvml::kErrorUninitialized);
}

}  // namespace
