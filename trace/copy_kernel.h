#pragma once
// A plain copy kernel, as NCCL's and every "SM copy" microbenchmark's grid-stride loop
// is written (../shared/calibration/h200/interfere.py, `copy16`): `ctas` CTAs of
// `threads` threads; thread t of CTA b copies the 16 B elements b x threads + t + i x
// stride, stride = ctas x threads, four at a time (four int4 loads, then four int4
// stores). So one loop iteration of a CTA moves four blocks of threads x 16 B (8 KiB
// for 512 threads), `ctas` blocks apart; the elements the unrolled loop leaves over
// are copied one block per CTA at a time, the lowest CTAs taking one more.
//
// In the trace: per iteration, a load of the four blocks (rows=4, stride = the grid's
// block span), a compute of 0 cycles (the copy's registers: the store waits for the
// loads, as the thread's stores wait for its loads' data), and the same store to the
// destination, local or a peer GPU's (a remote store over the network, `peer=`).

#include <cstdint>
#include <optional>
#include <string>

#include "trace/trace.h"

namespace t3sim {

struct CopyKernelParams {
  std::uint64_t src = 0;    // local source address
  std::uint64_t dst = 0;    // destination address (on `peer` if set)
  std::uint64_t bytes = 0;  // a multiple of 16 (int4 elements)
  std::optional<std::uint32_t> peer;  // remote stores to this GPU; unset: local
  std::uint32_t ctas = 24;
  std::uint32_t threads = 512;
  std::uint32_t wave_size = 32;
  std::uint32_t regs_per_thread = 32;
  std::uint32_t unroll = 4;   // elements per thread per iteration
  std::uint32_t element_bytes = 16;
};

// Throws UserError for a size or shape it cannot express.
KernelTrace make_copy_trace(const CopyKernelParams& p);

}  // namespace t3sim
