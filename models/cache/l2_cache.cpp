#include "models/cache/l2_cache.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <stdexcept>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/error.h"
#include "sim/hash.h"

namespace t3sim {

namespace {

bool pow2(std::uint64_t v) { return std::has_single_bit(v); }

// The first geometry problem of `cfg` as (key, message), or an empty key.
std::pair<std::string, std::string> geometry_error(const L2Config& cfg) {
  if (!pow2(cfg.line_bytes)) return {"line_size", fmt::format("{} is not a power of two", cfg.line_bytes)};
  if (!pow2(cfg.banks)) return {"banks", fmt::format("{} is not a power of two", cfg.banks)};
  if (cfg.assoc == 0) return {"assoc", "must be at least 1"};
  const std::uint64_t group = std::uint64_t{cfg.line_bytes} * cfg.assoc * cfg.banks;
  if (cfg.size_bytes == 0 || cfg.size_bytes % group != 0) {
    return {"size", fmt::format("{} is not a multiple of line_size x assoc x banks = {} x {} x {} = {} B",
                                format_bytes(cfg.size_bytes), cfg.line_bytes, cfg.assoc, cfg.banks, group)};
  }
  if (cfg.num_lines() > (std::uint64_t{1} << 31)) {
    return {"size", fmt::format("{} holds {} lines of {} B; at most 2^31 are supported",
                                format_bytes(cfg.size_bytes), cfg.num_lines(), cfg.line_bytes)};
  }
  if (cfg.bank_bytes_per_cycle == 0) return {"bank_bytes_per_cycle", "must be at least 1"};
  if (cfg.max_transactions == 0) return {"max_transactions", "must be at least 1"};
  if (cfg.max_outstanding_misses == 0) return {"max_outstanding_misses", "must be at least 1"};
  return {};
}

std::uint64_t bucket_width_for(std::uint64_t limit) { return std::max<std::uint64_t>(1, (limit + 63) / 64); }

}  // namespace

L2Config read_l2_config(ConfigNode node) {
  L2Config cfg;
  cfg.size_bytes = node.get_bytes("size", cfg.size_bytes, 1, std::uint64_t{1} << 40);
  cfg.banks = static_cast<std::uint32_t>(node.get_uint("banks", cfg.banks, 1, 1u << 16));
  cfg.line_bytes = static_cast<std::uint32_t>(node.get_bytes("line_size", cfg.line_bytes, 1, 1u << 16));
  cfg.assoc = static_cast<std::uint32_t>(node.get_uint("assoc", cfg.assoc, 1, 1024));
  cfg.clock_hz = node.get_frequency_hz("clock", cfg.clock_hz);
  cfg.hit_latency = static_cast<std::uint32_t>(node.get_uint("hit_latency", cfg.hit_latency, 0, 1'000'000));
  cfg.bank_bytes_per_cycle = static_cast<std::uint32_t>(
      node.get_bytes("bank_bytes_per_cycle", cfg.bank_bytes_per_cycle, 1, 1u << 20));
  cfg.max_transactions =
      static_cast<std::uint32_t>(node.get_uint("max_transactions", cfg.max_transactions, 1, 1u << 24));
  cfg.hub_transactions =
      static_cast<std::uint32_t>(node.get_uint("hub_transactions", cfg.hub_transactions, 0, 1u << 24));
  cfg.max_outstanding_misses = static_cast<std::uint32_t>(
      node.get_uint("max_outstanding_misses", cfg.max_outstanding_misses, 1, 1u << 24));
  cfg.replacement = node.get_enum("replacement", cfg.replacement, replacement_policies().names());
  cfg.bypass_uncached = node.get_enum("uncached", "bypass", {"bypass", "cache"}) == "bypass";
  cfg.local_copy_sm_first = node.get_enum("local_copy_priority", "fair", {"fair", "sm_first"}) == "sm_first";
  // Unknown keys first: a misspelt key would otherwise surface as a geometry error
  // about the default it left in place.
  node.finish();
  const auto [key, message] = geometry_error(cfg);
  if (!key.empty()) node.fail(key, message);
  return cfg;
}

// ---------------------------------------------------------------------------
// Construction

L2Cache::L2Cache(Component& parent, std::string_view name, const L2Config& cfg, MemTarget& memory_side)
    : Component(parent, name),
      cfg_(cfg),
      memory_(memory_side),
      clock_(cfg.clock_hz),
      dir_(cfg.num_lines(), cfg.assoc, cfg.banks, cfg.line_bytes,
           make_replacement(cfg.replacement, sim().seed() ^ fnv1a(this->name()))),
      evictions_(counter("evictions", "lines", "valid lines replaced to make room")),
      write_backs_(counter("write_backs", "lines", "dirty lines written back to memory (evictions, bypass invalidations, flushes)")),
      write_back_bytes_(counter("write_back_bytes", "B", "bytes of dirty-line write-backs")),
      write_allocations_(counter("write_allocations", "lines", "full-line write misses allocated without a fetch")),
      forwarded_writes_(counter("forwarded_writes", "pieces", "partial-line write misses forwarded to memory (no allocation)")),
      forwarded_write_bytes_(counter("forwarded_write_bytes", "B", "bytes of forwarded partial-line write misses")),
      invalidations_(counter("invalidations", "lines", "lines invalidated by a bypassing (uncached or update) request")),
      refetches_(counter("refetches", "lines", "fills re-sent for waiters a fill could not serve (bypass in between, or values wanted from a timing-only fill)")),
      bank_conflicts_(counter("bank_conflicts", "lines", "line accesses that waited for their bank")),
      bank_wait_cycles_(counter("bank_wait_cycles", "cycles", "L2 cycles line accesses waited for their bank (sum)")),
      mshr_stalls_(counter("mshr_stalls", "transactions", "transactions that stalled for a free MSHR or a replaceable way")),
      order_stalls_(counter("order_stalls", "transactions",
                            "transactions held back behind a stalled one whose remaining lines they touch")),
      memory_queued_(counter("memory_queued", "requests", "memory-side requests that waited in the L2 because the memory side refused")),
      hit_rate_(scalar("hit_rate", "ratio", "line hits / (line hits + line misses), updated as transactions complete")),
      txn_occupancy_(time_weighted("transactions", "transactions", "transactions in flight",
                                   bucket_width_for(cfg.max_transactions))),
      mshr_occupancy_(time_weighted("mshrs", "MSHRs", "MSHRs in use (lines being fetched)",
                                    bucket_width_for(cfg.max_outstanding_misses))),
      out_(*this, memory_side, static_cast<std::uint32_t>(std::countr_zero(cfg.line_bytes)), memory_queued_) {
  const auto [key, message] = geometry_error(cfg_);
  if (!key.empty()) throw std::invalid_argument(fmt::format("{}: l2 {}: {}", this->name(), key, message));
  if (cfg_.value_granule == 0 || cfg_.line_bytes % cfg_.value_granule != 0) {
    throw std::invalid_argument(fmt::format("{}: line size {} B is not a multiple of the value granule {} B",
                                            this->name(), cfg_.line_bytes, cfg_.value_granule));
  }
  line_shift_ = dir_.line_shift();
  words_per_line_ = cfg_.line_bytes / cfg_.value_granule;
  // The per-line, per-MSHR and per-transaction state is allocated by the first
  // accept() (allocate_state).
  if (std::has_single_bit(cfg_.bank_bytes_per_cycle))
    bank_rate_shift_ = static_cast<std::int32_t>(std::countr_zero(cfg_.bank_bytes_per_cycle));
  bank_next_free_.assign(cfg_.banks, Cycles(0));
  if (cfg_.local_copy_sm_first) {
    yielders_.resize(cfg_.banks);
    for (std::uint32_t b = 0; b < cfg_.banks; ++b) bank_free_events_.emplace_back(*this, b);
    local_copy_waits_ = &counter("local_copy_waits", "pieces",
                                 "line pieces of local copy-engine requests that waited for a bank other requests held");
    local_copy_wait_cycles_ = &counter("local_copy_wait_cycles", "cycles",
                                       "L2 cycles local copy-engine pieces waited for their bank (sum)");
    local_copy_promotions_ = &counter("local_copy_promotions", "transactions",
                                      "waiting local-copy transactions served at once because a later request "
                                      "touched their lines");
  }

  for (int s = 0; s < kNumStreams; ++s) {
    const char* sn = to_string(static_cast<Stream>(s));
    for (int o = 0; o < kNumMemOps; ++o) {
      const char* on = to_string(static_cast<MemOp>(o));
      requests_[s][o] = &counter(fmt::format("requests.{}.{}", sn, on), "requests",
                                 fmt::format("{} {} transactions accepted", sn, on));
      bytes_[s][o] = &counter(fmt::format("bytes.{}.{}", sn, on), "B",
                              fmt::format("bytes of accepted {} {} transactions", sn, on));
    }
    hits_[s] = &counter(fmt::format("hits.{}", sn), "lines", fmt::format("{} line look-ups that hit", sn));
    misses_[s] = &counter(fmt::format("misses.{}", sn), "lines",
                          fmt::format("{} line look-ups that missed (primary misses, write allocations, forwarded partial writes)", sn));
    merges_[s] = &counter(fmt::format("merges.{}", sn), "lines",
                          fmt::format("{} secondary misses merged into a fill already in flight", sn));
    bypass_bytes_[s] = &counter(fmt::format("bypass_bytes.{}", sn), "B",
                                fmt::format("{} bytes that bypassed the L2 (uncached requests, updates)", sn));
    latency_[s] = &average(fmt::format("latency.{}", sn), "ps",
                           fmt::format("{} transaction latency, acceptance to completion", sn));
  }
}

// ---------------------------------------------------------------------------
// Address mapping

std::uint32_t L2Cache::bank_of(std::uint64_t address) const { return dir_.bank_of_line(address >> line_shift_); }
std::uint32_t L2Cache::set_of(std::uint64_t address) const { return dir_.set_of_line(address >> line_shift_); }

void L2Cache::allocate_state() {
  dir_.allocate();
  mshrs_.allocate(cfg_.max_outstanding_misses);
  const std::uint32_t slots = cfg_.max_transactions + cfg_.hub_transactions;
  txns_.resize(slots);
  for (std::uint32_t t = 0; t < slots; ++t) complete_events_.emplace_back(*this, t);
  for (std::uint32_t t = slots; t-- > 0;) free_txns_.push_back(t);
}

bool L2Cache::contains(std::uint64_t address) const {
  if (!dir_.allocated()) return false;  // nothing accepted yet
  const std::uint32_t slot = find(address >> line_shift_);
  return slot != kNone && dir_.line(slot).mshr == kNone;
}

bool L2Cache::is_dirty(std::uint64_t address) const {
  if (!dir_.allocated()) return false;
  const std::uint32_t slot = find(address >> line_shift_);
  return slot != kNone && dir_.line(slot).dirty;
}

L2Cache::Piece L2Cache::piece_of(const Txn& t, std::uint32_t i) const {
  // Piece i is slot i % pieces_per_row of row i / pieces_per_row: that row's k-th line.
  const std::uint32_t row = t.pieces_per_row == t.num_pieces ? 0 : i / t.pieces_per_row;
  return piece_at(t, row, i - row * t.pieces_per_row);
}

L2Cache::Piece L2Cache::piece_at(const Txn& t, std::uint32_t row, std::uint32_t k) const {
  const std::uint64_t row_start = t.req.address + std::uint64_t{row} * t.req.row_stride;
  const std::uint64_t row_end = row_start + t.req.bytes;
  const std::uint64_t row_offset = std::uint64_t{row} * t.req.bytes;
  Piece p;
  p.line = (row_start >> line_shift_) + k;
  const std::uint64_t line_start = p.line << line_shift_;
  if (line_start >= row_end) {  // an empty slot: this row spans fewer lines
    p.address = row_end;
    p.bytes = 0;
    p.offset = row_offset + t.req.bytes;
    return p;
  }
  const std::uint64_t start = std::max(line_start, row_start);
  const std::uint64_t end = std::min(line_start + cfg_.line_bytes, row_end);
  p.address = start;
  p.bytes = static_cast<std::uint32_t>(end - start);
  p.offset = row_offset + (start - row_start);
  return p;
}

Cycles L2Cache::reserve_bank_in(std::uint32_t bank, const Piece& p, Cycles now_c) {
  Cycles& next_free = bank_next_free_[bank];
  const Cycles start = std::max(next_free, now_c);
  if (start > now_c) {
    ++bank_conflicts_;
    bank_wait_cycles_ += (start - now_c).count();
  }
  const std::uint32_t rate = cfg_.bank_bytes_per_cycle;
  next_free = start + Cycles(bank_rate_shift_ >= 0 ? (p.bytes + rate - 1) >> bank_rate_shift_ : (p.bytes + rate - 1) / rate);
  return start;
}

bool L2Cache::needs_values(const Txn& t, const Piece& p) const {
  // A functional access needs the line's values, except a full-line write, which
  // replaces them all.
  return t.functional && !(t.req.op == MemOp::kWrite && p.bytes == cfg_.line_bytes);
}

// ---------------------------------------------------------------------------
// Requesters' side

bool L2Cache::has_own_hub_room(const MemRequest& req) const {
  return cfg_.hub_transactions > 0 && req.ingress == Ingress::kHub;
}

bool L2Cache::can_accept(const MemRequest& req) const {
  if (has_own_hub_room(req)) return hub_in_flight_ < cfg_.hub_transactions;
  return in_flight_ - hub_in_flight_ < cfg_.max_transactions;
}

void L2Cache::wait_for_space(MemClient* client) {
  if (std::find(retry_waiters_.begin(), retry_waiters_.end(), client) == retry_waiters_.end())
    retry_waiters_.push_back(client);
}

void L2Cache::accept(MemRequest&& req) {
  T3SIM_CHECK(can_accept(req), "accept() while can_accept() is false");
  T3SIM_CHECK(req.bytes > 0 && req.rows > 0, fmt::format("empty request at 0x{:x}", req.address));
  T3SIM_CHECK(req.rows == 1 || req.row_stride >= req.bytes,
              fmt::format("2D request at 0x{:x}: {} rows of {} B with a {} B stride overlap", req.address, req.rows,
                          req.bytes, req.row_stride));
  T3SIM_CHECK(req.client != nullptr, "request without a client");
  if (txns_.empty()) [[unlikely]] allocate_state();
  const bool functional = !req.data.empty();
  if (functional) {
    const std::uint32_t g = cfg_.value_granule;
    T3SIM_CHECK(req.address % g == 0 && req.bytes % g == 0 && (req.rows == 1 || req.row_stride % g == 0) &&
                    req.data.words.size() == req.total_bytes() / g,
                fmt::format("functional {} of {} x {} B (stride {} B) at 0x{:x} with {} words: not aligned to the "
                            "{} B value granule or wrong word count",
                            to_string(req.op), req.rows, req.bytes, req.row_stride, req.address,
                            req.data.words.size(), g));
    if (values_.empty()) values_.assign(dir_.num_slots() * words_per_line_, 0);
  }
  // Piece slots per row: the most lines a row can span. Rows start at offsets within a
  // line congruent to the first row's modulo gcd(stride, line), so the largest possible
  // offset is (address mod gcd) + line - gcd (exact for rows = 1 or line-multiple strides).
  const std::uint64_t line_bytes = cfg_.line_bytes;
  const std::uint64_t step = req.rows == 1 ? line_bytes : std::gcd(req.row_stride, line_bytes);
  const std::uint64_t max_offset = req.address % step + line_bytes - step;
  const std::uint64_t pieces_per_row = (max_offset + req.bytes - 1) / line_bytes + 1;
  const std::uint64_t num_pieces = pieces_per_row * req.rows;
  T3SIM_CHECK(num_pieces <= kMaxPieces, fmt::format("request at 0x{:x} spans {} line pieces; at most {} supported",
                                                    req.address, num_pieces, kMaxPieces));
  const std::uint32_t ti = free_txns_.back();
  free_txns_.pop_back();
  ++in_flight_;
  if (has_own_hub_room(req)) ++hub_in_flight_;
  txn_occupancy_.set(now(), static_cast<std::int64_t>(in_flight_));

  Txn& t = txns_[ti];
  t.accepted = now();
  t.first_line = req.address / line_bytes;
  t.end_line = (req.address + std::uint64_t{req.rows - 1} * req.row_stride + req.bytes - 1) / line_bytes + 1;
  t.pieces_per_row = static_cast<std::uint32_t>(pieces_per_row);
  t.num_pieces = static_cast<std::uint32_t>(num_pieces);
  t.next_piece = 0;
  t.outstanding = 0;
  t.ready_cycle = Cycles(0);
  t.ready_tick = now();
  t.in_use = true;
  // T3 §4.3: uncached allocations (the GEMM output) and updates go straight to DRAM,
  // the point where local, remote and DMA updates aggregate.
  // A memory-side L2 (bypass_uncached off) caches uncached accesses too.
  t.bypass = (req.uncached && cfg_.bypass_uncached) || req.op == MemOp::kUpdate;
  t.functional = functional;
  t.stalled = false;
  t.completing = false;
  t.yields = cfg_.local_copy_sm_first && req.local_copy;
  t.deferred = false;
  const int s = index(req.stream), o = index(req.op);
  ++*requests_[s][o];
  *bytes_[s][o] += req.total_bytes();
  t.req = std::move(req);
  if (deferred_count_ > 0 && t.first_line < deferred_hi_ && deferred_lo_ < t.end_line) [[unlikely]]
    promote_overlapping(t);
  if (!mshr_wait_.empty() && overlaps_waiting(t)) {
    // A stalled transaction has not looked up some of these lines yet: going ahead
    // would let this later request change what it reads. Wait behind it.
    t.stalled = true;
    mshr_wait_.push_back(ti);
    ++order_stalls_;
    return;
  }
  if (t.bypass) {
    process_bypass(ti);
  } else {
    process_cached(ti);
  }
}

void L2Cache::defer(std::uint32_t ti, std::uint32_t bank, Cycles now_c) {
  Txn& t = txns_[ti];
  t.deferred = true;
  t.deferred_at = now_c;
  ++*local_copy_waits_;
  ++deferred_count_;
  deferred_lo_ = std::min(deferred_lo_, t.first_line);
  deferred_hi_ = std::max(deferred_hi_, t.end_line);
  yielders_[bank].push_back(ti);
  if (!bank_free_events_[bank].scheduled())
    sim().schedule(bank_free_events_[bank], std::max(now(), clock_.edge(bank_next_free_[bank])));
}

void L2Cache::on_bank_free(std::uint32_t bank) {
  // Whoever reserved the bank at this very tick before this event went first; the
  // front waiter takes the bank only if nothing is reserved now (its piece then
  // holds the bank, so one waiter goes per free slot).
  std::deque<std::uint32_t>& q = yielders_[bank];
  const Cycles now_c = now_cycle();
  while (!q.empty() && bank_next_free_[bank] <= now_c) {
    const std::uint32_t ti = q.front();
    q.pop_front();
    resume_deferred(ti, now_c);
  }
  if (!q.empty() && !bank_free_events_[bank].scheduled())
    sim().schedule(bank_free_events_[bank], std::max(now(), clock_.edge(bank_next_free_[bank])));
}

void L2Cache::resume_deferred(std::uint32_t ti, Cycles now_c) {
  Txn& t = txns_[ti];
  t.deferred = false;
  *local_copy_wait_cycles_ += (now_c - t.deferred_at).count();
  if (--deferred_count_ == 0) {
    deferred_lo_ = ~std::uint64_t{0};
    deferred_hi_ = 0;
  }
  process_cached(ti);
}

void L2Cache::promote_overlapping(const Txn& t) {
  for (std::deque<std::uint32_t>& q : yielders_) {
    for (std::size_t i = 0; i < q.size();) {
      const std::uint32_t wi = q[i];
      Txn& w = txns_[wi];
      const Piece next = piece_of(w, w.next_piece);
      const std::uint64_t w_lo = next.bytes == 0 ? next.line - 1 : next.line;
      if (t.first_line < w.end_line && w_lo < t.end_line) {
        q.erase(q.begin() + static_cast<std::ptrdiff_t>(i));
        w.yields = false;
        ++*local_copy_promotions_;
        resume_deferred(wi, now_cycle());
      } else {
        ++i;
      }
    }
  }
}

bool L2Cache::overlaps_waiting(const Txn& t) const {
  const std::uint64_t lo = t.first_line, hi = t.end_line;
  for (const std::uint32_t wi : mshr_wait_) {
    const Txn& w = txns_[wi];
    if (w.next_piece >= w.num_pieces) continue;
    // Pieces come in non-decreasing line order (rows do not overlap and go up), so the
    // lines w has yet to look up lie in [line of its next piece, end_line). An empty
    // slot ends a row whose last line the next row may share: one line lower.
    const Piece next = piece_of(w, w.next_piece);
    const std::uint64_t w_lo = next.bytes == 0 ? next.line - 1 : next.line;
    if (lo < w.end_line && w_lo < hi) return true;
  }
  return false;
}

void L2Cache::process_cached(std::uint32_t ti) {
  Txn& t = txns_[ti];
  const Cycles now_c = now_cycle();
  const std::uint32_t ppr = t.pieces_per_row;
  const std::uint32_t rows = t.req.rows;
  const std::uint64_t line_bytes = cfg_.line_bytes;
  const std::uint64_t hit_latency = cfg_.hit_latency;
  const bool write = t.req.op == MemOp::kWrite;
  const bool functional = t.functional;
  const int s = index(t.req.stream);
  // A local copy under local_copy_sm_first waits at every bank that has something
  // reserved (not once resumed from mshr_wait_: that queue's front must not wait).
  const bool may_defer = t.yields && !t.stalled;
  // The hit path below works on locals (a store through a Counter would make the
  // compiler reload every member); they go back to the members before anything else
  // can read them: before process_line and at the end.
  const std::uint64_t* const tags = dir_.tags();
  const std::uint8_t* const ptags = dir_.ptags();
  Line* const lines = dir_.lines();
  Cycles* const bank_free = bank_next_free_.data();
  const std::uint32_t assoc = cfg_.assoc;
  std::uint64_t& use_clock_member = dir_.use_clock();
  std::uint64_t use_clock = use_clock_member;
  std::uint64_t ready = t.ready_cycle.count();
  std::uint64_t hits = 0, conflicts = 0, wait_cycles = 0;
  auto flush = [&] {
    use_clock_member = use_clock;
    t.ready_cycle = Cycles(ready);
    *hits_[s] += hits;
    total_hits_ += hits;
    bank_conflicts_ += conflicts;
    bank_wait_cycles_ += wait_cycles;
    hits = conflicts = wait_cycles = 0;
  };
  // Walk the pieces row by row (piece i is slot i % ppr of row i / ppr: that row's
  // k-th line). Empty slots (a row spanning fewer lines) end a row: nothing to look up.
  std::uint32_t row = t.next_piece / ppr;
  std::uint32_t k = t.next_piece - row * ppr;
  // With every GPU of a node simulated the tag arrays are tens of megabytes, and each
  // look-up would wait for host memory (the set's partial tags, its tags, the way's
  // Line) one piece after the other. A second cursor runs kAhead pieces ahead and
  // prefetches those sets. Prefetches are hints only: every look-up is done in full,
  // in order, so results do not depend on them.
  constexpr std::uint32_t kAhead = 12;
  std::uint32_t ahead_row = row, ahead_k = k;
  auto prefetch_next = [&] {
    while (ahead_row < rows) {
      const std::uint64_t rs = t.req.address + std::uint64_t{ahead_row} * t.req.row_stride;
      const std::uint64_t line = (rs >> line_shift_) + ahead_k;
      if (ahead_k < ppr && (line << line_shift_) < rs + t.req.bytes) {
        ++ahead_k;
        const std::size_t base = std::size_t{dir_.set_in_bank(dir_.bank_of_line(line), line)} * assoc;
        __builtin_prefetch(ptags + base);
        __builtin_prefetch(tags + base);
        __builtin_prefetch(tags + base + 8);
        __builtin_prefetch(lines + base);
        __builtin_prefetch(lines + base + 4);
        __builtin_prefetch(lines + base + 8);
        __builtin_prefetch(lines + base + 12);
        return;
      }
      ++ahead_row;
      ahead_k = 0;
    }
  };
  for (std::uint32_t i = 0; i < kAhead; ++i) prefetch_next();
  for (; row < rows; ++row, k = 0) {
    const std::uint64_t row_start = t.req.address + std::uint64_t{row} * t.req.row_stride;
    const std::uint64_t row_end = row_start + t.req.bytes;
    const std::uint64_t first_line = row_start >> line_shift_;
    for (; k < ppr; ++k) {
      const std::uint64_t line = first_line + k;
      const std::uint64_t line_start = line << line_shift_;
      if (line_start >= row_end) break;  // the rest of this row's slots are empty
      const std::uint64_t start = std::max(line_start, row_start);
      const auto bytes = static_cast<std::uint32_t>(std::min(line_start + line_bytes, row_end) - start);
      prefetch_next();
      const std::uint32_t bank = dir_.bank_of_line(line);
      if (may_defer && bank_free[bank] > now_c) [[unlikely]] {
        flush();
        t.next_piece = row * ppr + k;
        defer(ti, bank, now_c);
        return;
      }
      const std::uint32_t set = dir_.set_in_bank(bank, line);
      // find_in_set, inline.
      const std::uint32_t base = set * assoc;
      std::uint32_t slot = kNone;
#if defined(__SSE2__)
      if (assoc == 16) {
        const __m128i w = _mm_set1_epi8(static_cast<char>(dir_.partial_tag(line)));
        auto m = static_cast<std::uint32_t>(
            _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ptags + base)), w)));
        for (; m != 0; m &= m - 1) {
          const std::uint32_t candidate = base + static_cast<std::uint32_t>(std::countr_zero(m));
          if (tags[candidate] == line) {
            slot = candidate;
            break;
          }
        }
      } else
