#pragma once
// A unidirectional link between two components: a bounded transmit buffer at the
// sender, a wire that serializes messages at `bandwidth` and delivers them after
// `latency`, and a bounded receive buffer at the receiver. Back-pressure is
// credit-based (a message starts on the wire only if the receive buffer will have
// room for it) so nothing is ever dropped.
//
// Sender side (Akita's CanSend-before-Send, gem5's retry):
//   if (link.can_send()) link.send(msg); else wait for the on_send_ready callback.
// Receiver side:
//   on_receive callback fires when messages arrive; the receiver then
//   drains them with front()/pop() whenever it is ready, which returns credits.
//
// Events: one per delivery batch (messages arriving at the same tick) plus one when
// a blocked sender can be woken, and with a credit latency one per batch of returned
// credits. An idle link schedules nothing.
//
// Partitioned simulation (Simulator::set_partitions): the two ends may live in
// different partitions (LinkEnds). The sender then hands what it put on the wire to
// the receiver, and the receiver its freed buffer space (credits) back, at the end
// of each window (an exchange hook): both take at least the lookahead, so `latency`
// and `credit_latency` must be at least that long.
//
// `Msg` is a value type with `std::uint64_t size_bytes() const`.

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "sim/component.h"
#include "sim/error.h"

namespace t3sim {

struct LinkConfig {
  Bandwidth bandwidth;        // per direction; unlimited if 0
  Tick latency;               // from the end of serialization to arrival
  std::uint32_t tx_buffer = 8;   // messages the sender may queue
  std::uint32_t rx_buffer = 64;  // messages the receiver may hold (credits)
  // > 0: the receive buffer is also bounded in bytes (a flit buffer): a message needs
  // room for its size, so small messages do not each take a maximum-size slot.
  std::uint64_t rx_buffer_bytes = 0;
  // How long a freed receive-buffer slot takes to be known at the sender (the credit
  // travelling back). Zero: at once (a simplification that needs both ends in one
  // partition).
  Tick credit_latency = Tick::zero();
};

// The partitions of a link's sending and receiving ends; kHere: the partition the
// link is built in (Simulator::InPartition).
struct LinkEnds {
  static constexpr std::uint32_t kHere = ~std::uint32_t{0};
  std::uint32_t sender = kHere;
  std::uint32_t receiver = kHere;
};

template <class Msg>
class Link final : public Component {
 public:
  Link(Component& parent, std::string_view name, const LinkConfig& cfg, LinkEnds ends = {})
      : Component(parent, name), cfg_(cfg), ends_(ends), credits_(cfg.rx_buffer), rx_bytes_free_(cfg.rx_buffer_bytes),
        arrival_event_(event_source(), this->name() + ".arrival", [this] { deliver(); }, EventPriority::kDelivery),
        tx_free_event_(event_source(), this->name() + ".tx_free", [this] { wake_sender(); }, EventPriority::kDelivery),
        credit_event_(event_source(), this->name() + ".credit", [this] { take_credits(); }, EventPriority::kDelivery),
        bytes_sent_(counter("bytes_sent", "B", "payload bytes put on the wire")),
        messages_sent_(counter("messages_sent", "msgs", "messages put on the wire")),
        bytes_received_(counter("bytes_received", "B", "payload bytes delivered to the receiver")),
        busy_time_(counter("busy_time", "ps", "time the wire spent serializing")),
        tx_blocked_(counter("tx_blocked", "calls", "can_send() answered false (sender back-pressured)")) {
    if (cfg.tx_buffer == 0 || cfg.rx_buffer == 0)
      throw std::invalid_argument(this->name() + ": link buffers must hold at least one message");
    track_ = sim().timeline().track(this->name());
    if (ends_.sender == LinkEnds::kHere) ends_.sender = sim().current_partition();
    if (ends_.receiver == LinkEnds::kHere) ends_.receiver = sim().current_partition();
    if (ends_.sender != ends_.receiver) {
      const Tick lookahead = sim().lookahead();
      if (lookahead <= Tick::zero() || cfg.latency < lookahead || cfg.credit_latency < lookahead)
        throw std::logic_error(fmt::format("{}: a link between partitions needs latency ({}) and credit latency ({}) "
                                           "of at least the lookahead ({})",
                                           this->name(), to_string(cfg.latency), to_string(cfg.credit_latency),
                                           to_string(lookahead)));
      sim().add_exchange([this] {
        hand_over_messages();
        hand_over_credits();
      });
    }
  }

  const LinkConfig& config() const { return cfg_; }

