#include "models/system/gemm_system.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {

GemmWorkload read_gemm_workload(ConfigNode workload, const GpuConfig& gpu, const GemmShape* shape) {
  GemmWorkload wl;
  wl.cus = static_cast<std::uint32_t>(workload.get_uint("cus", 0, 0, gpu.num_cus));
  if (shape == nullptr && workload.has("trace")) {
    const std::string path = workload.get_string("trace", "");
    // A relative path is relative to the file that names it, as `base:` is; one given
    // with --set, to the current directory (issue 45, D6: it was always the latter).
    std::filesystem::path file = path;
    const SourceLocation where = workload.location("trace");
    if (file.is_relative() && where.line > 0 && !where.file.empty())
      file = std::filesystem::path(where.file).parent_path() / file;
    try {
      wl.trace = read_trace(file);
    } catch (const TraceError& e) {
      if (e.where().line > 0) throw;  // a line of the trace: its own file and line name it
      workload.fail("trace", fmt::format("{}: {}", file.string(), e.message()));  // cannot be read
    } catch (const UserError& e) {
      workload.fail("trace", e.what());
    }
    wl.description = path;
    workload.finish();
    if (const std::string why = why_a_wg_does_not_fit(gpu.cu, wl.trace.resources); !why.empty())
      workload.fail("trace", fmt::format("kernel {} cannot run: {}", wl.trace.name, why));
    return wl;
  }
  GemmParams p = gpu.gemm;  // the system's GEMM kernel (gpu.gemm)
  if (shape != nullptr) {
    p.m = shape->m;
    p.n = shape->n;
    p.k = shape->k;
  } else if (workload.has("preset")) {
    const std::string name = workload.get_string("preset", "");
    try {
      p = gemm_preset_params(name, gpu.gemm);
      wl.tp = find_gemm_preset(name).tp;
    } catch (const UserError& e) {
      workload.fail("preset", e.what());
    }
  } else {
    p.m = workload.get_uint("m", 1, 1ULL << 32, Required{});
    p.n = workload.get_uint("n", 1, 1ULL << 32, Required{});
    p.k = workload.get_uint("k", 1, 1ULL << 32, Required{});
  }
  p = with_kernel(p, gpu.gemm_kernel_for(p.m, p.n, p.k));  // the library's kernel for this shape
  p = read_gemm_kernel_keys(workload, std::move(p));  // the kernel shape, over the system's
  const std::string store = workload.get_enum("store", "cached", {"cached", "uncached", "uncached-update"});
  p.store_uncached = store != "cached";
  p.store_update = store == "uncached-update";
  p.flops_per_cycle = gpu.cu.flops_per_cycle;
  p.lds_bytes_per_cycle = gpu.cu.lds_bytes_per_cycle;
  workload.finish();
  try {
    wl.trace = make_gemm_trace(p);
  } catch (const UserError& e) {
    workload.fail("m", e.what());
  }
  if (const std::string why = why_a_wg_does_not_fit(gpu.cu, wl.trace.resources); !why.empty())
    throw WgDoesNotFit(fmt::format("GEMM {} cannot run: {}", wl.trace.name, why));
  wl.params = p;
  wl.description = fmt::format("{}: {} x {} x {}, tile {}x{}x{}", wl.trace.name, p.m, p.n, p.k, p.tile_m, p.tile_n,
                               p.k_step);
  return wl;
}

GemmSystem::GemmSystem(Simulator& sim, const GpuConfig& gpu, GemmWorkload workload, const SamplingConfig& sampling)
    : sim_(sim), workload_(std::move(workload)), gpu_(std::make_unique<Gpu>(sim, "gpu0", gpu)), sampling_(sampling) {
  if (sampling_.enabled) gpu_->enable_sampling(sampling_);
}


double GemmSystem::progress() {
  const std::uint32_t total = workload_.trace.num_wgs();
  if (total == 0) return -1.0;
  std::uint64_t done = 0;
  for (std::uint32_t i = 0; i < gpu_->num_cus(); ++i) done += gpu_->cu(i).wgs_completed();
  return std::min(1.0, static_cast<double>(done) / total);
}

