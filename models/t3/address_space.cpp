#include "models/t3/address_space.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/error.h"

namespace t3sim {

OutputRegions::OutputRegions(const KernelTrace& producer)
    : num_wgs_(producer.num_wgs()), wfs_(producer.resources.wfs_per_wg) {
  regions_.assign(std::size_t{num_wgs_} * wfs_, WfRegion{});
  WgExpander x;
  WgOp op;
  for (std::uint32_t wg = 0; wg < num_wgs_; ++wg) {
    x.reset(producer, wg);
    while (x.next(op)) {
      if (op.kind != TraceOpKind::kStore || op.remote()) continue;
      if (op.wf < 0)
        throw UserError(fmt::format("{}: WG {} stores for the whole WG; T3 tracks each WF's output region "
                                    "(T3 §4.2.1)",
                                    producer.name, wg));
      WfRegion& r = regions_[std::size_t{wg} * wfs_ + static_cast<std::uint32_t>(op.wf)];
      if (r.rows != 0)
        throw UserError(fmt::format("{}: WG {} WF {} stores twice; T3 tracks one output region per WF",
                                    producer.name, wg, op.wf));
      r = WfRegion{op.addr(), static_cast<std::uint32_t>(op.row_bytes()), static_cast<std::uint32_t>(op.rows()),
                   op.stride()};
    }
  }
}

const WfRegion* OutputRegions::region(std::uint32_t wg, std::uint32_t wf) const {
  if (wg >= num_wgs_ || wf >= wfs_) return nullptr;
  const WfRegion& r = regions_[std::size_t{wg} * wfs_ + wf];
  return r.rows == 0 ? nullptr : &r;
}

std::string_view to_string(MapKind kind) {
  switch (kind) {
    case MapKind::kLocal: return "local";
    case MapKind::kRemote: return "remote_map";
    case MapKind::kDma: return "dma_map";
    case MapKind::kFinal: return "track_map";
  }
  return "?";
}

AddressSpace::AddressSpace(const OutputRegions& regions, std::uint32_t gpu)
    : regions_(regions), gpu_(gpu), wg_mapping_(regions.num_wgs(), -1) {}

void AddressSpace::add(ChunkMapping m) {
  if (m.wgs.first >= m.wgs.end || m.wgs.end > regions_.num_wgs())
    throw UserError(fmt::format("{} of WGs [{}, {}) on GPU {}: the producer has {} WGs", to_string(m.kind),
                                m.wgs.first, m.wgs.end, gpu_, regions_.num_wgs()));
  const bool to_self = m.peer == gpu_ || std::find(m.peers.begin(), m.peers.end(), gpu_) != m.peers.end();
  if ((m.kind == MapKind::kRemote || m.kind == MapKind::kDma) && to_self)
    throw UserError(fmt::format("{} of WGs [{}, {}) on GPU {} to itself", to_string(m.kind), m.wgs.first,
                                m.wgs.end, gpu_));
  if (m.kind == MapKind::kDma && m.wf_tiles_per_dma != 1)
    throw UserError(fmt::format("dma_map granularity {} WF tiles: only 1 (a DMA per WF tile) is modelled",
                                m.wf_tiles_per_dma));
  if ((m.kind == MapKind::kDma || m.kind == MapKind::kFinal) && m.updates_per_element == 0)
    throw UserError(fmt::format("{}: updates per element must be >= 1", to_string(m.kind)));
  const auto index = static_cast<std::int32_t>(mappings_.size());
  for (std::uint32_t wg = m.wgs.first; wg < m.wgs.end; ++wg) {
    if (wg_mapping_[wg] >= 0)
      throw UserError(fmt::format("{} of WGs [{}, {}) on GPU {} overlaps the {} of WGs [{}, {})",
                                  to_string(m.kind), m.wgs.first, m.wgs.end, gpu_,
                                  to_string(mappings_[static_cast<std::size_t>(wg_mapping_[wg])].kind),
                                  mappings_[static_cast<std::size_t>(wg_mapping_[wg])].wgs.first,
                                  mappings_[static_cast<std::size_t>(wg_mapping_[wg])].wgs.end));
    wg_mapping_[wg] = index;
  }
  mappings_.push_back(m);
}

void AddressSpace::remote_map(WgRange wgs, std::uint32_t peer) {
  add(ChunkMapping{.wgs = wgs, .kind = MapKind::kRemote, .peer = peer});
}

void AddressSpace::dma_map(WgRange wgs, std::uint32_t peer, MemOp op, std::uint32_t updates_per_element,
                           std::uint32_t wf_tiles_per_dma) {
  dma_map(wgs, std::vector<std::uint32_t>{peer}, op, updates_per_element, wf_tiles_per_dma);
}

void AddressSpace::dma_map(WgRange wgs, std::vector<std::uint32_t> peers, MemOp op,
                           std::uint32_t updates_per_element, std::uint32_t wf_tiles_per_dma) {
  if (peers.empty()) throw UserError("dma_map needs at least one destination GPU");
  const std::uint32_t first = peers.front();
  add(ChunkMapping{.wgs = wgs,
                   .kind = MapKind::kDma,
                   .peer = first,
                   .peers = std::move(peers),
                   .op = op,
                   .updates_per_element = updates_per_element,
                   .wf_tiles_per_dma = wf_tiles_per_dma});
}

void AddressSpace::track_map(WgRange wgs, std::uint32_t updates_per_element) {
  add(ChunkMapping{.wgs = wgs, .kind = MapKind::kFinal, .updates_per_element = updates_per_element});
}

const ChunkMapping& AddressSpace::mapping_of(std::uint32_t wg) const {
  if (wg >= wg_mapping_.size() || wg_mapping_[wg] < 0) return local_;
  return mappings_[static_cast<std::size_t>(wg_mapping_[wg])];
}

std::uint64_t AddressSpace::expected_bytes(std::uint32_t wg, std::uint32_t wf) const {
  const ChunkMapping& m = mapping_of(wg);
  if (m.kind != MapKind::kDma && m.kind != MapKind::kFinal) return 0;
  const WfRegion* r = regions_.region(wg, wf);
  return r == nullptr ? 0 : r->bytes() * m.updates_per_element;
}

int AddressSpace::remote_peer(std::uint32_t wg, std::uint64_t /*address*/) const {
  const ChunkMapping& m = mapping_of(wg);
  return m.kind == MapKind::kRemote ? static_cast<int>(m.peer) : -1;
}

WgRange chunk_wgs(std::uint32_t num_wgs, std::uint32_t num_gpus, std::uint32_t chunk) {
  if (num_gpus == 0 || num_wgs % num_gpus != 0)
    throw UserError(fmt::format("T3 chunks the producer's {} WGs (output tiles) into {} equal runs: {} is not a "
                                "multiple of {}",
                                num_wgs, num_gpus, num_wgs, num_gpus));
  const std::uint32_t per = num_wgs / num_gpus;
  return WgRange{chunk * per, (chunk + 1) * per};
}

std::uint32_t ring_first_wg(std::uint32_t num_wgs, std::uint32_t num_gpus, std::uint32_t gpu) {
  return chunk_wgs(num_wgs, num_gpus, (gpu + 1) % num_gpus).first;
}

void configure_ring_reduce_scatter(AddressSpace& as, std::uint32_t n, bool with_producer) {
  const std::uint32_t g = as.gpu();
  const std::uint32_t w = as.regions().num_wgs();
  const std::uint32_t prev = (g + n - 1) % n;  // T3 Figure 7: GPU 0 sends to GPU 3
  const std::uint32_t expected = with_producer ? 2 : 1;  // (local update +) the incoming one
  for (std::uint32_t k = 0; k < n; ++k) {
    const WgRange chunk = chunk_wgs(w, n, (g + k + 1) % n);
    if (k == n - 1) {
      as.track_map(chunk, expected);  // chunk g: this GPU's reduced result
    } else if (k == 0 && with_producer) {
      as.remote_map(chunk, prev);
    } else {
      as.dma_map(chunk, prev, MemOp::kUpdate, expected);
    }
  }
}

void configure_ring_all_gather(AddressSpace& as, std::uint32_t n) {
  const std::uint32_t g = as.gpu();
  const std::uint32_t w = as.regions().num_wgs();
  const std::uint32_t prev = (g + n - 1) % n;
  for (std::uint32_t c = 0; c < n; ++c) {
    if (c == prev) {
      as.track_map(chunk_wgs(w, n, c), 1);  // arrives last: nowhere to forward
    } else {
      as.dma_map(chunk_wgs(w, n, c), prev, MemOp::kWrite, 1);  // own (sent at start) or forwarded
    }
  }
}

void configure_direct_all_gather(AddressSpace& as, std::uint32_t n) {
  const std::uint32_t g = as.gpu();
  const std::uint32_t w = as.regions().num_wgs();
  std::vector<std::uint32_t> peers;
  for (std::uint32_t d = 1; d < n; ++d) peers.push_back((g + d) % n);
  for (std::uint32_t c = 0; c < n; ++c) {
    if (c == g) {
      as.dma_map(chunk_wgs(w, n, c), peers, MemOp::kWrite, 1);
    } else {
      as.track_map(chunk_wgs(w, n, c), 1);
    }
  }
}

void configure_direct_reduce_scatter(AddressSpace& as, std::uint32_t n) {
  const std::uint32_t g = as.gpu();
  const std::uint32_t w = as.regions().num_wgs();
  for (std::uint32_t c = 0; c < n; ++c) {
    if (c == g) {
      as.track_map(chunk_wgs(w, n, c), n);
    } else {
      as.remote_map(chunk_wgs(w, n, c), c);
    }
  }
}

}  // namespace t3sim
