// t3sim-tracegen: writes a workgroup trace (traces/FORMAT.md) of a tiled GEMM, from
// explicit sizes or a T3 Table 2 preset, or of one GPU's CU-based collective kernel
// (--collective: any registered algorithm, collective/algorithms/: ring and direct
// reduce-scatter and all-gather, ring and halving-doubling all-reduce, all-to-all).
// The same generators are library calls (trace/gemm.h, collective/collective.h), so
// simulations and sweeps need no trace files.
//
// Exit codes: 0 success, 2 bad command line or parameters.

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "sim/config.h"
#include "collective/collective.h"
#include "collective/i_collective_algorithm.h"
#include "trace/gemm.h"
#include "trace/trace.h"

namespace {

constexpr const char* kExamples = R"(
Examples:
  t3sim-tracegen --m 512 --n 512 --k 512 -o traces/gemm_512.trace
  t3sim-tracegen --preset tnlg.fc2.tp8 --store uncached,update -o fc2.trace
  t3sim-tracegen --m 1000 --n 600 --k 300 --tile 128x128 --k-step 64 --order grouped --group 4
  t3sim-tracegen --list-presets
  t3sim-tracegen --collective ring-rs --gpus 8 --gpu 0 --array-bytes 192MiB -o rs.gpu0.trace
  t3sim-tracegen --collective ring-ar --gpus 4 --gpu 1 --array-bytes 6MiB -o ar.gpu1.trace
)";

// "256x128" -> (256, 128)
std::pair<std::uint32_t, std::uint32_t> parse_tile(const std::string& s) {
  const auto x = s.find('x');
  try {
    if (x == std::string::npos) throw std::invalid_argument(s);
    std::size_t used = 0;
    const unsigned long m = std::stoul(s.substr(0, x), &used);
    if (used != x) throw std::invalid_argument(s);
    const unsigned long n = std::stoul(s.substr(x + 1), &used);
    if (used != s.size() - x - 1 || m == 0 || n == 0 || m > (1u << 20) || n > (1u << 20)) {
      throw std::invalid_argument(s);
    }
    return {static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(n)};
  } catch (const std::logic_error&) {
    throw t3sim::UserError(fmt::format("--tile: bad tile '{}' (expected ROWSxCOLS, e.g. 256x128)", s));
  }
}

std::uint64_t parse_size(const std::string& option, const std::string& text) {
  try {
    return t3sim::parse_bytes(text);
  } catch (const std::invalid_argument& e) {
    throw t3sim::UserError(fmt::format("{}: {}", option, e.what()));
  }
}

