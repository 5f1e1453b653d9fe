#pragma once
// One GPU: CUs, the WG dispatcher and the memory system (L2 + MCs + HBM), wired
// through MemTarget ports (SPEC "CU + dispatcher"; "How a byte flows").
//
// The dispatcher places a kernel's WGs in order (WG id = dispatch order) on the CUs
// of its mask with room for them, round-robin across CUs, up to each CU's occupancy
// limit, so a GEMM larger than the GPU runs in stages (waves). Two kernels may run at
// once; when WG slots free, the higher-priority kernel's WGs go first (equal
// priorities: the earlier launch). A persistent kernel (TraceResources::persistent_wgs,
// a Hopper GEMM's grid of one CTA per SM) places at most that many WGs; each one, when
// its program ends, takes the kernel's next program on the same CU before anything
// else is placed, so its CU frees only when no program is left. Each persistent WG may
// own its first programs (persistent_static, cuBLAS's 2 tiles): a WG that waits for a
// CU keeps them, and they run after everything else.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "models/cu/compute_unit.h"
#include "models/gpu/stage_sampler.h"
#include "models/memsys/gpu_memory.h"
#include "trace/copy_kernel.h"
#include "trace/gemm.h"
#include "sim/component.h"
#include "sim/timeline.h"

namespace t3sim {

class ConfigNode;

struct GpuConfig {
  std::uint32_t num_cus = 80;  // T3 Table 1
  // From a kernel's launch to its first WG dispatch (the command processor reading the
  // launch, setting up the grid): every kernel pays it, so back-to-back dependent
  // kernels (sequential's GEMM, RS, AG) pay it each. 0: none.
  Tick kernel_launch_latency;
  // The kernel the driver runs for a same-GPU copy (`gpu.local_copy_kernel`), where the
  // driver copies within a GPU on its SMs rather than with a copy engine: H200's
  // device-to-device cudaMemcpyAsync (results/h200-measurements/README.md point 23,
  // d2d_footprint.csv: it needs room on an SM, 2-4 K registers and 257-512 threads per
  // CTA and no shared memory, and moves ~40 GB/s per SM). Each CTA copies one block of
  // `threads` x `unroll` 16 B elements (trace/copy_kernel.h), so a copy is as many CTAs
  // as it has blocks, placed as others end: its last CTAs end together wherever it
  // started (a GEMM after it starts on every SM at once, as on the machine). Unset: a
  // copy engine copies.
  struct LocalCopyKernel {
    std::uint32_t threads = 512;
    std::uint32_t regs_per_thread = 8;
    std::uint32_t unroll = 1;
  };
  std::optional<LocalCopyKernel> local_copy_kernel;
  // From the dispatcher placing a WG on a CU (its slot and resources taken) to its
  // first op (GPGPU-Sim's -gpgpu_TB_launch_latency): every WG pays it, so a kernel of
  // several waves of WGs pays it once per wave. 0: none.
  Tick wg_dispatch_latency;
  // The CUs a thread-block cluster is placed within (`gpu.cluster_group_cus`): a
  // persistent kernel's cluster of n WGs (TraceResources::cluster) is placed on n free
  // CUs of one group or waits. On the H200 a 2-CTA cluster needs a TPC, both of its SMs:
  // with k SMs held by a kernel of one CTA per SM (one per TPC), a grid of 2-CTA
  // clusters of one CTA per SM places 132 - 2k CTAs (k = 1-12); with 16, 24, 36, 48
  // held, 108, 108, 92, 76: two per TPC touched
  // (results/h200-measurements/cluster_gpc.csv). 0: clusters placed WG by WG anywhere.
  std::uint32_t cluster_group_cus = 0;
  // How the CUs' numbering (the order plain WGs are placed in, round-robin) walks the
  // groups (`gpu.cluster_group_block`): the first CU of each of this many groups, then
  // their second CUs, and so on, then the next groups. The H200's CTA scheduler places a
  // plain grid on the first SMs of 12 TPCs, then their second SMs, then blocks of 8
  // TPCs (cluster_gpc.csv's order rows); 0: every group's first CU before any second.
  std::uint32_t cluster_group_block = 0;
  // The group of CU c (cluster_group_cus set).
  std::uint32_t cluster_group_of(std::uint32_t c) const {
    const std::uint32_t groups = num_cus / cluster_group_cus;
    const std::uint32_t block = cluster_group_block != 0 ? cluster_group_block : groups;
    const std::uint32_t span = block * cluster_group_cus;  // CUs of a whole block
    const std::uint32_t first = c / span * block;          // the block's first group
    const std::uint32_t in_block = std::min(block, groups - first);
    return first + (c % span) % in_block;
  }
  CuConfig cu;
  GpuMemoryConfig memory;
  // The GEMM kernel the vendor library runs on this GPU (`gpu.gemm`: tile, K step,
  // stages, WFs, wave size, registers, tile order): the defaults of every generated
  // GEMM on it, which a workload may override key by key. Only the kernel-shape
  // fields are set; M, N, K and the rest come from the workload.
  GemmParams gemm;
  // The kernel the library picks for an output shape (`gpu.gemm.by_output`, keys
  // "MxN": kernel keys over `gemm`); a shape not listed runs `gemm`. cuBLAS's choice
  // on H200 depends on the output shape (../shared/calibration/h200/cublas_kernels.csv:
  // each M x N runs one tile whatever K).
  struct KernelForOutput {
    std::uint64_t m = 0, n = 0;
    GemmParams kernel;
  };
  std::vector<KernelForOutput> gemm_by_output;
  // The kernel the library falls back to when K is not a multiple of
  // `gpu.gemm.k_alignment` (`gpu.gemm.unaligned`: kernel keys over `gemm`): cuBLAS on
  // H200 runs an Ampere CUTLASS `_align2` kernel for such K whatever the output shape
  // (cublas_kernels.csv, T-NLG OP and IP rows). 0 / none: every K runs the shape's kernel.
  std::uint32_t gemm_k_alignment = 0;
  std::optional<GemmParams> gemm_unaligned;
  // The system's kernel for an m x n x k GEMM: the unaligned fallback when k needs it,
  // else its `by_output` entry, else `gemm`.
  const GemmParams& gemm_kernel_for(std::uint64_t m, std::uint64_t n, std::uint64_t k) const {
    if (gemm_unaligned && gemm_k_alignment != 0 && k % gemm_k_alignment != 0) return *gemm_unaligned;
    for (const KernelForOutput& out : gemm_by_output)
      if (out.m == m && out.n == n) return out.kernel;
    return gemm;
  }
  // The channel count the vendor's collective library picks on this system
  // (`gpu.collective.channels`): a CU collective's default when its workload gives
  // none; 0: one channel per CU given.
  std::uint32_t collective_channels = 0;
  // Whether the library enables LL128 here (`gpu.collective.ll128`): a candidate of
  // the `auto` protocol choice (models/collectives/protocol_tuner.h).
  bool collective_ll128 = false;
  // The library's caps on LL's bus bandwidth and on LL128's per channel
  // (`gpu.collective.ll_max_bw`, `ll128_max_bw_per_channel`; NCCL's llMaxBws and
  // perChMaxRingLL128Bws for the GPU generation), in the `auto` choice; 0: none.
  double collective_ll_max_gbps = 0;
  double collective_ll128_max_gbps_per_channel = 0;
  // The LDS a collective kernel's WG takes (`gpu.collective.lds_per_wg`; the library
  // kernel's shared memory): with the CU's LDS it bounds the channels one CU holds.
  std::uint64_t collective_lds_per_wg = 0;
  // The registers a collective kernel's WG holds (`gpu.collective.registers_per_wg`;
  // the library's CTA size x its registers per thread): with the CU's register file it
  // bounds the channels one CU holds, as lds_per_wg does. 0: the simulated WG's own
  // (4 waves x 64 threads x 32 registers).
  std::uint64_t collective_registers_per_wg = 0;
};

// Reads the kernel-shape keys of a GEMM (tile_m, tile_n, k_step, stages, tma,
// issue_cycles, epilogue_smem_passes, cluster_m, persistent_wgs, wfs_per_wg, wave_size, regs_per_thread,
// order, group_size) from `node` over `base`, without
// finishing the node: `gpu.gemm` and a GEMM workload take the same keys.
GemmParams read_gemm_kernel_keys(ConfigNode& node, GemmParams base);
// `problem` with the kernel-shape fields (those read_gemm_kernel_keys reads) of `kernel`.
GemmParams with_kernel(GemmParams problem, const GemmParams& kernel);
// `gpu.gemm`: read_gemm_kernel_keys, then no other key is allowed.
GemmParams read_gemm_kernel(ConfigNode node, GemmParams base);

// Reads `gpu:` (num_cus, cu) and `memory:` of a system file.
GpuConfig read_gpu_config(ConfigNode gpu, ConfigNode memory);
// The driver's same-GPU copy kernel (GpuConfig::local_copy_kernel, which must be set)
// for a copy of `bytes`: one CTA per block; addresses unset.
CopyKernelParams local_copy_params(const GpuConfig& gpu, std::uint64_t bytes);

// Adds the host memory of `gpus` simulated GPUs (sim/host_memory.h), keys under system.
void estimate_host_memory(const GpuConfig& cfg, std::uint32_t gpus, HostMemoryEstimate& out);

struct KernelLaunch {
  const KernelTrace* trace = nullptr;   // must outlive the kernel
  std::vector<std::uint32_t> cus;       // CUs it may use (empty: all)
  int priority = 0;                     // higher dispatches first
  Stream stream = Stream::kCompute;     // its memory requests' stream
  std::function<void()> on_done;        // called once when its last WG ends
  std::uint32_t value_granule = 0;      // carry functional values (bytes per word); 0: timing only
  // Staggered WG scheduling (T3 §4.4): dispatch WG first_wg first, then in order,
  // wrapping around; WG ids (and so the tracker's tags) stay the trace's.
  std::uint32_t first_wg = 0;
  const StoreRouting* routing = nullptr;  // T3 output mapping of its stores (must outlive it)
  // Its stages may be skipped when the GPU samples (enable_sampling; stage_sampler.h):
  // only a kernel whose WGs' values nobody reads (value_granule 0, no routing).
  bool sampleable = false;
};

struct KernelStats {
  // Reported times (Simulator::reported_now(): with the stages sampling skipped).
  Tick launched, first_dispatch, done;  // launched: when launch() was called (its latency follows)
  std::uint32_t wgs = 0;
  std::uint32_t concurrent_slots = 0;  // WGs of it the allowed CUs hold at once
  std::uint32_t stages() const { return concurrent_slots ? (wgs + concurrent_slots - 1) / concurrent_slots : 0; }
  std::uint32_t skipped_wgs = 0;  // by sampling: never dispatched, accounted for analytically
};

class Gpu final : public Component {
 public:
  Gpu(Component& parent, std::string_view name, const GpuConfig& cfg);
  Gpu(Simulator& sim, std::string_view name, const GpuConfig& cfg);  // a top-level GPU ("gpu0")
  ~Gpu() override;

