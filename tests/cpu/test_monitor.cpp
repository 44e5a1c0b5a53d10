// The monitor's data side (monitor/sampler.h, monitor/summary.h) against a fake
// Source with values that are functions of (gpu, t): the sampling loop, summaries,
// Prometheus text, CSV and JSON. No GPU, no NVML.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/run_file.h"
#include "monitor/run_record.h"
#include "monitor/run_recorder.h"
#include "monitor/sampler.h"
#include "monitor/summary.h"

namespace {

using gpuvs::monitor::GpuSample;
using gpuvs::monitor::GpuSummary;
using gpuvs::monitor::Sampler;
using gpuvs::monitor::SamplerOptions;
using gpuvs::monitor::Source;
using namespace std::chrono_literals;

// GPU g at time t: SM util 10 * (g + 1), power 100 + g; GPU 1 has no GPM figures.
class FakeSource : public Source {
 public:
  explicit FakeSource(int gpus) : gpus_(gpus) {}
  int gpu_count() const override { return gpus_; }
  std::string gpu_name(int gpu) const override { return "Fake " + std::to_string(gpu); }
  GpuSample sample(int gpu, double t_s) override {
    ++calls;
    GpuSample s;
    s.gpu = gpu;
    s.t_s = t_s;
    s.gpu_util_pct = 100;
    s.power_w = 100.0 + gpu;
    s.energy_j = t_s * (100.0 + gpu);
    if (gpu != 1) s.sm_util_pct = 10.0 * (gpu + 1);
    return s;
  }
  std::vector<std::string> notes() const override { return {"fake"}; }
  std::atomic<int> calls{0};

