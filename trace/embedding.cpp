#include "trace/embedding.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/error.h"
#include "sim/hash.h"
#include "sim/int_math.h"

namespace t3sim {

namespace {

std::uint64_t mix(std::uint64_t seed, std::uint64_t table, std::uint64_t sample, std::uint64_t i) {
  return splitmix64(splitmix64(splitmix64(seed ^ 0x656d62656464ULL) ^ table) ^ (sample << 20 | i));
}

constexpr std::int64_t kIndexBytes = 8;  // int64 offsets and indices

// One bag as PyTorch's EmbeddingBag_updateOutputKernel_sum_mean runs it (the kernel
// seed 000 fuses): the bag's bounds from the offsets, then per row its index and, that
// index known, the row, added into the running sum. The loop has a run-time trip count,
// which the AMDGPU back end does not unroll (LLVM AMDGPUTargetTransformInfo
// getUnrollingPreferences: partial unrolling only, "TODO: Do we want runtime
// unrolling?"), and each step waits for its loads before its add (in-order issue,
// s_waitcnt), so a bag's loads are a chain: two dependent memory latencies per row.
// Each load and its compute are a load group; the kernel's one stage buffer
// (resources.stages = 1) keeps the next group's loads behind this group's compute, and
// `carry` passes the sum from row to row (index groups carry it through). The WG's 4
// wavefronts each hold 64 of the D features, so a row load is the WG's D x 4 bytes.
// Simplification: the address step between an index and its row is a compute of 0
// cycles, which (like a copy's in collective/channel_program.h) starts only when the CU's
// matrix core is free; other WGs' adds of a few cycles can delay it that much.
struct BagAddresses {
  std::uint64_t offsets = 0;  // offsets[b], offsets[b + 1]
  std::uint64_t indices = 0;  // the bag's first index
};

void append_bag(TraceProgram& prog, const EmbeddingParams& p, const BagAddresses& at, const std::vector<std::uint64_t>& rows,
                std::uint32_t table) {
  const std::uint64_t v = embedding_vector_bytes(p);
  prog.ops.push_back(prog.constant_op(TraceOpKind::kLoad, {i64(at.offsets), 2 * kIndexBytes, 1, 2 * kIndexBytes}));
  prog.ops.push_back(prog.constant_op(TraceOpKind::kCompute, {0}));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    prog.ops.push_back(prog.constant_op(TraceOpKind::kLoad, {i64(at.indices + i * kIndexBytes), kIndexBytes, 1, kIndexBytes}));
    TraceOp address = prog.constant_op(TraceOpKind::kCompute, {0});
    address.flags = kTraceCarry;
    prog.ops.push_back(address);
    prog.ops.push_back(prog.constant_op(TraceOpKind::kLoad,
                                        {i64(p.table_base + (std::uint64_t{table} * p.rows + rows[i]) * v), i64(v), 1, i64(v)}));
    TraceOp add = prog.constant_op(TraceOpKind::kCompute, {i64(ceil_div(p.dim, p.flops_per_cycle)), i64(p.dim)});
    if (i + 1 < rows.size()) add.flags = kTraceCarry;
    prog.ops.push_back(add);
  }
}

TraceResources bag_resources() {
  TraceResources r;  // PyTorch's ROCm launch: blocks of 64 x 4 threads, one bag per block at D = 256
  r.wfs_per_wg = 4;
  r.threads_per_wg = 256;
  r.regs_per_thread = 32;
  r.lds_bytes = 0;
  r.stages = 1;
  return r;
}

// Where bag (b, t)'s offsets and indices are: DLRM's per-table CSR input (offsets
// [T][B + 1], then every table's indices, int64).
class BagIndex {
 public:
  explicit BagIndex(const EmbeddingParams& p) : p_(p), first_(std::size_t{p.tables} * (p.batch + 1)) {
    std::uint64_t next = 0;
    for (std::uint32_t t = 0; t < p.tables; ++t) {
      for (std::uint64_t b = 0; b <= p.batch; ++b) {
        first_[t * (p.batch + 1) + b] = next;
        if (b < p.batch) next += embedding_bag_rows(p, t, b).size();
      }
    }
  }
  BagAddresses at(std::uint32_t t, std::uint64_t b) const {
    const std::uint64_t slot = std::uint64_t{t} * (p_.batch + 1) + b;
    return BagAddresses{p_.index_base + slot * kIndexBytes, indices_base() + first_[slot] * kIndexBytes};
  }