GemmResult GemmSystem::run(Tick max_time) {
  KernelLaunch k;
  k.trace = &workload_.trace;
  for (std::uint32_t i = 0; i < workload_.cus; ++i) k.cus.push_back(i);
  bool done = false;
  k.on_done = [&done] { done = true; };
  k.sampleable = true;  // timing only: a GEMM alone carries no values
  const std::uint32_t id = gpu_->launch(std::move(k));
  if (sim_.run(max_time) == Simulator::StopReason::kTimeLimit && !done) {
    throw SimulationError(fmt::format("run.max_time ({}) reached before the GEMM finished", to_string(max_time)));
  }
  if (!done) throw SimulationError("the GEMM kernel did not finish although nothing was left to simulate");

  const KernelStats& ks = gpu_->kernel_stats(id);
  const TraceTotals totals = trace_totals(workload_.trace);
  GemmResult r;
  r.time = ks.done - ks.launched;
  r.flops = totals.flops;
  r.tflops = r.time.ps() ? static_cast<double>(r.flops) / (static_cast<double>(r.time.ps()) * 1e-12) / 1e12 : 0;
  r.wgs = ks.wgs;
  r.concurrent_wgs = ks.concurrent_slots;
  r.stages = ks.stages();
  GpuMemory& mem = gpu_->memory();
  for (Stream s : {Stream::kCompute, Stream::kCommunication}) {
    const McStreamStats st = mem.stream_totals(s);
    r.dram_read_bytes += st.bytes[index(MemOp::kRead)];
    r.dram_write_bytes += st.bytes[index(MemOp::kWrite)];
    r.dram_update_bytes += st.bytes[index(MemOp::kUpdate)];
  }
  r.l2_hit_rate = mem.l2().hit_rate();
  r.sampling = gpu_->sampling_report();
  if (r.sampling.skips > 0) {  // the skipped stages' look-ups count too
    std::uint64_t hits = 0, lookups = 0;
    for (Stream s : {Stream::kCompute, Stream::kCommunication}) {
      const L2Cache::StreamTotals t = mem.l2_stream_totals(s);
      hits += t.hits;
      lookups += t.hits + t.misses;
    }
    r.l2_hit_rate = lookups ? static_cast<double>(hits) / static_cast<double>(lookups) : 0.0;
  }
  const GpuConfig& g = gpu_->config();
  // At the clock the matrix work runs at (cu.compute_clock: the H200's power-capped
  // clock), so the percentage says how close to its bound the GEMM came.
  const std::uint64_t matrix_hz = g.cu.compute_clock_hz != 0 ? g.cu.compute_clock_hz : g.cu.clock_hz;
  r.peak_tflops = static_cast<double>(g.num_cus) * g.cu.flops_per_cycle * static_cast<double>(matrix_hz) / 1e12;
  r.peak_dram_GBps = static_cast<double>(g.memory.hbm.peak_bandwidth().bytes_per_second()) / 1e9;

  r.json = {{"workload", "gemm"},
            {"gemm", workload_.description},
            {"time_ps", r.time.ps()},
            {"flops", r.flops},
            {"tflops", r.tflops},
            {"peak_tflops", r.peak_tflops},
            {"wgs", r.wgs},
            {"concurrent_wgs", r.concurrent_wgs},
            {"stages", r.stages},
            {"dram_read_bytes", r.dram_read_bytes},
            {"dram_write_bytes", r.dram_write_bytes},
            {"dram_update_bytes", r.dram_update_bytes},
            {"l2_hit_rate", r.l2_hit_rate},
            {"load_bytes", totals.load_bytes},
            {"store_bytes", totals.store_bytes}};
  if (sampling_.enabled) r.json["sampling"] = sampling_json(sampling_, r.sampling);
  return r;
}

std::string GemmSystem::summary(const GemmResult& r) const {
  const double seconds = static_cast<double>(r.time.ps()) * 1e-12;
  return fmt::format(
      "GEMM {} on {} CUs\n"
      "  time               {}\n"
      "  throughput         {:.1f} TFLOP/s ({:.1f}% of {:.1f} peak)\n"
      "  stages             {} ({} WGs, {} at once)\n"
      "  DRAM               {:.1f} MB read, {:.1f} MB written, {:.1f} MB updated ({:.1f} GB/s of {:.0f})\n"
      "  L2 hit rate        {:.1f}%\n",
      workload_.description, workload_.cus ? workload_.cus : gpu_->num_cus(), to_string(r.time), r.tflops,
      100.0 * r.tflops / r.peak_tflops, r.peak_tflops, r.stages, r.wgs, r.concurrent_wgs,
      static_cast<double>(r.dram_read_bytes) / 1e6, static_cast<double>(r.dram_write_bytes) / 1e6,
      static_cast<double>(r.dram_update_bytes) / 1e6,
      seconds > 0 ? static_cast<double>(r.dram_read_bytes + r.dram_write_bytes + r.dram_update_bytes) / seconds / 1e9
                  : 0.0,
      r.peak_dram_GBps, 100.0 * r.l2_hit_rate);
}

}  // namespace t3sim