#endif
      {
        slot = dir_.find_in_set(set, line);
      }
      const bool full = bytes == line_bytes;
      if (slot != kNone && lines[slot].mshr == kNone &&
          (!functional || lines[slot].has_data || (write && full))) {  // !needs_values
        // Hit: no event of its own; ready hit_latency after its bank slot.
        Line& l = lines[slot];
        const std::uint64_t now = now_c.count();
        const std::uint64_t free = bank_free[bank].count();
        const std::uint64_t bank_slot = free > now ? free : now;
        if (free > now) {
          ++conflicts;
          wait_cycles += free - now;
        }
        const std::uint32_t rate = cfg_.bank_bytes_per_cycle;
        bank_free[bank] = Cycles(bank_slot + (bank_rate_shift_ >= 0 ? (bytes + rate - 1) >> bank_rate_shift_
                                                                    : (bytes + rate - 1) / rate));
        if (write || functional) {  // a timing-only read changes nothing
          Piece p;
          p.line = line;
          p.address = start;
          p.bytes = bytes;
          p.offset = std::uint64_t{row} * t.req.bytes + (start - row_start);
          apply(t, p, slot);
        }
        l.last_use = ++use_clock;  // touch
        ready = std::max(ready, bank_slot + hit_latency);
        ++hits;
        continue;
      }
      flush();
      Piece p;
      p.line = line;
      p.address = start;
      p.bytes = bytes;
      p.offset = std::uint64_t{row} * t.req.bytes + (start - row_start);
      const std::uint32_t pi = row * ppr + k;
      if (!process_line(ti, pi, p, bank, set, slot, now_c)) {
        ready = t.ready_cycle.count();
        t.next_piece = pi;
        if (!t.stalled) {
          t.stalled = true;
          mshr_wait_.push_back(ti);
          ++mshr_stalls_;
        }
        return;
      }
      use_clock = use_clock_member;
      ready = t.ready_cycle.count();
    }
  }
  flush();
  t.next_piece = t.num_pieces;
  if (t.stalled) {
    T3SIM_CHECK(!mshr_wait_.empty() && mshr_wait_.front() == ti, "a stalled transaction resumed out of order");
    mshr_wait_.pop_front();
    t.stalled = false;
  }
  check_done(ti);
}

