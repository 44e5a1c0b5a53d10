// The control plane of a multi-process collectives run: a small TCP side channel that
// NCCL cannot provide, in a star (every rank r > 0 connects to rank 0 only). It
//  - exchanges who is who (host, pid, GPU) and assigns local ranks (hello);
//  - broadcasts a small binary blob from rank 0, e.g. the 128-byte NCCL unique id;
//  - carries progress: the last step each rank started, so that a rank that times out
//    in a collective can name the ranks that never arrived;
//  - detects deaths: a process that exits, even by SIGKILL, closes its socket. Rank 0
//    marks a rank whose connection closes without BYE dead and tells every other rank
//    at once; a rank > 0 that sees rank 0 close without BYE marks rank 0 dead;
//  - detects silence: a rank that is alive but stopped (SIGSTOP, a debugger, a hung driver
//    call that holds the whole process) keeps its socket open, so it never dies. Every
//    background thread sends a HEARTBEAT each kHeartbeatS (rank r > 0 to rank 0, rank 0 to
//    all), so a busy main thread still beats but a stopped process does not; each rank
//    records when it last heard anything from each peer it is connected to.
// Invariants: one background thread per ControlPlane owns the sockets and does only
// non-blocking I/O, so a stalled peer never blocks a call beyond that call's timeout;
// every member is thread-safe; a rank is dead only once its connection closed (or broke)
// without BYE, never because it is slow or silent; a dead rank stays dead; heartbeats are
// not progress (they leave steps alone); a silent rank that resumes is simply heard again.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs::comm {

struct PeerInfo {  // what each rank says about itself
  int rank = 0;
  std::string host;  // hostname
  int pid = 0;
  std::string detail;  // free text, e.g. "GPU 0 NVIDIA H200 GPU-uuid 0000:19:00.0"
  int local_rank = 0;  // filled by rank 0: index among ranks with the same host, by rank
  int local_size = 0;  // filled by rank 0: ranks on that host
};

inline constexpr double kHeartbeatS = 1.0;  // period of every rank's heartbeat

struct ControlAddress {
  std::string host;
  int port = 0;
};

std::string to_string(const ControlAddress& address);  // "host:port"
// "host:port" with an IPv4 address or a hostname and a port 1..65535; nullopt when malformed.
std::optional<ControlAddress> parse_control_address(std::string_view text);

class ControlPlane {
 public:
  // Rank 0: listen on all interfaces at `port` (0 = ephemeral), start the background thread.
  static std::unique_ptr<ControlPlane> serve(int world_size, int port);
  // Rank r > 0: connect to rank 0, retrying (refused, host not yet listening) until
  // timeout_s, then wait for rank 0 to accept this rank. Error naming the address on timeout
  // or when rank 0 refuses (duplicate rank, other world size).
  static std::unique_ptr<ControlPlane> join(const ControlAddress& root, int rank, int world_size,
                                            double timeout_s);
  ~ControlPlane();  // closes sockets, joins the thread; never throws; no BYE implied
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  int rank() const;
  int world_size() const;
  int port() const;  // rank 0: the bound port; others: rank 0's port

  // Every rank calls it once; returns the table of all ranks (index = rank) with
  // local_rank/local_size filled, identical on every rank. me.rank is set to rank().
  // Error after timeout_s naming the ranks that never said hello, at once when one died.
  std::vector<PeerInfo> hello(const PeerInfo& me, double timeout_s);
  // Rank 0 passes the payload (binary-safe, up to 64 KiB) and returns it once every rank is
  // connected; the others ignore the argument and return rank 0's next payload, in order.
  std::string broadcast(const std::string& payload, double timeout_s);
  // Progress: cheap (a lock and at most one pipe write), never blocks on the network; call
  // before each step. Only the latest step is sent.
  void step(int64_t step, std::string_view what);

  // Ranks seen to exit without BYE (closed connection). Non-blocking.
  std::vector<int> dead_ranks() const;
  // "rank 1 (host, pid 123) exited during step 57 (all_reduce 1048576 B)", one clause per
  // dead rank joined by "; "; empty when none is dead.
  std::string death_report() const;
  // "rank 1 (host, pid 123, last step 57: all_reduce 1048576 B)" or as much as known.
  std::string describe_rank(int rank) const;
  // The last step each rank reported (index = rank, -1 unknown), asking rank 0 and waiting up
  // to timeout_s for the answer (rank 0 answers from its table at once). Returns what it has
  // on timeout.
  std::vector<int64_t> steps(double timeout_s);
  // Seconds since anything was last heard from each rank (index = rank); 0 for this rank;
  // -1 when unknown: not yet joined, gone (BYE or dead), or a rank r > 0 asking about
  // another rank r' > 0 (only rank 0 hears them). Non-blocking.
  std::vector<double> silence_s() const;
  // Rank 0's silence table (rank 0: silence_s()), asking rank 0 like steps(timeout_s) and
  // refreshing the steps too. Entry 0 is this rank's own view of rank 0, entry rank() is 0.
  // When rank 0 does not answer within timeout_s: the local silence_s().
  std::vector<double> silences(double timeout_s);
  // "rank 1 (vm, pid 2279) silent for 15.2 s (stopped or hung; last step 4: all_reduce
  // 4 KiB)", one clause per live rank (not dead, no BYE) other than this one silent for
  // longer than min_silence_s, joined by "; "; empty when none. From silences(timeout_s),
  // so a rank r > 0 names the silent peers that rank 0 sees, and rank 0 itself when silent.
  std::string describe_silent(double min_silence_s, double timeout_s);
  // Orderly end: tell the peers this rank finished, so its closing is not a death. Rank 0
  // waits up to timeout_s for every other rank's BYE, then sends its own to all and returns
  // the ranks that did not say bye. Rank r > 0 sends BYE and waits up to timeout_s for rank
  // 0's; returns {0} when it did not come.
  std::vector<int> bye(double timeout_s);

  // Connections refused and malformed messages, one line each ("refused a control
  // connection from 10.0.0.7:51234: rank 1 already joined").
  std::vector<std::string> errors() const;

 private:
  class Impl;
  explicit ControlPlane(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuvs::comm