 private:
  int gpus_;
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

TEST(MonitorSampler, ProducesRoundsAtTheInterval) {
  FakeSource source(2);
  std::atomic<int> callbacks{0};
  SamplerOptions options;
  options.interval = 10ms;
  options.on_round = [&](const std::vector<GpuSample>& round) {
    EXPECT_EQ(round.size(), 2u);
    ++callbacks;
  };
  Sampler sampler(source, options);
  sampler.start();
  EXPECT_TRUE(sampler.running());
  // >= 5 rounds at 10 ms: generous bound for a loaded 2-core machine.
  const auto t0 = std::chrono::steady_clock::now();
  while (sampler.rounds() < 5 && ms_since(t0) < 5000)
    std::this_thread::sleep_for(1ms);
  sampler.stop();
  EXPECT_FALSE(sampler.running());
  const int rounds = sampler.rounds();
  EXPECT_GE(rounds, 5);
  EXPECT_EQ(callbacks.load(), rounds);
  EXPECT_EQ(source.calls.load(), 2 * rounds);
  EXPECT_EQ(sampler.timeline().size(), static_cast<size_t>(2 * rounds));
  EXPECT_FALSE(sampler.callback_error().has_value());
}

TEST(MonitorSampler, StopIsPromptWithALongInterval) {
  FakeSource source(1);
  SamplerOptions options;
  options.interval = 10s;
  Sampler sampler(source, options);
  sampler.start();
  std::this_thread::sleep_for(20ms);
  const auto t0 = std::chrono::steady_clock::now();
  sampler.stop();
  EXPECT_LT(ms_since(t0), 200.0);
  // The round at start() and the one at stop().
  EXPECT_EQ(sampler.rounds(), 2);
}

TEST(MonitorSampler, TimelineIsInTimeOrderAndLatestIsTheLastRound) {
  FakeSource source(3);
  SamplerOptions options;
  options.interval = 5ms;
  Sampler sampler(source, options);
  sampler.start();
  const auto t0 = std::chrono::steady_clock::now();
  while (sampler.rounds() < 4 && ms_since(t0) < 5000)
    std::this_thread::sleep_for(1ms);
  sampler.stop();
  const std::vector<GpuSample> timeline = sampler.timeline();
  ASSERT_GE(timeline.size(), 12u);
  ASSERT_EQ(timeline.size() % 3, 0u);
  for (size_t i = 0; i < timeline.size(); ++i) {
    EXPECT_EQ(timeline[i].gpu, static_cast<int>(i % 3));
    if (i % 3 != 0) {
      EXPECT_EQ(timeline[i].t_s, timeline[i - 1].t_s);
    }
    if (i >= 3) {
      EXPECT_GT(timeline[i].t_s, timeline[i - 3].t_s);
    }
  }
  EXPECT_GE(timeline.front().t_s, 0.0);
  EXPECT_LT(timeline.front().t_s, 0.5);
  const std::vector<GpuSample> latest = sampler.latest();
  ASSERT_EQ(latest.size(), 3u);
  for (int g = 0; g < 3; ++g)
    EXPECT_EQ(latest[g], timeline[timeline.size() - 3 + g]);
}

TEST(MonitorSampler, RestartClearsAndDoubleStartThrows) {
  FakeSource source(1);
  SamplerOptions options;
  options.interval = 1s;
  options.final_round_on_stop = false;
  Sampler sampler(source, options);
  sampler.start();
  EXPECT_THROW(sampler.start(), gpuvs::Error);
  sampler.stop();
  sampler.stop();  // idempotent
  EXPECT_EQ(sampler.rounds(), 1);
  sampler.start();
  sampler.stop();
  EXPECT_EQ(sampler.rounds(), 1);
  EXPECT_EQ(sampler.timeline().size(), 1u);
}

TEST(MonitorSampler, CallbackExceptionsAreKeptNotFatal) {
  FakeSource source(1);
  SamplerOptions options;
  options.interval = 1s;
  options.on_round = [](const std::vector<GpuSample>&) { throw std::runtime_error("disk full"); };
  Sampler sampler(source, options);
  sampler.start();
  sampler.stop();
  EXPECT_EQ(sampler.rounds(), 2);
  ASSERT_TRUE(sampler.callback_error().has_value());
  EXPECT_EQ(*sampler.callback_error(), "callback: disk full");
}

TEST(MonitorSampler, ZeroGpusStillRuns) {
  FakeSource source(0);
  SamplerOptions options;
  options.interval = 1s;
  Sampler sampler(source, options);
  sampler.start();
  sampler.stop();
  EXPECT_TRUE(sampler.timeline().empty());
  EXPECT_TRUE(sampler.latest().empty());
}

// ---- summaries -----------------------------------------------------------------------

GpuSample at(int gpu, double t) {
  GpuSample s;
  s.gpu = gpu;
  s.t_s = t;
  return s;
}

// GPU 0: 5 samples, 0.5 s apart except one 1 s gap; GPU 1 only NVML figures.
std::vector<GpuSample> hand_made_timeline() {
  std::vector<GpuSample> t;
  const double times[] = {0.0, 0.5, 1.0, 2.0, 2.5};
  const double sm[] = {10, 20, 30, 40, 100};
  for (int i = 0; i < 5; ++i) {
    GpuSample s = at(0, times[i]);
    if (i > 0) s.sm_util_pct = sm[i];  // the first sample has no GPM figures
    s.gpu_util_pct = 100;
    s.power_w = 200.0 + 100.0 * i;  // 200..600
    s.energy_j = 1000.0 + 300.0 * times[i];
    t.push_back(s);
    GpuSample o = at(1, times[i]);
    o.gpu_util_pct = 50;
    t.push_back(o);
  }
  t[2 * 1].throttle_reasons = {"gpu_idle"};                     // t 0.5: covers 0.5 s
  t[2 * 3].throttle_reasons = {"sw_power_cap"};                 // t 2.0: covers 1.0 s
  t[2 * 4].throttle_reasons = {"hw_slowdown", "sw_power_cap"};  // t 2.5: covers 0.5 s
  t[0].throttle_reasons = {"sw_thermal_slowdown"};              // first: covers nothing
  return t;
}

TEST(MonitorSummary, MeansPercentilesAndThrottleSecondsAreExact) {
  const std::vector<GpuSummary> s = gpuvs::monitor::summarize(hand_made_timeline(), {"A", "B"});
  ASSERT_EQ(s.size(), 2u);
  const GpuSummary& g = s[0];
  EXPECT_EQ(g.gpu, 0);
  EXPECT_EQ(g.name, "A");
  EXPECT_EQ(g.samples, 5);
  EXPECT_DOUBLE_EQ(g.duration_s, 2.5);
  ASSERT_TRUE(g.sm_util_pct.has_value());
  EXPECT_DOUBLE_EQ(g.sm_util_pct->mean, 47.5);  // (20 + 30 + 40 + 100) / 4
  EXPECT_DOUBLE_EQ(g.sm_util_pct->p95, 100.0);  // nearest rank ceil(0.95*4) = 4
  ASSERT_TRUE(g.gpu_util_pct.has_value());
  EXPECT_DOUBLE_EQ(g.gpu_util_pct->mean, 100.0);
  EXPECT_FALSE(g.tensor_util_pct.has_value());
  EXPECT_FALSE(g.dram_bw_util_pct.has_value());
  EXPECT_DOUBLE_EQ(*g.power_w_mean, 400.0);
  EXPECT_DOUBLE_EQ(*g.power_w_max, 600.0);
  EXPECT_DOUBLE_EQ(*g.energy_j, 750.0);  // 300 J/s * 2.5 s
  EXPECT_DOUBLE_EQ(g.throttled_s, 1.5);  // gpu_idle does not count
  ASSERT_EQ(g.throttle_s_by_reason.size(), 3u);
  EXPECT_DOUBLE_EQ(g.throttle_s_by_reason.at("gpu_idle"), 0.5);
  EXPECT_DOUBLE_EQ(g.throttle_s_by_reason.at("sw_power_cap"), 1.5);
  EXPECT_DOUBLE_EQ(g.throttle_s_by_reason.at("hw_slowdown"), 0.5);
  EXPECT_EQ(g.throttle_s_by_reason.count("sw_thermal_slowdown"), 0u);
}

TEST(MonitorSummary, P95OfTwentyValues) {
  std::vector<GpuSample> t;
  for (int i = 1; i <= 20; ++i) {
    GpuSample s = at(0, i * 0.1);
    s.tensor_util_pct = i;  // 1..20
    t.push_back(s);
  }
  const GpuSummary g = gpuvs::monitor::summarize(t).at(0);
  EXPECT_DOUBLE_EQ(g.tensor_util_pct->mean, 10.5);
  EXPECT_DOUBLE_EQ(g.tensor_util_pct->p95, 19.0);  // rank ceil(0.95 * 20) = 19
  EXPECT_EQ(g.name, "");
}

// Seen on an H200: GPM's DRAM bandwidth over stop()'s last, very short interval was
// NaN, and the mean printed as "-nan". A non-finite value is no measurement.
TEST(MonitorSummary, NonFiniteValuesAreIgnored) {
  std::vector<GpuSample> t;
  for (double v : {10.0, 20.0, std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::infinity()}) {
    GpuSample s = at(0, 0.1 * static_cast<double>(t.size() + 1));
    s.dram_bw_util_pct = v;
    t.push_back(s);
  }
  const GpuSummary g = gpuvs::monitor::summarize(t).at(0);
  ASSERT_TRUE(g.dram_bw_util_pct.has_value());
  EXPECT_DOUBLE_EQ(g.dram_bw_util_pct->mean, 15.0);
  EXPECT_DOUBLE_EQ(g.dram_bw_util_pct->p95, 20.0);
}

TEST(MonitorSummary, AbsentFieldsStayAbsent) {
  const std::vector<GpuSummary> s = gpuvs::monitor::summarize(hand_made_timeline());
  const GpuSummary& g = s.at(1);
  EXPECT_EQ(g.gpu, 1);
  EXPECT_FALSE(g.sm_util_pct.has_value());
  EXPECT_FALSE(g.tensor_util_pct.has_value());
  EXPECT_FALSE(g.power_w_mean.has_value());
  EXPECT_FALSE(g.power_w_max.has_value());
  EXPECT_FALSE(g.energy_j.has_value());
  EXPECT_DOUBLE_EQ(g.gpu_util_pct->mean, 50.0);
  EXPECT_DOUBLE_EQ(g.throttled_s, 0.0);
  EXPECT_TRUE(g.throttle_s_by_reason.empty());
  EXPECT_TRUE(gpuvs::monitor::summarize({}).empty());
}

TEST(MonitorSummary, SliceKeepsTheWindow) {
  const auto window = gpuvs::monitor::slice(hand_made_timeline(), 0.5, 2.0);
  ASSERT_EQ(window.size(), 6u);
  const GpuSummary g = gpuvs::monitor::summarize(window).at(0);
  EXPECT_DOUBLE_EQ(g.duration_s, 1.5);
  EXPECT_DOUBLE_EQ(*g.energy_j, 450.0);
}

TEST(MonitorSummary, TextTable) {
  const std::string text =
      gpuvs::monitor::render_summary_text(gpuvs::monitor::summarize(hand_made_timeline(), {"A"}));
  EXPECT_NE(text.find("SM util %"), std::string::npos) << text;
  EXPECT_NE(text.find("47.5 / 100.0"), std::string::npos) << text;
  EXPECT_NE(text.find("400 / 600"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU 0 clock-event reasons: gpu_idle 0.5 s, hw_slowdown 0.5 s, "
                      "sw_power_cap 1.5 s"),
            std::string::npos)
      << text;
  EXPECT_EQ(gpuvs::monitor::render_summary_text({}), "no samples\n");
}

// ---- Prometheus, CSV, JSON -----------------------------------------------------------

TEST(MonitorPrometheus, ExactTextForASmallCase) {
  GpuSample a = at(0, 1.5);
  a.sm_util_pct = 97.5;
  a.power_w = 650;
  a.energy_j = 1234.5;
  a.sm_mhz = 1980;
  a.throttle_reasons = {"sw_power_cap"};
  GpuSample b = at(1, 1.5);
  b.power_w = 80.25;
  gpuvs::monitor::MonitorContext context;
  context.host = "node07";
  context.start_unix_s = 1764687301.25;
  context.gpus = {{"NVIDIA H200", "GPU-aaaa", "00000000:19:00.0"},
                  {"Odd \"name\" \\ x\ny", "", ""}};
  const std::string text = gpuvs::monitor::prometheus_text({b, a}, context);
  const std::string l0 =
      "{gpu=\"0\",name=\"NVIDIA H200\",uuid=\"GPU-aaaa\",pci_bus_id=\"00000000:19:00.0\","
      "host=\"node07\"}";
  const std::string l1 =
      "{gpu=\"1\",name=\"Odd \\\"name\\\" \\\\ x\\ny\",uuid=\"\",pci_bus_id=\"\",host=\"node07\"}";
  const std::string expected =
      "# HELP gpuvs_gpu_sm_utilization_percent GPM: percent of SMs busy over the last "
      "interval.\n"
      "# TYPE gpuvs_gpu_sm_utilization_percent gauge\n"
      "gpuvs_gpu_sm_utilization_percent" +
      l0 +
      " 97.5\n"
      "# HELP gpuvs_gpu_power_watts Board power draw.\n"
      "# TYPE gpuvs_gpu_power_watts gauge\n"
      "gpuvs_gpu_power_watts" +
      l0 +
      " 650\n"
      "gpuvs_gpu_power_watts" +
      l1 +
      " 80.25\n"
      "# HELP gpuvs_gpu_energy_joules_total Energy used since the monitor started (a counter: "
      "it starts again at 0 when a new monitor starts, which rate() and increase() take as a "
      "reset).\n"
      "# TYPE gpuvs_gpu_energy_joules_total counter\n"
      "gpuvs_gpu_energy_joules_total" +
      l0 +
      " 1234.5\n"
      "# HELP gpuvs_gpu_sm_clock_hertz SM clock.\n"
      "# TYPE gpuvs_gpu_sm_clock_hertz gauge\n"
      "gpuvs_gpu_sm_clock_hertz" +
      l0 +
      " 1980000000\n"
      "# HELP gpuvs_monitor_sample_time_seconds When the sample was taken, in seconds since "
      "the monitor started.\n"
      "# TYPE gpuvs_monitor_sample_time_seconds gauge\n"
      "gpuvs_monitor_sample_time_seconds" +
      l0 +
      " 1.5\n"
      "gpuvs_monitor_sample_time_seconds" +
      l1 +
      " 1.5\n"
      "# HELP gpuvs_monitor_start_time_seconds When the monitor started, in seconds since the "
      "Unix epoch (sample times are relative to it).\n"
      "# TYPE gpuvs_monitor_start_time_seconds gauge\n"
      "gpuvs_monitor_start_time_seconds" +
      l0 +
      " 1764687301.250\n"
      "gpuvs_monitor_start_time_seconds" +
      l1 +
      " 1764687301.250\n"
      "# HELP gpuvs_gpu_clock_event_reason 1 for each clock-event (throttle) reason active "
      "now.\n"
      "# TYPE gpuvs_gpu_clock_event_reason gauge\n"
      "gpuvs_gpu_clock_event_reason" +
      l0.substr(0, l0.size() - 1) + ",reason=\"sw_power_cap\"} 1\n";
  EXPECT_EQ(text, expected);
  EXPECT_EQ(gpuvs::monitor::prometheus_text({}, context), "");
}

TEST(MonitorPrometheus, LabelEscaping) {
  EXPECT_EQ(gpuvs::monitor::prometheus_escape_label("plain"), "plain");
  EXPECT_EQ(gpuvs::monitor::prometheus_escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(MonitorTimeline, CsvHeaderAndEmptyCells) {
  GpuSample a = at(0, 0.1);
  a.gpu_util_pct = 100;
  a.sm_mhz = 1980;
  a.throttle_reasons = {"sw_power_cap", "hw_slowdown"};
  GpuSample b = at(1, 0.1);
  const std::string csv = gpuvs::monitor::timeline_csv({a, b});
  const std::string header =
      "gpu,t_s,gpu_util_pct,mem_util_pct,sm_util_pct,sm_occupancy_pct,tensor_util_pct,"
      "dram_bw_util_pct,fp64_util_pct,fp32_util_pct,fp16_util_pct,pcie_rx_bytes_per_s,"
      "pcie_tx_bytes_per_s,nvlink_rx_bytes_per_s,nvlink_tx_bytes_per_s,power_w,energy_j,"
      "sm_mhz,mem_mhz,temperature_c,throttle_reasons\n";
  const std::string expected = header +
                               "0,0.1,100,,,,,,,,,,,,,,,1980,,,sw_power_cap;hw_slowdown\n" +
                               "1,0.1,,,,,,,,,,,,,,,,,,,\n";
  EXPECT_EQ(csv, expected);
  EXPECT_EQ(gpuvs::monitor::timeline_csv({}), header);
}

// With the context, the rows say which host and GPU (UUID, PCI bus id) and when, in
// wall-clock time: a fleet's timelines join with other logs.
TEST(MonitorTimeline, CsvWithContextNamesHostGpuAndTime) {
  GpuSample a = at(0, 0.5);
  a.power_w = 600;
  gpuvs::monitor::MonitorContext context;
  context.host = "node07";
  context.start_unix_s = 1764687301.25;  // 2025-12-02T14:55:01.250Z
  context.gpus = {{"NVIDIA H200", "GPU-aaaa", "00000000:19:00.0"}};
  const std::string csv = gpuvs::monitor::timeline_csv({a, at(1, 0.5)}, &context);
  const std::string header_end = "throttle_reasons,host,uuid,pci_bus_id,time_utc\n";
  const size_t eol = csv.find('\n');
  ASSERT_NE(eol, std::string::npos);
  EXPECT_EQ(csv.substr(eol + 1 - header_end.size(), header_end.size()), header_end);
  EXPECT_NE(csv.find(",600,,,,,,node07,GPU-aaaa,00000000:19:00.0,2025-12-02T14:55:01.750Z\n"),
            std::string::npos)
      << csv;
  // A GPU the context does not know: empty UUID and bus id, the host and time still.
  EXPECT_NE(csv.find(",node07,,,2025-12-02T14:55:01.750Z\n"), std::string::npos) << csv;
  EXPECT_EQ(gpuvs::monitor::iso8601_utc(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(gpuvs::monitor::iso8601_utc(1.9996), "1970-01-01T00:00:02.000Z");
}

TEST(MonitorTimeline, JsonOmitsAbsentValues) {
  GpuSample a = at(0, 0.25);
  a.power_w = 500.5;
  a.temperature_c = 61;
  a.throttle_reasons = {"gpu_idle"};
  const nlohmann::ordered_json j = gpuvs::monitor::timeline_json({a, at(1, 0.25)});
  EXPECT_EQ(j.dump(),
            "[{\"gpu\":0,\"t_s\":0.25,\"power_w\":500.5,\"temperature_c\":61,"
            "\"throttle_reasons\":[\"gpu_idle\"]},"
            "{\"gpu\":1,\"t_s\":0.25,\"throttle_reasons\":[]}]");
  EXPECT_EQ(gpuvs::monitor::timeline_json({}).dump(), "[]");
}

// A reading that is not a finite number (a GPM interval NVML could not rate) is left
// out as an absent one is: JSON has no NaN, and null would read as a value.
TEST(MonitorTimeline, JsonOmitsNonFiniteReadings) {
  GpuSample a = at(0, 0.5);
  a.dram_bw_util_pct = std::numeric_limits<double>::quiet_NaN();
  a.power_w = std::numeric_limits<double>::infinity();
  a.sm_util_pct = 42.5;
  EXPECT_EQ(gpuvs::monitor::timeline_json({a}).dump(),
            "[{\"gpu\":0,\"t_s\":0.5,\"sm_util_pct\":42.5,\"throttle_reasons\":[]}]");
}

TEST(MonitorTimeline, SummaryJson) {
  const nlohmann::ordered_json j =
      gpuvs::monitor::summary_json(gpuvs::monitor::summarize(hand_made_timeline(), {"A", "B"}));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["name"], "A");
  EXPECT_DOUBLE_EQ(j[0]["sm_util_pct"]["p95"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(j[0]["throttled_s"].get<double>(), 1.5);
  EXPECT_FALSE(j[1].contains("power_w_mean"));
}

// ---- run files: per-step windows and the timeline (monitor/run_record.h) -------------

TEST(MonitorRunRecord, SliceCoveringTakesTheSamplesWhoseIntervalOverlaps) {
  const std::vector<GpuSample> t = hand_made_timeline();  // 0, 0.5, 1, 2, 2.5; 2 GPUs
  const auto times = [](const std::vector<GpuSample>& v, int gpu) {
    std::vector<double> out;
    for (const GpuSample& s : v)
      if (s.gpu == gpu) out.push_back(s.t_s);
    return out;
  };
  using V = std::vector<double>;
  // (0.5, 1] and (1, 2] overlap [0.7, 1.2]; (0, 0.5] does not.
  auto w = gpuvs::monitor::slice_covering(t, 0.7, 1.2);
  EXPECT_EQ(times(w, 0), (V{1.0, 2.0}));
  EXPECT_EQ(times(w, 1), (V{1.0, 2.0}));
  // A window inside one interval gets that interval's sample only.
  EXPECT_EQ(times(gpuvs::monitor::slice_covering(t, 1.1, 1.3), 0), (V{2.0}));
  // A sample at the window's start covers time before it; one at its end is in.
  EXPECT_EQ(times(gpuvs::monitor::slice_covering(t, 0.5, 1.0), 0), (V{1.0}));
  // Zero length at a sample: that sample.
  EXPECT_EQ(times(gpuvs::monitor::slice_covering(t, 2.0, 2.0), 0), (V{2.0}));
  // Past the last sample: what there is, up to the end.
  EXPECT_EQ(times(gpuvs::monitor::slice_covering(t, 2.2, 9.0), 0), (V{2.5}));
  EXPECT_TRUE(gpuvs::monitor::slice_covering(t, 2.5, 9.0).empty());
  EXPECT_TRUE(gpuvs::monitor::slice_covering({}, 0, 1).empty());
}

TEST(MonitorRunRecord, WindowUtilizationIsTheSummaryOfTheSlice) {
  const std::vector<GpuSample> t = hand_made_timeline();
  // Source GPU 0 is the run's GPU 4, source GPU 1 the run's GPU 2.
  const std::vector<int> run_gpus = {4, 2};
  const auto u = gpuvs::monitor::window_utilization(t, "memory.hbm", 0.7, 2.2, run_gpus, {4, 2});
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->step, "memory.hbm");
  EXPECT_EQ(u->t_begin_s, 0.7);
  EXPECT_EQ(u->t_end_s, 2.2);
  ASSERT_EQ(u->gpus.size(), 2u);  // in the order asked
  EXPECT_EQ(u->gpus[0].gpu, 4);
  EXPECT_EQ(u->gpus[1].gpu, 2);
  // The one summary code: the same figures as summarize() over the covering samples.
  const GpuSummary direct =
      gpuvs::monitor::summarize(gpuvs::monitor::slice_covering(t, 0.7, 2.2)).at(0);
  const gpuvs::GpuUtilization& g = u->gpus[0];
  EXPECT_EQ(g.samples, 3);  // t 1, 2, 2.5
  EXPECT_EQ(g.samples, direct.samples);
  EXPECT_DOUBLE_EQ(g.duration_s, 1.5);
  EXPECT_DOUBLE_EQ(g.sm_util_pct->mean, (30 + 40 + 100) / 3.0);
  EXPECT_DOUBLE_EQ(g.sm_util_pct->p95, 100);
  EXPECT_DOUBLE_EQ(*g.power_w_mean, 500);
  EXPECT_DOUBLE_EQ(*g.power_w_max, 600);
  EXPECT_DOUBLE_EQ(*g.energy_j, *direct.energy_j);
  EXPECT_DOUBLE_EQ(g.throttled_s, direct.throttled_s);
  EXPECT_EQ(g.throttle_s_by_reason, direct.throttle_s_by_reason);
  EXPECT_EQ(g, gpuvs::monitor::to_run_utilization(direct, 4));
  // The NVML-only GPU: no GPM figure, never a 0.
  EXPECT_FALSE(u->gpus[1].sm_util_pct.has_value());
  EXPECT_DOUBLE_EQ(u->gpus[1].gpu_util_pct->mean, 50);
  // Only the GPUs asked for; none sampled: nothing.
  const auto only = gpuvs::monitor::window_utilization(t, "s", 0.7, 2.2, run_gpus, {2});
  ASSERT_EQ(only->gpus.size(), 1u);
  EXPECT_EQ(only->gpus[0].gpu, 2);
  EXPECT_FALSE(gpuvs::monitor::window_utilization(t, "s", 0.7, 2.2, run_gpus, {0}).has_value());
  EXPECT_FALSE(gpuvs::monitor::window_utilization(t, "s", 3.0, 4.0, run_gpus, {4}).has_value());
}

TEST(MonitorRunRecord, TimelineColumnsSourceAndRounding) {
  std::vector<GpuSample> t = hand_made_timeline();
  t[2].sm_util_pct = 20.04;  // rounded to 0.1
  t[2].t_s = 0.50049;        // and times to 1 ms
  t[2].sm_mhz = 1755;
  t.push_back(at(7, 3.0));  // a source GPU without a run index: ignored
  const gpuvs::Timeline tl = gpuvs::monitor::to_run_timeline(t, {4, 2}, 0.5, {"note"});
  EXPECT_EQ(tl.source, "nvml");  // run GPU 2 has no GPM figure
  EXPECT_EQ(tl.interval_s, 0.5);
  EXPECT_EQ(tl.notes, std::vector<std::string>{"note"});
  ASSERT_EQ(tl.gpus.size(), 2u);
  EXPECT_EQ(tl.gpus[0].gpu, 2);  // by run GPU index
  const gpuvs::GpuTimeline& g = tl.gpus[1];
  EXPECT_EQ(g.gpu, 4);
  EXPECT_EQ(g.t_s, (std::vector<double>{0.0, 0.5, 1.0, 2.0, 2.5}));
  for (const auto* column :
       {&g.sm_util_pct, &g.tensor_util_pct, &g.dram_bw_util_pct, &g.gpu_util_pct, &g.power_w})
    EXPECT_EQ(column->size(), g.t_s.size());
  EXPECT_EQ(g.sm_mhz.size(), g.t_s.size());
  EXPECT_FALSE(g.sm_util_pct[0].has_value());
  EXPECT_DOUBLE_EQ(*g.sm_util_pct[1], 20.0);
  EXPECT_EQ(g.sm_mhz[1], 1755);
  EXPECT_FALSE(g.tensor_util_pct[1].has_value());
  EXPECT_DOUBLE_EQ(*g.power_w[4], 600);
  // Every GPU with GPM: "nvml+gpm"; nothing sampled: "none", notes kept.
  EXPECT_EQ(gpuvs::monitor::to_run_timeline(t, {4}, 0.5, {}).source, "nvml+gpm");
  const gpuvs::Timeline none = gpuvs::monitor::to_run_timeline({}, {0}, 0.1, {"NVML unavailable"});
  EXPECT_EQ(none.source, "none");
  EXPECT_TRUE(none.gpus.empty());
  EXPECT_EQ(none.notes, std::vector<std::string>{"NVML unavailable"});
}

// A run as the session builds it: two GPUs, results appended step by step.
gpuvs::RunFile two_gpu_run() {
  gpuvs::RunFile run;
  run.meta = {"0.1.0", "unknown", {"gpuvs", "bench"}, "bench", "2026-11-30T12:00:00Z", "", "h"};
  run.system.os = "Linux";
  run.system.cpu.model = "test";
  run.system.gpus.resize(2);
  run.system.gpus[1].index = 1;
  return run;
}

gpuvs::Result result(std::string id, std::vector<int> devices) {
  gpuvs::Result r;
  r.id = std::move(id);
  r.unit = "B/s";
  r.devices = std::move(devices);
  return r;
}

TEST(MonitorRunRecorder, StepsGetTheirWindowsAndTheRunItsTimeline) {
  auto owned = std::make_unique<FakeSource>(2);
  FakeSource* source = owned.get();
  gpuvs::monitor::RunRecorder recorder(std::move(owned), 5ms, {0, 1});
  recorder.start();
  ASSERT_TRUE(recorder.sampling());
  gpuvs::RunFile run = two_gpu_run();

  // Step 1 on GPU 1 (two results), step 2 on both GPUs (a result naming no device).
  const double b1 = recorder.now_s();
  std::this_thread::sleep_for(30ms);
  run.results.push_back(result("a.x", {1}));
  run.results.push_back(result("a.y", {1}));
  recorder.step_done(run.results, 0, "a", b1, {1});
  const double b2 = recorder.now_s();
  std::this_thread::sleep_for(30ms);
  run.results.push_back(result("b", {}));
  recorder.step_done(run.results, 2, "b", b2, {0, 1});
  ASSERT_TRUE(run.results[0].utilization.has_value()) << "filled as the steps end";
  recorder.finish(run);
  EXPECT_FALSE(recorder.sampling());
  const int calls = source->calls.load();

  const gpuvs::Utilization& a = *run.results[0].utilization;
  EXPECT_EQ(a.step, "a");
  EXPECT_EQ(a.t_begin_s, b1);
  EXPECT_GE(a.t_end_s, a.t_begin_s + 0.03);
  EXPECT_EQ(*run.results[1].utilization, a);  // a step's results share the window
  ASSERT_EQ(a.gpus.size(), 1u);
  EXPECT_EQ(a.gpus[0].gpu, 1);
  EXPECT_GE(a.gpus[0].samples, 2);                  // 30 ms at 5 ms, generously
  EXPECT_FALSE(a.gpus[0].sm_util_pct.has_value());  // the fake's GPU 1 has no GPM
  EXPECT_DOUBLE_EQ(*a.gpus[0].power_w_mean, 101);
  const gpuvs::Utilization& b = *run.results[2].utilization;
  EXPECT_EQ(b.step, "b");
  EXPECT_GE(b.t_begin_s, a.t_end_s);
  ASSERT_EQ(b.gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(b.gpus[0].sm_util_pct->mean, 10);

  ASSERT_TRUE(run.timeline.has_value());
  EXPECT_EQ(run.timeline->source, "nvml");
  EXPECT_EQ(run.timeline->interval_s, 0.005);
  EXPECT_EQ(run.timeline->notes, std::vector<std::string>{"fake"});
  ASSERT_EQ(run.timeline->gpus.size(), 2u);
  EXPECT_EQ(run.timeline->gpus[0].t_s.size() * 2, static_cast<size_t>(calls));
  EXPECT_GE(run.timeline->gpus[0].t_s.back(), b.t_end_s - 1e-3);  // the last round, at stop
  // What the recorder writes is a valid run file that reads back the same.
  const gpuvs::RunFile back = gpuvs::parse_run_file(gpuvs::to_json_text(run), "mem.json");
  EXPECT_EQ(back, run);
}

TEST(MonitorRunRecorder, WithoutGpusNothingIsSampledAndTheRunSaysWhy) {
  gpuvs::monitor::RunRecorder recorder(std::make_unique<FakeSource>(0), 5ms, {0});
  recorder.start();
  EXPECT_FALSE(recorder.sampling());
  EXPECT_EQ(recorder.now_s(), 0.0);
  gpuvs::RunFile run = two_gpu_run();
  run.results.push_back(result("a", {0}));
  recorder.step_done(run.results, 0, "a", 0.0, {0});
  recorder.finish(run);
  EXPECT_FALSE(run.results[0].utilization.has_value());
  ASSERT_TRUE(run.timeline.has_value());
  EXPECT_EQ(run.timeline->source, "none");
  EXPECT_EQ(run.timeline->notes, std::vector<std::string>{"fake"});
  EXPECT_TRUE(run.timeline->gpus.empty());
  EXPECT_THROW(gpuvs::monitor::RunRecorder(std::make_unique<FakeSource>(1), 0ms, {0}).start(),
               gpuvs::Error);
}

}  // namespace
