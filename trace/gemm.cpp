#include "trace/gemm.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <array>

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/int_math.h"
#include "sim/time.h"

namespace t3sim {

std::string_view to_string(TileOrder order) {
  switch (order) {
    case TileOrder::kRowMajor: return "row-major";
    case TileOrder::kColumnMajor: return "column-major";
    case TileOrder::kGrouped: return "grouped";
    case TileOrder::kHeuristic: return "heuristic";
  }
  return "?";
}

std::string_view to_string(MatrixLayout layout) {
  return layout == MatrixLayout::kRowMajor ? "row-major" : "column-major";
}

TileOrder parse_tile_order(std::string_view text) {
  if (text == "row-major" || text == "row") return TileOrder::kRowMajor;
  if (text == "column-major" || text == "col-major" || text == "column" || text == "col") return TileOrder::kColumnMajor;
  if (text == "grouped") return TileOrder::kGrouped;
  if (text == "heuristic") return TileOrder::kHeuristic;
  throw UserError(fmt::format("unknown tile order '{}' (expected row-major, column-major, grouped or heuristic)", text));
}

MatrixLayout parse_matrix_layout(std::string_view text) {
  if (text == "row-major" || text == "row") return MatrixLayout::kRowMajor;
  if (text == "column-major" || text == "col-major" || text == "column" || text == "col") {
    return MatrixLayout::kColumnMajor;
  }
  throw UserError(fmt::format("unknown matrix layout '{}' (expected row-major or column-major)", text));
}

namespace {


WfGrid wf_grid(const GemmParams& p) {
  if (p.wf_grid_m != 0 || p.wf_grid_n != 0) return {p.wf_grid_m, p.wf_grid_n};
  if (p.c_layout == MatrixLayout::kRowMajor) return {p.wfs_per_wg, 1};
  return {1, p.wfs_per_wg};
}

[[noreturn]] void bad(const std::string& message) { throw UserError("gemm: " + message); }

}  // namespace

WfGrid mma_grid(const GemmParams& p, std::uint64_t tm, std::uint64_t tn) {
  const std::uint32_t units = p.tma ? std::max<std::uint32_t>(1, p.wfs_per_wg / 4) : p.wfs_per_wg;
  WfGrid best{units, 1};
  std::uint64_t best_cost = UINT64_MAX;
  for (std::uint32_t gm = 1; gm <= units; ++gm) {
    if (units % gm != 0) continue;
    const std::uint32_t gn = units / gm;
    if (gm > tm || gn > tn) continue;
    const std::uint64_t cost = tm * gn + tn * gm;
    if (cost < best_cost) best = {gm, gn}, best_cost = cost;
  }
  return best;
}

std::uint64_t lds_read_bytes(const GemmParams& p, std::uint64_t tm, std::uint64_t tn, std::uint64_t kc) {
  const WfGrid g = mma_grid(p, tm, tn);
  return kc * p.dtype_bytes * (tm * g.n + tn * g.m);
}

void validate_gemm(const GemmParams& p) {
  if (p.m == 0 || p.n == 0 || p.k == 0) bad(fmt::format("m, n, k must be at least 1 (got {}x{}x{})", p.m, p.n, p.k));
  if (p.dtype_bytes == 0 || p.dtype_bytes > 16) bad(fmt::format("dtype bytes {} out of range [1, 16]", p.dtype_bytes));
  if (p.tile_m == 0 || p.tile_n == 0 || p.k_step == 0) bad("tile sizes and k_step must be at least 1");
  if (p.stages == 0 || p.stages > kTraceMaxStages) bad(fmt::format("stages {} out of range [1, {}]", p.stages, kTraceMaxStages));
  if (p.wfs_per_wg == 0 || p.wfs_per_wg > 1024) bad(fmt::format("wfs per WG {} out of range [1, 1024]", p.wfs_per_wg));
  if (p.flops_per_cycle == 0) bad("flops_per_cycle must be at least 1");
  if (p.wave_size == 0) bad("wave_size must be at least 1");
  if (p.order == TileOrder::kGrouped && p.group_size == 0) bad("group_size must be at least 1");
  if (p.cluster_m == 0 || p.cluster_m > 16) bad(fmt::format("cluster_m {} out of range [1, 16]", p.cluster_m));
  const WfGrid g = wf_grid(p);
  if (g.m == 0 || g.n == 0 || static_cast<std::uint64_t>(g.m) * g.n != p.wfs_per_wg) {
    bad(fmt::format("wf grid {}x{} does not make {} WFs", g.m, g.n, p.wfs_per_wg));
  }
  if (g.m > p.tile_m || g.n > p.tile_n) {
    bad(fmt::format("wf grid {}x{} is finer than the {}x{} tile", g.m, g.n, p.tile_m, p.tile_n));
  }
  // Every address and size must fit comfortably in 63 bits.
  const uint128 limit = uint128(1) << 60;
  const uint128 a = uint128(p.m) * p.k * p.dtype_bytes;
  const uint128 b = uint128(p.k) * p.n * p.dtype_bytes;
  const uint128 c = uint128(p.m) * p.n * p.dtype_bytes;
  if (a > limit || b > limit || c > limit) bad("matrices larger than 2^60 bytes");
  const uint128 tiles = uint128(ceil_div(p.m, p.tile_m)) * ceil_div(p.n, p.tile_n);
  if (tiles > kTraceMaxWgs) {
    bad(fmt::format("{} x {} in {} x {} tiles is {} WGs, more than a kernel may have ({}; each WG costs host memory)",
                    p.m, p.n, p.tile_m, p.tile_n, static_cast<std::uint64_t>(tiles), kTraceMaxWgs));
  }
  for (const auto& base : {p.a_base, p.b_base, p.c_base}) {
    if (base && *base > (1ull << 61)) bad("base address above 2^61");
  }
  if (p.store_peer && *p.store_peer > 1u << 20) bad("store peer out of range");
}

GemmAddresses gemm_addresses(const GemmParams& p) {
  GemmAddresses r;
  r.a = p.a_base.value_or(0);
  r.b = p.b_base.value_or(align_up(r.a + p.m * p.k * p.dtype_bytes, kBufferAlign));
  r.c = p.c_base.value_or(align_up(r.b + p.k * p.n * p.dtype_bytes, kBufferAlign));
  return r;
}

std::uint64_t gemm_tiles_m(const GemmParams& p) { return ceil_div(p.m, p.tile_m); }
std::uint64_t gemm_tiles_n(const GemmParams& p) { return ceil_div(p.n, p.tile_n); }

std::vector<std::uint64_t> gemm_tile_order(const GemmParams& p) {
  validate_gemm(p);
  const std::uint64_t tm = gemm_tiles_m(p);
  const std::uint64_t tn = gemm_tiles_n(p);
  std::vector<std::uint64_t> order;
  order.reserve(tm * tn);
  TileOrder how = p.order;
  if (how == TileOrder::kHeuristic) how = tn > tm ? TileOrder::kColumnMajor : TileOrder::kRowMajor;
  switch (how) {
    case TileOrder::kRowMajor:
      for (std::uint64_t r = 0; r < tm; ++r) {
        for (std::uint64_t c = 0; c < tn; ++c) order.push_back(r * tn + c);
      }
      break;
    case TileOrder::kColumnMajor:
      for (std::uint64_t c = 0; c < tn; ++c) {
        for (std::uint64_t r = 0; r < tm; ++r) order.push_back(r * tn + c);
      }
      break;
    case TileOrder::kGrouped:
      for (std::uint64_t g = 0; g < tm; g += p.group_size) {
        const std::uint64_t rows_end = std::min<std::uint64_t>(tm, g + p.group_size);
        for (std::uint64_t c = 0; c < tn; ++c) {
          for (std::uint64_t r = g; r < rows_end; ++r) order.push_back(r * tn + c);
        }
      }
      break;
    case TileOrder::kHeuristic:
      break;  // resolved above
  }
  const std::uint64_t shift = p.stagger_wgs % order.size();
  std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shift), order.end());
  return order;
}