  // ---- sender side
  // Contract: true iff send() may be called now.
  bool can_send() {
    if (tx_occupancy() < cfg_.tx_buffer) return true;
    ++tx_blocked_;
    sender_waiting_ = true;
    arm_tx_free();
    return false;
  }
  // Contract: can_send() was true (sending into a full buffer is a bug).
  void send(Msg msg) {
    T3SIM_CHECK(tx_occupancy() < cfg_.tx_buffer, "send() on a full transmit buffer");
    T3SIM_CHECK(cfg_.rx_buffer_bytes == 0 || msg.size_bytes() <= cfg_.rx_buffer_bytes,
                fmt::format("a {} B message never fits the {} B receive buffer", msg.size_bytes(), cfg_.rx_buffer_bytes));
    waiting_.push_back(std::move(msg));
    start_transmissions();
  }
  // Sends past the transmit buffer's bound: for a node that forwards packets it
  // received and must never block on its own transmit buffer (a GPU relaying ring
  // traffic; see models/net/README.md, "deadlock freedom"). The receive buffer's
  // credits still apply.
  void send_unbounded(Msg msg) {
    T3SIM_CHECK(cfg_.rx_buffer_bytes == 0 || msg.size_bytes() <= cfg_.rx_buffer_bytes,
                fmt::format("a {} B message never fits the {} B receive buffer", msg.size_bytes(), cfg_.rx_buffer_bytes));
    waiting_.push_back(std::move(msg));
    start_transmissions();
  }
  // Called (once per blocking episode) when a sender that saw can_send()==false may retry.
  void set_on_send_ready(std::function<void()> fn) { on_send_ready_ = std::move(fn); }

  // ---- receiver side
  bool has_message() const { return !received_.empty(); }
  const Msg& front() const { return received_.front(); }
  Msg pop() {
    Msg m = std::move(received_.front());
    received_.pop_front();
    if (cfg_.credit_latency == Tick::zero()) {
      ++credits_;  // the buffer slot is free again; credits return instantly (simplification)
      if (cfg_.rx_buffer_bytes > 0) rx_bytes_free_ += m.size_bytes();
      start_transmissions();
    } else {
      // Within a partition the sender's side takes it at once; across, at the window's end.
      (crosses() ? returning_ : credits_in_flight_).push_back(Credit{now() + cfg_.credit_latency, m.size_bytes()});
      if (!crosses()) arm_credit_event();
    }
    return m;
  }
  // Called when one or more messages have arrived.
  void set_on_receive(std::function<void()> fn) { on_receive_ = std::move(fn); }

  // ---- introspection
  std::uint64_t bytes_sent() const { return bytes_sent_.value(); }
  std::uint64_t bytes_received() const { return bytes_received_.value(); }
  Tick busy_time() const { return Tick(busy_time_.value()); }
  bool idle() const { return waiting_.empty() && outbound_.empty() && wire_.empty() && received_.empty(); }

  void report_in_flight(std::vector<std::string>& out) const override {
    if (!waiting_.empty())
      out.push_back(fmt::format("{} messages waiting to transmit ({} credits left)",
                                waiting_.size(), credits_));
    if (!outbound_.empty() || !wire_.empty())
      out.push_back(fmt::format("{} messages on the wire, next arrives at {} ps", outbound_.size() + wire_.size(),
                                (wire_.empty() ? outbound_.front() : wire_.front()).arrival.ps()));
    if (!received_.empty())
      out.push_back(fmt::format("{} messages delivered but not taken by the receiver",
                                received_.size()));
  }

 private:
  struct InFlight {
    Tick serialized;  // end of serialization: leaves the transmit buffer
    Tick arrival;
    Msg msg;
  };

  struct Credit {
    Tick at;              // known at the sender
    std::uint64_t bytes;  // of the message that freed it
  };

  bool crosses() const { return ends_.sender != ends_.receiver; }

  // Messages not yet fully serialized count against the transmit buffer.
  std::uint32_t tx_occupancy() {
    while (!serializing_.empty() && serializing_.front() <= now()) serializing_.pop_front();
    return static_cast<std::uint32_t>(waiting_.size() + serializing_.size());
  }

  // Start every waiting message that has a credit. Serialization is computed, not
  // stepped: message i ends at burst_start + bytes_0..i / bandwidth, so rounding never
  // accumulates over a long burst.
  void start_transmissions() {
    bool started = false;
    while (!waiting_.empty() && credits_ > 0 &&
           (cfg_.rx_buffer_bytes == 0 || waiting_.front().size_bytes() <= rx_bytes_free_)) {
      Msg msg = std::move(waiting_.front());
      waiting_.pop_front();
      --credits_;
      const std::uint64_t bytes = msg.size_bytes();
      if (cfg_.rx_buffer_bytes > 0) rx_bytes_free_ -= bytes;
      if (wire_free_ <= now()) {  // wire was idle: a new burst starts now
        burst_start_ = now();
        burst_bytes_ = 0;
      }
      const Tick start = wire_free_ > now() ? wire_free_ : now();
      burst_bytes_ += bytes;
      const Tick end = burst_start_ + cfg_.bandwidth.transfer_time(burst_bytes_);
      wire_free_ = end;
      busy_time_ += (end - start).ps();
      bytes_sent_ += bytes;
      ++messages_sent_;
      if (sim().timeline().enabled()) sim().timeline().slice(track_, "msg", start, end);
      serializing_.push_back(end);
      // Within a partition the receiver's side takes it at once; across, at the window's end.
      (crosses() ? outbound_ : wire_).push_back(InFlight{end, end + cfg_.latency, std::move(msg)});
      started = true;
    }
    if (started && !crosses()) arm_arrival_event();
    if (sender_waiting_) arm_tx_free();
  }

