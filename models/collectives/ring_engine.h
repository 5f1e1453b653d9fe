#pragma once
// A simple per-GPU engine for ring reduce-scatter, all-gather and all-reduce
// (= RS then AG), the stand-in of the first vertical slice: it drives the memory
// and the links directly instead of running collective kernels on CUs (that
// arrives with models/cu) and is replaced then.
//
// Step s of N-1 (T3 Figure 3), seen from GPU g, sending to g+1:
//   reduce-scatter  sends chunk (g-s-1) mod N, receives chunk (g-s-2) mod N and
//                   reduces it into its own copy (read local, add, write back);
//                   after N-1 steps GPU g holds the fully reduced chunk g.
//   all-gather      sends chunk (g-s) mod N, receives chunk (g-s-1) mod N and
//                   writes it.
// Within a step, the chunk is read packet by packet (a bounded number of reads in
// flight) and each packet is sent as soon as it is read, so memory and link
// overlap. Steps are synchronized per GPU: step s+1 starts once step s has sent
// everything and reduced/written everything it received, since step s+1 sends the
// chunk step s produced. This is the alpha-beta model of a ring step, hence the
// analytical time (N-1) * (S/N / B + latency) = (N-1)/N * S/B + (N-1) * latency.
//
// Arrivals for a later step (a neighbour may run one step ahead) are processed as
// they come: they touch a different chunk than the current step sends.

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "models/mem/ideal_memory.h"
#include "models/net/packet.h"
#include "sim/link.h"
#include "trace/collective.h"  // CollectiveOp

namespace t3sim {


// How a per-GPU array of `array_bytes` is cut: N chunks (element-aligned) and each
// chunk into blocks of at most `packet_bytes`, the unit of reads, packets and
// functional payloads.
class ChunkLayout {
 public:
  ChunkLayout(std::uint64_t array_bytes, std::uint32_t element_bytes, std::uint64_t packet_bytes,
              std::uint32_t num_chunks);
  struct Block {
    std::uint64_t first_element;
    std::uint64_t elements;
  };
  std::uint32_t num_chunks() const { return num_chunks_; }
  std::uint32_t element_bytes() const { return element_bytes_; }
  std::uint64_t chunk_first(std::uint32_t c) const;
  std::uint64_t chunk_elements(std::uint32_t c) const { return chunk_first(c + 1) - chunk_first(c); }
  std::uint64_t blocks_in_chunk(std::uint32_t c) const;
  Block block(std::uint32_t c, std::uint64_t b) const;
  std::uint64_t address_of(const Block& blk) const { return blk.first_element * element_bytes_; }
  std::uint64_t bytes_of(const Block& blk) const { return blk.elements * element_bytes_; }

 private:
  std::uint64_t elements_;
  std::uint32_t element_bytes_;
  std::uint64_t packet_elements_;
  std::uint32_t num_chunks_;
};

struct RingEngineConfig {
  std::uint32_t max_outstanding_reads = 16;
};

class RingCollectiveEngine final : public Component {
 public:
  RingCollectiveEngine(Component& gpu, std::string_view name, const RingEngineConfig& cfg,
                       CollectiveOp op, const ChunkLayout& layout, FunctionalMode mode, std::uint32_t gpu_index,
                       IdealMemory& memory, Link<Packet>& tx, Link<Packet>& rx);

  void start();
  bool done() const { return step_ == total_steps_; }
  Tick finish_time() const { return finish_time_; }
  void set_on_done(std::function<void()> fn) { on_done_ = std::move(fn); }
  std::uint32_t total_steps() const { return total_steps_; }

  void report_in_flight(std::vector<std::string>& out) const override;

 private:
  enum class Purpose : std::uint64_t { kSendRead = 0, kReduceRead = 1, kWrite = 2 };
  static std::uint64_t make_tag(Purpose p, std::uint32_t step, std::uint64_t block) {
    return (static_cast<std::uint64_t>(p) << 62) | (static_cast<std::uint64_t>(step) << 40) | block;
  }
  bool reduces(std::uint32_t step) const;
  std::uint32_t ring_offset(std::uint32_t step) const;
  std::uint32_t send_chunk(std::uint32_t step) const;
  std::uint32_t recv_chunk(std::uint32_t step) const;

  void begin_step();
  void issue_reads();
  void send_ready();
  void on_memory(MemAccess&& a);
  void on_arrivals();
  void maybe_finish_step();

  RingEngineConfig cfg_;
  CollectiveOp op_;
  const ChunkLayout& layout_;
  FunctionalMode mode_;
  std::uint32_t gpu_, n_;
  IdealMemory& mem_;
  Link<Packet>& tx_;
  Link<Packet>& rx_;
  std::uint32_t total_steps_;

  // current step
  std::uint32_t step_ = 0;
  Tick step_start_;
  std::uint64_t send_blocks_ = 0, next_read_ = 0, sent_ = 0;
  std::uint32_t reads_in_flight_ = 0;
  std::deque<Packet> ready_;  // read, waiting for the link
  // received data, per step (a neighbour may be a step ahead)
  std::vector<std::uint64_t> recv_done_;
  std::unordered_map<std::uint64_t, Packet> awaiting_reduce_;  // tag -> received packet

  Tick finish_time_;
  std::function<void()> on_done_;
  Counter& bytes_sent_;
  Counter& bytes_received_;
  Average& step_time_;
  Timeline::TrackId track_ = 0;
};

}  // namespace t3sim
