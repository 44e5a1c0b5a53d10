#include "measure/region_timer.h"

namespace gpuvs {

CudaEventClock::Stamp CudaEventClock::make() {
  return std::make_unique<Event>();
}

void CudaEventClock::record(Stamp& s, cudaStream_t q) {
  s->record(q);
}

double CudaEventClock::seconds(Stamp& from, Stamp& to) {
  // Stamps of one timer may be on different streams: wait for both.
  from->synchronize();
  to->synchronize();
  return to->seconds_since(*from);
}

}  // namespace gpuvs
