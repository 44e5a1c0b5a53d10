#include "models/bert/region_timer.h"

namespace gpuvs::models::bert {

void RegionTimer::enable(bool on) {
  enabled_ = on;
  if (!on) marks_.clear();
  totals_.clear();
}

void RegionTimer::mark(const char* name, cudaStream_t s) {
  if (!enabled_) return;
  auto e = std::make_unique<Event>();
  e->record(s);
  marks_.push_back({name, std::move(e)});
}

void RegionTimer::stop(cudaStream_t s) {
  mark(nullptr, s);
}

void RegionTimer::fold() {
  if (marks_.empty()) return;
  marks_.back().event->synchronize();
  for (size_t i = 0; i + 1 < marks_.size(); ++i) {
    const char* name = marks_[i].name;
    if (name == nullptr) continue;
    const double t = marks_[i + 1].event->seconds_since(*marks_[i].event);
    auto it = totals_.begin();
    while (it != totals_.end() && it->first != name)
      ++it;
    if (it == totals_.end())
      totals_.emplace_back(name, t);
    else
      it->second += t;
  }
  marks_.clear();
}

std::vector<std::pair<std::string, double>> RegionTimer::totals() {
  fold();
  return totals_;
}

}  // namespace gpuvs::models::bert
