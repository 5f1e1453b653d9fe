#pragma once
// The GPU's L2 (SPEC "The hardware model", L2): set-associative, banked, write-back
// with real tags, in front of the memory controllers. Uncached requests and all
// updates bypass it (T3 §4.3).
//
// Performance rule (SPEC): a request is one *transaction*, however many lines it
// spans. Its tag look-ups run in a loop when it is accepted; each line reserves a
// slot of its bank; hits cost no events of their own; each miss becomes exactly one
// line read to the memory side; the transaction completes with one event. An
// all-hit tile load therefore costs one event.
//
// A 2D request (MemRequest::rows > 1: a tile of `rows` rows of `bytes` bytes,
// `row_stride` apart) is one transaction too. Its pieces are the lines of each row,
// in row order: every row gets the same number of piece slots (the most lines any
// of its rows can span), so a row that spans fewer leaves its last slot empty. What
// the L2 sends to the memory side is always 1D (rows = 1, at most one line).
//
// Timing of one line piece (cycles of the L2 clock):
//   slot  = max(now, bank.next_free);  bank.next_free = slot + ceil(bytes / bank_bytes_per_cycle)
//   hit:  ready = slot + hit_latency
//   miss: ready = max(slot, fill arrival) + hit_latency   (the DRAM read leaves at acceptance)
//   bypassed or forwarded piece: ready = its memory response
// and the transaction completes at the latest ready time of its pieces.
//
// See README.md in this folder for the full rule set (write policy, bypass ordering,
// functional values, MSHRs, back-pressure) and the choices behind the defaults.

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "models/cache/memory_side_queues.h"
#include "models/cache/mshr_file.h"
#include "models/cache/tag_directory.h"
#include "models/mem/mem_request.h"
#include "sim/clock.h"
#include "sim/component.h"
#include "sim/stats.h"

namespace t3sim {

class ConfigNode;

struct L2Config {
  // T3 Table 1: 16 MB, 64 banks, 1.4 GHz.
  std::uint64_t size_bytes = 16ULL << 20;
  std::uint32_t banks = 64;
  std::uint32_t line_bytes = 128;
  std::uint32_t assoc = 16;
  std::uint64_t clock_hz = 1'400'000'000;
  // Cycles from a line's bank slot to its data being back at the requester. 160 is
  // Accel-Sim's Volta (SM7_QV100) -gpgpu_l2_rop_latency, the configuration T3 extended
  // (T3 §5.1.1); Accel-Sim charges it before the L2 access, we after (same sum for misses).
  std::uint32_t hit_latency = 160;
  // Data-array throughput per bank: one 128 B line per 2 cycles.
  std::uint32_t bank_bytes_per_cycle = 64;
  // Transactions in flight before can_accept() refuses. Accel-Sim's Volta L2 queues
  // 64 requests per sub-partition (64 sub-partitions): 4096.
  std::uint32_t max_transactions = 4096;
  // Transactions of the hub's port (MemRequest::ingress kHub: copy engines, NVLink
  // arrivals) in flight before can_accept() refuses them, in room of their own beside
  // max_transactions: the crossbar's credits are per port, so SM traffic that fills
  // the L2 does not refuse a copy engine. 0: the hub shares max_transactions with the
  // SMs, first come first served (the model before issue 41; Table 1's default, which
  // no measurement of that system decides).
  std::uint32_t hub_transactions = 0;
  // Miss status holding registers, shared by all banks. Accel-Sim's Volta L2 has 192
  // per sub-partition, x 64 = 12288. Little's law: 1 TB/s x ~500 ns loaded DRAM latency
  // needs ~4000 lines in flight, so a few hundred would throttle HBM.
  std::uint32_t max_outstanding_misses = 12288;
  std::string replacement = "lru";  // one of replacement_types() (i_replacement.h)
  // What an uncached read or write (a remote GPU's write, a kernel's uncached
  // buffer) does here. true: it goes around the L2 to DRAM (T3 §4.3, an AMD GPU's
  // L2 sits beside the path to the memory fabric). false: it looks up and allocates
  // like any access, because the L2 is memory-side and in front of every DRAM
  // partition (NVIDIA: peer NVLink traffic enters the GPU between the SMs and the
  // memory partitions, Milic et al., MICRO'17, Fig. 3; "it does not bypass the L2",
  // NVIDIA developer forum thread 292928). Near-memory updates bypass either way.
  bool bypass_uncached = true;
  // Who a bank serves first. false (`local_copy_priority: fair`): every request in
  // arrival order. true (`sm_first`): a local copy engine copy's pieces
  // (MemRequest::local_copy) only when the bank has nothing else reserved, so the SMs'
  // requests win and the copy gets what they leave (measured on H200: SM loads that
  // keep the L2 busy stop a same-GPU copy-engine copy altogether, while copies over
  // PCIe keep their rate beside the same loads; results/h200-measurements/README.md
  // point 10, d2d_engine.csv, ce_paths.csv).
  bool local_copy_sm_first = false;
  // Bytes per functional word (HbmConfig::value_granule); set by the system, not read
  // from the l2 section. line_bytes must be a multiple of it.
  std::uint32_t value_granule = 32;

