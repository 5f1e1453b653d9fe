#include "models/t3/t3_collective.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/common/payload.h"
#include "sim/error.h"
#include "sim/simulator.h"

namespace t3sim {


// One GPU's side: its address space, the tracker program and its DMA table.
class T3Collective::GpuState final : public TrackerProgram {
 public:
  GpuState(T3Collective& owner, std::uint32_t g) : owner_(owner), g_(g), as_(*owner.regions_, g) {}

  std::uint64_t expected_bytes(std::uint32_t wg, std::uint8_t wf, std::uint64_t /*address*/) const override {
    return as_.expected_bytes(wg, wf);
  }

  void on_region_ready(std::uint32_t wg, std::uint8_t wf) override {
    const ChunkMapping& m = as_.mapping_of(wg);
    if (m.kind == MapKind::kDma) {
      trigger(wg, wf);
    } else {
      T3SIM_CHECK(m.kind == MapKind::kFinal, "tracker fired for an untracked region");
      T3SIM_CHECK(final_left_ > 0, "more final regions completed than exist");
      --final_left_;
      check_done();
    }
  }

  // Pre-queue one DMA command per dma_map'ped WF region and destination, round-robin
  // over engines.
  void program_dma() {
    Node& node = owner_.node_;
    const OutputRegions& regions = *owner_.regions_;
    dma_of_.assign(std::size_t{regions.num_wgs()} * regions.wfs_per_wg(), kNoDma);
    std::uint32_t engine = 0;
    for (const ChunkMapping& m : as_.mappings()) {
      for (std::uint32_t wg = m.wgs.first; wg < m.wgs.end; ++wg) {
        for (std::uint32_t wf = 0; wf < regions.wfs_per_wg(); ++wf) {
          const WfRegion* r = regions.region(wg, wf);
          if (r == nullptr) continue;
          if (m.kind == MapKind::kFinal) ++final_left_;
          if (m.kind != MapKind::kDma) continue;
          dma_of_[std::size_t{wg} * regions.wfs_per_wg() + wf] = commands_.size();
          for (std::uint32_t peer : m.peers) {
            DmaCommand cmd;
            cmd.src = r->start;
            cmd.dst = r->start;  // the same output address on the peer (T3 Figure 11)
            cmd.bytes = r->row_bytes;
            cmd.rows = r->rows;
            cmd.row_stride = r->stride;
            cmd.op = m.op;
            cmd.destination = &node.dma_destination(g_, peer);
            cmd.value_granule = owner_.p_.values ? owner_.granule_ : 0;
            // The destination's tracker counts it against the same WF (T3 §4.2.2).
            cmd.track = TrackerTag{wg, static_cast<std::uint8_t>(wf)};
            cmd.on_done = [this] {
              --dma_left_;
              check_done();
            };
            const std::uint32_t id = node.dma(g_, engine).prequeue(std::move(cmd));
            commands_.push_back((std::uint64_t{engine} << 32) | id);
            engine = (engine + 1) % node.dma_engines();
            ++dma_left_;
          }
        }
      }
    }
  }

  // The region's DMA entries (one per destination) are ready.
  void trigger(std::uint32_t wg, std::uint32_t wf) {
    const std::uint64_t first = dma_of_[std::size_t{wg} * owner_.regions_->wfs_per_wg() + wf];
    T3SIM_CHECK(first != kNoDma, fmt::format("no DMA entry for WG {} WF {}", wg, wf));
    const std::size_t count = as_.mapping_of(wg).peers.size();
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint64_t e = commands_[first + i];
      owner_.node_.dma(g_, static_cast<std::uint32_t>(e >> 32)).trigger(static_cast<std::uint32_t>(e));
    }
  }

  void start(std::function<void(std::uint32_t)> on_done) {
    on_done_ = std::move(on_done);
    started_ = true;
    owner_.node_.gpu(g_).memory().tracker().program(this);
    if (!owner_.p_.with_producer) {
      // Stand-alone RS+NMC: the first chunk's data are ready; send them now (the
      // all-gather: the GPU's own chunk).
      const std::uint32_t n = owner_.node_.num_gpus();
      const std::uint32_t chunk = owner_.p_.op == CollectiveOp::kAllGather ? g_ : (g_ + 1) % n;
      const WgRange first = chunk_wgs(owner_.regions_->num_wgs(), n, chunk);
      for (std::uint32_t wg = first.first; wg < first.end; ++wg)
        for (std::uint32_t wf = 0; wf < owner_.regions_->wfs_per_wg(); ++wf)
          if (owner_.regions_->region(wg, wf) != nullptr) trigger(wg, wf);
    }
    check_done();
  }

