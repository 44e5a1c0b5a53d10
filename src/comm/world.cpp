#include "comm/world.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "comm/mpi.h"
#include "comm/nccl_comm.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/host.h"

namespace gpuvs::comm {

namespace {

constexpr std::string_view kRendezvousMagic = "gpuvs-rendezvous/1";

// The address other hosts reach rank 0 at: the interface NCCL_SOCKET_IFNAME names
// (NCCL's own choice, so both agree), else the first up, non-loopback IPv4 one, else
// the hostname.
std::string reachable_address() {
  const char* wanted = std::getenv("NCCL_SOCKET_IFNAME");
  std::string first;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
      if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
      char ip[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, ip, sizeof ip);
      const bool named =
          wanted != nullptr && *wanted != '^' && std::string_view(a->ifa_name).starts_with(wanted);
      if (named) {
        first = ip;
        break;
      }
      if (first.empty()) first = ip;
    }
    freeifaddrs(list);
  }
  return first.empty() ? host_name() : first;
}

// Two lines, the magic and the address; written atomically (core/atomic_file.h), so a
// rank that polls for the file never reads half of it.
void write_rendezvous(const std::filesystem::path& path, const ControlAddress& address) {
  write_file_atomically(path, fmt::format("{}\n{}\n", kRendezvousMagic, to_string(address)),
                        "the rendezvous file");
}

std::optional<ControlAddress> read_rendezvous(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string magic, address;
  if (!std::getline(in, magic) || magic != kRendezvousMagic) return std::nullopt;
  if (!std::getline(in, address)) return std::nullopt;
  return parse_control_address(address);
}

// Rank > 0 under a rendezvous file: the file may be missing (rank 0 not up yet) or
// stale (left by an earlier run): read it, try it briefly, read it again.
std::unique_ptr<ControlPlane> join_through_file(const Launch& launch, double timeout_s) {
  const double deadline = monotonic_seconds() + timeout_s;
  std::string last_problem = "the file does not exist yet";
  while (monotonic_seconds() < deadline) {
    if (auto address = read_rendezvous(launch.rendezvous_file)) {
      try {
        const double left = std::max(0.1, std::min(5.0, deadline - monotonic_seconds()));
        return ControlPlane::join(*address, launch.rank, launch.world_size, left);
      } catch (const Error& e) {
        last_problem = e.what();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw Error(fmt::format("rank {}: no rank 0 through the rendezvous file {} within {:g} s ({})",
                          launch.rank, launch.rendezvous_file.string(), timeout_s, last_problem));
}

}  // namespace

bool built_with_mpi() {
  return mpi_available();
}

World::~World() {
  if (!rendezvous_written.empty()) {
    std::error_code ec;
    std::filesystem::remove(rendezvous_written, ec);
  }
}

std::string World::share_unique_id() {
  const std::string id = rank() == 0 ? new_unique_id() : std::string();
  return control->broadcast(id, timeout_s);
}

std::vector<int> World::finish() {
  std::vector<int> missing = control->bye(timeout_s);
  if (launch.mode == LaunchMode::kMpi) mpi_finalize();
  return missing;
}

std::unique_ptr<World> join_world(const Launch& launch, double timeout_s, int visible_devices) {
  auto world = std::make_unique<World>();
  world->launch = launch;
  world->timeout_s = timeout_s;
  const bool root = launch.rank == 0;

  switch (launch.mode) {
    case LaunchMode::kSingleProcess:
      throw Error("join_world: a single-process run has no other ranks to meet");
    case LaunchMode::kNcclCommId: {
      const auto id = parse_control_address(launch.nccl_comm_id);
      if (!id)
        throw UsageError(fmt::format("NCCL_COMM_ID '{}': expected host:port", launch.nccl_comm_id));
      if (id->port >= 65535)
        throw UsageError("NCCL_COMM_ID's port must leave port + 1 free for gpuvs");
      const ControlAddress address{id->host, id->port + 1};
      world->control = root
                           ? ControlPlane::serve(launch.world_size, address.port)
                           : ControlPlane::join(address, launch.rank, launch.world_size, timeout_s);
      break;
    }
    case LaunchMode::kFile:
      if (root) {
        world->control = ControlPlane::serve(launch.world_size, 0);
        write_rendezvous(launch.rendezvous_file,
                         ControlAddress{reachable_address(), world->control->port()});
        world->rendezvous_written = launch.rendezvous_file;
      } else {
        world->control = join_through_file(launch, timeout_s);
      }
      break;
    case LaunchMode::kMpi: {
      mpi_init(launch.rank, launch.world_size);
      std::string text;
      if (root) {
        world->control = ControlPlane::serve(launch.world_size, 0);
        text = to_string(ControlAddress{reachable_address(), world->control->port()});
      }
      text = mpi_broadcast_from_root(text);
      if (!root) {
        const auto address = parse_control_address(text);
        if (!address)
          throw Error(fmt::format("rank {}: MPI delivered a bad address '{}'", launch.rank, text));
        world->control = ControlPlane::join(*address, launch.rank, launch.world_size, timeout_s);
      }
      break;
    }
  }

  PeerInfo me;
  me.rank = launch.rank;
  me.host = host_name();
  me.pid = static_cast<int>(::getpid());
  world->peers = world->control->hello(me, timeout_s);
  const int local_rank = launch.local_rank.value_or(world->peers.at(launch.rank).local_rank);
  if (visible_devices < 1) {
    throw CannotRunError(fmt::format("rank {} on {} sees no GPU", launch.rank, me.host));
  }
  world->device = local_rank % visible_devices;
  return world;
}

}  // namespace gpuvs::comm
