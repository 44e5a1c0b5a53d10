#include "models/layers/layer_timer.h"

namespace gpuvs::models {

namespace {
constexpr size_t kMaxPending = 8192;  // fold (and synchronise) beyond this many regions
}

void LayerTimer::enable(bool on) {
  if (on && !enabled_) {
    fold();
    totals_.clear();
  }
  enabled_ = on;
}

std::vector<std::pair<std::string, double>> LayerTimer::totals() {
  fold();
  return totals_;
}

std::unique_ptr<Event> LayerTimer::take_event() {
  if (free_.empty()) return std::make_unique<Event>();
  auto e = std::move(free_.back());
  free_.pop_back();
  return e;
}

size_t LayerTimer::slot_of(const std::string& name) {
  for (size_t i = 0; i < totals_.size(); ++i)
    if (totals_[i].first == name) return i;
  totals_.emplace_back(name, 0.0);
  return totals_.size() - 1;
}

void LayerTimer::fold() {
  for (auto& p : pending_) {
    p.end->synchronize();
    totals_[p.slot].second += p.end->seconds_since(*p.start);
    free_.push_back(std::move(p.start));
    free_.push_back(std::move(p.end));
  }
  pending_.clear();
}

LayerTimer::Scope::Scope(LayerTimer& t, const std::string& name, cudaStream_t s) {
  if (!t.enabled_) return;
  if (t.pending_.size() >= kMaxPending) t.fold();
  timer_ = &t;
  stream_ = s;
  Pending p{t.slot_of(name), t.take_event(), t.take_event()};
  p.start->record(s);
  t.pending_.push_back(std::move(p));
}

LayerTimer::Scope::~Scope() {
  if (timer_) timer_->pending_.back().end->record(stream_);
}

}  // namespace gpuvs::models