std::string describe(const GemmParams& p) {
  const WfGrid g = wf_grid(p);
  const GemmAddresses base = gemm_addresses(p);
  std::string order(to_string(p.order));
  if (p.order == TileOrder::kGrouped) order += fmt::format(" group={}", p.group_size);
  std::string store = p.store_uncached ? "uncached" : "cached";
  if (p.store_update) store += ",update";
  if (p.store_peer) store += fmt::format(",peer={}", *p.store_peer);
  return fmt::format(
      "m={} n={} k={} dtype_bytes={} tile={}x{} k_step={} wfs={} wf_grid={}x{} order={} stagger_wgs={} "
      "a={} b={} c={} a_base={:#x} b_base={:#x} c_base={:#x} store={} flops_per_cycle={}",
      p.m, p.n, p.k, p.dtype_bytes, p.tile_m, p.tile_n, p.k_step, p.wfs_per_wg, g.m, g.n, order, p.stagger_wgs,
      to_string(p.a_layout), to_string(p.b_layout), to_string(p.c_layout), base.a, base.b, base.c, store,
      p.flops_per_cycle) + (p.stages != GemmParams{}.stages ? fmt::format(" stages={}", p.stages) : std::string()) +
         (p.tma ? std::string(" tma") : std::string()) +
         (p.issue_cycles != 0 ? fmt::format(" issue_cycles={}", p.issue_cycles) : std::string()) +
         (p.epilogue_smem_passes != 0 ? fmt::format(" epilogue_smem_passes={} lds_bytes_per_cycle={}",
                                                    p.epilogue_smem_passes, p.lds_bytes_per_cycle)
                                      : std::string()) +
         (p.mma_flops_per_cycle != 0 ? fmt::format(" mma_flops_per_cycle={}", p.mma_flops_per_cycle)
                                     : std::string()) +
         (p.load_issue_bytes_per_cycle != 0
              ? fmt::format(" load_issue_bytes_per_cycle={}", p.load_issue_bytes_per_cycle)
              : std::string()) +
         (p.boost_clock ? std::string(" boost_clock") : std::string()) +
         (p.cluster_m != 1 ? fmt::format(" cluster_m={}", p.cluster_m) : std::string()) +
         (p.persistent_wgs != 0 ? fmt::format(" persistent_wgs={}", p.persistent_wgs) : std::string()) +
         (p.persistent_static_tiles != 0 ? fmt::format(" persistent_static_tiles={}", p.persistent_static_tiles)
                                         : std::string());
}

