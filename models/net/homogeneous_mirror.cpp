#include "models/net/homogeneous_mirror.h"

#include <fmt/format.h>

#include "sim/component.h"
#include "sim/error.h"

namespace t3sim {

void HomogeneousMirror::add_blocks(std::uint64_t base, std::uint64_t block_bytes) {
  T3SIM_CHECK_FOR(owner_, block_bytes > 0, "add_mirror_blocks: empty blocks");
  const std::uint64_t end = base + n_ * block_bytes;
  for (const Blocks& m : blocks_) {
    if (m.base == base && m.block_bytes == block_bytes) return;
    T3SIM_CHECK_FOR(owner_, end <= m.base || m.base + n_ * m.block_bytes <= base,
                fmt::format("mirror block regions overlap at {:#x} and {:#x}", base, m.base));
  }
  blocks_.push_back(Blocks{base, block_bytes});
}

void HomogeneousMirror::apply(MirroredWrite& w, std::uint32_t d) const {
  for (const MirrorTranslator& t : translators_) {
    MirroredWrite rewritten = w;  // a translator that declines leaves w as it was
    if (t(rewritten, d)) {
      w = rewritten;
      return;
    }
  }
  for (const Blocks& m : blocks_) {
    if (w.address < m.base || w.address >= m.base + n_ * m.block_bytes) continue;
    const std::uint64_t block = (w.address - m.base) / m.block_bytes;
    const std::uint64_t offset = (w.address - m.base) % m.block_bytes;
    T3SIM_CHECK_FOR(owner_, offset + w.bytes <= m.block_bytes,
                fmt::format("packet at {:#x} ({} B) straddles mirror blocks of {} B", w.address, w.bytes,
                            m.block_bytes));
    const std::uint64_t seen_block = (block + n_ - d) % n_;
    w.address = m.base + seen_block * m.block_bytes + offset;
    return;
  }
}

}  // namespace t3sim
