#include "models/collectives/ring_engine.h"

#include <stdexcept>

#include <fmt/format.h>

#include "sim/error.h"

namespace t3sim {

ChunkLayout::ChunkLayout(std::uint64_t array_bytes, std::uint32_t element_bytes,
                         std::uint64_t packet_bytes, std::uint32_t num_chunks)
    : elements_(array_bytes / element_bytes),
      element_bytes_(element_bytes),
      packet_elements_(packet_bytes / element_bytes),
      num_chunks_(num_chunks) {
  if (element_bytes == 0 || array_bytes % element_bytes != 0)
    throw std::invalid_argument("the array size must be a multiple of the element size");
  if (packet_elements_ == 0 || packet_bytes % element_bytes != 0)
    throw std::invalid_argument("the packet size must be a multiple of the element size");
  if (elements_ < num_chunks)
    throw std::invalid_argument("the array must have at least one element per GPU");
}

std::uint64_t ChunkLayout::chunk_first(std::uint32_t c) const {
  return static_cast<std::uint64_t>(static_cast<uint128>(elements_) * c / num_chunks_);
}

std::uint64_t ChunkLayout::blocks_in_chunk(std::uint32_t c) const {
  return (chunk_elements(c) + packet_elements_ - 1) / packet_elements_;
}

ChunkLayout::Block ChunkLayout::block(std::uint32_t c, std::uint64_t b) const {
  const std::uint64_t first = chunk_first(c) + b * packet_elements_;
  const std::uint64_t end = chunk_first(c + 1);
  return Block{first, std::min(packet_elements_, end - first)};
}

RingCollectiveEngine::RingCollectiveEngine(Component& gpu, std::string_view name,
                                           const RingEngineConfig& cfg, CollectiveOp op,
                                           const ChunkLayout& layout,
                                           FunctionalMode mode, std::uint32_t gpu_index,
                                           IdealMemory& memory, Link<Packet>& tx, Link<Packet>& rx)
    : Component(gpu, name),
      cfg_(cfg),
      op_(op),
      layout_(layout),
      mode_(mode),
      gpu_(gpu_index),
      n_(layout.num_chunks()),
      mem_(memory),
      tx_(tx),
      rx_(rx),
      total_steps_(op == CollectiveOp::kAllReduce ? 2 * (n_ - 1) : n_ - 1),
      recv_done_(total_steps_, 0),
      bytes_sent_(counter("bytes_sent", "B", "collective payload sent to the next GPU")),
      bytes_received_(counter("bytes_received", "B", "collective payload received from the previous GPU")),
      step_time_(average("step_time", "ps", "duration of one ring step")) {
  if (cfg.max_outstanding_reads == 0) throw std::invalid_argument("max_outstanding_reads must be > 0");
  track_ = sim().timeline().track(this->name());
  tx_.set_on_send_ready([this] { send_ready(); });
  rx_.set_on_receive([this] { on_arrivals(); });
  mem_.set_on_complete([this](MemAccess&& a) { on_memory(std::move(a)); });
}

bool RingCollectiveEngine::reduces(std::uint32_t step) const {
  return op_ == CollectiveOp::kReduceScatter || (op_ == CollectiveOp::kAllReduce && step < n_ - 1);
}

// How far behind this GPU the chunk sent in `step` is: RS step s sends chunk g-s-1,
// AG step s (counted from the start of the AG pass) sends chunk g-s.
std::uint32_t RingCollectiveEngine::ring_offset(std::uint32_t step) const {
  if (reduces(step)) return step + 1;
  return step >= n_ - 1 ? step - (n_ - 1) : step;
}

std::uint32_t RingCollectiveEngine::send_chunk(std::uint32_t step) const {
  return (gpu_ + n_ - ring_offset(step) % n_) % n_;
}

// What the previous GPU sends in the same step.
std::uint32_t RingCollectiveEngine::recv_chunk(std::uint32_t step) const {
  return (gpu_ + 2 * n_ - 1 - ring_offset(step) % n_) % n_;
}

void RingCollectiveEngine::start() {
  step_start_ = now();
  begin_step();
}

void RingCollectiveEngine::begin_step() {
  send_blocks_ = layout_.blocks_in_chunk(send_chunk(step_));
  next_read_ = 0;
  sent_ = 0;
  issue_reads();
  maybe_finish_step();
}

void RingCollectiveEngine::issue_reads() {
  const std::uint32_t chunk = send_chunk(step_);
  while (next_read_ < send_blocks_ && reads_in_flight_ + ready_.size() < cfg_.max_outstanding_reads) {
    const auto blk = layout_.block(chunk, next_read_);
    mem_.access(MemAccess{MemOp::kRead, layout_.address_of(blk), layout_.bytes_of(blk),
                          make_tag(Purpose::kSendRead, step_, next_read_), {}});
    ++reads_in_flight_;
    ++next_read_;
  }
}

void RingCollectiveEngine::send_ready() {
  while (!ready_.empty() && tx_.can_send()) {
    bytes_sent_ += ready_.front().bytes;
    tx_.send(std::move(ready_.front()));
    ready_.pop_front();
    ++sent_;
  }
  issue_reads();
  maybe_finish_step();
}

void RingCollectiveEngine::on_memory(MemAccess&& a) {
  const auto purpose = static_cast<Purpose>(a.tag >> 62);
  const auto step = static_cast<std::uint32_t>((a.tag >> 40) & 0x3fffff);
  switch (purpose) {
    case Purpose::kSendRead: {
      --reads_in_flight_;
      ready_.push_back(Packet{gpu_, (gpu_ + 1) % n_, a.address, a.bytes, step, std::move(a.data)});
      send_ready();
      return;
    }
    case Purpose::kReduceRead: {
      // Local copy read: add the received copy and write the sum back.
      auto it = awaiting_reduce_.find(a.tag);
      T3SIM_CHECK(it != awaiting_reduce_.end(), "reduce read without a received packet");
      a.data.add(it->second.data);
      awaiting_reduce_.erase(it);
      mem_.access(MemAccess{MemOp::kWrite, a.address, a.bytes, make_tag(Purpose::kWrite, step, 0),
                            std::move(a.data)});
      return;
    }
    case Purpose::kWrite:
      ++recv_done_[step];
      if (step == step_) maybe_finish_step();
      return;
  }
}

void RingCollectiveEngine::on_arrivals() {
  while (rx_.has_message()) {
    Packet p = rx_.pop();
    T3SIM_CHECK(p.step < total_steps_, fmt::format("packet for step {} of {}", p.step, total_steps_));
    bytes_received_ += p.bytes;
    if (reduces(p.step)) {
      const std::uint64_t tag = make_tag(Purpose::kReduceRead, p.step, p.address);
      const std::uint64_t address = p.address;
      const std::uint64_t bytes = p.bytes;
      T3SIM_CHECK(awaiting_reduce_.emplace(tag, std::move(p)).second, "duplicate packet");
      mem_.access(MemAccess{MemOp::kRead, address, bytes, tag, {}});
    } else {
      mem_.access(MemAccess{MemOp::kWrite, p.address, p.bytes, make_tag(Purpose::kWrite, p.step, 0),
                            std::move(p.data)});
    }
  }
}

void RingCollectiveEngine::maybe_finish_step() {
  if (done() || sent_ < send_blocks_) return;
  if (recv_done_[step_] < layout_.blocks_in_chunk(recv_chunk(step_))) return;
  step_time_.sample(static_cast<double>((now() - step_start_).ps()));
  log().debug("{} step {} done at {} ({} packets sent)", reduces(step_) ? "RS" : "AG", step_,
              to_string(now()), sent_);
  if (sim().timeline().enabled())
    sim().timeline().slice(track_, reduces(step_) ? "RS step" : "AG step", step_start_, now());
  ++step_;
  step_start_ = now();
  if (done()) {
    finish_time_ = now();
    if (on_done_) on_done_();
    return;
  }
  begin_step();
}

void RingCollectiveEngine::report_in_flight(std::vector<std::string>& out) const {
  if (done()) return;
  out.push_back(fmt::format(
      "step {}/{}: sent {}/{} packets ({} reads in flight, {} waiting for the link), received {}/{}",
      step_, total_steps_, sent_, send_blocks_, reads_in_flight_, ready_.size(), recv_done_[step_],
      layout_.blocks_in_chunk(recv_chunk(step_))));
}

}  // namespace t3sim
