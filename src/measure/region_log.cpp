#include "measure/region_log.h"

namespace gpuvs {

size_t RegionTotals::slot(std::string_view name) {
  for (size_t i = 0; i < totals_.size(); ++i)
    if (totals_[i].first == name) return i;
  totals_.emplace_back(std::string(name), 0.0);
  return totals_.size() - 1;
}

}  // namespace gpuvs