  std::uint64_t num_lines() const { return size_bytes / line_bytes; }
  std::uint64_t num_sets() const { return num_lines() / assoc; }
  std::uint64_t sets_per_bank() const { return num_sets() / banks; }
  // Peak data-array throughput of all banks (bytes per second).
  double peak_bytes_per_second() const {
    return static_cast<double>(banks) * bank_bytes_per_cycle * static_cast<double>(clock_hz);
  }
};

// Reads an `l2:` section: size, banks, line_size, assoc, clock, hit_latency (cycles),
// bank_bytes_per_cycle, max_transactions, hub_transactions, max_outstanding_misses, replacement (a
// name from replacement_types()). Checks the geometry (powers of two, whole sets per bank) and
// reports each violation as a ConfigError at its key. Calls node.finish().
L2Config read_l2_config(ConfigNode node);

class L2Cache final : public Component, public MemTarget, public MemClient {
 public:
  // `memory_side` takes line-sized (or smaller, granule-aligned) requests and routes
  // them to the right memory controller; it may refuse (back-pressure). Throws
  // std::invalid_argument for a geometry read_l2_config would reject, or a line that
  // is not a whole number of value granules.
  L2Cache(Component& parent, std::string_view name, const L2Config& cfg, MemTarget& memory_side);

  const L2Config& config() const { return cfg_; }

  // ---- MemTarget (requesters: CUs, DMA engines, collective engines)
  bool can_accept(const MemRequest& req) const override;
  // Contract (besides MemTarget's): bytes > 0, rows > 0, and rows > 1 only with
  // row_stride >= bytes; a request with data is granule-aligned (address, bytes and,
  // for rows > 1, row_stride) and carries rows * bytes / value_granule words, row-major.
  // A *read* with data (the words' values are ignored) is functional and gets the
  // stored words back in place; a read without data is timing-only and completes with
  // empty data.
  void accept(MemRequest&& req) override;
  void wait_for_space(MemClient* client) override;

  // ---- MemClient (the memory side's answers)
  void on_mem_response(MemRequest&& resp) override;

  void report_in_flight(std::vector<std::string>& out) const override;

  // ---- introspection (tests, system-level checks); no simulated time passes
  std::uint32_t bank_of(std::uint64_t address) const;
  std::uint32_t set_of(std::uint64_t address) const;  // global set index
  // The line holding `address` is present and not waiting for its fill.
  bool contains(std::uint64_t address) const;
  bool is_dirty(std::uint64_t address) const;
  std::size_t transactions_in_flight() const { return in_flight_; }
  // What stream `s`'s requests did here so far: bytes requested per op, line hits and
  // misses (e.g. one kernel's L2 traffic when kernels run on different streams).
  struct StreamTotals {
    std::uint64_t bytes[kNumMemOps] = {};
    std::uint64_t hits = 0, misses = 0;
  };
  StreamTotals stream_totals(Stream s) const {
    StreamTotals t;
    for (int o = 0; o < kNumMemOps; ++o) t.bytes[o] = bytes_[index(s)][o]->value();
    t.hits = hits_[index(s)]->value();
    t.misses = misses_[index(s)]->value();
    return t;
  }
  // Line hits / (hits + misses) so far, all streams (0 before any look-up).
  double hit_rate() const {
    const std::uint64_t n = total_hits_ + total_misses_;
    return n == 0 ? 0.0 : static_cast<double>(total_hits_) / static_cast<double>(n);
  }
  std::size_t outstanding_misses() const { return mshrs_.in_use(); }
  // Overwrite the words of `data` (the values of [address, address + bytes) as the
  // memory side holds them; granule-aligned) with those of lines the L2 holds with
  // values: the GPU-visible contents, for end-of-run functional checks.
  void overlay(std::uint64_t address, std::uint32_t bytes, Payload& data) const;
  // Send a write-back of every dirty line now (ordinary, back-pressured traffic; e.g.
  // at a kernel boundary); the lines stay cached, clean. Returns the lines written back.
  std::uint64_t write_back_dirty_lines();

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  using Line = TagDirectory::Line;
  using Waiter = MshrFile::Waiter;
  using Mshr = MshrFile::Mshr;
  struct Txn {
    MemRequest req;
    Tick accepted;
    std::uint64_t first_line = 0;   // of the first row
    std::uint64_t end_line = 0;     // one past the last row's last line (bounding range)
    std::uint32_t pieces_per_row = 0;  // piece slots per row (some rows may leave one empty)
    std::uint32_t num_pieces = 0;   // rows * pieces_per_row
    std::uint32_t next_piece = 0;   // pieces [0, next_piece) looked up
    std::uint32_t outstanding = 0;  // pieces waiting for a fill or a memory response
    Cycles ready_cycle;             // latest ready time of pieces served by the L2
    Tick ready_tick;                // latest memory response of bypassed/forwarded pieces
    bool in_use = false;
    bool bypass = false;
    bool functional = false;
    bool stalled = false;           // in mshr_wait_ (bypassing ones too, held back for order)
    bool completing = false;        // completion event scheduled
    bool yields = false;            // a local copy's, under local_copy_sm_first
    bool deferred = false;          // in a bank's yielders_ queue, waiting for the bank
    Cycles deferred_at;             // since when (stats)
  };
  struct Piece {
    std::uint64_t line;     // line address (address / line_bytes)
    std::uint64_t address;  // first byte
    std::uint32_t bytes;    // 0: an empty slot (its row spans fewer lines)
    std::uint64_t offset;   // of its first byte in the request's row-major data
  };
  // What a memory-side request was for (top 2 bits of its tag), the index of its MSHR
  // or transaction (low 32 bits) and, for a transaction's piece, the piece (bits 32-61).
  enum class Kind : std::uint64_t { kFill = 0, kWriteBack = 1, kPiece = 2 };
  static constexpr std::uint32_t kMaxPieces = 1u << 30;
  static std::uint64_t make_tag(Kind k, std::uint32_t index, std::uint32_t piece = 0) {
    return (static_cast<std::uint64_t>(k) << 62) | (std::uint64_t{piece} << 32) | index;
  }

