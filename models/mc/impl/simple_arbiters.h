#pragma once
#include "models/mc/i_arbiter.h"

namespace t3sim {

class FrFcfsArbiter final : public Arbiter {
 public:
  explicit FrFcfsArbiter(Component& parent) : Arbiter(parent, "arbiter") {}
  std::optional<Stream> choose(const ArbiterView& v) const override;
  bool observes() const override { return false; }
  void on_admit(Stream, const ArbiterView&) override {}
};

class RoundRobinArbiter final : public Arbiter {
 public:
  explicit RoundRobinArbiter(Component& parent) : Arbiter(parent, "arbiter") {}
  std::optional<Stream> choose(const ArbiterView& v) const override;
  bool observes() const override { return false; }
  void on_admit(Stream s, const ArbiterView& v) override;

 private:
  Stream last_ = Stream::kCommunication;  // so compute goes first
};

class ComputeFirstArbiter final : public Arbiter {
 public:
  explicit ComputeFirstArbiter(Component& parent) : Arbiter(parent, "arbiter") {}
  std::optional<Stream> choose(const ArbiterView& v) const override;
  bool observes() const override { return false; }
  void on_admit(Stream, const ArbiterView&) override {}
};

}  // namespace t3sim
