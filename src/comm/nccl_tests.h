// NVIDIA's nccl-tests (all_reduce_perf, ...) run beside gpuvs, so that its figures and
// gpuvs's own collective measurements come from one run on one machine
// (`gpuvs bench collectives --nccl-tests DIR`).
//
// The parser reads the text those binaries print, in every layout they have used:
//  - the column header ("# size count type redop root time algbw busbw #wrong ...")
//    says which columns a row has; the parser follows it rather than a fixed layout,
//    so old versions (no redop/root for some ops, an "error" column holding the
//    largest deviation instead of #wrong), per-iteration columns (-I 1), CPU time
//    (-C 1) and timestamps (-S 1) all read correctly. Without a header it assumes
//    the layout of 2022 and later (size count type redop root, then 2 x 4 figures);
//  - a figure printed as "N/A" (#wrong with -c 0) or missing (a row cut short when
//    the test failed) is nullopt, never 0;
//  - failures are collected as they are printed: "Test NCCL failure", "Test CUDA
//    failure", "Test timeout", the " .. pid N: Test failure" trace, "# error: ...",
//    an out-of-bounds or minimum-bandwidth FAILED trailer, usage complaints
//    ("invalid ..."), and an error glued to the end of a half-printed row.
// parse_nccl_tests_output never throws and never makes a row out of a line that is
// not one (fuzzed by the tests).
//
// The runner spawns one binary with a deadline, stdout and stderr through one pipe,
// the environment inherited; the child leads its own process group, so a timeout
// kills everything it started.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs::comm {

struct NcclTestsRow {
  int64_t size_bytes = 0;  // the "size" column: max(send, receive) bytes of one rank
  int64_t count = 0;       // elements
  std::string type;        // "float", "half", "bfloat16", ...
  std::string redop;       // "sum", "none" for data movement; "" when the version had no column
  int root = -1;           // -1 when the collective has no root or there is no column
  // Out-of-place and in-place figures; nullopt where the column says N/A or is missing.
  // time is CPU time when NcclTestsOutput::cpu_time.
  std::optional<double> oop_time_us, oop_algbw_gbs, oop_busbw_gbs;
  std::optional<int64_t> oop_wrong;
  std::optional<double> ip_time_us, ip_algbw_gbs, ip_busbw_gbs;
  std::optional<int64_t> ip_wrong;
  // Versions before 2022 print the largest deviation ("error", e.g. 2e-07) instead
  // of a count of wrong elements; it lands here and *_wrong stays nullopt.
  std::optional<double> oop_max_error, ip_max_error;
};

// One "#  Rank  0 Group  0 Pid 4242 on host device  0 [0000:19:00] NVIDIA H200" line
// ("Group" absent before 2022; the bus id was "0x19" before 2025).
struct NcclTestsDevice {
  int rank = -1;
  int group = 0;
  int64_t pid = 0;
  std::string host;
  int device = -1;
  std::string bus_id;  // "0000:19:00" or "0x19", without the brackets
  std::string name;    // "NVIDIA H200"
};

// The "# nThread 1 nGpus 2 minBytes 8 maxBytes ... graph: 0" line: what the binary
// says it ran, to check against what was asked. nullopt where not printed.
struct NcclTestsConfig {
  std::optional<int> threads, gpus_per_thread;
  std::optional<int64_t> min_bytes, max_bytes;
  std::optional<int64_t> step;  // the factor or the byte increment, see step_is_factor
  bool step_is_factor = false;
  std::optional<int> warmup, iters, agg_iters, validation, graph;
};