 private:
  std::uint64_t indices_base() const { return p_.index_base + std::uint64_t{p_.tables} * (p_.batch + 1) * kIndexBytes; }
  const EmbeddingParams& p_;
  std::vector<std::uint64_t> first_;
};

}  // namespace

void validate_embedding(const EmbeddingParams& p) {
  if (p.num_gpus < 2) throw UserError("an embedding all-to-all needs at least 2 GPUs");
  if (p.gpu >= p.num_gpus) throw UserError(fmt::format("GPU {} of {}", p.gpu, p.num_gpus));
  if (p.batch == 0 || p.batch % p.num_gpus != 0)
    throw UserError(fmt::format("the all-to-all gives each of the {} GPUs B / {} samples, and the batch {} is not a "
                                "positive multiple of {}",
                                p.num_gpus, p.num_gpus, p.batch, p.num_gpus));
  if (p.tables == 0 || p.dim == 0 || p.rows == 0 || p.pooling_max == 0 || p.elem_bytes == 0 || p.flops_per_cycle == 0)
    throw UserError("tables, dim, rows, pooling_max, elem_bytes and flops_per_cycle must be at least 1");
  if (p.batch > (1ULL << 40) || p.pooling_max > 4096) throw UserError("batch or pooling_max too large");
}

std::uint64_t embedding_vector_bytes(const EmbeddingParams& p) { return std::uint64_t{p.dim} * p.elem_bytes; }

std::uint64_t embedding_chunk_bytes(const EmbeddingParams& p) {
  return p.batch / p.num_gpus * p.tables * embedding_vector_bytes(p);
}

std::vector<std::uint64_t> embedding_bag_rows(const EmbeddingParams& p, std::uint32_t table, std::uint64_t sample) {
  // GPU g's sample b is GPU 0's sample b - g x B/N: the same bags, shifted by a chunk.
  const std::uint64_t shifted = (sample + p.batch - std::uint64_t{p.gpu} * (p.batch / p.num_gpus)) % p.batch;
  const double u = static_cast<double>(mix(p.seed, table, shifted, 0xfffff) >> 11) * 0x1.0p-53;
  const auto count = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(u * p.pooling_max)));
  std::vector<std::uint64_t> rows;
  rows.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) rows.push_back(mix(p.seed, table, shifted, i) % p.rows);
  return rows;
}

double embedding_mean_pooling(const EmbeddingParams& p) {
  std::uint64_t total = 0;
  for (std::uint64_t b = 0; b < p.batch; ++b)
    for (std::uint32_t t = 0; t < p.tables; ++t) total += embedding_bag_rows(p, t, b).size();
  return static_cast<double>(total) / static_cast<double>(p.batch * p.tables);
}

std::uint64_t embedding_index_bytes(const EmbeddingParams& p) {
  std::uint64_t indices = 0;
  for (std::uint32_t t = 0; t < p.tables; ++t)
    for (std::uint64_t b = 0; b < p.batch; ++b) indices += embedding_bag_rows(p, t, b).size();
  return (std::uint64_t{p.tables} * (p.batch + 1) + indices) * kIndexBytes;
}