namespace {

// Variable slots: the parameters a, b, c, then loop variables.
constexpr std::uint32_t kVarA = 0, kVarB = 1, kVarC = 2;

// A load or store of `rows` rows of `bytes` bytes, `stride` apart, at `addr`.
TraceOp range_access(TraceProgram& prog, TraceOpKind kind, TraceExpr addr, std::int64_t bytes, std::int64_t rows,
                     std::int64_t stride) {
  // Rows that follow each other (a full-width tile of a narrow matrix: a GEMV's output
  // or its x) are one contiguous access, as the WF's coalesced accesses are.
  if (rows > 1 && stride == bytes) {
    bytes *= rows;
    rows = 1;
  }
  TraceOp op;
  op.kind = kind;
  op.arg[0] = addr;
  op.arg[1] = prog.expr(bytes);
  op.arg[2] = prog.expr(rows);
  op.arg[3] = prog.expr(stride);
  return op;
}

}  // namespace

TraceResources gemm_resources(const GemmParams& p) {
  TraceResources r;
  r.wfs_per_wg = p.wfs_per_wg;
  r.threads_per_wg = p.wfs_per_wg * p.wave_size;
  r.regs_per_thread = p.regs_per_thread;
  r.stages = p.stages;
  r.tma = p.tma;
  r.boost_clock = p.boost_clock;
  r.persistent_wgs = p.persistent_wgs;
  r.persistent_static = p.persistent_wgs != 0 ? p.persistent_static_tiles : 0;
  // A persistent grid of clusters is placed a cluster at a time (the grid a whole number
  // of them); one WG per tile keeps the old simplification (WGs placed alone).
  r.cluster = p.persistent_wgs != 0 && p.cluster_m > 1 && p.persistent_wgs % p.cluster_m == 0 ? p.cluster_m : 1;
  r.lds_bytes =
      p.lds_bytes != 0 ? p.lds_bytes : std::uint64_t{p.stages} * (p.tile_m + p.tile_n) * p.k_step * p.dtype_bytes;
  return r;
}

