#pragma once
// Synthetic memory traffic: generators that drive one GPU's memory system (L2 +
// memory controllers + HBM) through the MemTarget interface, for the memory-only
// workload (characterize the memory system alone; sweep T3's MC arbitration against a
// compute stream and a bursty communication stream, T3 §4.5, §6.1.2-6.1.3).
//
// A generator issues requests of one size over an address region (sequential,
// random or strided), as reads, writes, near-memory updates or a read/write mix,
// closed loop (at most max_outstanding in flight), optionally capped by an open-loop
// rate and gated by on/off bursts, until a request count, a byte count or an issue
// window runs out. It schedules its one issue event only when it can act: never
// while waiting for a response (max_outstanding reached), for space (the target
// refused; it sleeps until on_mem_retry()), or after it is done.
//
// ValueReference is the functional reference shared by the generators of a run
// (those with `values: true`): the expected final word of every value granule they
// wrote or updated, checked against what the memory holds at the end.

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "models/common/payload.h"
#include "models/mem/mem_request.h"
#include "sim/component.h"
#include "sim/event_queue.h"
#include "sim/stats.h"
#include "sim/time.h"

namespace t3sim {

class ConfigNode;
class ValueReference;

enum class TrafficPattern : std::uint8_t { kSequential, kRandom, kStrided };
// kMix: each request is a read with probability read_fraction, else a write.
enum class TrafficOp : std::uint8_t { kRead, kWrite, kUpdate, kMix };

const char* to_string(TrafficPattern p);
const char* to_string(TrafficOp op);

// One generator. Invariants established by read_traffic_config (and assumed by the
// generator): request_size and address are multiples of the value granule; footprint is
// a non-zero multiple of request_size; for kStrided, stride is a multiple of
// request_size and footprint a multiple of stride; at least one of requests and
// duration is non-zero.
struct TrafficConfig {
  std::string name = "gen0";              // component name: <parent>.<name>
  Stream stream = Stream::kCompute;        // which T3 §4.5 stream the requests belong to
  TrafficPattern pattern = TrafficPattern::kSequential;
  TrafficOp op = TrafficOp::kRead;
  double read_fraction = 0.5;              // kMix only
  std::uint64_t stride = 0;                // kStrided only (bytes between consecutive requests)
  std::uint32_t request_size = 128;        // bytes per request
  std::uint64_t address = 0;               // region start (bytes; config key `address`)
  std::uint64_t footprint = 64ULL << 20;   // region size (bytes)
  bool uncached = false;                   // bypass the L2 (updates always bypass)
  std::uint32_t max_outstanding = 64;      // closed-loop limit on requests in flight
  Bandwidth rate;                          // open-loop cap while issuing; 0 = none
  Tick burst_on;                           // zero: no bursts (always on)
  Tick burst_off;
  Tick start;                              // first issue time; bursts and duration count from here
  std::uint64_t requests = 0;              // stop after this many (0: no count limit)
  Tick duration;                           // issue only in [start, start + duration); 0: no limit
  bool values = false;                     // carry functional payloads
  bool kernel = false;                     // a compute kernel: its end is a kernel boundary (T3 §4.5)

  bool bursty() const { return burst_on > Tick::zero() && burst_off > Tick::zero(); }
};

// Reads one generator mapping (`node` is the list item). `value_granule` is the
// memory's (HbmConfig::value_granule). Calls node.finish().
TrafficConfig read_traffic_config(ConfigNode node, std::uint32_t value_granule,
                                  std::string default_name);

// Reads the list under `parent.<key>` (default `generators`), one mapping per
// generator; items are named in errors as `<parent>.generators[i].<key>`. The list is
// required and must not be empty; names must be unique. The list is recorded in the
// resolved config as written (item defaults are not recorded).
std::vector<TrafficConfig> read_traffic_configs(ConfigNode parent, std::uint32_t value_granule,
                                                std::string_view key = "generators");

class TrafficGenerator final : public Component, public MemClient {
 public:
  // `seed` is the run's seed; the generator's own stream is derived from it and the
  // generator's name (so adding a generator does not change the others' addresses).
  // `value_granule`: bytes per payload word of the memory system.
  TrafficGenerator(Component& parent, const TrafficConfig& cfg, std::uint64_t seed, MemTarget& target,
                   std::uint32_t value_granule);

  // Functional reference to record writes and updates in (values: true only). Set
  // before start(); may be shared by every generator of the run.
  void set_value_reference(ValueReference* reference);
  // Called once, when the last request has completed (the system uses it for kernel
  // boundaries, T3 §4.5). Set before start().
  void set_on_finished(std::function<void()> fn) { on_finished_ = std::move(fn); }

  // Schedules the first issue at max(now, config().start). Call once.
  void start();

  // MemClient
  void on_mem_response(MemRequest&& req) override;
  void on_mem_retry() override;

  void report_in_flight(std::vector<std::string>& out) const override;

