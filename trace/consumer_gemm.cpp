#include "trace/consumer_gemm.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/error.h"
#include "sim/int_math.h"

namespace t3sim {

void validate_consumer_gemm(const ConsumerGemmParams& p) {
  validate_gemm(p.gemm);
  const GemmParams& g = p.gemm;
  if (p.num_gpus < 2) throw UserError("an all-gather + GEMM needs at least 2 GPUs");
  if (p.gpu >= p.num_gpus) throw UserError(fmt::format("GPU {} of {}", p.gpu, p.num_gpus));
  if (g.a_layout != MatrixLayout::kRowMajor)
    throw UserError("the all-gather + GEMM gathers A by whole rows: a_layout must be row-major");
  if (g.m % p.num_gpus != 0)
    throw UserError(fmt::format("each of the {} GPUs holds M / {} rows of A, and M = {} is not a multiple of {}",
                                p.num_gpus, p.num_gpus, g.m, p.num_gpus));
  const std::uint64_t rows = g.m / p.num_gpus;
  if (p.chunk_rows == 0 || rows % p.chunk_rows != 0)
    throw UserError(fmt::format("chunk_rows: {} does not divide a GPU's {} rows of A (M / GPUs) into whole chunks",
                                p.chunk_rows, rows));
  if (p.chunk_rows % g.tile_m != 0)
    throw UserError(fmt::format("chunk_rows: {} is not a multiple of the GEMM's tile_m ({}): a tile waits for "
                                "the one chunk its rows come from (seed 001's M_PER_CHUNK / BLOCK_SIZE_M)",
                                p.chunk_rows, g.tile_m));
  if (p.grid == 0) throw UserError("a persistent kernel needs a grid of at least one WG");
}

std::uint64_t consumer_chunks_per_gpu(const ConsumerGemmParams& p) { return p.gemm.m / p.num_gpus / p.chunk_rows; }

std::uint64_t consumer_chunk_flag(const ConsumerGemmParams& p, std::uint32_t source, std::uint64_t chunk) {
  const std::uint64_t d = (source + p.num_gpus - p.gpu) % p.num_gpus;
  return p.flag_base + d * consumer_chunks_per_gpu(p) + chunk;
}

std::vector<std::uint64_t> consumer_tile_order(const ConsumerGemmParams& p) {
  validate_consumer_gemm(p);
  const GemmParams& g = p.gemm;
  std::vector<std::uint64_t> order = gemm_tile_order(g);
  if (!p.swizzle) return order;
  // The tutorial's swizzle of pid_m: tile row i of the GEMM's order becomes, with
  // b = tile rows per chunk and c = chunks per GPU: block i % b of chunk (i / b / N)
  // of GPU (g + i / b % N) mod N.
  const std::uint64_t tiles_n = gemm_tiles_n(g);
  const std::uint64_t per_chunk = p.chunk_rows / g.tile_m;
  const std::uint64_t rows_per_gpu = g.m / p.num_gpus;
  std::vector<std::uint64_t> row_of(gemm_tiles_m(g));
  for (std::uint64_t i = 0; i < row_of.size(); ++i) {
    const std::uint64_t block = i % per_chunk;
    const std::uint64_t rank = (i / per_chunk % p.num_gpus + p.gpu) % p.num_gpus;
    const std::uint64_t chunk = i / per_chunk / p.num_gpus;
    row_of[i] = (rank * rows_per_gpu + chunk * p.chunk_rows) / g.tile_m + block;
  }
  for (std::uint64_t& t : order) t = row_of[t / tiles_n] * tiles_n + t % tiles_n;
  return order;
}

KernelTrace make_consumer_gemm_trace(const ConsumerGemmParams& p) {
  const std::vector<std::uint64_t> tiles = consumer_tile_order(p);
  const GemmParams& g = p.gemm;
  const std::uint64_t tiles_n = gemm_tiles_n(g);
  const std::uint64_t rows_per_gpu = g.m / p.num_gpus;
  const auto grid = static_cast<std::uint32_t>(std::min<std::uint64_t>(p.grid, tiles.size()));
  if (grid > 65535) throw UserError(fmt::format("a persistent grid of {} WGs (at most 65535 programs)", grid));
  const GemmAddresses base = gemm_addresses(g);
  const std::int64_t dt = g.dtype_bytes;

  KernelTrace t;
  t.name = fmt::format("consumer_gemm_{}x{}x{}_gpu{}", g.m, g.n, g.k, p.gpu);
  t.attrs.emplace_back("generator", "t3sim all-gather consumer GEMM (persistent, seed 001)");
  t.attrs.emplace_back("gemm", describe(g));
  t.attrs.emplace_back("consumer", fmt::format("gpus={} gpu={} grid={} chunk_rows={} swizzle={} flags={}", p.num_gpus,
                                               p.gpu, grid, p.chunk_rows, p.swizzle ? "yes" : "no", p.flag_base));
  t.resources = gemm_resources(g);
  t.programs.resize(grid);
  for (std::uint32_t w = 0; w < grid; ++w) t.programs[w].name = fmt::format("wg_{}", w);
  const std::int64_t c_row_stride = i64(g.c_layout == MatrixLayout::kRowMajor ? g.n : g.m) * dt;
  for (std::uint64_t i = 0; i < tiles.size(); ++i) {
    TraceProgram& prog = t.programs[i % grid];
    const std::uint64_t r = tiles[i] / tiles_n, c = tiles[i] % tiles_n;
    const std::uint64_t r0 = r * g.tile_m, c0 = c * g.tile_n;
    const std::uint64_t tm = std::min<std::uint64_t>(g.tile_m, g.m - r0), tn = std::min<std::uint64_t>(g.tile_n, g.n - c0);
    // Chunks are whole tiles: the tile's rows come from one chunk of one GPU.
    const auto source = static_cast<std::uint32_t>(r0 / rows_per_gpu);
    if (source != p.gpu) {
      const std::uint64_t chunk = r0 % rows_per_gpu / p.chunk_rows;
      prog.ops.push_back(prog.constant_op(TraceOpKind::kWait, {i64(consumer_chunk_flag(p, source, chunk)), 1}));
    }
    const std::uint64_t a = base.a + r0 * g.k * g.dtype_bytes;
    const std::uint64_t b = base.b + (g.b_layout == MatrixLayout::kRowMajor ? c0 : c0 * g.k) * g.dtype_bytes;
    prog.loop_vars.clear();  // every tile's K loop uses variable slot 0
    append_tile_mainloop(prog, g, tm, tn, TileBase{i64(a), std::nullopt}, TileBase{i64(b), std::nullopt}, 0);
    if (g.c_layout == MatrixLayout::kRowMajor) {
      const std::uint64_t addr = base.c + (r0 * g.n + c0) * g.dtype_bytes;
      prog.ops.push_back(prog.constant_op(TraceOpKind::kStore, {i64(addr), i64(tn) * dt, i64(tm), c_row_stride}));
    } else {
      const std::uint64_t addr = base.c + (c0 * g.m + r0) * g.dtype_bytes;
      prog.ops.push_back(prog.constant_op(TraceOpKind::kStore, {i64(addr), i64(tm) * dt, i64(tn), c_row_stride}));
    }
  }
  for (std::uint32_t w = 0; w < grid; ++w) t.add_wg(static_cast<std::uint16_t>(w), {});
  validate_trace(t);
  return t;
}

}  // namespace t3sim