  void check_done() {
    if (!started_ || done_ || final_left_ > 0 || dma_left_ > 0) return;
    done_ = true;
    finished_ = owner_.node_.gpu(g_).now();
    // Everything this GPU tracks has arrived: the driver unmaps (later writes to the
    // output, e.g. the all-gather's, are not the tracker's business).
    owner_.node_.gpu(g_).memory().tracker().program(nullptr);
    if (on_done_) on_done_(g_);
  }

  // For T3SIM_CHECK.
  Tick now() const { return owner_.node_.gpu(g_).now(); }
  std::string name() const { return fmt::format("gpu{}.t3", g_); }

  static constexpr std::uint64_t kNoDma = ~std::uint64_t{0};
  T3Collective& owner_;
  std::uint32_t g_;
  AddressSpace as_;
  std::vector<std::uint64_t> dma_of_;   // per (wg, wf): its first entry in commands_
  std::vector<std::uint64_t> commands_;  // engine << 32 | command id; a region's are consecutive
  std::uint64_t final_left_ = 0, dma_left_ = 0;
  bool started_ = false, done_ = false;
  Tick finished_;
  std::function<void(std::uint32_t)> on_done_;
};

T3Collective::T3Collective(Node& node, const KernelTrace& producer, const T3CollectiveParams& p)
    : node_(node), p_(p), regions_(std::make_unique<OutputRegions>(producer)) {
  const std::uint32_t n = node.num_gpus();
  granule_ = node.config().gpu.memory.hbm.value_granule;
  chunk_wgs(regions_->num_wgs(), n, 0);  // UserError unless W is a multiple of N
  for (std::uint32_t wg = 0; wg < regions_->num_wgs(); ++wg) {
    for (std::uint32_t wf = 0; wf < regions_->wfs_per_wg(); ++wf) {
      const WfRegion* r = regions_->region(wg, wf);
      if (r == nullptr) continue;
      out_lo_ = std::min(out_lo_, r->start);
      out_hi_ = std::max(out_hi_, r->start + (r->rows - 1) * r->stride + r->row_bytes);
      if (p.values && (r->start % granule_ != 0 || r->row_bytes % granule_ != 0 || r->stride % granule_ != 0))
        throw UserError(fmt::format("functional values need the output regions aligned to the {} B value "
                                    "granule (WG {} WF {} at {:#x}, rows of {} B)",
                                    granule_, wg, wf, r->start, r->row_bytes));
    }
  }
  const bool all_gather = p.op == CollectiveOp::kAllGather;
  if (!all_gather && p.algorithm == T3Route::kDirect && !p.with_producer)
    throw UserError("the stand-alone RS with NMC is modelled for the ring algorithm only");
  if (all_gather && p.with_producer)
    throw UserError("the T3 all-gather runs on data in memory (each GPU's own chunk): with_producer must be false");

  if (node.config().mode == NetMode::kHomogeneous) {
    // Mirroring moves tiles by whole chunks: every chunk must have the same tile shapes.
    for (std::uint32_t wg = 0; wg < regions_->num_wgs(); ++wg)
      for (std::uint32_t wf = 0; wf < regions_->wfs_per_wg(); ++wf) {
        std::uint32_t w2 = wg;
        const WfRegion* r = regions_->region(wg, wf);
        std::uint64_t a = r != nullptr ? r->start : 0;
        if (r != nullptr && !shift(w2, static_cast<std::uint8_t>(wf), a, 1))
          throw UserError(fmt::format("homogeneous mode mirrors tiles chunk by chunk, but WG {}'s output differs "
                                      "in shape from the WG one chunk later; use --mode full",
                                      wg));
      }
    node.network().add_mirror_translator([this, n](Network::MirroredWrite& w, std::uint32_t d) {
      if (!w.track.tracked() || w.address < out_lo_ || w.address >= out_hi_) return false;
      std::uint32_t wg = w.track.wg;
      std::uint64_t a = w.address;
      if (!shift(wg, w.track.wf, a, n - d)) return false;
      w.track.wg = wg;
      w.address = a;
      return true;
    });
  }

  for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) {
    auto s = std::make_unique<GpuState>(*this, g);
    const bool ring = p.algorithm == T3Route::kRing;
    if (all_gather) {
      ring ? configure_ring_all_gather(s->as_, n) : configure_direct_all_gather(s->as_, n);
    } else if (ring) {
      configure_ring_reduce_scatter(s->as_, n, p.with_producer);
    } else {
      configure_direct_reduce_scatter(s->as_, n);
    }
    if (p.values) s->as_.set_store_values([this, g](std::uint64_t address) { return value(g, address); });
    gpus_.push_back(std::move(s));
  }
  for (auto& s : gpus_) s->program_dma();
}