  const TrafficConfig& config() const { return cfg_; }
  bool started() const { return started_; }
  bool finished() const { return finished_; }
  std::uint64_t issued() const { return issued_.value(); }
  std::uint64_t completed() const { return completed_.value(); }
  std::uint32_t outstanding() const { return outstanding_; }
  // Bytes of completed requests.
  std::uint64_t bytes() const { return bytes_done_; }
  Tick first_issue() const { return first_issue_; }
  Tick last_response() const { return last_response_; }
  // bytes() / (last_response() - first_issue()), in bytes per second (0 before a
  // response or when the span is zero).
  double achieved_bandwidth() const;
  // Request latency (created -> response), ns.
  const Histogram& latency() const { return latency_; }
  // Time spent refused by the target (from refusal to the retry), ps.
  std::uint64_t blocked_time() const { return blocked_time_.value(); }
  bool blocked() const { return wait_ == Wait::kRetry; }
  // The derived seed of this generator's random stream.
  std::uint64_t stream_seed() const { return stream_seed_; }

 private:
  enum class Wait : std::uint8_t { kNone, kTimer, kResponse, kRetry, kDone };
  struct Slot {
    bool busy = false;
    MemOp op = MemOp::kRead;
    std::uint64_t seq = 0;
    std::uint64_t address = 0;
    Tick created;
  };

  void run();                        // the issue event
  void wake_now();                   // schedule the issue event now (if not scheduled)
  bool sleep_until(Tick when);       // false if `when` is past the issue window (done)
  void finish();
  MemRequest make_request(std::uint64_t seq);
  std::uint64_t address_of(std::uint64_t seq);
  std::uint64_t word(std::uint64_t seq, std::uint64_t index) const;
  Tick window_open_at(Tick t) const;  // first time >= t inside an on-window
  Tick rate_allows_at() const;        // earliest issue time of the next request under `rate`

  const TrafficConfig cfg_;
  MemTarget& target_;
  const std::uint32_t granule_;
  const std::uint64_t stream_seed_;
  std::mt19937_64 rng_;
  ValueReference* reference_ = nullptr;
  std::uint32_t source_id_ = 0;
  std::function<void()> on_finished_;

  CallbackEvent issue_event_;
  Wait wait_ = Wait::kNone;
  bool started_ = false;
  bool issuing_done_ = false;
  bool finished_ = false;
  Tick issue_end_ = Tick::max();      // start + duration
  std::optional<MemRequest> pending_;  // built, not yet accepted (kept across refusals)
  std::uint64_t next_seq_ = 0;        // sequence number of the next request built
  std::uint32_t outstanding_ = 0;
  std::vector<Slot> slots_;           // one per possible outstanding request; tag = index
  std::vector<std::uint32_t> free_slots_;
  Tick rate_anchor_;                  // rate pacing: time and issue count it counts from
  std::uint64_t rate_anchor_count_ = 0;
  Tick blocked_since_;
  std::uint64_t bytes_done_ = 0;
  Tick first_issue_;
  Tick last_response_;

  Counter& issued_;
  Counter& completed_;
  Counter* op_bytes_[kNumMemOps];  // completed bytes by MemOp
  Counter& blocked_time_;
  Counter& refusals_;
  Histogram& latency_;
  Scalar& bandwidth_;
};

// The expected final memory contents for the functional check of synthetic traffic:
// one word per value granule written or updated by a generator with values.
//  * update: adds its operand (mod 2^64); updates commute, so any number of
//    generators updating the same address is checked exactly;
//  * write: sets the word;
//  * an address becomes ambiguous (excluded from the check) when its final value
//    depends on an order the memory decides: written by two generators, both written
//    and updated, or written again by one generator while its previous write to it
//    was still in flight.
class ValueReference {
 public:
  explicit ValueReference(std::uint32_t value_granule);

  std::uint32_t value_granule() const { return granule_; }
  // A new source (generator); returns its id.
  std::uint32_t add_source(std::string name);
  const std::string& source_name(std::uint32_t id) const { return sources_.at(id); }

  // A request with data was accepted by the memory (write or update; reads are
  // ignored). Contract: address and data.words.size() * granule describe the request.
  void on_issue(std::uint32_t source, MemOp op, std::uint64_t address, const Payload& data);
  // Its response arrived (ends the write's in-flight window).
  void on_complete(std::uint32_t source, MemOp op, std::uint64_t address, std::uint32_t bytes);

  struct Expected {
    std::uint64_t address;
    std::uint64_t value;
  };
  // Every checkable (non-ambiguous) granule, by address.
  std::vector<Expected> expected() const;
  std::size_t tracked() const { return entries_.size(); }
  std::size_t ambiguous() const;

  struct CheckResult {
    std::uint64_t checked = 0;
    std::uint64_t mismatches = 0;
    std::uint64_t ambiguous = 0;
    std::vector<std::string> messages;  // the first few mismatches, by address
    bool ok() const { return mismatches == 0; }
  };
  // Compares expected() with `peek(address, granule)` (the memory's words at the end
  // of the run: it must see data still held in caches). peek returns one word per
  // granule.
  CheckResult check(const std::function<Payload(std::uint64_t address, std::uint32_t bytes)>& peek,
                    std::size_t max_messages = 5) const;

 private:
  static constexpr std::uint32_t kNoWriter = UINT32_MAX;
  struct Entry {
    std::uint64_t value = 0;
    std::uint32_t writer = kNoWriter;  // the generator that wrote it (if any)
    std::uint32_t writes_in_flight = 0;
    bool updated = false;
    bool ambiguous = false;
  };
  std::uint32_t granule_;
  std::vector<std::string> sources_;
  std::unordered_map<std::uint64_t, Entry> entries_;  // by granule address
};

}  // namespace t3sim