KernelTrace make_embedding_trace(const EmbeddingParams& p) {
  validate_embedding(p);
  const std::uint64_t v = embedding_vector_bytes(p);
  KernelTrace t;
  t.name = fmt::format("embedding_bag_b{}_t{}_gpu{}", p.batch, p.tables, p.gpu);
  t.attrs.emplace_back("generator", "t3sim embedding-bag pooling (one WG per bag, one row at a time)");
  t.attrs.emplace_back("embedding", fmt::format("batch={} tables={} dim={} rows={} pooling_max={}", p.batch, p.tables,
                                                p.dim, p.rows, p.pooling_max));
  t.resources = bag_resources();
  // Parameters: the rows' addresses (the first `count` used), the bag's offsets and
  // first index, the output's address. One program per bag size.
  for (std::uint32_t i = 0; i < p.pooling_max; ++i) t.params.push_back(fmt::format("r{}", i));
  t.params.push_back("offsets");
  t.params.push_back("indices");
  t.params.push_back("out");
  const std::uint32_t offsets = p.pooling_max, indices = p.pooling_max + 1, out = p.pooling_max + 2;
  auto load = [](TraceProgram& prog, TraceExpr address, std::int64_t bytes) {
    TraceOp ld;
    ld.kind = TraceOpKind::kLoad;
    ld.arg[0] = address;
    ld.arg[1] = prog.expr(bytes);
    ld.arg[2] = prog.expr(1);
    ld.arg[3] = prog.expr(bytes);
    prog.ops.push_back(ld);
  };
  for (std::uint32_t count = 1; count <= p.pooling_max; ++count) {
    TraceProgram prog;
    prog.name = fmt::format("bag_{}", count);
    load(prog, prog.expr(0, {TraceTerm{1, offsets}}), 2 * kIndexBytes);
    prog.ops.push_back(prog.constant_op(TraceOpKind::kCompute, {0}));
    for (std::uint32_t i = 0; i < count; ++i) {
      load(prog, prog.expr(i * kIndexBytes, {TraceTerm{1, indices}}), kIndexBytes);
      TraceOp address = prog.constant_op(TraceOpKind::kCompute, {0});
      address.flags = kTraceCarry;
      prog.ops.push_back(address);
      load(prog, prog.expr(0, {TraceTerm{1, i}}), i64(v));
      TraceOp add = prog.constant_op(TraceOpKind::kCompute, {i64(ceil_div(p.dim, p.flops_per_cycle)), i64(p.dim)});
      if (i + 1 < count) add.flags = kTraceCarry;
      prog.ops.push_back(add);
    }
    TraceOp st;
    st.kind = TraceOpKind::kStore;
    st.arg[0] = prog.expr(0, {TraceTerm{1, out}});
    st.arg[1] = prog.expr(i64(v));
    st.arg[2] = prog.expr(1);
    st.arg[3] = prog.expr(i64(v));
    prog.ops.push_back(st);
    t.programs.push_back(std::move(prog));
  }
  const BagIndex index(p);
  const std::size_t nparams = t.params.size();
  t.wg_program.reserve(p.batch * p.tables);
  t.wg_params.reserve(p.batch * p.tables * nparams);
  for (std::uint64_t b = 0; b < p.batch; ++b) {
    for (std::uint32_t tb = 0; tb < p.tables; ++tb) {
      const std::vector<std::uint64_t> rows = embedding_bag_rows(p, tb, b);
      t.wg_program.push_back(static_cast<std::uint16_t>(rows.size() - 1));
      for (std::uint32_t i = 0; i < p.pooling_max; ++i)
        t.wg_params.push_back(i < rows.size() ? i64(p.table_base + (std::uint64_t{tb} * p.rows + rows[i]) * v) : 0);
      const BagAddresses at = index.at(tb, b);
      t.wg_params.push_back(i64(at.offsets));
      t.wg_params.push_back(i64(at.indices));
      t.wg_params.push_back(i64(p.out_base + (b * p.tables + tb) * v));
    }
  }
  validate_trace(t);
  return t;
}