T3Collective::~T3Collective() = default;

const StoreRouting* T3Collective::routing(std::uint32_t g) const { return &gpus_[g]->as_; }
// Ring and direct alike: GPU g starts with chunk g + 1 (its own chunk last).
std::uint32_t T3Collective::first_wg(std::uint32_t g) const {
  return ring_first_wg(regions_->num_wgs(), node_.num_gpus(), g);
}
bool T3Collective::done(std::uint32_t g) const { return gpus_[g]->done_; }
Tick T3Collective::finished(std::uint32_t g) const { return gpus_[g]->finished_; }
std::uint64_t T3Collective::dma_commands(std::uint32_t g) const { return gpus_[g]->commands_.size(); }

void T3Collective::start(std::uint32_t g, std::function<void(std::uint32_t)> on_done) {
  gpus_[g]->start(std::move(on_done));
}

void T3Collective::finish() {
  for (std::uint32_t g = 0; g < gpus_.size(); ++g)
    if (!gpus_[g]->done_) node_.gpu(g).memory().tracker().program(nullptr);
}

std::uint64_t T3Collective::value(std::uint32_t gpu, std::uint64_t address) const {
  return InputPattern(p_.seed, gpu).value((address - out_lo_) / granule_);
}

bool T3Collective::shift(std::uint32_t& wg, std::uint8_t wf, std::uint64_t& address,
                               std::uint32_t chunks) const {
  const std::uint32_t w = regions_->num_wgs();
  const std::uint32_t per = w / node_.num_gpus();
  const WfRegion* r = regions_->region(wg, wf);
  if (r == nullptr) return false;
  const std::uint32_t to = static_cast<std::uint32_t>((wg + std::uint64_t{chunks % node_.num_gpus()} * per) % w);
  const WfRegion* s = regions_->region(to, wf);
  if (s == nullptr || s->rows != r->rows || s->row_bytes != r->row_bytes || s->stride != r->stride) return false;
  address = s->start + (address - r->start);
  wg = to;
  return true;
}

void T3Collective::preload() {
  if (!p_.values || p_.gathers != nullptr) return;
  const bool all_gather = p_.op == CollectiveOp::kAllGather;
  for (std::uint32_t g = 0; g < gpus_.size(); ++g) {
    const WgRange own = chunk_wgs(regions_->num_wgs(), node_.num_gpus(), g);
    for (std::uint32_t wg = 0; wg < regions_->num_wgs(); ++wg) {
      // The data before the collective: the RS's inputs (or the zeroed output the
      // producer updates); the all-gather's own chunk, stale zeros elsewhere.
      const bool pattern = all_gather ? (wg >= own.first && wg < own.end) : !p_.with_producer;
      for (std::uint32_t wf = 0; wf < regions_->wfs_per_wg(); ++wf) {
        const WfRegion* r = regions_->region(wg, wf);
        if (r == nullptr) continue;
        for (std::uint32_t row = 0; row < r->rows; ++row) {
          const std::uint64_t a = r->start + row * r->stride;
          Payload data;
          for (std::uint64_t b = 0; b < r->row_bytes; b += granule_)
            data.words.push_back(pattern ? value(g, a + b) : 0);
          node_.gpu(g).memory().preload(a, data);
        }
      }
    }
  }
}

