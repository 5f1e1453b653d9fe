// torus-2d: the GPUs on a grid of R rows and C = N / R columns, numbered row by row
// (GPU g at row g / C, column g % C), each linked to its four neighbours with the
// edges wrapping around: a ring in each dimension, as astra-network-analytical
// composes a [ring, ring] network. A packet crosses the columns first, then the
// rows (dimension order), each dimension the shorter way round, a tie going forward,
// through the GPUs between. Dimension order alone does not keep a torus's wrapped
// rings free of deadlock; what does here is the network's relay, as on the ring: a GPU
// forwards a relayed packet without waiting for its own transmit buffer
// (models/net/README.md, "Deadlock freedom"). The collectives' rings keep the GPUs'
// order, so a step from a row's end to the next row crosses two links.
// `system.net.torus_rows` sets R; unset, R is the largest divisor of N up to
// sqrt(N) (4 GPUs: 2 x 2, 8: 2 x 4, 16: 4 x 4).
//
// Not shift-symmetric unless it is a ring (R = 1): GPU g + 1 is not g's neighbour
// at a row's end, so homogeneous mode, which mirrors GPU 0 by that shift, refuses it.

#include <algorithm>

#include <fmt/format.h>

#include "models/net/i_topology.h"
#include "models/net/net_config.h"

namespace t3sim {

namespace {

std::uint32_t default_rows(std::uint32_t num_gpus) {
  std::uint32_t rows = 1;
  for (std::uint32_t r = 1; r * r <= num_gpus; ++r)
    if (num_gpus % r == 0) rows = r;
  return rows;
}

class Torus2dTopology final : public Topology {
 public:
  Torus2dTopology(std::uint32_t num_gpus, const NetConfig& cfg)
      : Topology(num_gpus),
        asked_rows_(cfg.torus_rows > 0 ? cfg.torus_rows : default_rows(num_gpus)),
        // Rows that do not divide the GPUs are a problem() (refused where the node is
        // read); until then the grid is one row, so no link leaves the GPUs.
        rows_(num_gpus % asked_rows_ == 0 ? asked_rows_ : 1),
        cols_(num_gpus / rows_),
        latency_(cfg.link.latency) {}

  std::uint32_t switch_nodes() const override { return 0; }
  bool direct_links() const override { return false; }
  bool shift_symmetric() const override { return rows_ == 1; }

  std::optional<Problem> problem() const override {
    if (num_gpus() % asked_rows_ != 0)
      return Problem{"torus_rows", fmt::format("{} GPUs do not fill {} rows of a torus (expected a divisor of {})",
                                               num_gpus(), asked_rows_, num_gpus())};
    return std::nullopt;
  }

  // Forward and backward along the row (the columns), then along the column (the
  // rows); a dimension of 2 has one neighbour, of 1 none.
  std::vector<TopologyLink> links_of(std::uint32_t gpu) const override {
    std::vector<TopologyLink> links;
    const std::uint32_t r = gpu / cols_, c = gpu % cols_;
    auto add = [&](std::uint32_t rr, std::uint32_t cc) {
      const std::uint32_t to = rr * cols_ + cc;
      if (to == gpu) return;
      for (const TopologyLink& l : links)
        if (l.to == to) return;
      links.push_back({gpu, to, latency_});
    };
    add(r, (c + 1) % cols_);
    add(r, (c + cols_ - 1) % cols_);
    add((r + 1) % rows_, c);
    add((r + rows_ - 1) % rows_, c);
    return links;
  }

  std::uint32_t next_node(std::uint32_t node, std::uint32_t dst) const override {
    const std::uint32_t r = node / cols_, c = node % cols_;
    const std::uint32_t dr = dst / cols_, dc = dst % cols_;
    if (c != dc) return r * cols_ + step(c, dc, cols_);
    return step(r, dr, rows_) * cols_ + c;
  }

  Tick path_latency(std::uint32_t src, std::uint32_t dst) const override {
    return latency_ * (ring_hops(src % cols_, dst % cols_, cols_) + ring_hops(src / cols_, dst / cols_, rows_));
  }

 private:
  // One step from `from` towards `to` on a ring of `n`: the shorter way, a tie forward.
  static std::uint32_t step(std::uint32_t from, std::uint32_t to, std::uint32_t n) {
    const std::uint32_t forward = (to + n - from) % n;
    return forward <= n - forward ? (from + 1) % n : (from + n - 1) % n;
  }
  static std::uint32_t ring_hops(std::uint32_t from, std::uint32_t to, std::uint32_t n) {
    const std::uint32_t forward = (to + n - from) % n;
    return std::min(forward, n - forward);
  }

  std::uint32_t asked_rows_;
  std::uint32_t rows_;
  std::uint32_t cols_;
  Tick latency_;
};

}  // namespace

T3SIM_REGISTER(topologies, "torus-2d",
               "2-D torus: the GPUs in rows (system.net.torus_rows, else near-square), a ring along each row and "
               "column; dimension-order routes, each dimension the short way",
               [](std::uint32_t num_gpus, const NetConfig& cfg) {
                 return std::make_unique<Torus2dTopology>(num_gpus, cfg);
               })

}  // namespace t3sim
