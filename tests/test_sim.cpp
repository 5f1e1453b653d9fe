// The engine: event order, clocks, links, watchdog.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "sim/clock.h"
#include "sim/component.h"
#include "sim/error.h"
#include "sim/event_queue.h"
#include "sim/host_cpu.h"
#include "sim/int_math.h"
#include "sim/link.h"
#include "sim/simulator.h"
#include "sim/time.h"

namespace t3sim {
namespace {

// ---------------------------------------------------------------- time and units

// The summaries' units: a tick in microseconds and milliseconds, bytes in decimal MB.
TEST(Tick, ConvertsToMicrosecondsAndMilliseconds) {
  const Tick t(1'234'567'000);  // 1.234567 ms
  EXPECT_DOUBLE_EQ(t.us(), 1234.567);
  EXPECT_DOUBLE_EQ(t.ms(), 1.234567);
  EXPECT_DOUBLE_EQ(Tick::zero().ms(), 0.0);
  EXPECT_DOUBLE_EQ(megabytes(192'000'000), 192.0);
  EXPECT_EQ(align_up(3, 2 << 20), std::uint64_t{2} << 20);
}

// ---------------------------------------------------------------- event queue

TEST(EventQueue, OrdersByTimeThenPriorityThenScheduling) {
  EventQueue q;
  std::vector<std::string> order;
  auto at = [&](Tick t, EventPriority p, std::string name) {
    q.schedule_callback(t, [&order, name] { order.push_back(name); }, p);
  };
  at(Tick(20), EventPriority::kDefault, "t20");
  at(Tick(10), EventPriority::kTick, "t10-tick");
  at(Tick(10), EventPriority::kDefault, "t10-a");
  at(Tick(10), EventPriority::kDelivery, "t10-delivery");
  at(Tick(10), EventPriority::kDefault, "t10-b");
  at(Tick(5), EventPriority::kLast, "t5");
  q.run();
  EXPECT_EQ(order, (std::vector<std::string>{"t5", "t10-delivery", "t10-a", "t10-b", "t10-tick", "t20"}));
  EXPECT_EQ(q.now(), Tick(20));
  EXPECT_EQ(q.dispatched(), 6u);
}

TEST(EventQueue, RescheduleMovesAndDescheduleCancels) {
  EventQueue q;
  int fired = 0;
  Tick fired_at;
  CallbackEvent ev(EventSource{}, "ev", [&] { ++fired; fired_at = q.now(); });
  q.schedule(ev, Tick(100));
  q.schedule(ev, Tick(50));  // moves: the entry for 100 becomes stale
  EXPECT_EQ(q.pending(), 1u);
  q.run();
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(fired_at, Tick(50));

  q.schedule(ev, Tick(70));
  q.deschedule(ev);
  EXPECT_TRUE(q.empty());
  q.run();
  EXPECT_EQ(fired, 1);
}

TEST(EventQueue, RejectsSchedulingInThePast) {
  EventQueue q;
  q.schedule_callback(Tick(10), [] {});
  q.run();
  CallbackEvent ev(EventSource{}, "late", [] {});
  EXPECT_THROW(q.schedule(ev, Tick(5)), std::logic_error);
}

TEST(EventQueue, RunStopsAtLimitAndPooledEventsAreReused) {
  EventQueue q;
  int count = 0;
  // A chain of 1000 callbacks, each scheduling the next: the pool never grows past a few.
  std::function<void()> next = [&] {
    if (++count < 1000) q.schedule_callback(q.now() + Tick(1), next);
  };
  q.schedule_callback(Tick(0), next);
  EXPECT_EQ(q.run(Tick(499)), 500u);  // events at t = 0..499
  EXPECT_EQ(count, 500);
  q.run();
  EXPECT_EQ(count, 1000);
}

TEST(EventQueue, ManyRandomEventsComeOutSorted) {
  EventQueue q;
  std::vector<std::uint64_t> seen;
  std::uint64_t x = 12345;
  for (int i = 0; i < 20000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const Tick t((x >> 33) % 100000);
    q.schedule_callback(t, [&seen, &q] { seen.push_back(q.now().ps()); });
  }
  q.run();
  ASSERT_EQ(seen.size(), 20000u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}


// Against a functional reference: events of several sources that schedule, move and
// cancel each other at few or many distinct times run in exactly the canonical order
// (time, priority, source, the source's scheduling order), each live one once and no
// cancelled one; and the same with every schedule inserted in a shuffled order.
TEST(EventQueue, DispatchOrderMatchesAReferenceUnderRescheduleAndCancel) {
  for (const std::uint64_t shuffle : {0ULL, 99ULL})
  for (const std::uint64_t distinct_times : {3ULL, 40ULL, 5000ULL}) {
    EventQueue q;
    q.set_shuffle_ties(shuffle);
    constexpr std::uint32_t kSources = 7;
    constexpr int kEvents = 600;
    constexpr EventPriority kPriorities[] = {EventPriority::kDelivery, EventPriority::kDefault, EventPriority::kTick};
    struct Key {
      Tick::rep when;
      int priority;
      std::uint32_t source;
      std::uint64_t order;  // the source's scheduling call's number
      int event;
      bool operator<(const Key& o) const {
        return std::tie(when, priority, source, order) < std::tie(o.when, o.priority, o.source, o.order);
      }
    };
    std::map<int, Key> live;  // the reference: each event's pending schedule
    std::map<std::uint32_t, std::uint64_t> calls;  // by source
    std::uint64_t x = 777 + distinct_times;
    auto rnd = [&x](std::uint64_t n) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      return (x >> 33) % n;
    };
    std::vector<int> dispatched;
    std::vector<std::unique_ptr<CallbackEvent>> events;
    auto schedule = [&](int e, Tick when) {
      q.schedule(*events[static_cast<std::size_t>(e)], when);
      const CallbackEvent& ev = *events[static_cast<std::size_t>(e)];
      live[e] = Key{when.ps(), static_cast<int>(ev.priority()), ev.source().id, ++calls[ev.source().id], e};
    };
    for (int e = 0; e < kEvents; ++e) {
      events.push_back(std::make_unique<CallbackEvent>(
          EventSource{1 + static_cast<std::uint32_t>(e) % kSources}, "e", [&, e] {
            dispatched.push_back(e);
            live.erase(e);
            // Each run touches three random events: schedules (or moves) them at now
            // or later, or cancels them.
            for (int k = 0; k < 3 && dispatched.size() < 20000; ++k) {
              const int other = static_cast<int>(rnd(kEvents));
              if (rnd(5) == 0) {
                q.deschedule(*events[static_cast<std::size_t>(other)]);
                live.erase(other);
              } else {
                schedule(other, q.now() + Tick(static_cast<Tick::rep>(rnd(distinct_times) * 700)));
              }
            }
          },
          kPriorities[e % 3]));
    }
    for (int e = 0; e < kEvents; e += 2) schedule(e, Tick(static_cast<Tick::rep>(rnd(distinct_times) * 700)));
    // Before each dispatch the reference's smallest key names the event that must run.
    while (!live.empty()) {
      const Key next = std::min_element(live.begin(), live.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; })
                           ->second;
      const std::size_t before = dispatched.size();
      ASSERT_TRUE(q.step());
      ASSERT_EQ(dispatched.size(), before + 1);
      ASSERT_EQ(dispatched.back(), next.event) << "dispatch " << before << " with " << distinct_times << " times";
      ASSERT_EQ(q.now().ps(), next.when);
    }
    EXPECT_FALSE(q.step());  // nothing cancelled ran
    EXPECT_GT(dispatched.size(), 1000u);
  }
}
TEST(EventQueue, RunningAfterSaysWhetherAnUnqueuedEventWouldHaveRunAlready) {
  // A component that skips an event which would have done nothing (the memory
  // controllers' idle cycles) asks where that event would have run.
  EventQueue q;
  std::vector<bool> seen;
  const Tick t10(10);
  CallbackEvent early(EventSource{2}, "late insert", [&] {
    // Scheduled by source 9's tick at now, ahead of it in key order: it runs after it,
    // so an event at (10, tick, 7) would have run before this one.
    seen.push_back(q.running_after(t10, EventPriority::kTick, EventSource{7}));
  }, EventPriority::kDelivery);
  CallbackEvent five(EventSource{5}, "five", [&] {
    seen.push_back(q.running_after(t10, EventPriority::kTick, EventSource{7}));      // 7 runs after 5
    seen.push_back(q.running_after(t10, EventPriority::kTick, EventSource{3}));      // 3 ran
    seen.push_back(q.running_after(t10, EventPriority::kTick, EventSource{5}));      // its own place: after
    seen.push_back(q.running_after(t10, EventPriority::kDelivery, EventSource{9}));  // deliveries first
    seen.push_back(q.running_after(t10, EventPriority::kLast, EventSource{1}));
    seen.push_back(q.running_after(Tick(9), EventPriority::kLast, EventSource{1}));  // earlier time
    seen.push_back(q.running_after(Tick(11), EventPriority::kFirst, EventSource{1}));
  }, EventPriority::kTick);
  CallbackEvent nine(EventSource{9}, "nine", [&] { q.schedule(early, q.now()); }, EventPriority::kTick);
  q.schedule(five, t10);
  q.schedule(nine, t10);
  q.run();
  EXPECT_EQ(seen, (std::vector<bool>{false, true, true, true, false, true, false, true}));
  // Outside any event every event at now has run.
  EXPECT_TRUE(q.running_after(t10, EventPriority::kLast, EventSource{EventSource::kMax}));
  EXPECT_FALSE(q.running_after(Tick(11), EventPriority::kFirst, EventSource{0}));
}

// ---------------------------------------------------------------- clocks

TEST(ClockDomain, NonIntegerPeriodNeverDrifts) {
  const ClockDomain clk(1'400'000'000);  // 714.2857 ps
  EXPECT_EQ(clk.edge(Cycles(0)), Tick(0));
  EXPECT_EQ(clk.edge(Cycles(1)), Tick(714));
  EXPECT_EQ(clk.edge(Cycles(7)), Tick(5000));
  EXPECT_EQ(clk.edge(Cycles(1'400'000'000)), Tick::ms(1000));
  EXPECT_EQ(clk.cycle_at_or_after(Tick(714)), Cycles(1));
  EXPECT_EQ(clk.cycle_at_or_after(Tick(715)), Cycles(2));
  EXPECT_EQ(clk.cycle_containing(Tick(715)), Cycles(1));
  EXPECT_EQ(clk.cycle_containing(Tick(1427)), Cycles(1));
  EXPECT_EQ(clk.cycle_containing(Tick(1428)), Cycles(2));
  EXPECT_EQ(clk.next_edge(Tick(1)), Tick(714));
  for (std::uint64_t n = 0; n < 5000; ++n) {
    const Tick e = clk.edge(Cycles(n));
    EXPECT_EQ(clk.cycle_at_or_after(e), Cycles(n));
    EXPECT_EQ(clk.cycle_containing(e), Cycles(n));
  }
}

TEST(ClockDomain, RejectsZeroFrequency) { EXPECT_THROW(ClockDomain(0), std::invalid_argument); }

TEST(Bandwidth, TransferTimeIsExactAndRoundsUp) {
  const Bandwidth bw(75'000'000'000ULL);  // 75 GB/s
  EXPECT_EQ(bw.transfer_time(75), Tick(1000));
  EXPECT_EQ(bw.transfer_time(4096), Tick(54614));  // 54613.33 rounds up
  EXPECT_EQ(Bandwidth().transfer_time(1 << 30), Tick(0));  // unlimited
}

// ---------------------------------------------------------------- links

struct Msg {
  std::uint64_t bytes;
  int id;
  std::uint64_t size_bytes() const { return bytes; }
};

// A receiver that records arrival times and optionally does not drain.
struct Sink : Component {
  Sink(Simulator& s, Link<Msg>& l, bool drain) : Component(s, "sink"), link(l), drain_(drain) {
    link.set_on_receive([this] { on_receive(); });
  }
  void on_receive() {
    while (drain_ && link.has_message()) {
      arrivals.push_back(now());
      ids.push_back(link.pop().id);
    }
  }
  void drain_now() {
    drain_ = true;
    on_receive();
  }
  Link<Msg>& link;
  bool drain_;
  std::vector<Tick> arrivals;
  std::vector<int> ids;
};

TEST(Link, SerializesAtBandwidthThenAddsLatency) {
  Simulator sim;
  Component top(sim, "a");
  Link<Msg> link(top, "tx", LinkConfig{Bandwidth(1'000'000'000), Tick::ns(500), 16, 16});  // 1 GB/s
  Sink sink(sim, link, true);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(link.can_send());
    link.send(Msg{1000, i});  // 1000 B at 1 GB/s = 1 us each
  }
  sim.run();
  ASSERT_EQ(sink.arrivals.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(sink.arrivals[i], Tick::us(i + 1) + Tick::ns(500)) << i;
  EXPECT_EQ(sink.ids, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(link.bytes_sent(), 4000u);
  EXPECT_EQ(link.bytes_received(), 4000u);
  EXPECT_EQ(link.busy_time(), Tick::us(4));
}

TEST(Link, BackPressureFromFullReceiverStopsTheWireAndResumes) {
  Simulator sim;
  Component top(sim, "a");
  Link<Msg> link(top, "tx", LinkConfig{Bandwidth(1'000'000'000), Tick::ns(100), 2, 2});
  Sink sink(sim, link, /*drain=*/false);

  // A sender that pushes 10 messages as fast as the link allows.
  int next = 0;
  std::function<void()> push = [&] {
    while (next < 10 && link.can_send()) link.send(Msg{100, next++});
  };
  link.set_on_send_ready(push);
  push();
  sim.run(Tick::us(5));
  // Receiver holds 2 (its buffer), the transmit buffer holds 2: 4 accepted, no more.
  EXPECT_EQ(next, 4);
  EXPECT_TRUE(sink.ids.empty());

  sink.drain_now();  // consuming returns credits: the rest flows
  sim.run();
  EXPECT_EQ(next, 10);
  EXPECT_EQ(sink.ids, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

// A receive buffer bounded in bytes (a flit buffer): small messages take only their
// size, and a message waits until its bytes are free.
TEST(Link, ReceiveBufferInBytesHoldsSmallMessagesByTheirSize) {
  Simulator sim;
  Component top(sim, "a");
  LinkConfig cfg{Bandwidth(1'000'000'000), Tick::ns(100), 64, 1u << 20};
  cfg.rx_buffer_bytes = 1000;
  Link<Msg> link(top, "tx", cfg);
  Sink sink(sim, link, /*drain=*/false);
  for (int i = 0; i < 9; ++i) link.send(Msg{100, i});  // 900 B
  link.send(Msg{200, 9});                              // needs 200 B, 100 free
  sim.run(Tick::us(5));
  // All nine 100 B messages arrived (a buffer counting messages of the largest size,
  // 200 B, would have held five); the 200 B one waits for room.
  EXPECT_EQ(link.bytes_received(), 900u);
  sink.drain_now();
  sim.run();
  EXPECT_EQ(link.bytes_received(), 1100u);
  EXPECT_EQ(sink.ids.size(), 10u);
}

TEST(Link, UnlimitedBandwidthDeliversAfterLatencyOnly) {
  Simulator sim;
  Component top(sim, "a");
  Link<Msg> link(top, "tx", LinkConfig{Bandwidth(), Tick::ns(7), 4, 4});
  Sink sink(sim, link, true);
  link.send(Msg{1 << 20, 0});
  link.send(Msg{1 << 20, 1});
  sim.run();
  EXPECT_EQ(sink.arrivals, (std::vector<Tick>{Tick::ns(7), Tick::ns(7)}));
}

TEST(Link, ConservesBytesUnderRandomTraffic) {
  Simulator sim;
  Component top(sim, "a");
  Link<Msg> link(top, "tx", LinkConfig{Bandwidth(3'000'000'000), Tick::ns(50), 3, 5});
  Sink sink(sim, link, true);
  std::uint64_t x = 7, sent_bytes = 0;
  int next = 0;
  std::function<void()> push = [&] {
    while (next < 500 && link.can_send()) {
      x = x * 6364136223846793005ULL + 1;
      const std::uint64_t b = 1 + (x >> 40) % 5000;
      sent_bytes += b;
      link.send(Msg{b, next++});
    }
  };
  link.set_on_send_ready(push);
  push();
  sim.run();
  EXPECT_EQ(next, 500);
  EXPECT_EQ(sink.ids.size(), 500u);
  EXPECT_EQ(link.bytes_sent(), sent_bytes);
  EXPECT_EQ(link.bytes_received(), sent_bytes);
  // Never faster than the bandwidth allows.
  EXPECT_GE(sim.now(), Bandwidth(3'000'000'000).transfer_time(sent_bytes));
}

// ---------------------------------------------------------------- components and watchdog

TEST(Component, HierarchicalNamesAndStatPrefixes) {
  Simulator sim;
  Component gpu(sim, "gpu3");
  Component mc(gpu, "mc7");
  EXPECT_EQ(mc.name(), "gpu3.mc7");
  EXPECT_EQ(sim.find("gpu3.mc7"), &mc);
  EXPECT_THROW(Component(gpu, "mc7"), std::logic_error);  // names are unique
}

// Components go away in any order (a model's members, vectors of them): the rest stay
// findable, listed in construction order, and a name is free again once its owner is gone.
TEST(Component, RemovedInAnyOrderTheRestStayFindableInOrder) {
  Simulator sim;
  std::vector<std::unique_ptr<Component>> parts;
  for (int i = 0; i < 100; ++i) parts.push_back(std::make_unique<Component>(sim, "c" + std::to_string(i)));
  for (int i = 0; i < 100; i += 3) parts[static_cast<std::size_t>(i)].reset();  // from the front
  for (int i = 98; i > 0; i -= 5) parts[static_cast<std::size_t>(i)].reset();   // and from the back
  std::vector<Component*> expected;
  for (int i = 0; i < 100; ++i) {
    Component* c = parts[static_cast<std::size_t>(i)].get();
    EXPECT_EQ(sim.find("c" + std::to_string(i)), c) << i;
    if (c != nullptr) expected.push_back(c);
  }
  EXPECT_EQ(sim.components(), expected);
  Component again(sim, "c0");
  EXPECT_EQ(sim.find("c0"), &again);
  EXPECT_EQ(sim.components().back(), &again);
  parts.clear();
  EXPECT_EQ(sim.components(), std::vector<Component*>{&again});
}

// A component that waits forever for a message that never comes.
struct Waiter : Component {
  using Component::Component;
  void report_in_flight(std::vector<std::string>& out) const override {
    out.push_back("waiting for a reply from gpu1");
  }
};

TEST(Watchdog, DrainedQueueWithWorkInFlightIsADeadlockWithAReport) {
  Simulator sim;
  Component gpu(sim, "gpu0");
  Waiter w(gpu, "dma");
  sim.events().schedule_callback(Tick::ns(10), [] {});
  try {
    sim.run();
    FAIL() << "expected a deadlock";
  } catch (const SimulationError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
    EXPECT_NE(what.find("gpu0.dma: waiting for a reply from gpu1"), std::string::npos) << what;
  }
}

// A component whose invariant breaks in an event: the run ends with an InternalError
// naming it, the simulated time and what every component had in flight; never an abort.
struct Checker : Component {
  using Component::Component;
  void step() { T3SIM_CHECK(1 + 1 == 3, "the queue's head is not the oldest"); }
};

TEST(InternalErrors, ACheckFailingInARunIsAnExceptionWithTheInFlightReport) {
  for (unsigned partitions : {1u, 2u}) {
    Simulator sim;
    if (partitions > 1) {
      sim.set_partitions(partitions, Tick::ns(100));
      sim.set_threads(2);
    }
    Component gpu(sim, "gpu0");
    Waiter w(gpu, "dma");
    Checker c(gpu, "mc3");
    sim.events().schedule_callback(Tick::ns(10), [&c] { c.step(); });
    try {
      sim.run();
      FAIL() << "expected an internal error";
    } catch (const InternalError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("internal error at t=10.000ns (10000 ps) in gpu0.mc3: check failed: 1 + 1 == 3: the queue's "
                          "head is not the oldest"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("in flight:\n  gpu0.dma: waiting for a reply from gpu1"), std::string::npos) << what;
    }
  }
}

TEST(InternalErrors, AnyOtherExceptionFromAModelIsOneToo) {
  Simulator sim;
  sim.events().schedule_callback(Tick::ns(3), [] { throw std::bad_alloc(); });
  EXPECT_THAT([&] { sim.run(); }, testing::ThrowsMessage<InternalError>(testing::StartsWith(
                                      "out of host memory at t=3.000ns (3000 ps); no component reports work")));
  Simulator other;
  other.events().schedule_callback(Tick::ns(4), [] { throw std::out_of_range("vector::at"); });
  EXPECT_THAT([&] { other.run(); }, testing::ThrowsMessage<InternalError>(
                                        testing::HasSubstr("internal error at t=4.000ns (4000 ps): vector::at")));
  // The simulated system's own failures keep their kind.
  Simulator third;
  third.events().schedule_callback(Tick::ns(5), [] { throw SimulationError("deadlock somewhere"); });
  try {
    third.run();
  } catch (const InternalError&) {
    ADD_FAILURE() << "a SimulationError became an internal error";
  } catch (const SimulationError& e) {
    EXPECT_STREQ(e.what(), "deadlock somewhere");
  }
}

TEST(Watchdog, EventsWithoutProgressAreALivelock) {
  Simulator sim(1, WatchdogConfig{Tick::us(1), Tick::us(20)});
  // A retry loop that never succeeds: events forever, no progress.
  std::function<void()> retry = [&] { sim.events().schedule_callback(sim.now() + Tick::ns(100), retry); };
  sim.events().schedule_callback(Tick(0), retry);
  try {
    sim.run();
    FAIL() << "expected a livelock";
  } catch (const SimulationError& e) {
    // The message names what counts as progress and how many events fired without it.
    EXPECT_NE(std::string(e.what()).find("livelock"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("note_progress"), std::string::npos) << e.what();
  }
  EXPECT_LE(sim.now(), Tick::us(30));
}

// Issue 45, D2: slow is not stuck. Work scheduled far ahead (a 15 ms compute) with
// nothing firing meanwhile but the watchdog, and progress rarer than the stall limit
// with nothing else firing between, run to completion, in one queue and partitioned.
TEST(Watchdog, WorkScheduledFarAheadIsSlowNotStuck) {
  for (const std::uint32_t partitions : {1u, 2u}) {
    Simulator sim(1, WatchdogConfig{Tick::us(1), Tick::us(20)});
    if (partitions > 1) sim.set_partitions(partitions, Tick::ns(500));
    int steps = 0;
    std::function<void()> step = [&] {
      sim.note_progress();
      if (++steps < 4) sim.events().schedule_callback(sim.now() + Tick::ms(15), step);
    };
    sim.events().schedule_callback(Tick(0), step);
    EXPECT_EQ(sim.run(), Simulator::StopReason::kDrained) << partitions;
    EXPECT_EQ(steps, 4);
    EXPECT_EQ(sim.now(), Tick::ms(45));
    // The watchdog does not tick through the idle 15 ms stretches (one check per step).
    if (partitions == 1) {
      EXPECT_LT(sim.dispatched(), 20u);
    }
  }
}

// Issue 45: a run whose time outgrows Tick (2^64 ps, about 214 days; a bandwidth of
// 1 B/s) is bad input with a clear message, not an internal error about an event in
// the past.
TEST(Simulator, ATimePastTheTickRangeIsABadInputNotAnInternalError) {
  Simulator sim(1);
  const Tick late = Tick::max() - Tick::us(1);
  sim.events().schedule_callback(late, [&] {
    sim.events().schedule_callback(sim.now() + Tick::ms(1), [] {});  // wraps past 2^64 ps
  });
  try {
    sim.run();
    FAIL() << "expected the overflow to be reported";
  } catch (const SimulationError& e) {
    FAIL() << "reported as a failed simulation: " << e.what();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("passed the simulator's limit of 2^64 ps (214 days)"), std::string::npos)
        << e.what();
  }
}

TEST(Watchdog, DoesNotKeepADrainedSimulationAlive) {
  Simulator sim(1, WatchdogConfig{Tick::us(1), Tick::us(20)});
  sim.events().schedule_callback(Tick::us(3), [&] { sim.note_progress(); });
  EXPECT_EQ(sim.run(), Simulator::StopReason::kDrained);
  EXPECT_LE(sim.now(), Tick::us(4));
}

}  // namespace
}  // namespace t3sim

namespace t3sim {
namespace {

// The cores a run takes when the user gives no thread count (issue 43): the affinity's
// cores less the other runnable tasks /proc/stat counts.
TEST(HostCpu, ProcsRunningIsReadFromProcStat) {
  EXPECT_EQ(procs_running_in("cpu  1 2 3\nctxt 99\nprocs_running 3\nprocs_blocked 0\n"), 3u);
  EXPECT_EQ(procs_running_in("procs_running 17"), 17u);
  EXPECT_EQ(procs_running_in("cpu 1\nprocs_blocked 2\n"), 0u);  // absent
  EXPECT_EQ(procs_running_in("procs_running x\n"), 0u);           // not a number
  EXPECT_EQ(procs_running_in(""), 0u);
}

TEST(HostCpu, FreeCoresAreAtLeastOneAndAtMostTheAffinitys) {
  const unsigned cores = host_cores();
  EXPECT_GE(cores, 1u);
  const unsigned free = host_cores_free();
  EXPECT_GE(free, 1u);
  EXPECT_LE(free, cores);
}

}  // namespace
}  // namespace t3sim