struct NcclTestsOutput {
  std::string version;       // nccl-tests' own, "2.17.6"; "" when absent (before late 2025)
  std::string nccl_version;  // "2.27.7": the library's code from the version line, else
                             // NCCL's "NCCL version 2.21.5+cuda12.4" (NCCL_DEBUG=INFO)
  std::string program;       // "all_reduce_perf" from "# Collective test starting:"
  NcclTestsConfig config;
  std::vector<NcclTestsDevice> devices;
  bool cpu_time = false;  // the time columns are "cputime" (-C 1)
  std::vector<NcclTestsRow> rows;
  std::optional<int64_t> out_of_bounds;      // "# Out of bounds values : 0 OK"
  std::optional<double> avg_busbw_gbs;       // "# Avg bus bandwidth : X"; its presence
                                             // means the test reached its end
  std::optional<int64_t> reduced_max_bytes;  // "Reducing maxBytes to N due to memory"
  std::vector<std::string> errors;           // lines that report failures, in order
  std::vector<std::string> warnings;         // "NCCL WARN" lines (NCCL_DEBUG=WARN or INFO)
  std::string log;  // run_nccl_tests only: stdout and stderr as printed, interleaved
};

NcclTestsOutput parse_nccl_tests_output(std::string_view text);

// The line to quote when a run failed: the last NCCL/CUDA failure or timeout, else the
// last error that is not a bare trace (" .. Test failure file:line"), else the last
// error, else the last NCCL WARN; "" when there is none.
std::string nccl_tests_error_summary(const NcclTestsOutput& output);

// The ops gpuvs runs nccl-tests for, in its order: all_reduce, all_gather,
// reduce_scatter, broadcast, reduce, alltoall, sendrecv.
const std::vector<std::string>& nccl_tests_ops();

// "all_reduce" -> "all_reduce_perf". UsageError for an op not in nccl_tests_ops().
std::string nccl_tests_binary(std::string_view op);

// NCCL_VERSION_CODE as an "X.Y.Z" string: 22707 -> "2.27.7", 2804 -> "2.8.4"
// (the code changed from X*1000 to X*10000 at 2.9). "" for a code that is not one.
std::string nccl_version_from_code(int64_t code);

struct NcclTestsRun {
  std::filesystem::path dir;               // holds the *_perf binaries (or its build/ does)
  std::string op;                          // "all_reduce"
  int64_t min_bytes = 8, max_bytes = 0;    // -b -e
  double factor = 2;                       // -f: a whole number >= 2 ...
  int64_t step_bytes = 0;                  // -i: ... unless this is > 0
  int gpus = 1;                            // -g: GPUs driven by the (one) process
  int iters = 20, warmup = 5;              // -n -w
  int graph_launches = 0;                  // -G (0: no CUDA graphs; not passed)
  bool check = true;                       // -c 1 / -c 0
  std::string datatype;                    // -d ("" = the binary's default, float)
  std::string redop;                       // -o ("" = the binary's default, sum)
  double timeout_s = 600;                  // kill the child (SIGKILL) after this
  std::string suffix;                      // NAME_SUFFIX the tests were built with: "_mpi"
  std::vector<std::string> launcher;       // put before the binary: {"mpirun", "-np", "8"}
  std::map<std::string, std::string> env;  // set on top of the inherited environment
  std::vector<std::string> extra_args;     // appended as given: {"-z", "1"}
};

// The binary run: DIR/<op>_perf<suffix>, else DIR/build/<op>_perf<suffix> when only
// that exists (DIR is then the source tree). UsageError for an unknown op.
std::filesystem::path nccl_tests_path(const NcclTestsRun& run);

// The argv used (for the run file), e.g. {"/dir/all_reduce_perf", "-b", "8", "-e",
// "2147483648", "-f", "2", "-g", "2", "-n", "20", "-w", "5", "-c", "1"}, after the
// launcher if any. UsageError for parameters nccl-tests cannot take (max < min, a
// factor that is not a whole number >= 2, gpus < 1, ...).
std::vector<std::string> nccl_tests_argv(const NcclTestsRun& run);

// UsageError naming the path when the directory or the binary is missing or not
// executable: what run_nccl_tests checks first, for a command line checked before
// anything runs.
void check_nccl_tests_binary(const NcclTestsRun& run);

// Runs it and parses what it printed. Error when the directory or the binary is
// missing or not executable (naming the path), when it cannot be started, when it
// exits non-zero or is killed (quoting nccl_tests_error_summary, else its last line),
// when it exits 0 without a single result row (a usage message), or when it runs
// past timeout_s (after killing its process group).
NcclTestsOutput run_nccl_tests(const NcclTestsRun& run);

}  // namespace gpuvs::comm