bool L2Cache::process_line(std::uint32_t ti, std::uint32_t pi, const Piece& p, std::uint32_t bank,
                           std::uint32_t set, std::uint32_t slot, Cycles now_c) {
  Txn& t = txns_[ti];
  const int s = index(t.req.stream);
  const bool write = t.req.op == MemOp::kWrite;
  const bool full = p.bytes == cfg_.line_bytes;
  if (slot != kNone) {
    Line& l = dir_.line(slot);
    if (l.mshr != kNone) {
      // Secondary miss: served, in arrival order, by the fill already on its way.
      mshrs_[l.mshr].waiters.push_back(Waiter{ti, pi, reserve_bank_in(bank, p, now_c)});
      ++t.outstanding;
      ++*merges_[s];
      return true;
    }
    // (A hit is served by process_cached.) Present but without values, which this
    // functional access needs (it was filled or written timing-only): a miss that
    // refetches into the same way.
  } else if (write && !full) {
    // Write-no-allocate for partial lines: forward just these bytes (no fetch to merge
    // them into); the transaction waits for memory's acknowledgement.
    reserve_bank_in(bank, p, now_c);
    ++*misses_[s];
    ++total_misses_;
    ++forwarded_writes_;
    forwarded_write_bytes_ += p.bytes;
    ++t.outstanding;
    send_piece(ti, pi, p, /*uncached=*/false);
    return true;
  }

  // A miss that needs a way, and unless it is a full-line write, an MSHR. Stalled
  // transactions get them first, in order.
  const bool fetch = !(write && full);
  if (!mshr_wait_.empty() && mshr_wait_.front() != ti) return false;
  if (fetch && mshrs_.exhausted()) return false;
  if (slot == kNone) {
    slot = dir_.pick_victim(set);
    if (slot == kNone) return false;  // every way of the set is being filled
    evict(slot);
  } else {
    if (dir_.line(slot).dirty) write_back(slot);
    ++refetches_;
  }
  dir_.set_tag(slot, p.line);
  Line& l = dir_.line(slot);
  l.dirty = false;
  l.has_data = false;
  dir_.touch(l);
  const Cycles bank_slot = reserve_bank_in(bank, p, now_c);
  ++*misses_[s];
  ++total_misses_;
  if (!fetch) {
    // Write-allocate without a fetch: the write replaces the whole line.
    ++write_allocations_;
    apply(t, p, slot);
    t.ready_cycle = std::max(t.ready_cycle, bank_slot + Cycles(cfg_.hit_latency));
    return true;
  }
  const std::uint32_t m = mshrs_.take();
  mshr_occupancy_.set(now(), static_cast<std::int64_t>(outstanding_misses()));
  Mshr& ms = mshrs_[m];
  ms.slot = slot;
  ms.functional = t.functional;
  ms.issued = now();
  ms.waiters.clear();
  ms.waiters.push_back(Waiter{ti, pi, bank_slot});
  l.mshr = m;
  ++t.outstanding;
  send_fill(m);
  return true;
}

