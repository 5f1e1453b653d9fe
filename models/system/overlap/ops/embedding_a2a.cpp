// embedding_a2a (../shared/seeds/000 §III-A and IV-B, Figure 8: DLRM's embedding-bag
// pooling + all-to-all, scale-up): every GPU pools the bags of its tables for the whole
// batch, and the all-to-all gives each GPU its samples' vectors from every table
// (trace/embedding.h).
//
//   sequential  the EmbeddingBag kernel (one WG per bag) into the local output, a kernel
//               boundary, then the CU all-to-all of that output
//   fused       one persistent kernel: bags of other GPUs' samples first, each pooled
//               vector stored straight into its owner's receive buffer (zero-copy), end
//               flags per WG and peer
//
// Values (tables small enough, functional): every table row holds a known pattern; the
// sequential run checks the all-to-all (its own pattern, the pooling timing-only), the
// fused run every received vector against the sum of its bag's rows.

#include <algorithm>

#include <fmt/format.h>

#include "models/common/payload.h"
#include "models/cu/store_routing.h"
#include "models/system/overlap/ops.h"
#include "sim/error.h"
#include "sim/int_math.h"
#include "trace/embedding.h"

namespace t3sim {
namespace {


// The fused kernel's values: loads of table rows bring their words, a store carries
// the sum of its bag's loads.
class PoolingRouting final : public StoreRouting {
 public:
  explicit PoolingRouting(std::uint64_t tables_end) : tables_end_(tables_end) {}
  int remote_peer(std::uint32_t, std::uint64_t) const override { return -1; }
  bool has_values() const override { return true; }
  bool loads_values(std::uint64_t address) const override { return address < tables_end_; }
  std::uint64_t store_value(std::uint64_t) const override { return 0; }  // every store pooled loaded words

 private:
  std::uint64_t tables_end_;
};

class EmbeddingA2aOp final : public OverlapOp {
 public:
  explicit EmbeddingA2aOp(const EmbeddingA2aSpec& spec) : spec_(spec) {}

  std::string label() const override {
    return fmt::format("embedding + all-to-all {} | {}", spec_.embedding.batch, spec_.embedding.tables);
  }
  std::string describe_fused() const override {
    return fmt::format("one persistent kernel: bags {}, each pooled vector stored straight into its owner's buffer "
                       "(remote stores), end flags per WG",
                       spec_.embedding.comm_aware ? "of other GPUs' samples first" : "in sample order");
  }
  bool values() const override { return spec_.a2a.values; }

  void build(OverlapRun& run) override {
    Node& node = run.node();
    EmbeddingParams& e = spec_.embedding;
    e.num_gpus = node.num_gpus();
    e.seed = run.seed();
    e.table_base = 0;
    const std::uint64_t v = embedding_vector_bytes(e);
    tables_end_ = std::uint64_t{e.tables} * e.rows * v;
    e.index_base = align_up(tables_end_, kBufferAlign);  // offsets and indices: they carry no values
    e.out_base = align_up(e.index_base + embedding_index_bytes(e), kBufferAlign);
    NodeCollectiveParams p = spec_.a2a;
    p.engine = CollectiveEngine::kCu;
    p.kind = CollectiveKind::named("all-to-all");
    p.data_base = e.out_base;
    p.array_bytes = e.batch * e.tables * v;
    a2a_ = std::make_unique<NodeCollective>(node, p);
    a2a_->preload();
    e.recv_base = align_up(collective_out_base(a2a_->trace_params(0)) + p.array_bytes, kBufferAlign);
    e.flag_base = kFusedKernelFlagBase;
    const GpuConfig& gpu = node.config().gpu;
    granule_ = gpu.memory.hbm.value_granule;
    for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) {
      EmbeddingParams mine = e;
      mine.gpu = g;
      bulk_.push_back(make_embedding_trace(mine));
    }
    // The fused kernel's default grid: 7/8 of the WGs the bulk kernel's resources fit
    // per CU, the occupancy seed 000 reports for it ("12.5% lower occupancy compared to
    // the original embedding pooling kernel", §III-D: ROC_SHMEM's registers).
    if (e.grid == 0) e.grid = std::max<std::uint32_t>(1, gpu.num_cus * wgs_per_cu(gpu.cu, bulk_.front().resources) * 7 / 8);
    if (values()) {
      // Every GPU's tables hold one pattern (word w of the tables: pattern(w)).
      const InputPattern pattern(e.seed, 0);
      const std::uint64_t words = tables_end_ / granule_;
      constexpr std::uint64_t kPiece = 1 << 16;
      for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) {
        for (std::uint64_t w = 0; w < words; w += kPiece) {
          Payload data;
          for (std::uint64_t i = w; i < std::min(words, w + kPiece); ++i) data.words.push_back(pattern.value(i));
          node.gpu(g).memory().preload(w * granule_, data);
        }
      }
    }
  }

