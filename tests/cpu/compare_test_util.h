// Shared by the report tests that build a Comparison by hand (a fixture that must not
// depend on build_comparison): rows and columns by their first fields.
#pragma once

#include <string>
#include <utility>

#include "report/compare.h"

namespace gpuvs {

inline Row row_of(std::string metric, std::string name, std::string unit) {
  Row r;
  r.metric = std::move(metric);
  r.name = std::move(name);
  r.unit = std::move(unit);
  r.higher_is_better = true;
  return r;
}

inline Column column_of(std::string label, std::string gpu_name, std::string catalogue_id,
                        bool measured) {
  Column c;
  c.label = std::move(label);
  c.gpu_name = std::move(gpu_name);
  c.catalogue_id = std::move(catalogue_id);
  c.measured = measured;
  return c;
}

}  // namespace gpuvs
