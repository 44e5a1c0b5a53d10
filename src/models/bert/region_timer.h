// BERT's profile timer is gpuvs::RegionTimer (measure/region_timer.h); this path stays
// for the files that still include it by its old name. New code includes
// measure/region_timer.h.
#pragma once

#include "measure/region_timer.h"