  void arm_arrival_event() {
    if (!wire_.empty() && !arrival_event_.scheduled())
      sim().events(ends_.receiver).schedule(arrival_event_, wire_.front().arrival);
  }
  void arm_credit_event() {
    if (!credits_in_flight_.empty() && !credit_event_.scheduled())
      sim().events(ends_.sender).schedule(credit_event_, credits_in_flight_.front().at);
  }

  // Across partitions, at the end of each window: what the sender put on the wire
  // joins the receiver's view of it, and the credits the receiver freed start back.
  void hand_over_messages() {
    if (outbound_.empty()) return;
    T3SIM_CHECK(outbound_.front().arrival >= sim().window_end(),
                fmt::format("a message arriving at {} ps crossed partitions inside the window", outbound_.front().arrival.ps()));
    for (InFlight& f : outbound_) wire_.push_back(std::move(f));
    outbound_.clear();
    arm_arrival_event();
  }
  void hand_over_credits() {
    if (returning_.empty()) return;
    T3SIM_CHECK(returning_.front().at >= sim().window_end(),
                fmt::format("a credit returning at {} ps crossed partitions inside the window", returning_.front().at.ps()));
    for (const Credit& c : returning_) credits_in_flight_.push_back(c);
    returning_.clear();
    arm_credit_event();
  }

  void take_credits() {
    while (!credits_in_flight_.empty() && credits_in_flight_.front().at <= now()) {
      ++credits_;
      if (cfg_.rx_buffer_bytes > 0) rx_bytes_free_ += credits_in_flight_.front().bytes;
      credits_in_flight_.pop_front();
    }
    if (!credits_in_flight_.empty()) sim().schedule(credit_event_, credits_in_flight_.front().at);
    start_transmissions();
  }

  void deliver() {
    while (!wire_.empty() && wire_.front().arrival <= now()) {
      bytes_received_ += wire_.front().msg.size_bytes();
      received_.push_back(std::move(wire_.front().msg));
      wire_.pop_front();
    }
    if (!wire_.empty()) sim().schedule(arrival_event_, wire_.front().arrival);
    sim().note_progress();
    if (on_receive_) on_receive_();
  }

  // Wake a blocked sender at the first moment the transmit buffer has room.
  void arm_tx_free() {
    if (tx_occupancy() < cfg_.tx_buffer) {
      if (!tx_free_event_.scheduled()) sim().schedule(tx_free_event_, now());
      return;
    }
    // Full: room appears when the oldest unserialized message on the wire finishes;
    // if all are still waiting for credits, a returned credit will call us again.
    if (!serializing_.empty()) sim().schedule(tx_free_event_, serializing_.front());
  }

  void wake_sender() {
    if (!sender_waiting_) return;
    if (tx_occupancy() >= cfg_.tx_buffer) {
      arm_tx_free();
      return;
    }
    sender_waiting_ = false;
    if (on_send_ready_) on_send_ready_();
  }

  LinkConfig cfg_;
  LinkEnds ends_;
  // ---- the sending end
  std::uint32_t credits_;
  std::uint64_t rx_bytes_free_;  // rx_buffer_bytes > 0 only
  std::deque<Msg> waiting_;      // in the transmit buffer, not yet on the wire (no credit)
  std::deque<Tick> serializing_;  // ends of serialization still ahead (they hold transmit buffer slots)
  std::deque<InFlight> outbound_;  // across partitions: put on the wire, not yet handed to the receiving end
  std::deque<Credit> credits_in_flight_;  // returned by the receiver, arriving at the sender
  Tick wire_free_;               // end of the last serialization
  Tick burst_start_;
  std::uint64_t burst_bytes_ = 0;
  bool sender_waiting_ = false;
  std::function<void()> on_send_ready_;
  // ---- the receiving end
  std::deque<InFlight> wire_;    // serializing or propagating, in arrival order
  std::deque<Msg> received_;     // in the receive buffer
  std::deque<Credit> returning_;  // across partitions: freed, not yet handed to the sending end
  std::function<void()> on_receive_;
  CallbackEvent arrival_event_;  // the receiving end's
  CallbackEvent tx_free_event_;  // the sending end's
  CallbackEvent credit_event_;   // the sending end's
  Counter& bytes_sent_;
  Counter& messages_sent_;
  Counter& bytes_received_;
  Counter& busy_time_;
  Counter& tx_blocked_;
  Timeline::TrackId track_ = 0;
};

}  // namespace t3sim
