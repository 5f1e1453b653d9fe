#include "models/traffic/traffic_generator.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/error.h"
#include "sim/hash.h"

namespace t3sim {

namespace {

// Order-sensitive combination of two words into a well-mixed one.
std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  return splitmix64(a ^ splitmix64(b + 0x632BE59BD9B4E019ULL));
}

bool valid_name(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

MemOp mem_op(TrafficOp op) {
  switch (op) {
    case TrafficOp::kWrite: return MemOp::kWrite;
    case TrafficOp::kUpdate: return MemOp::kUpdate;
    default: return MemOp::kRead;
  }
}

}  // namespace

const char* to_string(TrafficPattern p) {
  switch (p) {
    case TrafficPattern::kSequential: return "sequential";
    case TrafficPattern::kRandom: return "random";
    case TrafficPattern::kStrided: return "strided";
  }
  return "?";
}

const char* to_string(TrafficOp op) {
  switch (op) {
    case TrafficOp::kRead: return "read";
    case TrafficOp::kWrite: return "write";
    case TrafficOp::kUpdate: return "update";
    case TrafficOp::kMix: return "mix";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// Configuration

TrafficConfig read_traffic_config(ConfigNode node, std::uint32_t value_granule, std::string default_name) {
  if (value_granule == 0) throw std::invalid_argument("read_traffic_config: value_granule must be > 0");
  TrafficConfig c;
  c.name = node.get_string("name", std::move(default_name));
  if (!valid_name(c.name)) {
    node.fail("name", fmt::format("expected a non-empty name of letters, digits, '_' or '-', got '{}'", c.name));
  }

  c.stream = node.get_enum("stream", "compute", {"compute", "communication"}) == "compute"
                 ? Stream::kCompute
                 : Stream::kCommunication;
  const std::string pattern = node.get_enum("pattern", "sequential", {"sequential", "random", "strided"});
  c.pattern = pattern == "sequential" ? TrafficPattern::kSequential
              : pattern == "random"   ? TrafficPattern::kRandom
                                      : TrafficPattern::kStrided;
  const std::string op = node.get_enum("op", "read", {"read", "write", "update", "mix"});
  c.op = op == "read"    ? TrafficOp::kRead
         : op == "write" ? TrafficOp::kWrite
         : op == "update" ? TrafficOp::kUpdate
                          : TrafficOp::kMix;
  if (c.op == TrafficOp::kMix) {
    c.read_fraction = node.get_double("read_fraction", c.read_fraction, 0.0, 1.0);
  } else if (node.has("read_fraction")) {
    node.fail("read_fraction", fmt::format("only meaningful with op: mix (op is '{}')", op));
  }

  const std::uint64_t size = node.get_bytes("request_size", c.request_size, 1, 1ULL << 30);
  if (size % value_granule != 0) {
    node.fail("request_size", fmt::format("expected a multiple of the memory's value granule ({}B), got {}B",
                                          value_granule, size));
  }
  c.request_size = static_cast<std::uint32_t>(size);

  // The region start is `address`: `base:` is reserved for config inheritance (any
  // mapping may name a preset file with it, so a generator list item can too).
  c.address = node.get_bytes("address", c.address);
  if (c.address % value_granule != 0) {
    node.fail("address", fmt::format("expected a multiple of the memory's value granule ({}B), got {}",
                                     value_granule, c.address));
  }
  c.footprint = node.get_bytes("footprint", c.footprint, 1);
  if (c.footprint < c.request_size) {
    node.fail("footprint", fmt::format("must hold at least one request: {}B is smaller than request_size {}B",
                                       c.footprint, c.request_size));
  }
  if (c.footprint % c.request_size != 0) {
    node.fail("footprint", fmt::format("expected a multiple of request_size ({}B), got {}B", c.request_size,
                                       c.footprint));
  }
  if (c.address > std::numeric_limits<std::uint64_t>::max() - c.footprint) {
    node.fail("footprint", "address + footprint is past the end of the 64-bit address space");
  }

  if (c.pattern == TrafficPattern::kStrided) {
    if (!node.has("stride")) node.fail("stride", "required with pattern: strided");
    c.stride = node.get_bytes("stride", 0, 1);
    if (c.stride % c.request_size != 0) {
      node.fail("stride", fmt::format("expected a multiple of request_size ({}B), got {}B", c.request_size,
                                      c.stride));
    }
    if (c.stride > c.footprint || c.footprint % c.stride != 0) {
      node.fail("stride", fmt::format("expected a divisor of footprint ({}B), got {}B", c.footprint, c.stride));
    }
  } else if (node.has("stride")) {
    node.fail("stride", fmt::format("only meaningful with pattern: strided (pattern is '{}')", pattern));
  }

  c.uncached = node.get_bool("uncached", c.uncached);
  c.max_outstanding = static_cast<std::uint32_t>(node.get_uint("max_outstanding", c.max_outstanding, 1, 1u << 20));
  c.rate = node.get_bandwidth("rate", c.rate, Bandwidth(0));

  if (node.has("burst")) {
    ConfigNode burst = node.child("burst");
    if (!burst.has("on")) burst.fail("on", "required: the length of each on-window, like '2us'");
    if (!burst.has("off")) burst.fail("off", "required: the length of each off-window, like '6us'");
    c.burst_on = burst.get_time("on", Tick::zero(), Tick(1));
    c.burst_off = burst.get_time("off", Tick::zero());
    burst.finish();
  }
  c.start = node.get_time("start", c.start);

  // Stop condition: exactly one of requests, bytes, duration.
  std::vector<std::string_view> given;
  for (std::string_view key : {"requests", "bytes", "duration"})
    if (node.has(key)) given.push_back(key);
  if (given.empty()) {
    node.fail("requests", "a stop condition is required: one of 'requests', 'bytes' or 'duration'");
  }
  if (given.size() > 1) {
    node.fail(given[1], fmt::format("give only one of 'requests', 'bytes' and 'duration' ('{}' is given too)",
                                    given[0]));
  }
  if (given[0] == "requests") {
    c.requests = node.get_uint("requests", 0, 1, UINT64_MAX);
  } else if (given[0] == "bytes") {
    const std::uint64_t bytes = node.get_bytes("bytes", 0, 1);
    if (bytes % c.request_size != 0) {
      node.fail("bytes", fmt::format("expected a multiple of request_size ({}B), got {}B", c.request_size, bytes));
    }
    c.requests = bytes / c.request_size;
  } else {
    c.duration = node.get_time("duration", Tick::zero(), Tick(1));
  }

  c.values = node.get_bool("values", c.values);
  c.kernel = node.get_bool("kernel", c.kernel);
  if (c.kernel && c.stream != Stream::kCompute) {
    node.fail("kernel", "only a compute-stream generator can be a kernel (its end is a compute kernel boundary)");
  }
  node.finish();
  return c;
}

std::vector<TrafficConfig> read_traffic_configs(ConfigNode parent, std::uint32_t value_granule,
                                                std::string_view key) {
  const std::string list_path = parent.path().empty() ? std::string(key) : parent.path() + "." + std::string(key);
  const ConfigValue* list = parent.raw(key);
  if (list == nullptr) parent.fail(key, "required key missing: a list of traffic generators");
  if (list->kind != ConfigValue::Kind::kList) {
    parent.fail(key, "expected a list of traffic generators (one mapping per generator, '- name: ...')");
  }
  if (list->list.empty()) parent.fail(key, "expected at least one traffic generator");

  std::vector<TrafficConfig> out;
  std::unordered_map<std::string, std::size_t> names;
  for (std::size_t i = 0; i < list->list.size(); ++i) {
    const ConfigValue& item = list->list[i];
    const std::string item_path = fmt::format("{}[{}]", list_path, i);
    if (item.kind != ConfigValue::Kind::kMap) {
      throw ConfigError(item.where, item_path, "expected a generator mapping (name, pattern, op, ...)");
    }
    const ConfigNode node(&item, item_path, nullptr);
    out.push_back(read_traffic_config(node, value_granule, fmt::format("gen{}", i)));
    const auto [it, fresh] = names.emplace(out.back().name, i);
    if (!fresh) {
      node.fail("name", fmt::format("duplicate generator name '{}' (also {}[{}], at {})", out.back().name,
                                    list_path, it->second, list->list[it->second].where.str()));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// TrafficGenerator

TrafficGenerator::TrafficGenerator(Component& parent, const TrafficConfig& cfg, std::uint64_t seed,
                                   MemTarget& target, std::uint32_t value_granule)
    : Component(parent, cfg.name),
      cfg_(cfg),
      target_(target),
      granule_(value_granule),
      stream_seed_(mix(seed, fnv1a(cfg.name))),
      rng_(stream_seed_),
      issue_event_(event_source(), name() + ".issue", [this] { run(); }),
      issued_(counter("requests_issued", "reqs", "requests accepted by the memory")),
      completed_(counter("requests_completed", "reqs", "requests whose response arrived")),
      op_bytes_{&counter("read_bytes", "B", "bytes of completed reads"),
                &counter("write_bytes", "B", "bytes of completed writes"),
                &counter("update_bytes", "B", "bytes of completed near-memory updates")},
      blocked_time_(counter("blocked_time", "ps", "time refused by the memory (back-pressure), refusal to retry")),
      refusals_(counter("refusals", "reqs", "requests the memory refused (can_accept false)")),
      latency_(histogram("latency", "ns", "request latency, issue to response", 10, 1000)),
      bandwidth_(scalar("achieved_bandwidth", "GB/s",
                        "completed bytes / (last response - first issue), set when the generator finishes")) {
  auto bad = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("traffic generator {}: {}", name(), why));
  };
  if (granule_ == 0) bad("value_granule must be > 0");
  if (cfg_.request_size == 0 || cfg_.request_size % granule_ != 0) bad("request_size is not a multiple of the value granule");
  if (cfg_.address % granule_ != 0) bad("address is not a multiple of the value granule");
  if (cfg_.footprint < cfg_.request_size || cfg_.footprint % cfg_.request_size != 0)
    bad("footprint is not a non-zero multiple of request_size");
  if (cfg_.pattern == TrafficPattern::kStrided &&
      (cfg_.stride == 0 || cfg_.stride % cfg_.request_size != 0 || cfg_.footprint % cfg_.stride != 0))
    bad("stride must be a multiple of request_size dividing footprint");
  if (cfg_.max_outstanding == 0) bad("max_outstanding must be > 0");
  if (cfg_.requests == 0 && cfg_.duration == Tick::zero()) bad("no stop condition (requests or duration)");
  slots_.resize(cfg_.max_outstanding);
  free_slots_.reserve(cfg_.max_outstanding);
  for (std::uint32_t i = cfg_.max_outstanding; i-- > 0;) free_slots_.push_back(i);
}

void TrafficGenerator::set_value_reference(ValueReference* reference) {
  reference_ = reference;
  if (reference_ != nullptr) {
    if (reference_->value_granule() != granule_)
      throw std::invalid_argument(fmt::format("traffic generator {}: value reference granule {} != {}", name(),
                                              reference_->value_granule(), granule_));
    source_id_ = reference_->add_source(name());
  }
}

void TrafficGenerator::start() {
  T3SIM_CHECK(!started_, "start() called twice");
  started_ = true;
  const Tick first = std::max(now(), cfg_.start);
  if (cfg_.duration > Tick::zero()) {
    issue_end_ = cfg_.start > Tick::max() - cfg_.duration ? Tick::max() : cfg_.start + cfg_.duration;
  }
  rate_anchor_ = first;
  rate_anchor_count_ = 0;
  sim().schedule(issue_event_, first);
  wait_ = Wait::kTimer;
}

void TrafficGenerator::wake_now() {
  if (!issue_event_.scheduled()) sim().schedule(issue_event_, now());
}

bool TrafficGenerator::sleep_until(Tick when) {
  if (when >= issue_end_) {
    issuing_done_ = true;
    pending_.reset();
    return false;
  }
  sim().schedule(issue_event_, when);
  wait_ = Wait::kTimer;
  return true;
}

Tick TrafficGenerator::window_open_at(Tick t) const {
  if (t < cfg_.start) t = cfg_.start;
  if (!cfg_.bursty()) return t;
  const Tick::rep period = (cfg_.burst_on + cfg_.burst_off).ps();
  const Tick::rep phase = (t - cfg_.start).ps() % period;
  return phase < cfg_.burst_on.ps() ? t : t + Tick(period - phase);
}

Tick TrafficGenerator::rate_allows_at() const {
  if (cfg_.rate.unlimited()) return Tick::zero();
  return rate_anchor_ + cfg_.rate.transfer_time((issued_.value() - rate_anchor_count_) * cfg_.request_size);
}

void TrafficGenerator::run() {
  wait_ = Wait::kNone;
  if (finished_) return;
  for (;;) {
    if (!issuing_done_ && now() >= issue_end_) {
      issuing_done_ = true;
      pending_.reset();  // built but never accepted: not issued
    }
    if (issuing_done_) {
      if (outstanding_ == 0) {
        finish();
      } else {
        wait_ = Wait::kDone;
      }
      return;
    }
    if (outstanding_ >= cfg_.max_outstanding) {
      wait_ = Wait::kResponse;
      return;
    }
    const Tick at = std::max(window_open_at(now()), rate_allows_at());
    if (at > now()) {
      if (sleep_until(at)) return;
      continue;  // past the issue window: done
    }
    if (!pending_) pending_ = make_request(next_seq_++);
    if (!target_.can_accept(*pending_)) {
      ++refusals_;
      wait_ = Wait::kRetry;
      blocked_since_ = now();
      target_.wait_for_space(this);
      return;
    }

    // Issue.
    MemRequest req = std::move(*pending_);
    pending_.reset();
    const std::uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[slot] = Slot{true, req.op, next_seq_ - 1, req.address, now()};
    req.tag = slot;
    req.client = this;
    req.created = now();
    if (reference_ != nullptr && !req.data.empty() && req.op != MemOp::kRead) {
      reference_->on_issue(source_id_, req.op, req.address, req.data);
    }
    if (issued_.value() == 0) first_issue_ = now();
    if (!cfg_.rate.unlimited() && now() > rate_allows_at()) {
      // Late (blocked, waiting for a slot or an on-window): pace from here, no catch-up.
      rate_anchor_ = now();
      rate_anchor_count_ = issued_.value();
    }
    ++issued_;
    ++outstanding_;
    if (cfg_.requests != 0 && issued_.value() >= cfg_.requests) issuing_done_ = true;
    target_.accept(std::move(req));
  }
}

void TrafficGenerator::finish() {
  finished_ = true;
  wait_ = Wait::kDone;
  bandwidth_.set(achieved_bandwidth() * 1e-9);
  log().debug("finished: {} requests, {} B, {:.2f} GB/s", completed_.value(), bytes_done_,
              achieved_bandwidth() * 1e-9);
  if (on_finished_) on_finished_();
}

void TrafficGenerator::on_mem_response(MemRequest&& req) {
  T3SIM_CHECK(req.tag < slots_.size() && slots_[req.tag].busy,
              fmt::format("response with unknown tag {} (address {:#x})", req.tag, req.address));
  Slot& slot = slots_[req.tag];
  T3SIM_CHECK(slot.address == req.address && slot.op == req.op, "response does not match its request");
  const Tick::rep latency_ps = (now() - req.created).ps();
  latency_.sample((latency_ps + 500) / 1000);
  *op_bytes_[index(req.op)] += req.bytes;
  bytes_done_ += req.bytes;
  ++completed_;
  last_response_ = now();
  if (reference_ != nullptr && cfg_.values && req.op == MemOp::kWrite) {
    reference_->on_complete(source_id_, req.op, req.address, req.bytes);
  }
  slot.busy = false;
  free_slots_.push_back(static_cast<std::uint32_t>(req.tag));
  --outstanding_;
  sim().note_progress();
  // Act in our own event, not inside the target's call.
  if (wait_ == Wait::kResponse || (issuing_done_ && outstanding_ == 0)) wake_now();
}

void TrafficGenerator::on_mem_retry() {
  if (wait_ != Wait::kRetry) return;
  blocked_time_ += (now() - blocked_since_).ps();
  wait_ = Wait::kNone;
  wake_now();
}

std::uint64_t TrafficGenerator::address_of(std::uint64_t seq) {
  const std::uint64_t size = cfg_.request_size;
  const std::uint64_t slots = cfg_.footprint / size;
  switch (cfg_.pattern) {
    case TrafficPattern::kSequential:
      return cfg_.address + (seq % slots) * size;
    case TrafficPattern::kRandom: {
      // Lemire's multiply-shift: portable (std distributions are not), bias < slots / 2^64.
      const std::uint64_t slot = static_cast<std::uint64_t>((static_cast<uint128>(rng_()) * slots) >> 64);
      return cfg_.address + slot * size;
    }
    case TrafficPattern::kStrided: {
      // Pass p visits address + p' * size + k * stride (p' = p mod stride/size): every
      // request-sized slot once per footprint/size requests.
      const std::uint64_t per_pass = cfg_.footprint / cfg_.stride;
      const std::uint64_t lanes = cfg_.stride / size;
      return cfg_.address + (seq % per_pass) * cfg_.stride + ((seq / per_pass) % lanes) * size;
    }
  }
  return cfg_.address;
}

std::uint64_t TrafficGenerator::word(std::uint64_t seq, std::uint64_t index) const {
  return mix(mix(stream_seed_, seq), index);
}

MemRequest TrafficGenerator::make_request(std::uint64_t seq) {
  MemRequest r;
  if (cfg_.op == TrafficOp::kMix) {
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;  // [0, 1), portable
    r.op = u < cfg_.read_fraction ? MemOp::kRead : MemOp::kWrite;
  } else {
    r.op = mem_op(cfg_.op);
  }
  r.stream = cfg_.stream;
  r.uncached = cfg_.uncached || r.op == MemOp::kUpdate;
  r.address = address_of(seq);
  r.bytes = cfg_.request_size;
  if (cfg_.values) {
    const std::uint32_t words = cfg_.request_size / granule_;
    r.data.words.assign(words, 0);  // a read's words are filled by the memory
    if (r.op != MemOp::kRead) {
      for (std::uint32_t j = 0; j < words; ++j) r.data.words[j] = word(seq, j);
    }
  }
  return r;
}

double TrafficGenerator::achieved_bandwidth() const {
  if (bytes_done_ == 0 || last_response_ <= first_issue_) return 0.0;
  return static_cast<double>(bytes_done_) / (last_response_ - first_issue_).seconds();
}

void TrafficGenerator::report_in_flight(std::vector<std::string>& out) const {
  if (!started_ || finished_) return;
  std::string line = fmt::format("{} {} {} generator: {} issued", to_string(cfg_.stream), to_string(cfg_.pattern),
                                 to_string(cfg_.op), issued_.value());
  if (cfg_.requests != 0) line += fmt::format(" of {}", cfg_.requests);
  line += fmt::format(", {} completed, {} outstanding (max {})", completed_.value(), outstanding_,
                      cfg_.max_outstanding);
  const Slot* oldest = nullptr;
  for (const Slot& s : slots_) {
    if (s.busy && (oldest == nullptr || s.created < oldest->created)) oldest = &s;
  }
  if (oldest != nullptr) {
    line += fmt::format("; oldest: {} #{} at {:#x}, issued {} ago", to_string(oldest->op), oldest->seq,
                        oldest->address, to_string(now() - oldest->created));
  }
  switch (wait_) {
    case Wait::kRetry:
      line += fmt::format("; blocked: the memory refused a {} at {:#x} {} ago, waiting for a retry",
                          pending_ ? to_string(pending_->op) : "request", pending_ ? pending_->address : 0,
                          to_string(now() - blocked_since_));
      break;
    case Wait::kResponse: line += "; waiting for a response (max_outstanding reached)"; break;
    case Wait::kTimer: line += fmt::format("; next issue at {}", to_string(issue_event_.when())); break;
    case Wait::kDone: line += "; all issued, waiting for responses"; break;
    case Wait::kNone: break;
  }
  out.push_back(std::move(line));
}

// ---------------------------------------------------------------------------
// ValueReference

ValueReference::ValueReference(std::uint32_t value_granule) : granule_(value_granule) {
  if (granule_ == 0) throw std::invalid_argument("ValueReference: value_granule must be > 0");
}

std::uint32_t ValueReference::add_source(std::string name) {
  sources_.push_back(std::move(name));
  return static_cast<std::uint32_t>(sources_.size() - 1);
}

void ValueReference::on_issue(std::uint32_t source, MemOp op, std::uint64_t address, const Payload& data) {
  if (op == MemOp::kRead) return;
  for (std::size_t j = 0; j < data.words.size(); ++j) {
    Entry& e = entries_[address + j * granule_];
    if (op == MemOp::kUpdate) {
      if (e.writer != kNoWriter) e.ambiguous = true;
      e.updated = true;
      e.value += data.words[j];
    } else {
      if (e.updated || (e.writer != kNoWriter && e.writer != source) || e.writes_in_flight > 0) e.ambiguous = true;
      e.writer = source;
      e.value = data.words[j];
      ++e.writes_in_flight;
    }
  }
}

void ValueReference::on_complete(std::uint32_t /*source*/, MemOp op, std::uint64_t address, std::uint32_t bytes) {
  if (op != MemOp::kWrite) return;
  for (std::uint64_t a = address; a < address + bytes; a += granule_) {
    auto it = entries_.find(a);
    if (it != entries_.end() && it->second.writes_in_flight > 0) --it->second.writes_in_flight;
  }
}

std::vector<ValueReference::Expected> ValueReference::expected() const {
  std::vector<Expected> out;
  out.reserve(entries_.size());
  for (const auto& [address, e] : entries_)
    if (!e.ambiguous) out.push_back({address, e.value});
  std::sort(out.begin(), out.end(), [](const Expected& a, const Expected& b) { return a.address < b.address; });
  return out;
}

std::size_t ValueReference::ambiguous() const {
  return static_cast<std::size_t>(
      std::count_if(entries_.begin(), entries_.end(), [](const auto& kv) { return kv.second.ambiguous; }));
}

ValueReference::CheckResult ValueReference::check(
    const std::function<Payload(std::uint64_t address, std::uint32_t bytes)>& peek,
    std::size_t max_messages) const {
  CheckResult r;
  r.ambiguous = ambiguous();
  for (const Expected& x : expected()) {
    ++r.checked;
    const Payload got = peek(x.address, granule_);
    const Entry& e = entries_.at(x.address);
    const std::string what = e.updated ? "updated" : "written by " + sources_.at(e.writer);
    std::string problem;
    if (got.words.size() != 1) {
      problem = fmt::format("expected {:#x} ({}), memory returned {} words for one granule", x.value, what,
                            got.words.size());
    } else if (got.words[0] != x.value) {
      problem = fmt::format("expected {:#x} ({}), memory holds {:#x}", x.value, what, got.words[0]);
    } else {
      continue;
    }
    ++r.mismatches;
    if (r.messages.size() < max_messages) r.messages.push_back(fmt::format("address {:#x}: {}", x.address, problem));
  }
  return r;
}

}  // namespace t3sim