void L2Cache::process_bypass(std::uint32_t ti) {
  Txn& t = txns_[ti];
  for (std::uint32_t i = 0; i < t.num_pieces; ++i) {
    const Piece p = piece_of(t, i);
    if (p.bytes == 0) continue;  // an empty slot
    ++t.outstanding;
    const std::uint32_t slot = find(p.line);
    if (slot != kNone) {
      Line& l = dir_.line(slot);
      if (l.mshr != kNone) {
        // The line is being filled for earlier requests: the piece goes out after that
        // fill has served them (on_fill), so memory sees the same order as requesters.
        mshrs_[l.mshr].waiters.push_back(Waiter{ti, i, Cycles(0)});
        continue;
      }
      // SPEC: invalidate any copy first; a dirty one is written back before the
      // bypassing piece, and the memory controller keeps same-address order.
      if (l.dirty) write_back(slot);
      dir_.clear_tag(slot);
      l.has_data = false;
      ++invalidations_;
    }
    *bypass_bytes_[index(t.req.stream)] += p.bytes;
    send_piece(ti, i, p, /*uncached=*/true);
  }
  t.next_piece = t.num_pieces;
  check_done(ti);
}

void L2Cache::apply(Txn& t, const Piece& p, std::uint32_t slot) {
  Line& l = dir_.line(slot);
  const std::uint32_t g = cfg_.value_granule;
  if (t.req.op == MemOp::kWrite) {
    l.dirty = true;
    l.dirty_stream = t.req.stream;
    if (t.functional) {  // a timing-only write leaves the stored words as they are
      const auto src = t.req.data.words.begin() + static_cast<std::ptrdiff_t>(p.offset / g);
      const auto dst = values_.begin() + static_cast<std::ptrdiff_t>(std::size_t{slot} * words_per_line_ +
                                                                      (p.address - line_address(slot)) / g);
      std::copy(src, src + p.bytes / g, dst);
      if (p.bytes == cfg_.line_bytes) l.has_data = true;
    }
  } else if (t.functional) {
    T3SIM_CHECK(l.has_data, fmt::format("functional read of line 0x{:x} without values", line_address(slot)));
    const auto src = values_.begin() + static_cast<std::ptrdiff_t>(std::size_t{slot} * words_per_line_ +
                                                                    (p.address - line_address(slot)) / g);
    const auto dst = t.req.data.words.begin() + static_cast<std::ptrdiff_t>(p.offset / g);
    std::copy(src, src + p.bytes / g, dst);
  }
}