  void chain_sequential(OverlapRun& run) override {
    run.chain_phase(OverlapRun::kCompute, {}, [this, &run](std::uint32_t g) {
      run.launch_compute(g, bulk_[g], [&run, g] {
        // Kernel boundary: the output leaves the L2 for DRAM before the collective reads it.
        run.node().gpu(g).memory().l2().write_back_dirty_lines();
      });
    });
    run.chain_phase(OverlapRun::kCollective, {OverlapRun::kCompute},
                    [this, &run](std::uint32_t g) { run.start_collective_phase(g, *a2a_); });
  }

  void start_fused(OverlapRun& run, std::uint32_t g) override {
    Node& node = run.node();
    if (fused_.empty()) {
      if (node.config().mode == NetMode::kHomogeneous && !spec_.embedding.comm_aware)
        throw UserError("homogeneous mode mirrors GPU 0's schedule onto its peers: the fused embedding needs order: "
                        "comm-aware; use --mode full");
      for (std::uint32_t h = 0; h < node.simulated_gpus(); ++h) {
        EmbeddingParams mine = spec_.embedding;
        mine.gpu = h;
        fused_.push_back(make_fused_embedding_a2a_trace(mine));
      }
      routing_ = std::make_unique<PoolingRouting>(tables_end_);
    }
    run.launch_kernel(g, fused_[g], values() ? routing_.get() : nullptr, values() ? granule_ : 0,
                      [&run, g] { run.node().gpu(g).memory().l2().write_back_dirty_lines(); });
  }

  std::uint64_t verify(OverlapRun& run, std::string& error) override {
    if (!values()) return 0;
    if (fused_.empty()) return a2a_->verify(error);  // the sequential run
    Node& node = run.node();
    const EmbeddingParams& e = spec_.embedding;
    const std::uint64_t v = embedding_vector_bytes(e), words = v / granule_;
    const std::uint64_t per_gpu = e.batch / e.num_gpus, chunk = embedding_chunk_bytes(e);
    const InputPattern pattern(e.seed, 0);
    std::uint64_t checked = 0;
    for (std::uint32_t j = 0; j < node.simulated_gpus(); ++j) {
      for (std::uint32_t d = 0; d < e.num_gpus; ++d) {
        EmbeddingParams source = e;
        source.gpu = (j + e.num_gpus - d) % e.num_gpus;
        const std::uint64_t base = d == 0 ? e.out_base + j * chunk : e.recv_base + (d - 1) * chunk;
        for (std::uint64_t bl = 0; bl < per_gpu; ++bl) {
          for (std::uint32_t t = 0; t < e.tables; ++t) {
            const std::uint64_t at = base + (bl * e.tables + t) * v;
            const Payload got = node.gpu(j).memory().peek(at, static_cast<std::uint32_t>(v));
            const std::vector<std::uint64_t> rows = embedding_bag_rows(source, t, j * per_gpu + bl);
            for (std::uint64_t k = 0; k < words; ++k) {
              std::uint64_t want = 0;
              for (std::uint64_t r : rows) want += pattern.value((std::uint64_t{t} * e.rows + r) * words + k);
              ++checked;
              if (got.words[k] != want && error.empty())
                error = fmt::format("gpu{} {:#x}: got {:#x}, expected {:#x} (GPU {}'s bag of table {} for sample {})",
                                    j, at + k * granule_, got.words[k], want, source.gpu, t, j * per_gpu + bl);
            }
          }
        }
      }
    }
    return checked;
  }

  nlohmann::json fused_json(OverlapRun&) override {
    return {{"grid", spec_.embedding.grid}, {"mean_pooling", embedding_mean_pooling(spec_.embedding)}};
  }
  std::vector<std::string> fused_keys() const override { return {"grid"}; }

 private:
  EmbeddingA2aSpec spec_;
  std::unique_ptr<NodeCollective> a2a_;
  std::vector<KernelTrace> bulk_, fused_;  // per simulated GPU
  std::unique_ptr<PoolingRouting> routing_;
  std::uint64_t tables_end_ = 0;
  std::uint32_t granule_ = 0;
};

}  // namespace

OverlapOpFactory embedding_a2a_op(const EmbeddingA2aSpec& spec) {
  return [spec] { return std::make_unique<EmbeddingA2aOp>(spec); };
}

}  // namespace t3sim
