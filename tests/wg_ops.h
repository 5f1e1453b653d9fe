#pragma once
// Test helper: a kernel trace's ops, expanded per WG in program order.
#include <vector>

#include "trace/trace.h"

namespace t3sim {

inline std::vector<std::vector<WgOp>> ops_of(const KernelTrace& t) {
  std::vector<std::vector<WgOp>> out(t.num_wgs());
  for (std::uint32_t wg = 0; wg < t.num_wgs(); ++wg) {
    WgExpander x(t, wg);
    for (WgOp op; x.next(op);) out[wg].push_back(op);
  }
  return out;
}

}  // namespace t3sim
