#include "measure/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/text.h"

namespace gpuvs {

namespace {

// Whole seconds, rounded down: an elapsed clock never runs ahead.
long whole_seconds(double seconds) {
  return seconds > 0 && std::isfinite(seconds) ? static_cast<long>(seconds) : 0;
}

// "[00:42]", "[12:05]", "[1:02:03]": the elapsed time at the head of a line.
std::string elapsed_stamp(double seconds) {
  const long s = whole_seconds(seconds);
  if (s >= 3600) return fmt::format("[{}:{:02}:{:02}]", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("[{:02}:{:02}]", s / 60, s % 60);
}

// The first `columns` characters of well-formed UTF-8 text (one column each: the
// step names and details are ASCII but for a few symbols such as ³ and —).
std::string cut_to_columns(const std::string& text, int columns) {
  size_t i = 0;
  for (int c = 0; c < columns && i < text.size(); ++c)
    i += std::max<size_t>(1, utf8_length(text, i));
  return text.substr(0, std::min(i, text.size()));
}

}  // namespace

std::string format_duration(double seconds) {
  // Rounded to the nearest second: an estimate, or a total shown once.
  const long s = seconds > 0 && std::isfinite(seconds) ? std::lround(seconds) : 0;
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

void FileProgressSink::write(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fflush(file_);
}

Progress::Progress(ProgressMode mode, ProgressSink& sink, WallClock& clock, ProgressOptions options)
    : mode_(mode), sink_(sink), clock_(clock), options_(std::move(options)) {
  start_s_ = clock_.now_s();
  if (mode_ != ProgressMode::kOff && options_.tick_period_s > 0)
    ticker_ = std::thread([this, period = options_.tick_period_s] { run_ticker(period); });
}

Progress::~Progress() {
  if (ticker_.joinable()) {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    stop_cv_.notify_all();
    ticker_.join();
  }
  const std::lock_guard lock(mutex_);
  if (done_) return;
  flush_waiting();
  clear_live();
}

void Progress::run_ticker(double period_s) {
  const auto period = std::chrono::duration<double>(period_s);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (stop_cv_.wait_for(lock, period, [this] { return stopping_; })) break;
    lock.unlock();
    tick();
    lock.lock();
  }
}

void Progress::begin(int total_steps, std::vector<double> expected_s) {
  const std::lock_guard lock(mutex_);
  start_s_ = clock_.now_s();
  total_ = std::max(0, total_steps);
  expected_ = std::move(expected_s);
}

std::optional<double> Progress::seconds_left() const {
  const std::lock_guard lock(mutex_);
  return seconds_left_at(clock_.now_s());
}

std::optional<double> Progress::seconds_left_at(double now) const {
  if (total_ == 0) return std::nullopt;
  const std::optional<double> mean =
      finished_ > 0 ? std::optional<double>(finished_s_ / finished_) : std::nullopt;
  auto expected = [&](int step) -> std::optional<double> {  // 1-based
    if (step - 1 < static_cast<int>(expected_.size()) && expected_[step - 1] > 0)
      return expected_[step - 1];
    return mean;
  };
  double left = 0;
  if (index_ > 0) {
    const std::optional<double> current = current_expected_s_ ? current_expected_s_ : mean;
    if (!current) return std::nullopt;
    left += std::max(0.0, *current - (now - step_start_s_));
  }
  for (int s = index_ + 1; s <= total_; ++s) {
    const std::optional<double> e = expected(s);
    if (!e) return std::nullopt;
    left += *e;
  }
  return left;
}

std::string Progress::status_text(double now) const {
  std::string text = elapsed_stamp(now - start_s_);
  if (index_ > 0) {
    text += total_ > 0 ? fmt::format(" [{}/{}] ", index_, total_) : fmt::format(" [{}] ", index_);
    text += name_;
    if (!detail_.empty()) text += ": " + detail_;
  } else if (!detail_.empty()) {
    text += " " + detail_;
  }
  if (const std::optional<double> left = seconds_left_at(now))
    text += fmt::format(" — ~{} left", format_duration(*left));
  return text;
}

void Progress::write_line(const std::string& text) {
  sink_.write(options_.prefix + text + "\n");
}

void Progress::draw_live(double now) {
  std::string text = options_.prefix + status_text(now);
  // One column short of the width: a full last column would wrap the cursor.
  if (options_.width > 1) text = cut_to_columns(text, options_.width - 1);
  sink_.write("\r\033[K" + text);
  drawn_ = true;
  shown_second_ = whole_seconds(now - start_s_);
}

void Progress::clear_live() {
  if (mode_ != ProgressMode::kLive || !drawn_) return;
  sink_.write("\r\033[K");
  drawn_ = false;
}

void Progress::flush_waiting() {
  if (mode_ != ProgressMode::kPlain || !waiting_) return;
  write_line(*waiting_);
  waiting_.reset();
}

void Progress::end_step(double now) {
  if (index_ == 0) return;
  finished_s_ += now - step_start_s_;
  ++finished_;
}

void Progress::step(std::string_view name, std::optional<double> expected_s) {
  const std::lock_guard lock(mutex_);
  if (mode_ == ProgressMode::kOff || done_) return;
  const double now = clock_.now_s();
  end_step(now);
  ++index_;
  name_ = one_line(name);
  detail_.clear();
  step_start_s_ = now;
  current_expected_s_.reset();
  if (expected_s && *expected_s > 0)
    current_expected_s_ = *expected_s;
  else if (index_ - 1 < static_cast<int>(expected_.size()) && expected_[index_ - 1] > 0)
    current_expected_s_ = expected_[index_ - 1];
  if (mode_ == ProgressMode::kLive) return draw_live(now);
  flush_waiting();  // the last word of the step that ends
  write_line(status_text(now));
  last_line_s_ = now;
}

void Progress::detail(std::string_view text) {
  const std::lock_guard lock(mutex_);
  if (mode_ == ProgressMode::kOff || done_) return;
  const double now = clock_.now_s();
  detail_ = one_line(text);
  if (mode_ == ProgressMode::kLive) return draw_live(now);
  std::string line = status_text(now);
  if (last_line_s_ && now - *last_line_s_ < options_.detail_interval_s) {
    waiting_ = std::move(line);  // a detail already waiting is superseded
    return;
  }
  flush_waiting();
  write_line(line);
  last_line_s_ = now;
}

void Progress::tick() {
  const std::lock_guard lock(mutex_);
  if (mode_ == ProgressMode::kOff || done_) return;
  const double now = clock_.now_s();
  if (mode_ == ProgressMode::kLive) {
    if (drawn_ && whole_seconds(now - start_s_) != shown_second_) draw_live(now);
    return;
  }
  if (waiting_ && (!last_line_s_ || now - *last_line_s_ >= options_.detail_interval_s)) {
    flush_waiting();
    last_line_s_ = now;
  }
}

void Progress::fail(std::string_view why) {
  const std::lock_guard lock(mutex_);
  if (mode_ == ProgressMode::kOff || done_) return;
  ++failed_;
  if (mode_ != ProgressMode::kPlain) return;  // live: the command's summary says why
  const double now = clock_.now_s();
  flush_waiting();
  detail_ = "failed: " + one_line(why);
  write_line(status_text(now));
  last_line_s_ = now;
}

void Progress::done() {
  const std::lock_guard lock(mutex_);
  if (mode_ == ProgressMode::kOff || done_) return;
  done_ = true;
  const double now = clock_.now_s();
  end_step(now);
  if (mode_ == ProgressMode::kLive) return clear_live();
  flush_waiting();
  write_line(fmt::format("done in {} ({} step{}{})", format_duration(now - start_s_), index_,
                         index_ == 1 ? "" : "s",
                         failed_ > 0 ? fmt::format(", {} failed", failed_) : std::string()));
}

}  // namespace gpuvs
