// The rows of the table of what gpuvs produces, apart from the code that checks and
// reads them (produces.cpp): what changes when a benchmark or a model writes a new
// figure. Only produces.cpp includes this; everyone else reads suite/produces.h.
#pragma once

#include <span>
#include <vector>

#include "suite/produces.h"

namespace gpuvs::produces_rows {

// Every family, in the order of the Family enum (produces.cpp checks it).
std::vector<FamilyDef> families();
std::vector<BenchmarkDef> benchmarks();
std::vector<ImporterDef> importers();
std::span<const ModelDef> models();

}  // namespace gpuvs::produces_rows
