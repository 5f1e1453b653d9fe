#include "sim/simulator.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <new>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "sim/component.h"
#include "sim/error.h"
#include "sim/huge_pages.h"

namespace t3sim {

thread_local Simulator::Partition* Simulator::running_ = nullptr;

Simulator::Simulator(std::uint64_t seed, WatchdogConfig watchdog)
    : seed_(seed),
      watchdog_(watchdog),
      watchdog_event_(EventSource{}, "watchdog", [this] { watchdog_check(); }, EventPriority::kLast) {
  parts_.push_back(std::make_unique<Partition>());
  selected_ = parts_.front().get();
  set_shuffle_ties(shuffle_ties_default_.load(std::memory_order_relaxed));
  progress_ = progress_default_.load(std::memory_order_relaxed);
}

std::atomic<std::uint64_t> Simulator::shuffle_ties_default_{0};
std::atomic<ProgressObserver*> Simulator::progress_default_{nullptr};

void Simulator::set_progress_observer_default(ProgressObserver* observer) {
  progress_default_.store(observer, std::memory_order_relaxed);
}

void Simulator::set_shuffle_ties_default(std::uint64_t seed) {
  shuffle_ties_default_.store(seed, std::memory_order_relaxed);
}

Simulator::~Simulator() = default;

EventSource Simulator::new_event_source() {
  if (running_ != nullptr) throw std::logic_error("a component built inside a partitioned run's window");
  if (last_event_source_ == EventSource::kMax)
    throw std::logic_error(fmt::format("more than {} components: event sources exhausted", EventSource::kMax));
  return EventSource{++last_event_source_};
}

void Simulator::set_shuffle_ties(std::uint64_t seed) {
  shuffle_ties_ = seed;
  for (std::size_t i = 0; i < parts_.size(); ++i) parts_[i]->events.set_shuffle_ties(seed == 0 ? 0 : seed + i);
}

void Simulator::add_component(Component* c) {
  if (!by_name_.emplace(c->name(), components_.size()).second)
    throw std::logic_error("two components named '" + c->name() + "'");
  components_.push_back(c);
}

// Removal leaves a null in components_ (a model of thousands of components is torn
// down in O(n), not O(n^2)); the vector is compacted, in order, once half of it is null.
void Simulator::remove_component(Component* c) {
  const auto it = by_name_.find(c->name());
  components_[it->second] = nullptr;
  by_name_.erase(it);
  if (++removed_components_ * 2 <= components_.size()) return;
  std::erase(components_, nullptr);
  removed_components_ = 0;
  for (std::size_t i = 0; i < components_.size(); ++i) by_name_[components_[i]->name()] = i;
}

Component* Simulator::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : components_[it->second];
}

std::vector<Component*> Simulator::components() const {
  std::vector<Component*> live;
  for (Component* c : components_)
    if (c != nullptr) live.push_back(c);
  return live;
}

std::vector<std::string> Simulator::in_flight_report() const {
  std::vector<std::string> lines;
  for (const Component* c : components_) {
    if (c == nullptr) continue;  // removed
    std::vector<std::string> mine;
    c->report_in_flight(mine);
    for (auto& m : mine) lines.push_back(c->name() + ": " + m);
  }
  return lines;
}

std::string Simulator::with_in_flight_report(std::string what) const {
  std::vector<std::string> lines;
  try {
    lines = in_flight_report();
  } catch (...) {
    lines = {"(the in-flight report failed too)"};
  }
  if (lines.empty()) {
    what += "; no component reports work in flight";
  } else {
    what += "; in flight:";
    for (const auto& l : lines) what += "\n  " + l;
  }
  return what;
}

void Simulator::fail(const std::string& what) const {
  throw SimulationError(with_in_flight_report(fmt::format("{} at t={} ({} ps)", what, to_string(now()), now().ps())));
}