std::uint64_t T3Collective::expected(std::uint32_t wg, std::uint8_t wf, std::uint64_t address) const {
  const std::uint32_t n = node_.num_gpus();
  const bool full = node_.config().mode == NetMode::kFull;
  if (p_.gathers != nullptr) return p_.gathers->expected(wg, wf, address);  // a sum, any chunk
  if (p_.op == CollectiveOp::kAllGather) {
    const std::uint32_t owner = wg / (regions_->num_wgs() / n);
    if (full) return value(owner, address);
    // Homogeneous: every GPU is GPU 0 rotated, so chunk c here holds what GPU 0's own
    // chunk 0 holds at the same offset.
    std::uint32_t w2 = wg;
    std::uint64_t a2 = address;
    shift(w2, wf, a2, (n - owner) % n);
    return value(0, a2);
  }
  std::uint64_t want = 0;
  for (std::uint32_t h = 0; h < n; ++h) {
    if (full) {
      want += value(h, address);
    } else {
      std::uint32_t w2 = wg;
      std::uint64_t a2 = address;
      shift(w2, wf, a2, h);
      want += value(0, a2);
    }
  }
  return want;
}

// The RS leaves GPU g its chunk g; the all-gather, every chunk.
std::uint64_t T3Collective::verify(std::string& first_error) const {
  return check(p_.op == CollectiveOp::kAllGather, first_error);
}

std::uint64_t T3Collective::verify_gathered(std::string& first_error) const { return check(true, first_error); }

std::uint64_t T3Collective::check(bool every_chunk, std::string& first_error) const {
  if (!p_.values) return 0;
  std::uint64_t checked = 0;
  for (std::uint32_t g = 0; g < gpus_.size(); ++g) {
    const WgRange wgs =
        every_chunk ? WgRange{0, regions_->num_wgs()} : chunk_wgs(regions_->num_wgs(), node_.num_gpus(), g);
    for (std::uint32_t wg = wgs.first; wg < wgs.end; ++wg) {
      for (std::uint32_t wf = 0; wf < regions_->wfs_per_wg(); ++wf) {
        const WfRegion* r = regions_->region(wg, wf);
        if (r == nullptr) continue;
        for (std::uint32_t row = 0; row < r->rows; ++row) {
          const std::uint64_t a = r->start + row * r->stride;
          const Payload got = node_.gpu(g).memory().peek(a, r->row_bytes);
          for (std::uint64_t i = 0; i < got.words.size(); ++i) {
            const std::uint64_t addr = a + i * granule_;
            const std::uint64_t want = expected(wg, static_cast<std::uint8_t>(wf), addr);
            ++checked;
            if (got.words[i] != want && first_error.empty())
              first_error = fmt::format("gpu{} {:#x} (WG {} WF {}): got {:#x}, expected {:#x}", g, addr, wg, wf,
                                        got.words[i], want);
          }
        }
      }
    }
  }
  return checked;
}

bool T3Collective::chunks_are_flat(std::uint64_t base, std::uint64_t array_bytes) const {
  const std::uint32_t n = node_.num_gpus();
  if (array_bytes % n != 0) return false;
  const std::uint64_t per = array_bytes / n;
  for (std::uint32_t c = 0; c < n; ++c) {
    const WgRange wgs = chunk_wgs(regions_->num_wgs(), n, c);
    std::uint64_t lo = ~std::uint64_t{0}, hi = 0, bytes = 0;
    for (std::uint32_t wg = wgs.first; wg < wgs.end; ++wg) {
      for (std::uint32_t wf = 0; wf < regions_->wfs_per_wg(); ++wf) {
        const WfRegion* r = regions_->region(wg, wf);
        if (r == nullptr) continue;
        lo = std::min(lo, r->start);
        hi = std::max(hi, r->start + (r->rows - 1) * r->stride + r->row_bytes);
        bytes += r->bytes();
      }
    }
    // Disjoint regions inside [lo, hi) that add up to its size tile it exactly.
    if (lo != base + c * per || hi != base + (c + 1) * per || bytes != per) return false;
  }
  return true;
}

}  // namespace t3sim