void L2Cache::evict(std::uint32_t slot) {
  Line& l = dir_.line(slot);
  if (!valid(slot)) return;
  ++evictions_;
  if (l.dirty) write_back(slot);
  dir_.clear_tag(slot);
  l.has_data = false;
}

void L2Cache::write_back(std::uint32_t slot) {
  Line& l = dir_.line(slot);
  MemRequest r;
  r.op = MemOp::kWrite;
  r.stream = l.dirty_stream;  // the stream of the request that last dirtied it
  r.address = line_address(slot);
  r.bytes = cfg_.line_bytes;
  r.tag = make_tag(Kind::kWriteBack, 0);
  r.client = this;
  r.created = now();
  if (l.has_data) {
    const auto src = values_.begin() + static_cast<std::ptrdiff_t>(std::size_t{slot} * words_per_line_);
    r.data.words.assign(src, src + words_per_line_);
  }
  l.dirty = false;
  ++write_backs_;
  write_back_bytes_ += cfg_.line_bytes;
  ++write_backs_in_flight_;
  send(std::move(r));
}

std::uint64_t L2Cache::write_back_dirty_lines() {
  std::uint64_t n = 0;
  for (std::uint32_t slot = 0; slot < dir_.num_slots(); ++slot) {
    const Line& l = dir_.line(slot);
    if (valid(slot) && l.dirty && l.mshr == kNone) {
      write_back(slot);
      ++n;
    }
  }
  return n;
}

