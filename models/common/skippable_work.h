#pragma once
// The sampling interface of work that runs beside a kernel (models/gpu/stage_sampler.h).

#include <cstdint>
#include <functional>
#include <utility>

namespace t3sim {

// Work beside a sampled kernel that is fast-forwarded with it: a DMA engine's copies
// (ConCCL's collective). Its traffic is on the communication stream; the sampler
// skips the kernel's stages while it runs only if it is steady too (its progress in
// the two windows agrees) and can skip as much of its own work over the same time.
class SkippableWork {
 public:
  virtual ~SkippableWork() = default;
  struct State {
    std::uint64_t progress = 0;   // bytes moved so far
    std::uint64_t remaining = 0;  // bytes of its started work not yet issued
    // It may be fast-forwarded now: nothing waiting to start (a host-launched command in
    // its latency would start at a fixed time) and nothing carrying values.
    bool skippable = true;
  };
  virtual State sampling_state() const = 0;
  // Moves `bytes` of its remaining work past as if done (statistics included);
  // contract: bytes <= remaining.
  virtual void skip_work(std::uint64_t bytes) = 0;

  // `fn` is called whenever the work starts something new (a command begins): a GPU
  // with no kernel in flight then probes it by time (Gpu's work probe), since no
  // stage boundary will.
  void set_activity_listener(std::function<void()> fn) { on_activity_ = std::move(fn); }

 protected:
  void notify_activity() {
    if (on_activity_) on_activity_();
  }

 private:
  std::function<void()> on_activity_;
};

}  // namespace t3sim
