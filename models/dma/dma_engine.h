#pragma once
// A DMA engine (SPEC "DMA engines"; ../seeds/003 §II-B, VII-B2): copies a source
// range of local memory to a destination memory, as stores or near-memory updates,
// chunk by chunk: read a chunk through the local memory system (communication
// stream, bypassing the L2 as MI300X's DMA does), then write or update it at the
// destination. Commands are either
//  - host-launched: they start after `launch_latency` and report completion after
//    `completion_latency` (ConCCL's CPU-orchestrated transfers), or
//  - pre-queued: armed ahead of time and started by trigger() with no latency (T3's
//    tracker fires them, T3 §4.2).
// A command may carry a signal: once its writes are acknowledged and every earlier
// command of the engine is complete (a stream's order), the engine sets a flag at a
// peer GPU (seed 001's copy-engine all-gather: the chunk's hipMemcpyAsync is followed
// on its stream by a 4-byte one of the flag). A signal-only command has no bytes.
// An engine works on its commands in order; at most `max_outstanding` chunk reads
// are in flight (plus writes it could not hand over yet), and chunks leave no faster
// than `bandwidth`. Writes are posted, as DMA writes over a fabric are: a chunk's
// slot frees once its write is handed to the destination; the command completes
// when every write is acknowledged.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "models/common/skippable_work.h"
#include "models/mem/mem_request.h"
#include "sim/component.h"
#include "sim/event_queue.h"
#include "sim/stats.h"

namespace t3sim {

class ConfigNode;
class RemoteAccess;

struct DmaConfig {
  Bandwidth bandwidth = Bandwidth(64'000'000'000ULL);  // per engine
  std::uint32_t max_outstanding = 64;                  // chunks in flight
  std::uint32_t chunk_bytes = 4096;                    // one read + one write/update each
  Tick launch_latency = Tick::us(5);                   // host-launched commands
  Tick completion_latency = Tick::us(2);               // host learns a command is done
};

DmaConfig read_dma_config(ConfigNode node);

struct DmaCommand {
  std::uint64_t src = 0;           // local source address
  std::uint64_t dst = 0;           // destination address
  std::uint64_t bytes = 0;          // of one row
  // A 2D region (a GEMM WF's output sub-tile, T3 §4.2.2): `rows` rows of `bytes`,
  // row r at src + r x row_stride (and dst + r x row_stride). Chunks never span rows.
  std::uint32_t rows = 1;
  std::uint64_t row_stride = 0;
  MemOp op = MemOp::kWrite;        // kWrite (store) or kUpdate (near-memory reduction)
  // T3 tracker metadata the destination's tracker counts the writes against.
  TrackerTag track;
  MemTarget* destination = nullptr;  // the peer's memory (or a network port), or local
  // Functional data (values granule of the memory system; 0 = timing only): chunks
  // read their words and carry them to the destination.
  std::uint32_t value_granule = 0;
  std::function<void()> on_done;   // called once, when the command is complete
  // Set `flag` to `value` at GPU `peer` once the command is complete (its writes
  // acknowledged, every earlier command of the engine complete): the flag travels
  // behind the command's data (RemoteAccess::set_peer_flag). Needs connect().
  struct Signal {
    std::uint32_t peer = 0;
    std::uint64_t flag = 0;
    std::uint64_t value = 1;
  };
  std::optional<Signal> signal;
};

class DmaEngine final : public Component, public MemClient, public SkippableWork {
 public:
  DmaEngine(Component& parent, std::string_view name, const DmaConfig& cfg, MemTarget& local);

  // A host-launched command: starts after launch_latency, counted from `host_delay`
  // from now (the host thread submitting commands one after another: its k-th
  // command leaves it k x launch_latency after its first).
  void launch(DmaCommand cmd, Tick host_delay = Tick::zero());
  const DmaConfig& config() const { return cfg_; }
  // Where signals go (the node's network). Contract: before a command with a signal.
  void connect(RemoteAccess& remote) { remote_ = &remote; }
  // A pre-queued command; returns its id for trigger().
  std::uint32_t prequeue(DmaCommand cmd);
  // Contract: id from prequeue(), triggered at most once. Starts it now (queued behind
  // commands already started).
  void trigger(std::uint32_t id);

  bool idle() const;
  std::uint64_t commands_done() const { return commands_done_.value(); }

  // MemClient
  void on_mem_response(MemRequest&& req) override;
  void on_mem_retry() override;

  // SkippableWork (run.sampling, models/gpu/stage_sampler.h): progress is the bytes
  // delivered (writes acknowledged); skippable while no host-launched command waits
  // for its launch latency and no started one carries values or spans rows. skip_work
  // moves whole chunks of the started commands past, in order, as if read and written.
  State sampling_state() const override;
  void skip_work(std::uint64_t bytes) override;

  void report_in_flight(std::vector<std::string>& out) const override;

 private:
  struct Active {
    DmaCommand cmd;
    bool host_launched = false;
    std::uint64_t next_chunk_offset = 0;  // bytes issued so far (rows in order)
    std::uint64_t total() const { return cmd.bytes * cmd.rows; }
    std::uint32_t chunks_in_flight = 0;  // reads issued, data not back yet
    std::uint32_t writes_unacked = 0;    // posted writes/updates not yet acknowledged
    Tick started;                        // for the timeline
  };
  void enqueue(DmaCommand cmd, bool host_launched);
  void pump();                      // issue what the limits allow
  bool send(MemTarget& target, MemRequest&& req);
  void finish_front_if_done();

  DmaConfig cfg_;
  MemTarget& local_;
  RemoteAccess* remote_ = nullptr;
  std::deque<Active> queue_;        // started commands, in order
  std::uint64_t command_base_ = 0;  // sequence number of queue_.front()
  std::vector<DmaCommand> armed_;   // pre-queued, by id
  std::vector<bool> fired_;
  std::uint32_t launches_pending_ = 0;  // host-launched commands in their launch latency
  std::uint64_t bytes_acked_ = 0;       // writes acknowledged by their destination (sampling's progress)
  Tick next_issue_;                 // bandwidth pacing
  bool timeline_track_made_ = false;
  std::uint32_t timeline_track_ = 0;
  std::uint32_t reads_in_flight_ = 0;  // chunk reads issued, data not back (all commands)
  std::uint64_t next_issue_seq_ = 0;   // sequence number of the first command with chunks left
  CallbackEvent pump_event_;
  std::vector<MemRequest> blocked_;  // refused writes waiting for a retry, in order
  bool read_blocked_ = false;

  Counter& commands_done_;
  Counter& bytes_read_;
  Counter& bytes_written_;
  Counter& refusals_;
  Counter& signals_;
};

}  // namespace t3sim
