// The request side of the advisor (advisor.cpp calls these before any GPU is
// judged): defaults filled in, options checked against each other, and the text of the
// workload and of the assumptions. Every error is a UsageError.
#pragma once

#include "advise/advisor.h"

namespace gpuvs::advise {

// Tokens or samples, the global batch (tokens turned into whole sequences), the MFU and
// the context from their defaults, each default said in `a.model_lines`; the checks
// that span options (micro-batch against global batch, --tp, --gpus).
void fill_defaults(Request& r, Advice& a);
// The model's shape, FLOPs and batch as `a.model_lines`.
void describe_model(const Request& r, Advice& a);
// The assumptions behind every estimate as `a.assumptions`.
void list_assumptions(const Request& r, Advice& a);

}  // namespace gpuvs::advise