void append_tile_mainloop(TraceProgram& prog, const GemmParams& p, std::uint64_t tm, std::uint64_t tn,
                          TileBase a_base, TileBase b_base, std::uint32_t num_params, std::uint32_t rank,
                          std::uint32_t cluster) {
  const auto i64 = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  const std::int64_t dt = p.dtype_bytes;
  const std::int64_t M = i64(p.m), N = i64(p.n), K = i64(p.k), ks = p.k_step;

  auto push = [&](const TraceOp& op) { prog.ops.push_back(op); };
  auto range_op = [&](TraceOpKind kind, TraceExpr addr, std::int64_t bytes, std::int64_t rows, std::int64_t stride) {
    return range_access(prog, kind, addr, bytes, rows, stride);
  };
  // The loads and compute of one K block of `kc` elements starting at k0 + step * kvar;
  // `extra_issue`: cycles of the tile's epilogue after its last K step.
  auto k_block = [&](std::int64_t kc, std::int64_t k0, std::optional<std::uint32_t> kvar,
                     std::uint64_t extra_issue) {
    // The address of K index `first` (+ the loop's step) in the matrix at `base`.
    auto address = [&](const TileBase& base, std::int64_t per_k, std::int64_t first) {
      std::vector<TraceTerm> terms;
      if (base.var) terms.push_back({1, *base.var});
      if (kvar) terms.push_back({per_k * ks, *kvar});
      return prog.expr(base.constant + per_k * first, terms);
    };
    if (p.a_layout == MatrixLayout::kRowMajor) {
      push(range_op(TraceOpKind::kLoad, address(a_base, dt, k0), kc * dt, i64(tm), K * dt));
    } else {
      push(range_op(TraceOpKind::kLoad, address(a_base, M * dt, k0), i64(tm) * dt, kc, M * dt));
    }
    // This WG's slice of the K step's B tile: all of it, or its rank's share.
    const std::int64_t share = kc / cluster, extra = kc % cluster;
    const std::int64_t b_kc = share + (rank < extra ? 1 : 0);
    const std::int64_t b_k0 = k0 + rank * share + std::min<std::int64_t>(rank, extra);
    if (b_kc == 0) {
      // kc < cluster: the other ranks fetch this step's rows.
    } else if (p.b_layout == MatrixLayout::kRowMajor) {
      push(range_op(TraceOpKind::kLoad, address(b_base, N * dt, b_k0), i64(tn) * dt, b_kc, N * dt));
    } else {
      push(range_op(TraceOpKind::kLoad, address(b_base, dt, b_k0), b_kc * dt, i64(tn), K * dt));
    }
    TraceOp c;
    c.kind = TraceOpKind::kCompute;
    const std::uint64_t flops = 2 * tm * tn * static_cast<std::uint64_t>(kc);
    const std::uint32_t mma_rate = p.mma_flops_per_cycle != 0 ? p.mma_flops_per_cycle : p.flops_per_cycle;
    c.arg[0] = prog.expr(i64(ceil_div(flops, mma_rate)));
    c.arg[1] = prog.expr(i64(flops));
    c.arg[2] = prog.expr(i64(lds_read_bytes(p, tm, tn, static_cast<std::uint64_t>(kc))));
    // The WG's own copies of this step's tiles (the whole A and B tiles: a cluster's
    // multicast is TMA's, which has none of these cycles).
    const std::uint64_t copy_cycles =
        p.load_issue_bytes_per_cycle == 0
            ? 0
            : ceil_div((tm + tn) * static_cast<std::uint64_t>(kc) * p.dtype_bytes, p.load_issue_bytes_per_cycle);
    c.arg[3] = prog.expr(i64(p.issue_cycles + copy_cycles + extra_issue));
    push(c);
  };

  // K loop, then the partial last step; the last step (full or partial) carries the
  // epilogue, so with one the loop stops a step early.
  const std::int64_t full_steps = K / ks;
  const std::int64_t tail = K % ks;
  const std::uint64_t epilogue = gemm_epilogue_cycles(p, tm, tn);
  const std::int64_t looped = tail == 0 && epilogue > 0 ? full_steps - 1 : full_steps;
  if (looped > 0) {
    const auto slot = static_cast<std::uint32_t>(num_params + prog.loop_vars.size());
    prog.loop_vars.emplace_back("k");
    const auto loop_at = static_cast<std::uint32_t>(prog.ops.size());
    TraceOp loop;
    loop.kind = TraceOpKind::kLoop;
    loop.loop_var = static_cast<std::uint8_t>(slot);
    loop.arg[0] = prog.expr(looped);
    prog.ops.push_back(loop);
    k_block(ks, 0, slot, 0);
    TraceOp end;
    end.kind = TraceOpKind::kEnd;
    end.jump = loop_at;
    prog.ops[loop_at].jump = static_cast<std::uint32_t>(prog.ops.size());
    prog.ops.push_back(end);
  }
  if (looped < full_steps) k_block(ks, looped * ks, std::nullopt, epilogue);
  if (tail > 0) k_block(tail, full_steps * ks, std::nullopt, epilogue);
}

