// "Did you mean" for every name a user types: GPUs, benchmarks, models, metric ids,
// commands. One rule everywhere, with a cut-off, so that a name far from all the known
// ones gets no suggestion rather than three unrelated ones ("radeon rx 7900" is no "V100").
//
// Names are compared lower-cased with '-', '_' and ' ' ignored (the catalogue's
// spelling rule). A candidate's distance is the fewer of the edits (insertions,
// deletions, substitutions, swaps of neighbours) to the whole name and one more than
// the edits to its start as long as what was typed ("h100" for "H100-PCIe"). It is
// close when that is at most 1 for what is up to 2 characters long, else at most the
// larger of 2 and a third of its length. Ranked by distance, names starting with the
// same character first, then in the order given.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs {

// One name to suggest (`shown`) under every spelling it answers to (`keys`; empty:
// `shown` itself).
struct NameCandidate {
  std::string shown;
  std::vector<std::string> keys;
};

// The close candidates' `shown` names, best first, at most `max`.
std::vector<std::string> suggest(std::string_view typed, std::span<const NameCandidate> candidates,
                                 size_t max = 3);
std::vector<std::string> suggest(std::string_view typed, std::span<const std::string> names,
                                 size_t max = 3);

// "; did you mean: a, b?" for those names, "" for none.
std::string did_you_mean(const std::vector<std::string>& close);
// The tail of an "unknown NAME" error that lists what is known: "; known: LIST" without
// a close name, "; did you mean: a? Known: LIST" with one.
std::string did_you_mean_or_known(const std::vector<std::string>& close, std::string_view known);

// Lower case without '-', '_' and ' ': the form names are compared in (the catalogue
// finds GPUs by it too).
std::string normalise_name(std::string_view name);

// Optimal-string-alignment distance: edits with a swap of neighbours counted as one.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace gpuvs
