// RunRecorder: the monitor inside a measuring session; see run_recorder.h.
#include "monitor/run_recorder.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "monitor/run_record.h"

namespace gpuvs::monitor {

RunRecorder::RunRecorder(std::unique_ptr<Source> source, std::chrono::milliseconds interval,
                         std::vector<int> run_gpus)
    : source_(std::move(source)),
      interval_(interval),
      run_gpus_(std::move(run_gpus)),
      sampler_(*source_, SamplerOptions{interval, {}, true}) {}

void RunRecorder::start() {
  if (interval_.count() <= 0) throw Error("monitor: the sampling interval must be > 0");
  if (source_->gpu_count() <= 0) return;
  sampler_.start();
  sampling_ = true;
}

double RunRecorder::now_s() const {
  return sampling_ ? sampler_.elapsed_s() : 0.0;
}

void RunRecorder::fill(std::vector<Result>& results, const Step& step,
                       const std::vector<GpuSample>& timeline) const {
  for (size_t i = step.first; i < step.end && i < results.size(); ++i) {
    Result& r = results[i];
    const std::vector<int>& wanted = r.devices.empty() ? step.gpus : r.devices;
    r.utilization =
        window_utilization(timeline, step.name, step.t_begin_s, step.t_end_s, run_gpus_, wanted);
  }
}

void RunRecorder::step_done(std::vector<Result>& results, size_t first, const std::string& step,
                            double t_begin_s, const std::vector<int>& step_gpus) {
  if (!sampling_) return;
  Step s{first, results.size(), step, t_begin_s, std::max(t_begin_s, now_s()), step_gpus};
  fill(results, s, sampler_.timeline());
  steps_.push_back(std::move(s));
}

void RunRecorder::finish(RunFile& run) {
  if (!sampling_) {
    run.timeline = to_run_timeline({}, run_gpus_, interval_.count() / 1000.0, source_->notes());
    return;
  }
  sampler_.stop();
  sampling_ = false;
  const std::vector<GpuSample> timeline = sampler_.timeline();
  for (const Step& s : steps_)
    fill(run.results, s, timeline);
  std::vector<std::string> notes = source_->notes();
  if (const auto error = sampler_.callback_error()) notes.push_back("monitor: " + *error);
  run.timeline = to_run_timeline(timeline, run_gpus_, interval_.count() / 1000.0, std::move(notes));
}

}  // namespace gpuvs::monitor