std::uint64_t gemm_epilogue_cycles(const GemmParams& p, std::uint64_t tm, std::uint64_t tn) {
  if (p.epilogue_smem_passes == 0 || p.lds_bytes_per_cycle == 0) return 0;
  return ceil_div(std::uint64_t{p.epilogue_smem_passes} * tm * tn * p.dtype_bytes, p.lds_bytes_per_cycle);
}

namespace {

// The program of a tm x tn tile (parameters a, b, c): its K loop, then each WF's
// store of its sub-tile.
TraceProgram tile_program(const GemmParams& p, std::uint64_t tm, std::uint64_t tn, std::uint32_t rank = 0,
                          std::uint32_t cluster = 1) {
  TraceProgram prog;
  prog.name = cluster == 1 ? fmt::format("tile_{}x{}", tm, tn) : fmt::format("tile_{}x{}_b{}of{}", tm, tn, rank, cluster);
  const auto i64 = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  const std::int64_t dt = p.dtype_bytes;
  const std::int64_t M = i64(p.m), N = i64(p.n);

  auto push = [&](const TraceOp& op) { prog.ops.push_back(op); };
  auto range_op = [&](TraceOpKind kind, TraceExpr addr, std::int64_t bytes, std::int64_t rows, std::int64_t stride) {
    return range_access(prog, kind, addr, bytes, rows, stride);
  };
  auto loop = [&](const char* var, std::int64_t count) {
    const auto slot = static_cast<std::uint32_t>(3 + prog.loop_vars.size());
    prog.loop_vars.emplace_back(var);
    TraceOp op;
    op.kind = TraceOpKind::kLoop;
    op.loop_var = static_cast<std::uint8_t>(slot);
    op.arg[0] = prog.expr(count);
    prog.ops.push_back(op);
    return slot;
  };
  std::vector<std::uint32_t> open;
  auto begin_loop = [&](const char* var, std::int64_t count) {
    open.push_back(static_cast<std::uint32_t>(prog.ops.size()));
    return loop(var, count);
  };
  auto end_loop = [&]() {
    TraceOp op;
    op.kind = TraceOpKind::kEnd;
    op.jump = open.back();
    prog.ops[open.back()].jump = static_cast<std::uint32_t>(prog.ops.size());
    open.pop_back();
    prog.ops.push_back(op);
  };

  append_tile_mainloop(prog, p, tm, tn, TileBase{0, kVarA}, TileBase{0, kVarB}, 3, rank, cluster);

  // Each WF stores its sub-tile.
  const WfGrid g = wf_grid(p);
  const std::uint64_t sub_m = ceil_div(p.tile_m, g.m);
  const std::uint64_t sub_n = ceil_div(p.tile_n, g.n);
  const bool row_major = p.c_layout == MatrixLayout::kRowMajor;
  // Offset of element (r, c) of the tile from the tile's base; bytes/rows/stride of an r x c block.
  auto offset = [&](std::int64_t r, std::int64_t c) { return row_major ? (r * N + c) * dt : (c * M + r) * dt; };
  auto store = [&](TraceExpr addr, std::int64_t nr, std::int64_t nc, TraceExpr wf) {
    TraceOp op = row_major ? range_op(TraceOpKind::kStore, addr, nc * dt, nr, N * dt)
                           : range_op(TraceOpKind::kStore, addr, nr * dt, nc, M * dt);
    if (p.store_uncached) op.flags |= kTraceUncached;
    if (p.store_update) op.flags |= kTraceUpdate;
    if (p.store_peer) {
      op.flags |= kTraceRemote;
      op.arg[4] = prog.expr(*p.store_peer);
    }
    op.all_wfs = false;
    op.wf = wf;
    push(op);
  };
  const bool uniform = tm % sub_m == 0 && tm / sub_m == g.m && tn % sub_n == 0 && tn / sub_n == g.n;
  const std::int64_t sm = i64(sub_m), sn = i64(sub_n);
  if (uniform && g.n == 1) {
    const std::uint32_t w = begin_loop("w", g.m);
    store(prog.expr(0, {{1, kVarC}, {offset(sm, 0), w}}), sm, sn, prog.expr(0, {{1, w}}));
    end_loop();
  } else if (uniform && g.m == 1) {
    const std::uint32_t w = begin_loop("w", g.n);
    store(prog.expr(0, {{1, kVarC}, {offset(0, sn), w}}), sm, sn, prog.expr(0, {{1, w}}));
    end_loop();
  } else if (uniform) {
    const std::uint32_t wi = begin_loop("wi", g.m);
    const std::uint32_t wj = begin_loop("wj", g.n);
    store(prog.expr(0, {{1, kVarC}, {offset(sm, 0), wi}, {offset(0, sn), wj}}), sm, sn,
          prog.expr(0, {{i64(g.n), wi}, {1, wj}}));
    end_loop();
    end_loop();
  } else {
    for (std::uint32_t i = 0; i < g.m; ++i) {
      for (std::uint32_t j = 0; j < g.n; ++j) {
        const std::uint64_t r0 = i * sub_m, c0 = j * sub_n;
        if (r0 >= tm || c0 >= tn) continue;  // this WF has nothing of an edge tile
        const std::int64_t nr = i64(std::min(sub_m, tm - r0)), nc = i64(std::min(sub_n, tn - c0));
        store(prog.expr(offset(i64(r0), i64(c0)), {{1, kVarC}}), nr, nc, prog.expr(i64(i) * g.n + j));
      }
    }
  }
  return prog;
}

}  // namespace

