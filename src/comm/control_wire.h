// The control plane's wire format (see control.h): every frame is u32 length (of what
// follows), u8 type, body; integers are big-endian, strings are u32 length + bytes
// (binary-safe). The first frame on a connection is JOIN; rank 0 answers ACCEPT or REJECT.
// In throws Error on a short or oversized body: the peer is broken, not us.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "comm/control.h"
#include "core/error.h"

namespace gpuvs::comm::wire {

enum class Msg : uint8_t {
  kJoin = 1,   // magic, rank, world size
  kAccept,     // -
  kReject,     // reason
  kHello,      // PeerInfo
  kTable,      // n, n x PeerInfo
  kBcast,      // payload
  kStep,       // step, what
  kStepsReq,   // request id
  kSteps,      // request id, n, n x (step, what, silence in ms or -1)
  kDead,       // rank, step, what
  kBye,        // -
  kHeartbeat,  // -: "still here", sent every kHeartbeatS by the background thread
};

inline constexpr std::string_view kMagic = "gpuvs-control/2";  // 2: heartbeats
inline constexpr uint32_t kMaxFrame = 16u << 20;               // a table of thousands of ranks fits
inline constexpr size_t kMaxPayload = 64u << 10;
inline constexpr size_t kMaxWhat = 200;

class Out {
 public:
  explicit Out(Msg m) : b_(4, '\0') { b_.push_back(char(m)); }
  Out& u32(uint32_t v) {
    for (int s = 24; s >= 0; s -= 8)
      b_.push_back(char((v >> s) & 0xff));
    return *this;
  }
  Out& i64(int64_t v) { return u32(uint32_t(uint64_t(v) >> 32)).u32(uint32_t(v)); }
  Out& str(std::string_view s) {
    u32(uint32_t(s.size()));
    b_.append(s);
    return *this;
  }
  Out& peer(const PeerInfo& p) {
    return u32(p.rank).str(p.host).u32(p.pid).str(p.detail).u32(p.local_rank).u32(p.local_size);
  }
  std::string done() {
    const auto n = uint32_t(b_.size() - 4);
    for (int i = 0; i < 4; ++i)
      b_[i] = char((n >> (24 - 8 * i)) & 0xff);
    return std::move(b_);
  }

 private:
  std::string b_;
};

inline uint32_t be32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v = (v << 8) | uint8_t(p[i]);
  return v;
}

class In {  // throws Error on a short or oversized body: the peer is broken, not us
 public:
  explicit In(std::string_view b) : b_(b) {}
  uint32_t u32() {
    need(4);
    pos_ += 4;
    return be32(b_.data() + pos_ - 4);
  }
  int i32() { return int(int32_t(u32())); }
  int64_t i64() {
    const uint64_t hi = u32();
    return int64_t((hi << 32) | u32());
  }
  std::string str() {
    const uint32_t n = u32();
    need(n);
    pos_ += n;
    return std::string(b_.substr(pos_ - n, n));
  }
  PeerInfo peer() {
    PeerInfo p;
    p.rank = i32();
    p.host = str();
    p.pid = i32();
    p.detail = str();
    p.local_rank = i32();
    p.local_size = i32();
    return p;
  }
  void end() const {
    if (pos_ != b_.size()) throw Error(fmt::format("{} unexpected bytes", b_.size() - pos_));
  }

 private:
  void need(size_t n) const {
    if (b_.size() - pos_ < n) throw Error("truncated message");
  }
  std::string_view b_;
  size_t pos_ = 0;
};

}  // namespace gpuvs::comm::wire
