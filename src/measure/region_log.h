// Per-region time of repeated steps (a model's profile), plain C++: the bookkeeping of
// RegionTimer (measure/region_timer.h, CUDA events), tested on the CPU with a fake
// clock.
//
// mark(name, queue) takes a stamp on the queue: it ends the open region, if any, and
// opens `name`; stop(queue) ends the open region and opens none. A Scope is
// mark(name) at its start and stop() at its end, so time between scopes is nobody's.
// A region lasts from its stamp to the next one. Times of regions of one name add up
// (over layers and steps); totals() lists (name, seconds) in the order the names were
// first marked. Disabled, mark, stop and Scope cost one branch; enabled they take
// stamps, so a step is then not captured in a CUDA graph (the trainer profiles eager
// steps). Regions are not nested.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuvs {

// Seconds per region name, in first-seen order.
class RegionTotals {
 public:
  // The name's slot; a new name gets the next one (its total starts at 0).
  size_t slot(std::string_view name);
  void add(size_t slot, double seconds) { totals_.at(slot).second += seconds; }
  const std::vector<std::pair<std::string, double>>& list() const { return totals_; }
  void clear() { totals_.clear(); }

 private:
  std::vector<std::pair<std::string, double>> totals_;
};

// Clock (what takes the stamps):
//   using Queue = ...;                     // where stamps are taken: a cudaStream_t
//   using Stamp = ...;                     // movable, reusable
//   Stamp make();                          // a new stamp
//   void record(Stamp&, Queue);            // taken when the queue reaches this point
//   double seconds(Stamp& from, Stamp& to);  // waits until both are taken
template <class Clock>
class BasicRegionTimer {
 public:
  using Queue = typename Clock::Queue;
  // Marks kept until totals() folds them; past this many, stop() folds them, waiting
  // for the queue between two regions. The ten steps of a model's profile (under 50
  // marks per BERT-large layer and step, FP8 included) stay below it.
  static constexpr size_t kMaxMarks = 16384;

  explicit BasicRegionTimer(Clock clock = Clock{}) : clock_(std::move(clock)) {}

  // Turned on, a new profile starts (earlier totals are dropped); turned off, marks are
  // ignored and totals() still gives what was timed.
  void enable(bool on) {
    if (on && !enabled_) {
      for (Mark& m : marks_)
        free_.push_back(std::move(m.stamp));
      marks_.clear();
      totals_.clear();
    }
    enabled_ = on;
  }
  bool enabled() const { return enabled_; }

  void mark(std::string_view name, Queue q) {
    if (enabled_) push(totals_.slot(name), q);
  }
  void stop(Queue q) {
    if (!enabled_) return;
    push(kNoRegion, q);
    if (marks_.size() >= kMaxMarks) fold();
  }

  // (name, seconds) in first-seen order, a region still open not counted yet; waits
  // for the stamps taken.
  std::vector<std::pair<std::string, double>> totals() {
    fold();
    return totals_.list();
  }

  class Scope {
   public:
    Scope(BasicRegionTimer& t, std::string_view name, Queue q) {
      if (!t.enabled_) return;
      timer_ = &t;
      queue_ = q;
      t.mark(name, q);
    }
    ~Scope() {
      if (timer_) timer_->stop(queue_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    BasicRegionTimer* timer_ = nullptr;  // null when disabled
    Queue queue_{};
  };

  Clock& clock() { return clock_; }

 private:
  static constexpr size_t kNoRegion = static_cast<size_t>(-1);
  struct Mark {
    size_t slot;  // kNoRegion: a stop
    typename Clock::Stamp stamp;
  };

  void push(size_t slot, Queue q) {
    Mark m{slot, take()};
    clock_.record(m.stamp, q);
    marks_.push_back(std::move(m));
  }

  typename Clock::Stamp take() {
    if (free_.empty()) return clock_.make();
    auto s = std::move(free_.back());
    free_.pop_back();
    return s;
  }

  // Adds every closed region to the totals; keeps the last mark when it opened one.
  void fold() {
    if (marks_.empty()) return;
    for (size_t i = 0; i + 1 < marks_.size(); ++i)
      if (marks_[i].slot != kNoRegion)
        totals_.add(marks_[i].slot, clock_.seconds(marks_[i].stamp, marks_[i + 1].stamp));
    const bool open = marks_.back().slot != kNoRegion;
    const size_t done = open ? marks_.size() - 1 : marks_.size();
    for (size_t i = 0; i < done; ++i)
      free_.push_back(std::move(marks_[i].stamp));
    marks_.erase(marks_.begin(), marks_.begin() + static_cast<std::ptrdiff_t>(done));
  }

  Clock clock_;
  bool enabled_ = false;
  RegionTotals totals_;
  std::vector<Mark> marks_;
  std::vector<typename Clock::Stamp> free_;
};

}  // namespace gpuvs
