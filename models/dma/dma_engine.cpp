#include "models/dma/dma_engine.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/mem/remote_access.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"
#include "sim/timeline.h"

namespace t3sim {

namespace {
// Tags: bit 63 = the write half of a chunk; then the command sequence number; the
// low 24 bits the chunk index within its command.
constexpr std::uint64_t kWriteBit = std::uint64_t{1} << 63;
constexpr std::uint64_t kChunkBits = 24;
std::uint64_t make_tag(bool write, std::uint64_t seq, std::uint64_t chunk) {
  // The chunk index is informational (a tag stays unique through its sequence number):
  // keep it from spilling into the sequence bits of a command of more than 2^24 chunks.
  return (write ? kWriteBit : 0) | (seq << kChunkBits) | (chunk & ((std::uint64_t{1} << kChunkBits) - 1));
}
}  // namespace

DmaConfig read_dma_config(ConfigNode node) {
  DmaConfig cfg;
  cfg.bandwidth = node.get_bandwidth("bandwidth", cfg.bandwidth);
  cfg.max_outstanding = static_cast<std::uint32_t>(node.get_uint("max_outstanding", cfg.max_outstanding, 1, 1u << 20));
  cfg.chunk_bytes = static_cast<std::uint32_t>(node.get_bytes("chunk_size", cfg.chunk_bytes, 1, 1u << 30));
  cfg.launch_latency = node.get_time("launch_latency", cfg.launch_latency);
  cfg.completion_latency = node.get_time("completion_latency", cfg.completion_latency);
  node.finish();
  return cfg;
}

DmaEngine::DmaEngine(Component& parent, std::string_view name, const DmaConfig& cfg, MemTarget& local)
    : Component(parent, name),
      cfg_(cfg),
      local_(local),
      pump_event_(event_source(), std::string(this->name()) + ".pump", [this] { pump(); }),
      commands_done_(counter("commands_done", "commands", "DMA commands completed")),
      bytes_read_(counter("bytes_read", "bytes", "bytes read from local memory")),
      bytes_written_(counter("bytes_written", "bytes", "bytes stored or updated at destinations")),
      refusals_(counter("refusals", "requests", "requests refused by a memory (back-pressure)")),
      signals_(counter("signals", "flags", "flags set at peers after a command completed (copy-engine signals)")) {
  // Timeline tracks exist before the run (a partitioned run cannot add any).
  if (sim().timeline().enabled()) {
    timeline_track_ = sim().timeline().track(this->name());
    timeline_track_made_ = true;
  }
}

void DmaEngine::launch(DmaCommand cmd, Tick host_delay) {
  T3SIM_CHECK((cmd.destination != nullptr && cmd.bytes > 0) || (cmd.bytes == 0 && cmd.signal),
              "DMA command without destination or bytes");
  T3SIM_CHECK(!cmd.signal || remote_ != nullptr, "DMA command with a signal on an engine without a network");
  // Pooled callbacks hold two pointers; park the command until the launch latency passes.
  armed_.push_back(std::move(cmd));
  fired_.push_back(true);
  const auto id = static_cast<std::uint32_t>(armed_.size() - 1);
  ++launches_pending_;
  sim().events().schedule_callback(now() + host_delay + cfg_.launch_latency, [this, id] {
    --launches_pending_;
    enqueue(std::move(armed_[id]), /*host_launched=*/true);
  });
}

std::uint32_t DmaEngine::prequeue(DmaCommand cmd) {
  T3SIM_CHECK(cmd.destination != nullptr && cmd.bytes > 0 && cmd.rows > 0, "DMA command without destination or bytes");
  T3SIM_CHECK(cmd.rows == 1 || cmd.row_stride >= cmd.bytes, "DMA command rows overlap");
  armed_.push_back(std::move(cmd));
  fired_.push_back(false);
  return static_cast<std::uint32_t>(armed_.size() - 1);
}

void DmaEngine::trigger(std::uint32_t id) {
  T3SIM_CHECK(id < armed_.size() && !fired_[id], fmt::format("trigger of DMA command {} (armed {})", id, armed_.size()));
  fired_[id] = true;
  enqueue(std::move(armed_[id]), /*host_launched=*/false);
}

void DmaEngine::enqueue(DmaCommand cmd, bool host_launched) {
  Active a;
  a.cmd = std::move(cmd);
  a.host_launched = host_launched;
  a.started = now();
  queue_.push_back(std::move(a));
  finish_front_if_done();  // a signal-only command at the front completes at once
  pump();
  notify_activity();  // a sampling GPU with no kernel in flight probes the copies by time
}

SkippableWork::State DmaEngine::sampling_state() const {
  State st;
  // Delivered bytes (writes acknowledged), not bytes read: reads run ahead of what the
  // links carry until the posted writes fill the network's queues (on MI300X about
  // 180 us at 338 GB/s before the links' 325 GB/s takes over), and a rate measured
  // in that ramp would be extrapolated over the skip.
  st.progress = bytes_acked_;
  st.skippable = launches_pending_ == 0;
  for (const Active& a : queue_) {
    st.remaining += a.total() - a.next_chunk_offset;
    if (a.cmd.value_granule > 0 || a.cmd.rows > 1) st.skippable = false;
  }
  return st;
}

void DmaEngine::skip_work(std::uint64_t bytes) {
  bytes -= bytes % cfg_.chunk_bytes;  // whole chunks
  for (Active& a : queue_) {
    if (bytes == 0) return;
    const std::uint64_t take = std::min(bytes, a.total() - a.next_chunk_offset);
    T3SIM_CHECK(a.cmd.rows == 1 && a.cmd.value_granule == 0, "skipping a DMA command with rows or values");
    a.next_chunk_offset += take;
    bytes_read_ += take;
    bytes_written_ += take;
    bytes_acked_ += take;
    bytes -= take;
  }
}

bool DmaEngine::idle() const { return queue_.empty() && blocked_.empty(); }

// Issue chunk reads of the first command with chunks left, within the in-flight limit
// and the bandwidth. Commands issue strictly in order, so the scan starts at that
// command (next_issue_seq_): thousands of triggered ones may wait behind a busy link.
void DmaEngine::pump() {
  // Writes not handed over count against the limit too.
  std::uint32_t in_flight = reads_in_flight_ + static_cast<std::uint32_t>(blocked_.size());
  for (std::uint64_t seq = std::max(next_issue_seq_, command_base_); seq < command_base_ + queue_.size(); ++seq) {
    const std::size_t i = seq - command_base_;
    Active& a = queue_[i];
    next_issue_seq_ = seq;
    while (a.next_chunk_offset < a.total()) {
      if (in_flight >= cfg_.max_outstanding || read_blocked_) return;
      if (next_issue_ > now()) {
        if (!pump_event_.scheduled()) sim().schedule(pump_event_, next_issue_);
        return;
      }
      const std::uint64_t row = a.next_chunk_offset / a.cmd.bytes;
      const std::uint64_t in_row = a.next_chunk_offset % a.cmd.bytes;
      const std::uint64_t chunk_bytes = std::min<std::uint64_t>(cfg_.chunk_bytes, a.cmd.bytes - in_row);
      MemRequest r;
      r.op = MemOp::kRead;
      r.stream = Stream::kCommunication;
      r.uncached = true;  // DMA bypasses the L2 (../seeds/003 VII-B2)
      r.local_copy = a.cmd.destination == &local_;
      r.ingress = Ingress::kHub;  // a copy engine: the hub's port, not the SMs' crossbar
      r.address = a.cmd.src + row * a.cmd.row_stride + in_row;
      r.bytes = static_cast<std::uint32_t>(chunk_bytes);
      r.tag = make_tag(false, command_base_ + i, a.next_chunk_offset / cfg_.chunk_bytes);
      r.client = this;
      r.created = now();
      if (a.cmd.value_granule > 0) r.data.words.assign(chunk_bytes / a.cmd.value_granule, 0);
      if (!local_.can_accept(r)) {
        read_blocked_ = true;
        ++refusals_;
        local_.wait_for_space(this);
        return;
      }
      local_.accept(std::move(r));
      bytes_read_ += chunk_bytes;
      a.next_chunk_offset += chunk_bytes;
      ++a.chunks_in_flight;
      ++reads_in_flight_;
      ++in_flight;
      next_issue_ = std::max(next_issue_, now()) + cfg_.bandwidth.transfer_time(chunk_bytes);
    }
  }
}

bool DmaEngine::send(MemTarget& target, MemRequest&& req) {
  if (!blocked_.empty() || !target.can_accept(req)) {
    ++refusals_;
    blocked_.push_back(std::move(req));
    target.wait_for_space(this);
    return false;
  }
  target.accept(std::move(req));
  return true;
}

void DmaEngine::on_mem_response(MemRequest&& req) {
  sim().note_progress();
  const std::uint64_t seq = (req.tag & ~kWriteBit) >> kChunkBits;
  T3SIM_CHECK(seq >= command_base_ && seq - command_base_ < queue_.size(),
              fmt::format("response for unknown DMA command {}", seq));
  Active& a = queue_[seq - command_base_];
  if ((req.tag & kWriteBit) == 0) {
    // The chunk's data are here: store or update them at the destination.
    const std::uint64_t offset = req.address - a.cmd.src;
    MemRequest w;
    w.op = a.cmd.op;
    w.stream = Stream::kCommunication;
    w.uncached = true;
    w.local_copy = a.cmd.destination == &local_;
    w.ingress = Ingress::kHub;
    w.address = a.cmd.dst + offset;
    w.bytes = req.bytes;
    w.tag = req.tag | kWriteBit;
    w.track = a.cmd.track;
    w.client = this;
    w.created = now();
    w.data = std::move(req.data);
    bytes_written_ += w.bytes;
    --a.chunks_in_flight;  // posted: the slot frees once the write is handed over
    --reads_in_flight_;
    ++a.writes_unacked;
    send(*a.cmd.destination, std::move(w));
    pump();
    return;
  }
  --a.writes_unacked;
  bytes_acked_ += req.bytes;
  finish_front_if_done();
  pump();
}

void DmaEngine::finish_front_if_done() {
  while (!queue_.empty()) {
    Active& f = queue_.front();
    if (f.next_chunk_offset < f.total() || f.chunks_in_flight > 0 || f.writes_unacked > 0) return;
    ++commands_done_;
    if (f.cmd.signal) {
      ++signals_;
      remote_->set_peer_flag(f.cmd.signal->peer, f.cmd.signal->flag, f.cmd.signal->value);
    }
    // Timeline (T3 Figure 17b): one slice per command, from its start to its last ack.
    Timeline& tl = sim().timeline();
    if (tl.enabled()) {
      if (!timeline_track_made_) {
        timeline_track_ = tl.track(name());
        timeline_track_made_ = true;
      }
      tl.slice(timeline_track_,
               f.total() == 0 ? "dma signal" : f.cmd.op == MemOp::kUpdate ? "dma update" : "dma store", f.started,
               now());
    }
    if (f.cmd.on_done) {
      if (f.host_launched) {
        // Parked like a launch: the host hears of it after completion_latency.
        armed_.push_back(DmaCommand{});
        fired_.push_back(true);
        armed_.back().on_done = std::move(f.cmd.on_done);
        const auto id = static_cast<std::uint32_t>(armed_.size() - 1);
        sim().events().schedule_callback(now() + cfg_.completion_latency, [this, id] { armed_[id].on_done(); });
      } else {
        f.cmd.on_done();
      }
    }
    queue_.pop_front();
    ++command_base_;
  }
}

void DmaEngine::on_mem_retry() {
  read_blocked_ = false;
  std::vector<MemRequest> pending;
  pending.swap(blocked_);
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const std::uint64_t seq = (pending[i].tag & ~kWriteBit) >> kChunkBits;
    MemTarget& target = *queue_[seq - command_base_].cmd.destination;
    if (!blocked_.empty() || !target.can_accept(pending[i])) {
      for (std::size_t j = i; j < pending.size(); ++j) blocked_.push_back(std::move(pending[j]));
      target.wait_for_space(this);
      break;
    }
    target.accept(std::move(pending[i]));
  }
  pump();
}

void DmaEngine::report_in_flight(std::vector<std::string>& out) const {
  if (idle()) return;
  std::uint64_t left = 0;
  std::uint32_t in_flight = 0, unacked = 0;
  for (const Active& a : queue_) {
    left += a.total() - a.next_chunk_offset;
    in_flight += a.chunks_in_flight;
    unacked += a.writes_unacked;
  }
  out.push_back(fmt::format("{}: {} commands started, {} chunk reads in flight, {} writes unacknowledged, {} bytes "
                            "not yet read, {} writes refused{}",
                            name(), queue_.size(), in_flight, unacked, left, blocked_.size(),
                            read_blocked_ ? ", reads refused" : ""));
}

}  // namespace t3sim