void write_one(const t3sim::KernelTrace& trace, const std::string& output) {
  if (output == "-") {
    t3sim::write_trace(trace, std::cout);
    std::cout.flush();
  } else {
    t3sim::write_trace_file(trace, output);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"t3sim-tracegen: write a tiled-GEMM or CU-collective workgroup trace (format: traces/FORMAT.md)"};
  app.footer(kExamples);

  t3sim::GemmParams p;
  std::string preset;
  bool list_presets = false;
  std::string output = "-";
  std::string tile = "256x128";
  std::string order = "row-major";
  std::string a_layout, b_layout, c_layout = "row-major";
  std::string store = "cached";
  std::optional<std::uint64_t> a_base, b_base, c_base;
  std::optional<std::uint32_t> peer;
  std::string wf_grid;

  app.add_flag("--list-presets", list_presets, "list the Table 2 presets (name M N K model layer) and exit");
  app.add_option("--preset", preset, "a Table 2 sub-layer GEMM, e.g. tnlg.fc2.tp8 (sets m, n, k, layouts)");
  app.add_option("--m", p.m, "rows of A and C");
  app.add_option("--n", p.n, "columns of B and C");
  app.add_option("--k", p.k, "inner dimension");
  app.add_option("--dtype-bytes", p.dtype_bytes, "bytes per element (FP16 = 2)")->capture_default_str();
  app.add_option("--tile", tile, "macro tile ROWSxCOLS of the output per WG")->capture_default_str();
  app.add_option("--k-step", p.k_step, "K per loop iteration")->capture_default_str();
  app.add_option("--stages", p.stages, "K-step tile buffers (2: double buffering)")->capture_default_str();
  app.add_flag("--tma", p.tma, "tiles loaded by Hopper's TMA: the loads do not hold the L1's MSHRs");
  app.add_option("--issue-cycles", p.issue_cycles, "a WG's cycles per K step without matrix work")
      ->capture_default_str();
  app.add_option("--cluster-m", p.cluster_m, "tiles down a column that share (TMA-multicast) their B tiles")
      ->capture_default_str();
  app.add_option("--wfs", p.wfs_per_wg, "WFs per WG")->capture_default_str();
  app.add_option("--wf-grid", wf_grid, "how WFs split the output tile, MxN (default: along the output's rows)");
  app.add_option("--order", order, "WG-to-tile order: row-major, column-major, grouped, heuristic (CUTLASS sm90: along M if more tile columns than rows)")->capture_default_str();
  app.add_option("--group", p.group_size, "tile rows per group for --order grouped")->capture_default_str();
  app.add_option("--stagger", p.stagger_wgs, "rotate the WG order by this many WGs (stage offset x WGs per stage)")
      ->capture_default_str();
  app.add_option("--a-layout", a_layout, "A stored row-major (M x K) or column-major (K x M)");
  app.add_option("--b-layout", b_layout, "B stored row-major (K x N) or column-major (N x K)");
  app.add_option("--c-layout", c_layout, "output layout: row-major or column-major")->capture_default_str();
  app.add_option("--a-base", a_base, "base address of A (default 0)");
  app.add_option("--b-base", b_base, "base address of B (default: after A, 2 MiB aligned)");
  app.add_option("--c-base", c_base, "base address of C (default: after B, 2 MiB aligned)");
  app.add_option("--store", store, "output store flags: cached | uncached, optionally ,update")->capture_default_str();
  app.add_option("--peer", peer, "output stores go to this peer GPU (remote stores)");
  app.add_option("--flops-per-cycle", p.flops_per_cycle, "matrix-core flops per cycle per CU")->capture_default_str();
  app.add_option("--wave-size", p.wave_size, "threads per WF")->capture_default_str();
  app.add_option("--regs-per-thread", p.regs_per_thread, "registers per thread")->capture_default_str();
  app.add_option("--lds-bytes", p.lds_bytes, "LDS bytes per WG (0: the A and B tiles of every stage)")
      ->capture_default_str();
  app.add_option("--name", p.name, "kernel name (default: the preset or gemm_MxNxK)");
  app.add_option("-o,--output", output, "output file ('-': stdout)")->capture_default_str();

  // Collective kernels (collective/collective.h). --wfs, --wave-size, --regs-per-thread
  // and --name apply to them too.
  t3sim::CollectiveTraceParams cp;
  std::string collective, array_bytes, step_bytes = "512KiB", protocol = "simple";
  t3sim::ChannelPipeline pipeline;
  std::optional<std::uint64_t> recv_base, out_base;
  std::vector<CLI::Option*> collective_only;
  auto collective_option = [&](CLI::Option* o) {
    collective_only.push_back(o->group("Collective"));
    return o;
  };
  CLI::Option* collective_opt =
      app.add_option("--collective", collective,
                     fmt::format("write one GPU's CU collective kernel instead of a GEMM: {}",
                                 fmt::join(t3sim::collective_algorithms().names(), ", ")))
          ->group("Collective");
  collective_option(app.add_option("--gpus", cp.num_gpus, "GPUs in the collective (N)")->capture_default_str());
  collective_option(app.add_option("--gpu", cp.gpu, "the GPU this trace runs on (0..N-1)")->capture_default_str());
  collective_option(app.add_option("--array-bytes", array_bytes, "array size per GPU, e.g. 192MiB (granule multiple)"));
  collective_option(app.add_option("--channels", cp.channels, "channels (WGs)")->capture_default_str());
  collective_option(app.add_option("--protocol", protocol,
                                   "ring channels' protocol: simple, ll, ll128 (sets the defaults of the next four)")
                        ->check(CLI::IsMember({"simple", "ll", "ll128"}))
                        ->capture_default_str());
  collective_option(app.add_option("--step-bytes", step_bytes, "channel pipeline FIFO step (NCCL Simple: 512KiB)")
                        ->capture_default_str());
  collective_option(
      app.add_option("--fifo-depth", pipeline.fifo_depth, "steps in flight per channel connection")->capture_default_str());
  collective_option(
      app.add_option("--slice-steps", pipeline.slice_steps, "steps per flag-synchronized slice")->capture_default_str());
  collective_option(
      app.add_option("--chunk-steps", pipeline.chunk_steps, "steps per piece walked through the ring")->capture_default_str());
  collective_option(
      app.add_option("--element-bytes", cp.element_bytes, "bytes per element (FP16 = 2)")->capture_default_str());
  collective_option(app.add_option("--granule", cp.granule, "chunk/share alignment in bytes")->capture_default_str());
  collective_option(
      app.add_option("--adds-per-cycle", cp.adds_per_cycle, "element adds per CU cycle")->capture_default_str());
  collective_option(app.add_option("--data-base", cp.data_base, "address of the array (default 0)"));
  collective_option(app.add_option("--recv-base", recv_base, "receive buffer (default: after the array, 2 MiB up)"));
  collective_option(app.add_option("--out-base", out_base, "all-to-all output (default: after the receive buffer)"));
  collective_option(app.add_option("--flag-base", cp.flag_base, "first flag id the kernel uses (default 0)"));
  collective_option(app.add_flag("--data-uncached", cp.data_uncached, "loads/stores of the array bypass the L2"));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  try {
    if (*collective_opt) {
      // GEMM-only options would be silently ignored: refuse them.
      for (const char* name : {"--preset", "--m", "--n", "--k", "--dtype-bytes", "--tile", "--k-step", "--stages", "--tma", "--issue-cycles", "--cluster-m", "--wf-grid",
                               "--order", "--group", "--stagger", "--a-layout", "--b-layout", "--c-layout",
                               "--a-base", "--b-base", "--c-base", "--store", "--peer", "--flops-per-cycle",
                               "--lds-bytes", "--list-presets"}) {
        if (app.count(name) > 0) {
          throw t3sim::UserError(fmt::format("{} applies to GEMM traces, not --collective", name));
        }
      }
      cp.kind = t3sim::parse_collective_kind(collective);
      if (array_bytes.empty()) throw t3sim::UserError("--collective needs --array-bytes (the array size per GPU)");
      cp.array_bytes = parse_size("--array-bytes", array_bytes);
      {
        // The protocol's defaults, then the sizes given explicitly.
        const t3sim::ChannelPipeline given = pipeline;
        pipeline = t3sim::ChannelPipeline::for_protocol(*t3sim::parse_collective_protocol(protocol));
        if (app.count("--step-bytes") > 0) pipeline.step_bytes = parse_size("--step-bytes", step_bytes);
        if (app.count("--fifo-depth") > 0) pipeline.fifo_depth = given.fifo_depth;
        if (app.count("--slice-steps") > 0) pipeline.slice_steps = given.slice_steps;
        if (app.count("--chunk-steps") > 0) pipeline.chunk_steps = given.chunk_steps;
      }
      if (pipeline.slice_steps == 0 || pipeline.fifo_depth % pipeline.slice_steps != 0 ||
          pipeline.chunk_steps % pipeline.slice_steps != 0)
        throw t3sim::UserError("--fifo-depth and --chunk-steps must be whole multiples of --slice-steps");
      cp.set_pipeline(pipeline);
      if (recv_base) {
        cp.recv_base = *recv_base;
        cp.recv_base_set = true;
      }
      if (out_base) {
        cp.out_base = *out_base;
        cp.out_base_set = true;
      }
      // Shared with the GEMM options (their GEMM defaults do not apply).
      if (app.count("--wfs") > 0) cp.wfs_per_wg = p.wfs_per_wg;
      if (app.count("--wave-size") > 0) cp.wave_size = p.wave_size;
      if (app.count("--regs-per-thread") > 0) cp.regs_per_thread = p.regs_per_thread;
      std::vector<t3sim::KernelTrace> traces = t3sim::make_collective_traces(cp);
      if (!p.name.empty()) traces.at(0).name = p.name;
      write_one(traces.at(0), output);  // one kernel (all-reduce too)
      return 0;
    }
    for (const CLI::Option* o : collective_only) {
      if (o->count() > 0) {
        throw t3sim::UserError(fmt::format("{} applies to --collective traces", o->get_name()));
      }
    }
    if (list_presets) {
      for (const t3sim::GemmPreset& g : t3sim::gemm_presets()) {
        std::cout << fmt::format("{:<20} M={:<6} N={:<6} K={:<6} {} TP={} {}\n", g.name, g.m, g.n, g.k, g.model,
                                 g.tp, g.layer);
      }
      return 0;
    }
    if (!preset.empty()) {
      t3sim::GemmParams base = t3sim::gemm_preset_params(preset);
      // Explicit sizes still win over the preset's.
      if (p.m == 0) p.m = base.m;
      if (p.n == 0) p.n = base.n;
      if (p.k == 0) p.k = base.k;
      if (p.name.empty()) p.name = base.name;
      p.a_layout = base.a_layout;
      p.b_layout = base.b_layout;
    } else if (p.m == 0 || p.n == 0 || p.k == 0) {
      throw t3sim::UserError("give --m, --n and --k, or --preset NAME (see --list-presets)");
    }
    std::tie(p.tile_m, p.tile_n) = parse_tile(tile);
    p.order = t3sim::parse_tile_order(order);
    if (!a_layout.empty()) p.a_layout = t3sim::parse_matrix_layout(a_layout);
    if (!b_layout.empty()) p.b_layout = t3sim::parse_matrix_layout(b_layout);
    p.c_layout = t3sim::parse_matrix_layout(c_layout);
    if (!wf_grid.empty()) std::tie(p.wf_grid_m, p.wf_grid_n) = parse_tile(wf_grid);
    p.a_base = a_base;
    p.b_base = b_base;
    p.c_base = c_base;
    p.store_peer = peer;
    // --store cached | uncached [,update]
    std::size_t start = 0;
    bool have_cache_word = false;
    while (start <= store.size()) {
      const std::size_t comma = std::min(store.find(',', start), store.size());
      const std::string word = store.substr(start, comma - start);
      if (word == "cached" || word == "uncached") {
        if (have_cache_word) throw t3sim::UserError("--store: give one of cached or uncached");
        have_cache_word = true;
        p.store_uncached = word == "uncached";
      } else if (word == "update") {
        p.store_update = true;
      } else {
        throw t3sim::UserError(
            fmt::format("--store: unknown flag '{}' (expected cached or uncached, optionally ,update)", word));
      }
      start = comma + 1;
    }
    write_one(t3sim::make_gemm_trace(p), output);
  } catch (const t3sim::UserError& e) {
    std::fprintf(stderr, "t3sim-tracegen: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
