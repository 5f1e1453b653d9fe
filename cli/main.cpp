// t3sim command line: run, validate, list, sweep, merge.
//
// Exit codes: 0 success; 1 the simulation failed (deadlock, livelock, functional
// check); 2 bad usage, config or trace. stdout carries only the result summary;
// logs and errors go to stderr.

#include <cstdio>
#include <exception>
#include <iostream>
#include <new>

#include <CLI/CLI.hpp>

#include "cli/list.h"
#include "cli/run.h"
#include "cli/sweep_command.h"
#include "models/system/experiment.h"
#include "models/system/configuration.h"
#include "models/system/sublayer_configuration.h"
#include "sim/error.h"
#include "sim/log.h"
#include "sim/version.h"

namespace {

constexpr const char* kExamples = R"(
Examples:
  t3sim run configs/systems/ring8.yaml configs/workloads/ring_rs.yaml -o out/rs8
  t3sim run configs/systems/ring8.yaml configs/workloads/ring_rs.yaml \
      --set system.num_gpus=16 --set workload.size=192MiB
  t3sim run configs/systems/table1.yaml configs/workloads/gemm/tnlg_fc2_tp8.yaml -o out/fc2
  t3sim run configs/systems/table1.yaml configs/workloads/memory/contention.yaml \
      --set system.memory.mc.arbiter.type=mca -o out/mca
  t3sim validate configs/systems/ring8.yaml configs/workloads/ring_rs.yaml
  t3sim list
  t3sim sweep configs/sweeps/ring_scaling.yaml -o sweep.csv -j 2
  t3sim sweep configs/sweeps/table2_gemms.yaml -o table2.csv -j 2
  t3sim sweep configs/sweeps/ring_scaling.yaml -o shard0.csv --shard 0/4
  t3sim merge -o all.csv shard0.csv shard1.csv shard2.csv shard3.csv
)";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"t3sim: cycle-level simulator of multi-GPU nodes overlapping compute and collectives"};
  app.footer(kExamples);
  app.set_version_flag("--version", std::string("t3sim ") + t3sim::kVersion + " (" +
                                        t3sim::kGitRevision + ")");
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off (stderr)")
      ->capture_default_str();

  int exit_code = 0;

  // run / validate share their options.
  t3sim::RunRequest req;
  std::string output_dir = "t3sim-out";
  bool no_timeline = false;
  std::string mode;
  unsigned threads = 0;
  bool quiet = false;
  auto add_run_options = [&](CLI::App* cmd, bool with_output) {
    cmd->add_option("system", req.system, "system YAML (configs/systems/)")->required()->check(CLI::ExistingFile);
    cmd->add_option("workload", req.workload, "workload YAML (configs/workloads/)")->required()->check(CLI::ExistingFile);
    std::string configurations;
    for (const std::string& name : t3sim::configuration_names())
      configurations += (configurations.empty() ? "" : ", ") + name;
    cmd->add_option("-c,--config", req.configuration,
                    "configuration of a GEMM + collective sub-layer (kind gemm) or of a C3 run (kind c3): " +
                        configurations + " (t3sim list)");
    cmd->add_option("--mode", mode, "simulation mode: full (every GPU) or homogeneous (GPU 0, peers mirrored)");
    cmd->add_option("--set", req.overrides, "override a key: system.net.bandwidth=100GB/s (repeatable)");
    cmd->add_option("--seed", req.seed, "seed of input data and any randomness")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);  // "-1" would wrap to 2^64 - 1 (issue 45, D8)
    cmd->add_option("--threads", threads,
                    "host threads of a full-mode run (a partition per GPU; results do not depend on it; "
                    "default: one per core)");
    if (with_output) {
      cmd->add_option("-o,--output", output_dir, "output directory (results.json, stats.csv, timeline.json)")
          ->capture_default_str();
      cmd->add_flag("--no-timeline", no_timeline, "do not record timeline.json");
      cmd->add_flag("-q,--quiet", quiet,
                    "no progress line on stderr (shown once a run takes 2 s: simulated time, events, events/s)");
      cmd->add_option("--debug-shuffle-ties", req.shuffle_ties,
                      "debug: insert same-time events in a random order with this seed (nonzero); the canonical "
                      "event order makes the results byte-identical")
          ->check(CLI::NonNegativeNumber);
    }
  };
  CLI::App* run = app.add_subcommand("run", "simulate one system + workload + configuration");
  add_run_options(run, true);
  CLI::App* validate = app.add_subcommand("validate", "check system and workload configs without simulating");
  add_run_options(validate, false);

  CLI::App* list = app.add_subcommand(
      "list", "list the configurations, workload kinds, arbiters, topologies and GEMM presets, each with a "
              "one-line description");
  bool list_json = false;
  list->add_flag("--json", list_json, "the same as JSON, for scripts (tools/t3sim_tools.py)");

  t3sim::register_sweep_commands(app, exit_code);

  // Options of the app (--log-level) may also follow the subcommand (issue 45, D8).
  for (CLI::App* sub : app.get_subcommands({})) sub->fallthrough();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  try {
    t3sim::set_log_level(log_level);
    if (list->parsed())
      std::cout << (list_json ? t3sim::registry_listing_json().dump(2) + "\n" : t3sim::registry_listing())
                << std::flush;
    if (run->parsed() || validate->parsed()) {
      if (run->parsed()) req.output_dir = output_dir;
      req.progress = run->parsed() && !quiet;
      req.timeline = !no_timeline;
      if (!mode.empty()) req.overrides.insert(req.overrides.begin(), "run.mode=" + mode);
      req.threads = threads;
      req.validate_only = validate->parsed();
      const t3sim::RunOutcome out = t3sim::run_simulation(req);
      std::cout << out.summary << std::flush;
    }
  } catch (const t3sim::UserError& e) {
    std::fprintf(stderr, "t3sim: error: %s\n", e.what());
    return 2;
  } catch (const t3sim::SimulationError& e) {
    std::fprintf(stderr, "t3sim: simulation failed: %s\n", e.what());
    return 1;
  } catch (const std::invalid_argument& e) {
    // Parameter combinations only a model can judge (e.g. buffer sizes of zero).
    std::fprintf(stderr, "t3sim: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // Outside a run (a run reports it with its in-flight work): while building the model.
    std::fprintf(stderr, "t3sim: simulation failed: out of host memory while setting up the run\n");
    return 1;
  } catch (const std::exception& e) {
    // Never terminate: whatever escaped is a bug, reported as a failed simulation.
    std::fprintf(stderr, "t3sim: simulation failed: internal error: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