KernelTrace make_gemm_trace(const GemmParams& p) {
  validate_gemm(p);
  const GemmAddresses base = gemm_addresses(p);
  KernelTrace t;
  t.name = p.name.empty() ? fmt::format("gemm_{}x{}x{}", p.m, p.n, p.k) : p.name;
  t.attrs.emplace_back("generator", "t3sim tiled GEMM");
  t.attrs.emplace_back("gemm", describe(p));
  if (2 * uint128(p.m) * p.n * p.k <= UINT64_MAX) t.attrs.emplace_back("flops", fmt::format("{}", 2 * p.m * p.n * p.k));
  t.resources = gemm_resources(p);
  t.params = {"a", "b", "c"};

  const std::uint64_t tiles_n = gemm_tiles_n(p);
  const std::uint64_t edge_m = p.m % p.tile_m, edge_n = p.n % p.tile_n;
  // Programs in a fixed order: interior, right edge, bottom edge, corner.
  const std::array<std::pair<std::uint64_t, std::uint64_t>, 4> shapes = {
      {{p.tile_m, p.tile_n}, {p.tile_m, edge_n}, {edge_m, p.tile_n}, {edge_m, edge_n}}};
  std::array<int, 4> program_of_shape = {-1, -1, -1, -1};
  const bool has_full_m = p.m >= p.tile_m, has_full_n = p.n >= p.tile_n;
  const std::array<bool, 4> exists = {has_full_m && has_full_n, has_full_m && edge_n != 0,
                                      edge_m != 0 && has_full_n, edge_m != 0 && edge_n != 0};
  // With clusters, programs come per (shape, rank, cluster size), in tile order (below).
  for (std::size_t s = 0; s < shapes.size() && p.cluster_m == 1; ++s) {
    if (!exists[s]) continue;
    program_of_shape[s] = static_cast<int>(t.programs.size());
    t.programs.push_back(tile_program(p, shapes[s].first, shapes[s].second));
  }

  const auto order = gemm_tile_order(p);
  const std::uint64_t dt = p.dtype_bytes;
  const std::uint64_t tiles_m = gemm_tiles_m(p);
  std::map<std::tuple<std::size_t, std::uint32_t, std::uint32_t>, int> cluster_programs;  // (shape, rank, size)
  t.wg_program.reserve(order.size());
  t.wg_params.reserve(order.size() * 3);
  for (const std::uint64_t tile : order) {
    const std::uint64_t r = tile / tiles_n, c = tile % tiles_n;
    const std::uint64_t r0 = r * p.tile_m, c0 = c * p.tile_n;
    const bool edge_r = r0 + p.tile_m > p.m, edge_c = c0 + p.tile_n > p.n;
    const std::size_t shape = (edge_r ? 2 : 0) + (edge_c ? 1 : 0);
    int prog = program_of_shape[shape];
    // A cluster of cluster_m tiles down a column shares (multicasts) its B tiles; a
    // last cluster cut short by the edge has fewer, a lone tile fetches all of B.
    const std::uint64_t first = r - r % p.cluster_m;
    const auto size = static_cast<std::uint32_t>(std::min<std::uint64_t>(p.cluster_m, tiles_m - first));
    if (p.cluster_m > 1) {
      const auto rank = size > 1 ? static_cast<std::uint32_t>(r - first) : 0;
      const auto key = std::make_tuple(shape, rank, size);
      auto it = cluster_programs.find(key);
      if (it == cluster_programs.end()) {
        it = cluster_programs.emplace(key, static_cast<int>(t.programs.size())).first;
        t.programs.push_back(tile_program(p, shapes[shape].first, shapes[shape].second, rank, size));
      }
      prog = it->second;
    }
    const std::uint64_t a = base.a + (p.a_layout == MatrixLayout::kRowMajor ? r0 * p.k : r0) * dt;
    const std::uint64_t b = base.b + (p.b_layout == MatrixLayout::kRowMajor ? c0 : c0 * p.k) * dt;
    const std::uint64_t cc =
        base.c + (p.c_layout == MatrixLayout::kRowMajor ? r0 * p.n + c0 : c0 * p.m + r0) * dt;
    t.add_wg(static_cast<std::uint16_t>(prog),
             {static_cast<std::int64_t>(a), static_cast<std::int64_t>(b), static_cast<std::int64_t>(cc)});
  }
  return t;
}