// ---------------------------------------------------------------------------
// Memory side

void L2Cache::send_fill(std::uint32_t m) {
  const Mshr& ms = mshrs_[m];
  MemRequest r;
  r.op = MemOp::kRead;
  r.stream = txns_[ms.waiters.front().txn].req.stream;
  r.address = line_address(ms.slot);
  r.bytes = cfg_.line_bytes;
  // The piece bits of a fill's tag carry its way (slot), a hint for on_mem_response.
  r.tag = make_tag(Kind::kFill, m, ms.slot < kMaxPieces ? ms.slot : 0);
  r.client = this;
  r.created = now();
  if (ms.functional) r.data.words.assign(words_per_line_, 0);  // ask for the values
  send(std::move(r));
}

void L2Cache::send_piece(std::uint32_t ti, std::uint32_t pi, const Piece& p, bool uncached) {
  const Txn& t = txns_[ti];
  MemRequest r;
  r.op = t.req.op;
  r.stream = t.req.stream;
  r.uncached = uncached;
  r.address = p.address;
  r.bytes = p.bytes;
  r.track = t.req.track;
  r.tag = make_tag(Kind::kPiece, ti, pi);
  r.client = this;
  r.created = now();
  if (t.functional) {
    const std::uint32_t g = cfg_.value_granule;
    if (t.req.op == MemOp::kRead) {
      r.data.words.assign(p.bytes / g, 0);
    } else {
      const auto src = t.req.data.words.begin() + static_cast<std::ptrdiff_t>(p.offset / g);
      r.data.words.assign(src, src + p.bytes / g);
    }
  }
  send(std::move(r));
}