void Simulator::rethrow_with_report() const {
  std::string what;
  try {
    throw;
  } catch (const InternalError& e) {
    what = e.what();
  } catch (const SimulationError&) {
    throw;  // a deadlock, a livelock, a time limit: reported where detected
  } catch (const UserError&) {
    throw;
  } catch (const std::invalid_argument&) {
    throw;  // a model rejecting its parameters: a usage error
  } catch (const std::bad_alloc&) {
    what = fmt::format("out of host memory at t={} ({} ps)", to_string(now()), now().ps());
  } catch (const std::exception& e) {
    what = fmt::format("internal error at t={} ({} ps): {}", to_string(now()), now().ps(), e.what());
  } catch (...) {
    what = fmt::format("internal error at t={} ({} ps): an unknown exception", to_string(now()), now().ps());
  }
  throw InternalError(with_in_flight_report(std::move(what)));
}

std::uint64_t Simulator::progress() const {
  std::uint64_t n = 0;
  for (const auto& p : parts_) n += p->progress;
  return n;
}

std::uint64_t Simulator::dispatched() const {
  std::uint64_t n = 0;
  for (const auto& p : parts_) n += p->events.dispatched();
  return n;
}

void Simulator::skip_ahead(Tick by) {
  // One clock for every partition: skipping in one while others run on would move
  // their times too, so a partitioned run never skips.
  if (parts_.size() > 1) throw std::logic_error("skip_ahead: only in a run of one partition");
  skipped_ = skipped_ + by;
}

void Simulator::set_partitions(std::uint32_t count, Tick lookahead) {
  if (count == 0) throw std::logic_error("set_partitions: at least one partition");
  if (count > 1 && lookahead <= Tick::zero())
    throw std::logic_error("set_partitions: partitions need a positive lookahead");
  for (const auto& p : parts_)
    if (!p->events.empty() || p->events.dispatched() > 0)
      throw std::logic_error("set_partitions: events were scheduled already");
  const std::uint32_t selected = selected_->index;
  parts_.clear();
  for (std::uint32_t i = 0; i < count; ++i) {
    parts_.push_back(std::make_unique<Partition>());
    parts_.back()->index = i;
  }
  selected_ = parts_[std::min(selected, count - 1)].get();
  set_shuffle_ties(shuffle_ties_);
  lookahead_ = count > 1 ? lookahead : Tick::zero();
  timeline_.set_lanes(count);
}

Simulator::InPartition::InPartition(Simulator& sim, std::uint32_t partition)
    : sim_(sim), previous_(sim.selected_) {
  if (running_ != nullptr) throw std::logic_error("InPartition inside a partitioned run");
  sim.selected_ = sim.parts_.at(partition).get();
  Timeline::set_current_lane(partition);
}

Simulator::InPartition::~InPartition() {
  sim_.selected_ = previous_;
  Timeline::set_current_lane(previous_->index);
}

void Simulator::post(std::uint32_t partition, Tick when, std::function<void()> fn, EventPriority priority) {
  Partition& from = current();
  if (running_ == nullptr || partition == from.index) {
    parts_.at(partition)->events.schedule_callback(when, std::move(fn), priority);
    return;
  }
  if (when < from.window_end)
    throw std::logic_error(fmt::format("partition {} posted into partition {} at {} ps, inside the window ending at "
                                       "{} ps (an interaction shorter than the lookahead of {})",
                                       from.index, partition, when.ps(), from.window_end.ps(), to_string(lookahead_)));
  from.outbox.push_back(Posted{when, priority, partition, std::move(fn), from.events.take_stamp()});
}

void Simulator::add_exchange(std::function<void()> hook) { exchange_hooks_.push_back(std::move(hook)); }

