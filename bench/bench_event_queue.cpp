// Event core speed: schedule + dispatch of small events over many components, the
// pattern of clocked components and link deliveries. Reports events per second.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include <fmt/format.h>

#include "sim/component.h"
#include "sim/simulator.h"

namespace t3sim {
namespace {

// A component that, on each event, does a little work and reschedules its own
// member event 1-64 ps ahead (a deterministic pseudo-random delay).
class Pinger final : public Component {
 public:
  Pinger(Simulator& sim, int id)
      : Component(sim, fmt::format("c{}", id)),
        state_(static_cast<std::uint64_t>(id) * 0x9e3779b97f4a7c15ULL + 1),
        ev_(event_source(), "ping", [this] { fire(); }) {}
  void start() { sim().schedule(ev_, Tick(state_ % 64)); }
  std::uint64_t fired = 0;

 private:
  void fire() {
    ++fired;
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    sim().schedule(ev_, now() + Tick(1 + (state_ >> 58)));
  }
  std::uint64_t state_;
  CallbackEvent ev_;
};

void BM_MemberEvents(benchmark::State& state) {
  const int components = static_cast<int>(state.range(0));
  Simulator sim(1, WatchdogConfig{Tick::us(10), Tick::zero()});
  std::vector<std::unique_ptr<Pinger>> ps;
  for (int i = 0; i < components; ++i) ps.push_back(std::make_unique<Pinger>(sim, i));
  for (auto& p : ps) p->start();
  std::uint64_t events = 0;
  Tick horizon = sim.now();
  for (auto _ : state) {
    horizon += Tick(1000);
    events += sim.events().run(horizon);
  }
  state.counters["events_per_second"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["pending"] = static_cast<double>(sim.events().pending());
}
BENCHMARK(BM_MemberEvents)->Arg(16)->Arg(1000)->Arg(100000);

// One-shot pooled callbacks (e.g. a completion scheduled per request).
void BM_PooledCallbacks(benchmark::State& state) {
  const int chains = static_cast<int>(state.range(0));
  EventQueue q;
  std::uint64_t x = 1;
  std::function<void()> hop;
  hop = [&] {
    x = x * 6364136223846793005ULL + 1;
    q.schedule_callback(q.now() + Tick(1 + (x >> 58)), hop);
  };
  for (int i = 0; i < chains; ++i) q.schedule_callback(Tick(i % 64), hop);
  std::uint64_t events = 0;
  Tick horizon;
  for (auto _ : state) {
    horizon += Tick(1000);
    events += q.run(horizon);
  }
  state.counters["events_per_second"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PooledCallbacks)->Arg(1000);

}  // namespace
}  // namespace t3sim