void L2Cache::on_mem_response(MemRequest&& resp) {
  sim().note_progress();
  const auto kind = static_cast<Kind>(resp.tag >> 62);
  const auto idx = static_cast<std::uint32_t>(resp.tag);
  switch (kind) {
    case Kind::kFill:
      // on_fill reads the MSHR, then the way it names: both are far apart in the host's
      // memory with many GPUs simulated, so start fetching the way now, from the tag's
      // copy, rather than after the MSHR arrives.
      __builtin_prefetch(dir_.lines() + ((resp.tag >> 32) & (kMaxPieces - 1)));
      on_fill(idx, std::move(resp));
      break;
    case Kind::kWriteBack: --write_backs_in_flight_; break;
    case Kind::kPiece:
      on_piece_done(idx, static_cast<std::uint32_t>(resp.tag >> 32) & (kMaxPieces - 1), std::move(resp));
      break;
  }
}

void L2Cache::on_piece_done(std::uint32_t ti, std::uint32_t pi, MemRequest&& resp) {
  Txn& t = txns_[ti];
  T3SIM_CHECK(t.in_use && t.outstanding > 0 && pi < t.num_pieces, "memory response for a finished transaction");
  if (t.functional && t.req.op == MemOp::kRead) {
    const std::uint32_t g = cfg_.value_granule;
    const Piece p = piece_of(t, pi);
    T3SIM_CHECK(resp.address == p.address && resp.bytes == p.bytes && resp.data.words.size() == p.bytes / g,
                fmt::format("memory side answered a functional read of {} B at 0x{:x} with {} words", resp.bytes,
                            resp.address, resp.data.words.size()));
    std::copy(resp.data.words.begin(), resp.data.words.end(),
              t.req.data.words.begin() + static_cast<std::ptrdiff_t>(p.offset / g));
  }
  t.ready_tick = std::max(t.ready_tick, now());
  --t.outstanding;
  check_done(ti);
}

void L2Cache::on_fill(std::uint32_t m, MemRequest&& resp) {
  Mshr& ms = mshrs_[m];
  const std::uint32_t slot = ms.slot;
  Line& l = dir_.line(slot);
  T3SIM_CHECK(l.mshr == m && !l.dirty, "fill of a line that is not waiting for it");
  if (ms.functional) {
    T3SIM_CHECK(resp.data.words.size() == words_per_line_,
                fmt::format("memory side answered a functional fill of 0x{:x} with {} words", resp.address,
                            resp.data.words.size()));
    std::copy(resp.data.words.begin(), resp.data.words.end(),
              values_.begin() + static_cast<std::ptrdiff_t>(std::size_t{slot} * words_per_line_));
    l.has_data = true;
  } else {
    l.has_data = false;
  }
  dir_.touch(l);

  // Serve the waiters in arrival order. A bypassing piece among them invalidates the
  // line (writing back what earlier waiters dirtied) and goes out; a waiter after it,
  // or one that wants values this timing-only fill lacks, needs a new fill.
  const Cycles now_c = now_cycle();
  const Cycles latency(cfg_.hit_latency);
  bool invalidated = false;
  std::size_t i = 0;
  for (; i < ms.waiters.size(); ++i) {
    const Waiter w = ms.waiters[i];
    Txn& t = txns_[w.txn];
    const Piece p = piece_of(t, w.piece);
    if (t.bypass) {
      if (!invalidated) {
        if (l.dirty) write_back(slot);
        l.has_data = false;
        invalidated = true;
        ++invalidations_;
      }
      *bypass_bytes_[index(t.req.stream)] += p.bytes;
      send_piece(w.txn, w.piece, p, /*uncached=*/true);
      continue;
    }
    if (invalidated || (!l.has_data && needs_values(t, p))) break;
    if (t.req.op == MemOp::kWrite || t.functional) apply(t, p, slot);  // a timing-only read changes nothing
    t.ready_cycle = std::max(t.ready_cycle, std::max(now_c, w.bank_slot) + latency);
    --t.outstanding;
    check_done(w.txn);
  }
  if (i == ms.waiters.size()) {
    if (invalidated) dir_.clear_tag(slot);
    l.mshr = kNone;
    free_mshr(m);
    resume_stalled();
    return;
  }
  // Refetch for the rest, sent after the write-back and pieces above.
  if (l.dirty) write_back(slot);
  l.has_data = false;
  ms.waiters.erase(ms.waiters.begin(), ms.waiters.begin() + static_cast<std::ptrdiff_t>(i));
  ms.functional = std::any_of(ms.waiters.begin(), ms.waiters.end(), [this](const Waiter& w) {
    return !txns_[w.txn].bypass && needs_values(txns_[w.txn], piece_of(txns_[w.txn], w.piece));
  });
  ms.issued = now();
  ++refetches_;
  send_fill(m);
}