bool Simulator::stalled(Tick at, std::uint64_t events) {
  const std::uint64_t progress_now = progress();
  // Progress, or no event but the watchdog's since the last check: the model waits for
  // work scheduled ahead (a long compute, a slow transfer's next piece). Slow, not
  // stuck (issue 45, D2).
  if (progress_now != progress_at_check_ || events == events_at_check_) {
    progress_at_check_ = progress_now;
    events_at_check_ = events;
    last_progress_time_ = at;
    events_since_progress_ = 0;
    return false;
  }
  events_since_progress_ += events - events_at_check_;
  events_at_check_ = events;
  return at - last_progress_time_ >= watchdog_.stall_limit;
}

std::string Simulator::livelock_message(Tick at) const {
  return fmt::format("livelock: {} events fired in the last {} but no component reported progress (a request "
                     "served, a message delivered, a WG finished: Simulator::note_progress)",
                     events_since_progress_, to_string(at - last_progress_time_));
}

void Simulator::watchdog_check() {
  ++watchdog_checks_;
  if (stalled(now(), dispatched() - watchdog_checks_)) fail(livelock_message(now()));
  if (progress_ != nullptr) progress_->on_progress(now(), dispatched() - watchdog_checks_);
  // Only keep watching while there is something else to watch: the watchdog alone
  // must not keep a drained simulation alive. (A partitioned run checks between
  // windows instead.)
  EventQueue& q = parts_.front()->events;
  // Across a gap in which nothing else is scheduled (a long compute), the next check is
  // the next event's time: the watchdog does not tick through an idle stretch.
  if (parts_.size() == 1 && !q.empty())
    q.schedule(watchdog_event_, std::max(now() + watchdog_.interval, q.next_time()));
}

Simulator::StopReason Simulator::run(Tick until) {
  if (running_ != nullptr) throw std::logic_error("Simulator::run inside a run");
  if (parts_.size() > 1) return run_partitioned(until);
  EventQueue& events = parts_.front()->events;
  const bool watch = watchdog_.stall_limit > Tick::zero();
  if (watch && !watchdog_event_.scheduled() && !events.empty()) {
    progress_at_check_ = progress();
    events_at_check_ = dispatched() - watchdog_checks_;
    events_since_progress_ = 0;
    last_progress_time_ = now();
    events.schedule(watchdog_event_, now() + watchdog_.interval);
  }
  back_with_huge_pages();  // the model is built: its state is allocated
  try {
    events.run(until);
  } catch (...) {
    rethrow_with_report();
  }
  if (!events.empty()) return StopReason::kTimeLimit;
  if (!in_flight_report().empty()) fail("deadlock: no events left");
  return StopReason::kDrained;
}

// Hands over what crossed partitions in the window that ended: the exchange hooks
// (links), then the posts, by posting partition, in posting order.
void Simulator::exchange() {
  for (const auto& hook : exchange_hooks_) hook();
  for (const auto& p : parts_) {
    for (Posted& post : p->outbox)
      parts_[post.partition]->events.schedule_callback(post.when, std::move(post.fn), post.priority, post.stamp);
    p->outbox.clear();
  }
}

// Runs partition `index` up to the window's end on the calling host thread.
void Simulator::run_partition_window(std::size_t index) {
  const Tick last = Tick(window_end_.ps() - 1);  // the window is [start, end)
  Partition& p = *parts_[index];
  p.window_end = window_end_;
  running_ = &p;
  Timeline::set_current_lane(p.index);
  p.events.run(last);
  running_ = nullptr;
  Timeline::set_current_lane(0);
}

void Simulator::end_run_at(Tick t) {
  for (const auto& p : parts_) p->events.advance_to(t);
}