  // Returns the kernel id. Contract: its trace fits a CU (capacity_for > 0).
  std::uint32_t launch(KernelLaunch kernel);
  const KernelStats& kernel_stats(std::uint32_t id) const { return kernels_[id].stats; }
  bool kernel_done(std::uint32_t id) const { return kernels_[id].done == kernels_[id].stats.wgs; }

  // Remote stores and remote flag sets of this GPU's CUs go through `remote` (the
  // node's network). Contract: called before any kernel with remote ops launches.
  void connect(RemoteAccess& remote);

  // The GPU's NVLink port sent or received traffic now: under the power cap its SM
  // clock is lower while it does (models/cu/sm_clock.h). false: no cap, nothing to note.
  bool has_power_cap() const { return sm_clock_ != nullptr; }
  void note_link_traffic();

  GpuMemory& memory() { return *memory_; }
  ComputeUnit& cu(std::uint32_t i) { return *cus_[i]; }
  std::uint32_t num_cus() const { return static_cast<std::uint32_t>(cus_.size()); }
  FlagTable& flags() { return flags_; }
  // A flag set from another GPU lands here: its waiters see it cu.flag_latency later.
  void land_flag(std::uint64_t flag, std::uint64_t value);
  const GpuConfig& config() const { return cfg_; }