void L2Cache::free_mshr(std::uint32_t m) {
  mshrs_.release(m);
  mshr_occupancy_.set(now(), static_cast<std::int64_t>(outstanding_misses()));
}

void L2Cache::resume_stalled() {
  while (!mshr_wait_.empty()) {
    const std::uint32_t ti = mshr_wait_.front();
    if (txns_[ti].bypass) {  // held back for order only; never needs an MSHR
      mshr_wait_.pop_front();
      txns_[ti].stalled = false;
      process_bypass(ti);
      continue;
    }
    process_cached(ti);
    if (txns_[ti].stalled) return;  // still no MSHR or way: wait for the next fill
  }
}

// ---------------------------------------------------------------------------
// Completion

void L2Cache::schedule_completion(std::uint32_t ti) {
  Txn& t = txns_[ti];
  t.completing = true;
  const Tick when = std::max({now(), t.ready_tick, clock_.edge(t.ready_cycle)});
  // One event per transaction, however many lines it has.
  sim().schedule(complete_events_[ti], when);
}

void L2Cache::complete(std::uint32_t ti) {
  Txn& t = txns_[ti];
  MemRequest req = std::move(t.req);
  t.req = MemRequest{};
  latency_[index(req.stream)]->sample(static_cast<double>((now() - t.accepted).ps()));
  t.in_use = false;
  free_txns_.push_back(ti);
  --in_flight_;
  if (has_own_hub_room(req)) --hub_in_flight_;
  txn_occupancy_.set(now(), static_cast<std::int64_t>(in_flight_));
  if (total_hits_ + total_misses_ > 0) {
    hit_rate_.set(static_cast<double>(total_hits_) / static_cast<double>(total_hits_ + total_misses_));
  }
  sim().note_progress();
  MemClient* client = req.client;
  client->on_mem_response(std::move(req));
  if (!retry_waiters_.empty()) {
    retry_scratch_.swap(retry_waiters_);
    for (MemClient* c : retry_scratch_) c->on_mem_retry();
    retry_scratch_.clear();
  }
}

// ---------------------------------------------------------------------------
// Introspection

void L2Cache::overlay(std::uint64_t address, std::uint32_t bytes, Payload& data) const {
  const std::uint32_t g = cfg_.value_granule;
  T3SIM_CHECK(address % g == 0 && bytes % g == 0 && data.words.size() == bytes / g,
              fmt::format("overlay of {} B at 0x{:x} with {} words", bytes, address, data.words.size()));
  if (values_.empty() || bytes == 0) return;
  const std::uint64_t end = address + bytes;
  for (std::uint64_t line = address / cfg_.line_bytes; line * cfg_.line_bytes < end; ++line) {
    const std::uint32_t slot = find(line);
    if (slot == kNone || !dir_.line(slot).has_data || dir_.line(slot).mshr != kNone) continue;
    const std::uint64_t line_start = line * cfg_.line_bytes;
    const std::uint64_t lo = std::max(line_start, address), hi = std::min(line_start + cfg_.line_bytes, end);
    for (std::uint64_t a = lo; a < hi; a += g)
      data.words[(a - address) / g] = values_[std::size_t{slot} * words_per_line_ + (a - line_start) / g];
  }
}

std::string L2Cache::describe(const Txn& t) const {
  if (t.req.rows > 1) {
    return fmt::format("{}{} {} of {} rows x {} B (stride {} B) at 0x{:x}", t.bypass ? "bypassing " : "",
                       to_string(t.req.stream), to_string(t.req.op), t.req.rows, t.req.bytes, t.req.row_stride,
                       t.req.address);
  }
  return fmt::format("{}{} {} of {} B at 0x{:x}", t.bypass ? "bypassing " : "", to_string(t.req.stream),
                     to_string(t.req.op), t.req.bytes, t.req.address);
}

void L2Cache::report_in_flight(std::vector<std::string>& out) const {
  if (in_flight_ > 0) {
    out.push_back(fmt::format("{} transactions in flight ({} stalled waiting for an MSHR or a replaceable way)",
                              in_flight_, mshr_wait_.size()));
    constexpr std::size_t kListed = 16;
    std::size_t listed = 0;
    for (const Txn& t : txns_) {
      if (!t.in_use) continue;
      if (listed++ == kListed) {
        out.push_back(fmt::format("  ... and {} more", in_flight_ - kListed));
        break;
      }
      out.push_back(fmt::format("  {} accepted at {} ps: {}/{} lines looked up, {} waiting for memory{}{}{}",
                                describe(t), t.accepted.ps(), t.next_piece, t.num_pieces, t.outstanding,
                                t.stalled ? ", stalled" : "", t.deferred ? ", waiting for its bank (local copy)" : "",
                                t.completing ? ", completing" : ""));
    }
  }
  if (outstanding_misses() > 0) {
    const Mshr* oldest = mshrs_.oldest();
    out.push_back(fmt::format("{} line fills outstanding (MSHRs); oldest: line 0x{:x} since {} ps, {} waiters",
                              outstanding_misses(), line_address(oldest->slot),
                              oldest->issued.ps(), oldest->waiters.size()));
  }
  out_.report_in_flight(out);
  if (write_backs_in_flight_ > 0) out.push_back(fmt::format("{} write-backs in flight", write_backs_in_flight_));
}

}  // namespace t3sim