KernelTrace make_fused_embedding_a2a_trace(const EmbeddingParams& p) {
  validate_embedding(p);
  if (p.grid == 0 || p.grid > 65535) throw UserError(fmt::format("a persistent grid of {} WGs (1 to 65535)", p.grid));
  const std::uint64_t v = embedding_vector_bytes(p);
  const std::uint64_t per_gpu = p.batch / p.num_gpus, chunk = embedding_chunk_bytes(p);
  KernelTrace t;
  t.name = fmt::format("fused_embedding_a2a_b{}_t{}_gpu{}", p.batch, p.tables, p.gpu);
  t.attrs.emplace_back("generator", "t3sim fused embedding-bag + all-to-all (persistent, seed 000)");
  t.attrs.emplace_back("embedding", fmt::format("batch={} tables={} dim={} rows={} pooling_max={} grid={} order={}",
                                                p.batch, p.tables, p.dim, p.rows, p.pooling_max, p.grid,
                                                p.comm_aware ? "comm-aware" : "oblivious"));
  t.resources = bag_resources();
  t.programs.resize(p.grid);
  for (std::uint32_t w = 0; w < p.grid; ++w) t.programs[w].name = fmt::format("wg_{}", w);
  // The samples in the order their bags are taken. Communication-aware: the other GPUs'
  // samples first, interleaved over them (sample k of GPU g + 1, of g + 2, ..., then
  // sample k + 1) so every link carries vectors from the start; its own samples last.
  // Oblivious: sample order.
  std::vector<std::uint64_t> samples;
  samples.reserve(p.batch);
  if (p.comm_aware) {
    for (std::uint64_t k = 0; k < per_gpu; ++k)
      for (std::uint32_t e = 1; e < p.num_gpus; ++e) samples.push_back((p.gpu + e) % p.num_gpus * per_gpu + k);
    for (std::uint64_t k = 0; k < per_gpu; ++k) samples.push_back(p.gpu * per_gpu + k);
  } else {
    for (std::uint64_t b = 0; b < p.batch; ++b) samples.push_back(b);
  }
  const BagIndex index(p);
  std::uint64_t i = 0;
  for (std::uint64_t b : samples) {
    const auto owner = static_cast<std::uint32_t>(b / per_gpu);
    const std::uint32_t d = (owner + p.num_gpus - p.gpu) % p.num_gpus;
    for (std::uint32_t tb = 0; tb < p.tables; ++tb, ++i) {
      TraceProgram& prog = t.programs[i % p.grid];
      append_bag(prog, p, index.at(tb, b), embedding_bag_rows(p, tb, b), tb);
      const std::uint64_t in_chunk = ((b - owner * per_gpu) * p.tables + tb) * v;
      if (d == 0) {
        prog.ops.push_back(prog.constant_op(TraceOpKind::kStore, {i64(p.out_base + p.gpu * chunk + in_chunk), i64(v), 1, i64(v)}));
      } else {
        TraceOp st = prog.constant_op(TraceOpKind::kStore,
                                      {i64(p.recv_base + (d - 1) * chunk + in_chunk), i64(v), 1, i64(v), i64(owner)});
        st.flags = kTraceUncached | kTraceRemote;
        prog.ops.push_back(st);
      }
    }
  }
  // Each WG's end: its flag at every peer (after its stores there), then the peers'.
  for (std::uint32_t w = 0; w < p.grid; ++w) {
    TraceProgram& prog = t.programs[w];
    for (std::uint32_t e = 1; e < p.num_gpus; ++e) {
      const std::uint32_t peer = (p.gpu + e) % p.num_gpus;
      TraceOp set = prog.constant_op(TraceOpKind::kSet,
                                     {i64(p.flag_base + std::uint64_t{p.num_gpus - e} * p.grid + w), 1, 0, 0, i64(peer)});
      set.flags = kTraceRemote;
      prog.ops.push_back(set);
    }
    for (std::uint32_t d = 1; d < p.num_gpus; ++d)
      prog.ops.push_back(prog.constant_op(TraceOpKind::kWait, {i64(p.flag_base + std::uint64_t{d} * p.grid + w), 1}));
    t.add_wg(static_cast<std::uint16_t>(w), {});
  }
  validate_trace(t);
  return t;
}

}  // namespace t3sim