  Piece piece_of(const Txn& t, std::uint32_t i) const;
  // Piece `k` of row `row` (piece_of without the division of i by pieces_per_row).
  Piece piece_at(const Txn& t, std::uint32_t row, std::uint32_t k) const;
  std::uint32_t find(std::uint64_t line) const { return dir_.find(line); }  // slot or kNone
  // `req` enters by the hub's port and that port has room of its own (hub_transactions).
  bool has_own_hub_room(const MemRequest& req) const;
  Cycles now_cycle() const { return clock_.cycle_at_or_after(now()); }
  Cycles reserve_bank_in(std::uint32_t bank, const Piece& p, Cycles now_c);
  bool valid(std::uint32_t slot) const { return dir_.valid(slot); }
  std::uint64_t line_address(std::uint32_t slot) const { return dir_.line_address(slot); }
  bool needs_values(const Txn& t, const Piece& p) const;

  void process_cached(std::uint32_t ti);  // continue the look-up loop; may stall
  // One line piece of a cached transaction: false = needs an MSHR or a victim it
  // cannot have now (the transaction stalls at this piece).
  // p is piece `piece`, in bank `bank` and set `set` (bank_of_line, set_in_bank), found
  // in way `slot` (find_in_set; kNone: absent), and not a plain hit (process_cached
  // serves those).
  bool process_line(std::uint32_t ti, std::uint32_t piece, const Piece& p, std::uint32_t bank, std::uint32_t set,
                    std::uint32_t slot, Cycles now_c);
  void process_bypass(std::uint32_t ti);
  // local_copy_sm_first: a yielding transaction waits at a busy bank (its piece at
  // t.next_piece); the bank's event resumes the queue's front when the bank is free.
  void defer(std::uint32_t ti, std::uint32_t bank, Cycles now_c);
  void on_bank_free(std::uint32_t bank);
  void resume_deferred(std::uint32_t ti, Cycles now_c);
  // A new transaction that touches lines a waiting one has not looked up yet would
  // overtake it: those waiting ones go ahead now, unyielding (acceptance order is the
  // order of values).
  void promote_overlapping(const Txn& t);
  // Touches a line that a transaction in mshr_wait_ has yet to look up (bounding line
  // ranges: conservative for tiles, exact for 1D requests).
  bool overlaps_waiting(const Txn& t) const;
  void apply(Txn& t, const Piece& p, std::uint32_t slot);
  void evict(std::uint32_t slot);
  void write_back(std::uint32_t slot);
  void send_fill(std::uint32_t m);
  void send_piece(std::uint32_t ti, std::uint32_t pi, const Piece& p, bool uncached);
  void send(MemRequest&& r) { out_.send(std::move(r)); }
  void on_fill(std::uint32_t m, MemRequest&& resp);
  void on_piece_done(std::uint32_t ti, std::uint32_t pi, MemRequest&& resp);
  void free_mshr(std::uint32_t m);
  void resume_stalled();
  void check_done(std::uint32_t ti) {
    const Txn& t = txns_[ti];
    if (!t.completing && t.next_piece >= t.num_pieces && t.outstanding == 0) schedule_completion(ti);
  }
  void schedule_completion(std::uint32_t ti);
  void complete(std::uint32_t ti);
  std::string describe(const Txn& t) const;

