#pragma once
// What every collective on a node offers, whichever engine moves its bytes (SPEC
// "Collectives"): CU-based kernels and host-launched DMA commands (NodeCollective),
// or T3's tracker-triggered DMA with near-memory updates (models/t3/T3Collective).
// A configuration or an experiment drives any of them the same way: preload the
// inputs, start it on each GPU (in that GPU's partition), learn when each GPU is
// done, and check the values afterwards.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "collective/collective.h"
#include "sim/time.h"

namespace t3sim {

class Collective {
 public:
  virtual ~Collective() = default;

  // Writes each simulated GPU's input pattern into its memory (functional runs only).
  virtual void preload() = 0;
  // Starts GPU g's part now; on_done(g) once GPU g has finished its part.
  virtual void start(std::uint32_t g, std::function<void(std::uint32_t)> on_done = {}) = 0;
  virtual bool done(std::uint32_t g) const = 0;
  virtual Tick finished(std::uint32_t g) const = 0;
  // Compares the result with its expectation: the words checked; the first mismatch
  // in first_error (left empty when none).
  virtual std::uint64_t verify(std::string& first_error) const = 0;

  // What it is, in the one vocabulary of collective/collective.h: its operation, its
  // algorithm's name (a registered kind's, "ring-rs"; T3's route, "ring" or "direct")
  // and its engine.
  virtual CollectiveOp op() const = 0;
  virtual std::string_view algorithm() const = 0;
  virtual CollectiveEngine engine() const = 0;
};

}  // namespace t3sim