Simulator::StopReason Simulator::run_partitioned(Tick until) {
  const bool watch = watchdog_.stall_limit > Tick::zero();
  back_with_huge_pages();
  const unsigned threads = this->threads();
  const std::size_t n = parts_.size();

  // A window's partitions are a pool: whichever host thread is running claims the next
  // one (`next_claim`), and the window ends when all are done (`done`), not when every thread
  // has come by. So a thread the OS deschedules (a busy machine) delays the window only
  // by the partition it holds, not by the whole of its share, and one that wakes late
  // finds the work taken and waits for the next window (issue 43: with static shares and
  // a barrier, 8 partitions on 2 threads beside 2 busy processes took 21 s instead of 3).
  // Which thread runs a partition does not matter: partitions are independent within a
  // window. Helpers sleep on `epoch` between windows; an exception in a partition (an
  // internal error) is kept and rethrown by this thread.
  std::atomic<std::size_t> next_claim{n};
  std::atomic<std::size_t> done{0};
  std::atomic<std::uint64_t> epoch{0};
  std::atomic<bool> stop{false};
  std::vector<std::exception_ptr> errors(n);
  auto claim_and_run = [&] {
    for (std::size_t i = next_claim.fetch_add(1, std::memory_order_acq_rel); i < n;
         i = next_claim.fetch_add(1, std::memory_order_acq_rel)) {
      try {
        run_partition_window(i);
      } catch (...) {
        running_ = nullptr;
        Timeline::set_current_lane(0);
        errors[i] = std::current_exception();
      }
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == n) done.notify_all();
    }
  };
  std::vector<std::jthread> helpers;
  for (unsigned t = 1; t < threads; ++t) {
    helpers.emplace_back([&] {
      std::uint64_t seen = 0;
      for (;;) {
        epoch.wait(seen, std::memory_order_acquire);  // the next window (or the end)
        seen = epoch.load(std::memory_order_acquire);
        if (stop.load(std::memory_order_acquire)) return;
        claim_and_run();
      }
    });
  }
  auto finish = [&] {
    stop.store(true, std::memory_order_release);
    epoch.fetch_add(1, std::memory_order_acq_rel);
    epoch.notify_all();
    helpers.clear();  // joins
    timeline_.freeze_tracks(false);
  };
  // One window: publish it, work on it, wait for the partitions others hold.
  auto window = [&] {
    done.store(0, std::memory_order_relaxed);
    next_claim.store(0, std::memory_order_release);  // after window_end_ and done: a claim sees both
    if (threads > 1) {
      epoch.fetch_add(1, std::memory_order_acq_rel);
      epoch.notify_all();
    }
    claim_and_run();
    for (std::size_t d = done.load(std::memory_order_acquire); d < n; d = done.load(std::memory_order_acquire))
      done.wait(d, std::memory_order_acquire);
  };

  timeline_.freeze_tracks(true);
  Tick start = now();
  if (watch) {
    progress_at_check_ = progress();
    events_at_check_ = dispatched();
    events_since_progress_ = 0;
    last_progress_time_ = start;
  }
  Tick next_check = start + watchdog_.interval;
  Tick reached = start;  // the latest time any partition has reached
  window_end_ = start;  // hooks check handed-over times against the last window's end
  try {
    for (;;) {
      exchange();
      Tick next = Tick::max();
      for (const auto& p : parts_) next = std::min(next, p->events.next_time());
      if (next == Tick::max()) break;
      if (next > until) {
        finish();
        end_run_at(reached);
        return StopReason::kTimeLimit;
      }
      if (watch && next >= next_check) {
        if (stalled(next, dispatched())) {
          const std::string what = livelock_message(next);
          end_run_at(std::max(reached, next));
          finish();
          fail(what);
        }
        if (progress_ != nullptr) progress_->on_progress(next, dispatched());
        next_check = next + watchdog_.interval;
      }
      // The window: [next, next + lookahead), clipped after `until` (events at `until` run).
      const Tick end = until == Tick::max() || until - next >= lookahead_ ? next + lookahead_ : until + Tick(1);
      window_end_ = end;
      window();
      for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
      for (const auto& p : parts_) reached = std::max(reached, p->events.now());
    }
  } catch (...) {
    if (!stop.load()) finish();
    rethrow_with_report();
  }
  finish();
  end_run_at(reached);
  if (!in_flight_report().empty()) fail("deadlock: no events left");
  return StopReason::kDrained;
}

}  // namespace t3sim
