#include "trace/copy_kernel.h"

#include <fmt/format.h>

namespace t3sim {

KernelTrace make_copy_trace(const CopyKernelParams& p) {
  if (p.ctas == 0 || p.threads == 0 || p.wave_size == 0 || p.threads % p.wave_size != 0 || p.unroll == 0)
    throw UserError(fmt::format("copy kernel: {} CTAs of {} threads (warps of {}) cannot be built", p.ctas,
                                p.threads, p.wave_size));
  if (p.bytes == 0 || p.bytes % p.element_bytes != 0)
    throw UserError(fmt::format("copy kernel: {} B is not a positive multiple of its {} B elements", p.bytes,
                                p.element_bytes));
  const std::uint64_t block = std::uint64_t{p.threads} * p.element_bytes;  // one CTA's elements, one each
  const std::uint64_t span = block * p.ctas;                               // the grid's, one each
  const std::uint64_t per_iteration = span * p.unroll;
  const std::uint64_t iterations = p.bytes / per_iteration;
  // The elements after the unrolled loop: whole blocks, one per CTA in turn, then a
  // partial block (the threads past the end do nothing).
  const std::uint64_t rest = p.bytes - iterations * per_iteration;
  const std::uint64_t rest_blocks = rest / block, rest_tail = rest % block;
  const std::string peer = p.peer ? fmt::format(" peer={}", *p.peer) : std::string();
  const std::uint64_t loop_bytes = iterations * per_iteration;
  std::string text = fmt::format(
      "t3trace 1\nkernel copy_{}x{}\nattr bytes {}\nattr ctas {}\nattr threads {}\n"
      "resources wfs={} threads={} regs_per_thread={}\nparams src dst extra tail tail_bytes\nprogram copy\n",
      p.ctas, p.threads, p.bytes, p.ctas, p.threads, p.threads / p.wave_size, p.threads, p.regs_per_thread);
  // src, dst: CTA b's first block. The unrolled loop, then `extra` whole blocks past it
  // (CTA b's are loop_bytes + (b + j x ctas) x block from the start), then, for one CTA,
  // a `tail` (0 or 1) partial block of tail_bytes at src + tail_bytes' place.
  if (iterations > 0)
    text += fmt::format(
        "  loop i {}\n    load src+{}*i {} rows={} stride={}\n    compute 0\n"
        "    store dst+{}*i {} rows={} stride={}{}\n  end\n",
        iterations, per_iteration, block, p.unroll, span, per_iteration, block, p.unroll, span, peer);
  text += fmt::format("  loop e extra\n    load src+{}+{}*e {}\n    compute 0\n    store dst+{}+{}*e {}{}\n  end\n",
                      loop_bytes, span, block, loop_bytes, span, block, peer);
  const std::uint64_t tail_offset = loop_bytes + rest_blocks * block;  // from the start of the range
  const std::uint32_t tail_cta = static_cast<std::uint32_t>(rest_blocks % p.ctas);
  text += fmt::format(
      "  loop t tail\n    load src+{} tail_bytes\n    compute 0\n    store dst+{} tail_bytes{}\n  end\nend\n",
      tail_offset - std::uint64_t{tail_cta} * block, tail_offset - std::uint64_t{tail_cta} * block, peer);
  text += fmt::format("wgs {}\n", p.ctas);
  for (std::uint32_t b = 0; b < p.ctas; ++b) {
    const std::uint64_t extra = rest_blocks / p.ctas + (b < rest_blocks % p.ctas ? 1 : 0);
    const bool tail = rest_tail > 0 && b == tail_cta;
    text += fmt::format("wg {} copy {} {} {} {} {}\n", b, p.src + std::uint64_t{b} * block,
                        p.dst + std::uint64_t{b} * block, extra, tail ? 1 : 0, tail ? rest_tail : 16);
  }
  return parse_trace(text, fmt::format("<copy kernel {}x{}>", p.ctas, p.threads));
}

}  // namespace t3sim