  // Steady-state sampling (run.sampling; stage_sampler.h): from now on, the stages of
  // sampleable kernels may be skipped. Contract: the simulator runs one partition.
  void enable_sampling(const SamplingConfig& cfg);
  bool sampling() const { return sampler_ != nullptr; }
  // Work beside this GPU's kernels that sampling fast-forwards with them (its DMA
  // engines; must outlive the GPU's run).
  void add_skippable(SkippableWork& work);
  const SamplingReport& sampling_report() const { return sampling_report_; }

  void report_in_flight(std::vector<std::string>& out) const override;

 private:
  struct Kernel {
    KernelLaunch launch;
    KernelStats stats;
    bool dispatchable = false;  // its launch latency has passed
    std::vector<bool> allowed;  // per CU: in the kernel's mask
    std::uint32_t next_wg = 0, done = 0;  // next_wg: programs placed so far
    std::uint32_t next_in_order = 0;  // the next program handed out in order
    std::uint32_t persistent_placed = 0;  // a persistent kernel's WGs placed so far (TraceResources::persistent_wgs)
    std::vector<std::uint32_t> static_taken;  // per persistent WG slot: its own programs taken (persistent_static)
    std::vector<std::uint32_t> slot_of_wg;    // per WG program: the persistent slot that runs it
    std::vector<Tick> wg_start;  // per WG, for timeline slices
  };
  // A persistent kernel's WG that finished its program on `cu` and takes the kernel's
  // next one there, ahead of any other placement (dispatch() serves these first).
  struct Continuation {
    std::uint32_t cu, kernel, slot;
  };
  void on_slot_free(std::uint32_t cu, const WgLaunch& wg);
  // Whether persistent slot `slot` of `k` (any slot for other kernels) has a program
  // left: one of its own (TraceResources::persistent_static) or one in order.
  bool has_program(const Kernel& k, std::uint32_t slot) const;
  // The next program persistent slot `slot` owns (TraceResources::persistent_static),
  // if one is left.
  std::optional<std::uint32_t> next_owned(const Kernel& k, std::uint32_t slot) const;
  // Places the next program of `slot` (its own first, then the next in order) on `cu`.
  void place(std::uint32_t id, std::uint32_t cu, std::uint32_t slot);
  // Places kernel `id`'s persistent slots a cluster at a time (TraceResources::cluster),
  // each on free CUs of one group (GpuConfig::cluster_group_cus), round-robin over the
  // groups, until no group has room for the next cluster.
  void place_clusters(std::uint32_t id);
  void build();
  void dispatch();
  void on_wg_done(std::uint32_t cu, const WgLaunch& wg);
  // A sampleable kernel ended a stage: ask the sampler, skip what it says.
  void on_stage_boundary(std::uint32_t id);
  bool kernel_in_flight() const;
  // Skippable work with no kernel in flight has no stage boundaries: it is probed every
  // sampling period instead (stage_sampler.h). Started when work begins or the last
  // kernel ends; stops while a kernel runs or nothing is left to skip.
  void start_work_probe();
  void probe_work();
  GpuTraffic traffic() const;
  std::vector<SkippableWork::State> work_states() const;  // of skippable_, in order
  // Moves the run past `skip` (its time, its traffic, the work beside).
  void apply_skip(const StageSampler::Skip& skip);

  GpuConfig cfg_;
  std::unique_ptr<GpuMemory> memory_;
  FlagTable flags_;
  std::unique_ptr<SmClock> sm_clock_;  // shared by cus_ (before them: they point to it)
  std::vector<std::unique_ptr<ComputeUnit>> cus_;
  std::vector<Kernel> kernels_;
  std::vector<Continuation> continuations_;
  std::uint32_t next_cu_ = 0;  // round-robin start
  std::uint32_t next_group_ = 0;  // round-robin start of cluster placement (cluster_group_cus)
  std::vector<std::vector<std::uint32_t>> group_cus_;  // each cluster group's CUs (cluster_group_cus)
  bool dispatching_ = false;
  std::vector<Timeline::TrackId> cu_tracks_;
  std::unique_ptr<StageSampler> sampler_;  // null: exact (the default)
  SamplingReport sampling_report_;
  std::vector<SkippableWork*> skippable_;
  std::uint64_t epoch_ = 0;  // kernel launches and ends so far (the sampler's environment)
  std::unique_ptr<CallbackEvent> probe_event_;  // the work probe (sampling only)
};

}  // namespace t3sim
