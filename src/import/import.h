// `gpuvs import TOOL FILE...`: what NVIDIA's nccl-tests, nvbench and nvbandwidth wrote,
// as one gpuvs.run/1 run file (docs/import.md), so that `gpuvs compare` puts those
// figures beside gpuvs's own, like with like.
//
// Invariants:
//  - every result's id is of the table of what gpuvs produces (suite/produces.h): a
//    figure whose definition is one of gpuvs's gets that id with the tool's suffix
//    (collective.all_reduce.busbw.nccl_tests, peer.ce.bidirectional.nvbandwidth) and
//    the parameters gpuvs's own would have; the others get ids of their tool
//    (nvbench.gpu_time, nvbandwidth.<test>). Every result names the tool and its
//    version in parameters.tool; values are in base SI units;
//  - the run's system says what the files say (GPU names, bus ids, host, driver and
//    NCCL versions) and, where the format requires a field the files do not give,
//    what docs/import.md states: meta.command "import", "" or "unknown" for strings,
//    0 for counts;
//  - every file is read and checked before anything is written: a file that cannot be
//    read, is not that tool's output, has nothing to import, or comes from another
//    machine than the others is a UsageError naming it, in one line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/run_file.h"

namespace gpuvs::import {

struct ImportOptions {
  std::string tool;                // "nccl-tests", "nvbench" or "nvbandwidth"
  std::vector<std::string> files;  // paths, named as given in messages
  // nccl-tests: the collective of a log that does not name its binary (before late
  // 2023 its logs did not); a log that names one must agree.
  std::string op;
  // nvbandwidth: its -b, which its JSON does not record; by default nvbandwidth's
  // default of the version that wrote the file (512 MiB since 0.7, 64 MiB before).
  std::optional<int64_t> buffer_bytes;
};

// What was read from one file.
struct FileSummary {
  std::string path;
  std::string what;    // "all_reduce_perf (nccl-tests 2.17.6): 29 sizes on 2 GPUs"
  size_t results = 0;  // results it gave
  size_t errors = 0;   // failures it reports (run.errors)
  // What was not imported and why, and what was imported otherwise than it looks
  // (a test under its own id rather than gpuvs's); one line each.
  std::vector<std::string> notes;
};

struct ImportOutcome {
  RunFile run;
  std::vector<FileSummary> files;
};

// The tools `gpuvs import` reads, in the order of the table (suite/produces.h).
std::vector<std::string> import_tools();

// Checks what can be checked before a file is read: a known tool (else "unknown tool
// 'x'" with the closest name), options that go with it, and at least one file.
void check_import_options(const ImportOptions& options);

// Reads and converts every file into one run. `meta` is the import's (gpuvs's version,
// argv, the time); its host becomes the files' where they name one. UsageError as
// above.
ImportOutcome import_files(const ImportOptions& options, Meta meta);

// The same over texts already read, each with the name messages give it (what the
// fuzzer drives); options.files is not read.
struct NamedText {
  std::string name;
  std::string text;
};
ImportOutcome import_texts(const ImportOptions& options, const std::vector<NamedText>& texts,
                           Meta meta);

}  // namespace gpuvs::import