// ---------------------------------------------------------------------------
// Table 2 presets

const std::vector<GemmPreset>& gemm_presets() {
  static const std::vector<GemmPreset> presets = [] {
    struct Model {
      const char* id;
      const char* name;
      std::uint64_t hidden;
      std::uint64_t tokens;  // SL x B
      std::vector<std::uint32_t> tps;
    };
    struct Layer {
      const char* id;
      const char* name;
      std::uint64_t k_multiple;  // K = k_multiple * H / TP
      bool forward;
    };
    // T3 Table 2 ("K" = 1024): Mega-GPT-2 H=3072, SL=1K, B=16; T-NLG H=4256, SL=1K,
    // B=8 (Table 2: TP 8, 16); GPT-3 H=12K, PALM H=18K, MT-NLG H=20K, SL=1K, B=2
    // (Table 2: TP 32). Every model also at TP 4 to 32, for TP-degree sweeps.
    const std::vector<Model> models = {
        {"megagpt2", "Mega-GPT-2", 3072, 1024 * 16, {4, 8, 16, 32}},
        {"tnlg", "T-NLG", 4256, 1024 * 8, {4, 8, 16, 32}},
        {"gpt3", "GPT-3", 12 * 1024, 1024 * 2, {4, 8, 16, 32}},
        {"palm", "PALM", 18 * 1024, 1024 * 2, {4, 8, 16, 32}},
        {"mtnlg", "MT-NLG", 20 * 1024, 1024 * 2, {4, 8, 16, 32}},
    };
    const std::vector<Layer> layers = {
        {"op", "OP fwd (attention output projection)", 1, true},
        {"fc2", "FC-2 fwd", 4, true},
        {"fc1", "FC-1 bwd (input gradient)", 4, false},
        {"ip", "IP bwd (input projection, input gradient)", 3, false},
    };
    std::vector<GemmPreset> out;
    for (const Model& m : models) {
      for (std::uint32_t tp : m.tps) {
        for (const Layer& l : layers) {
          GemmPreset g;
          g.name = fmt::format("{}.{}.tp{}", m.id, l.id, tp);
          g.model = m.name;
          g.layer = l.name;
          g.hidden = m.hidden;
          g.tokens = m.tokens;
          g.tp = tp;
          g.m = m.tokens;
          g.n = m.hidden;
          g.k = l.k_multiple * m.hidden / tp;  // exact for every Table 2 case
          g.forward = l.forward;
          out.push_back(g);
        }
      }
    }
    return out;
  }();
  return presets;
}

std::vector<std::string> gemm_preset_names() {
  std::vector<std::string> names;
  for (const GemmPreset& g : gemm_presets()) names.push_back(g.name);
  return names;
}

const GemmPreset& find_gemm_preset(std::string_view name) {
  for (const GemmPreset& g : gemm_presets()) {
    if (g.name == name) return g;
  }
  const std::string best = closest_match(name, gemm_preset_names());
  const std::string hint = best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
  throw UserError(fmt::format("unknown GEMM preset '{}'{}; presets are MODEL.LAYER.tpN with MODEL one of megagpt2, "
                              "tnlg, gpt3, palm, mtnlg and LAYER one of op, fc2, fc1, ip (list them with "
                              "t3sim-tracegen --list-presets)",
                              name, hint));
}

GemmParams gemm_preset_params(std::string_view name, GemmParams base) {
  const GemmPreset& g = find_gemm_preset(name);
  GemmParams p = std::move(base);
  p.name = g.name;
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.dtype_bytes = 2;
  p.b_layout = g.forward ? MatrixLayout::kColumnMajor : MatrixLayout::kRowMajor;
  return p;
}

}  // namespace t3sim