  const L2Config cfg_;
  MemTarget& memory_;
  ClockDomain clock_;
  std::uint32_t line_shift_ = 0;  // log2(line_bytes)
  std::int32_t bank_rate_shift_ = -1;  // log2(bank_bytes_per_cycle) if a power of two, else -1
  std::uint32_t words_per_line_ = 0;

  // The stages (Akita's cache: directory, bank, MSHR, write buffer): the directory's
  // arrays, the MSHRs and the transaction slots (txns_, free_txns_, complete_events_)
  // are allocated by the first accept() (allocate_state), not by the constructor, so a
  // model that is built and never used (`t3sim validate`, an idle GPU's L2) does not
  // pay for them. Until then no line is valid: contains() and is_dirty() are false,
  // write_back_dirty_lines() finds nothing, no MSHR or transaction is in use.
  void allocate_state();
  TagDirectory dir_;
  MshrFile mshrs_;
  std::vector<std::uint64_t> values_;     // slot * words_per_line_ + word; allocated on first functional request
  std::vector<Cycles> bank_next_free_;
  std::vector<Txn> txns_;
  // The completion of the transaction in one txns_ slot (one event per slot, reused).
  class CompleteEvent final : public Event {
   public:
    CompleteEvent(L2Cache& l2, std::uint32_t txn)
        : Event(l2.event_source(), EventPriority::kDefault), l2_(l2), txn_(txn) {}
    void process() override { l2_.complete(txn_); }
    std::string description() const override { return l2_.name() + ".complete"; }

   private:
    L2Cache& l2_;
    std::uint32_t txn_;
  };
  std::deque<CompleteEvent> complete_events_;  // one per txns_ slot; a deque keeps them in place
  // local_copy_sm_first: per bank, the yielding transactions waiting for it (oldest
  // first) and the event that wakes them when its reservations end.
  class BankFreeEvent final : public Event {
   public:
    BankFreeEvent(L2Cache& l2, std::uint32_t bank)
        : Event(l2.event_source(), EventPriority::kDefault), l2_(l2), bank_(bank) {}
    void process() override { l2_.on_bank_free(bank_); }
    std::string description() const override { return l2_.name() + ".bank_free"; }

   private:
    L2Cache& l2_;
    std::uint32_t bank_;
  };
  std::vector<std::deque<std::uint32_t>> yielders_;
  std::deque<BankFreeEvent> bank_free_events_;
  std::uint32_t deferred_count_ = 0;
  // Lines [deferred_lo_, deferred_hi_) hold every waiting transaction's (grown while
  // any waits, reset when none does): a new request outside it overtakes none.
  std::uint64_t deferred_lo_ = ~std::uint64_t{0};
  std::uint64_t deferred_hi_ = 0;
  std::vector<std::uint32_t> free_txns_;
  std::size_t in_flight_ = 0;      // all transactions
  std::size_t hub_in_flight_ = 0;  // those of the hub's port, when it has room of its own
  std::deque<std::uint32_t> mshr_wait_;   // stalled transactions, oldest first
  std::uint64_t write_backs_in_flight_ = 0;
  std::vector<MemClient*> retry_waiters_;
  std::vector<MemClient*> retry_scratch_;

  // ---- stats
  Counter* requests_[kNumStreams][kNumMemOps];
  Counter* bytes_[kNumStreams][kNumMemOps];
  Counter* hits_[kNumStreams];
  Counter* misses_[kNumStreams];
  Counter* merges_[kNumStreams];
  Counter* bypass_bytes_[kNumStreams];
  Average* latency_[kNumStreams];
  Counter& evictions_;
  Counter& write_backs_;
  Counter& write_back_bytes_;
  Counter& write_allocations_;
  Counter& forwarded_writes_;
  Counter& forwarded_write_bytes_;
  Counter& invalidations_;
  Counter& refetches_;
  Counter& bank_conflicts_;
  Counter& bank_wait_cycles_;
  Counter& mshr_stalls_;
  Counter& order_stalls_;
  Counter& memory_queued_;
  // Registered with local_copy_sm_first only (other systems' stats stay as they were).
  Counter* local_copy_waits_ = nullptr;
  Counter* local_copy_wait_cycles_ = nullptr;
  Counter* local_copy_promotions_ = nullptr;
  Scalar& hit_rate_;
  TimeWeighted& txn_occupancy_;
  TimeWeighted& mshr_occupancy_;
  std::uint64_t total_hits_ = 0;
  std::uint64_t total_misses_ = 0;
  // The write-buffer stage (after memory_queued_, which it counts into).
  MemorySideQueues out_;
};

}  // namespace t3sim
