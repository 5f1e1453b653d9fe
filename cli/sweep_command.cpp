#include "cli/sweep_command.h"

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/run.h"
#include "cli/sweep.h"
#include "sim/error.h"

namespace t3sim {

namespace {

constexpr const char* kSweepFooter = R"(
A sweep file lists the system, the workload and the parameter values; the points are
their cartesian product (the first parameter varies slowest):

  system: ../systems/ring8.yaml          # relative to the sweep file
  workload: ../workloads/ring_rs.yaml
  parameters:
    system.num_gpus: [2, 4, 8, 16]
    workload.size: [1MiB, 16MiB, 192MiB]
    run.config: [sequential]             # run.config / run.seed: configuration / seed
  set: [system.net.latency=500ns]       # fixed overrides for every point

Each finished point is appended to the CSV at once; rerunning the same command skips
the points already there, so an interrupted sweep just continues. Points are identified
by their parameter values only: after changing the fixed settings, use a new CSV.
Exit code: 0 all points ok, 1 some point failed (see its status and error columns),
2 usage or config error.

Examples:
  t3sim sweep configs/sweeps/ring_scaling.yaml -o ring.csv -j 8
  t3sim sweep configs/sweeps/c3_table2.yaml --validate   # every point's configs, nothing run
  t3sim sweep --system sys.yaml --workload wl.yaml --set system.num_gpus=[2,4,8] -o gpus.csv
  # Slurm job array, one shard per task (--array=0-15), then join the shards:
  t3sim sweep ring.yaml --shard $SLURM_ARRAY_TASK_ID/16 -o ring.$SLURM_ARRAY_TASK_ID.csv
  t3sim merge -o ring.csv ring.*.csv
)";

constexpr const char* kMergeFooter = R"(
The inputs must come from the same sweep (same parameter columns). Rows are
deduplicated by their parameter values (an ok row wins over a failed one) and sorted
by point index; metric columns are united. When all headers are identical, plain
shell tools do the same without deduplication:

  head -1 a.csv > all.csv; tail -q -n +2 a.csv b.csv >> all.csv

Example:
  t3sim merge -o ring.csv ring.0.csv ring.1.csv ring.2.csv ring.3.csv
)";

struct SweepArguments {
  std::string sweep_file;
  std::string system;
  std::string workload;
  std::vector<std::string> sets;
  std::string output;
  unsigned jobs = 0;
  std::string shard;
  bool retry_errors = false;
  bool fail_fast = false;
  bool validate = false;
};

int run_sweep_command(const SweepArguments& arguments) {
  if (arguments.output.empty() && !arguments.validate)
    throw UserError("-o,--output is required: the results CSV (or --validate to only check the points)");
  SweepCommandLine command_line;
  command_line.sweep_file = arguments.sweep_file;
  command_line.system = arguments.system;
  command_line.workload = arguments.workload;
  command_line.sets = arguments.sets;
  SweepOptions& options = command_line.options;
  options.output = arguments.output;
  options.jobs = arguments.jobs;
  if (!arguments.shard.empty()) options.shard = parse_shard(arguments.shard);
  options.retry_errors = arguments.retry_errors;
  options.fail_fast = arguments.fail_fast;
  options.progress = stderr;
  options.progress_style =
      ::isatty(::fileno(stderr)) != 0 ? ProgressStyle::kInPlace : ProgressStyle::kLines;

  const SweepSpec spec = build_sweep_spec(command_line);
  if (arguments.validate) {
    const SweepValidation v = validate_sweep(spec, options.shard, run_simulation);
    for (const std::string& e : v.errors) std::fprintf(stderr, "%s\n", e.c_str());
    std::printf("%zu points: %zu valid, %zu with errors\n", v.points, v.points - v.errors.size(), v.errors.size());
    return v.errors.empty() ? 0 : 2;
  }
  const SweepSummary summary = run_sweep(spec, options, run_simulation);
  std::printf("%s\n", summary.line(options.output).c_str());
  return summary.failed > 0 ? 1 : 0;
}

// CLI11 runs subcommand callbacks inside app.parse, outside main's error handling, so
// errors are reported here, as main reports them: usage errors exit 2, anything else
// (a full disk under the results, a bug) exits 1; never terminate.
void report_user_errors(int& exit_code, const std::function<int()>& command) {
  try {
    exit_code = command();
  } catch (const UserError& e) {
    std::fprintf(stderr, "t3sim: error: %s\n", e.what());
    exit_code = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "t3sim: failed: %s\n", e.what());
    exit_code = 1;
  }
}

}  // namespace

void register_sweep_commands(CLI::App& app, int& exit_code) {
  auto sweep_arguments = std::make_shared<SweepArguments>();
  CLI::App* sweep = app.add_subcommand(
      "sweep", "Run many points (a cartesian product of parameter values) in parallel into one CSV");
  sweep->footer(kSweepFooter);
  sweep->add_option("SWEEP", sweep_arguments->sweep_file, "Sweep file (YAML)")
      ->check(CLI::ExistingFile);
  sweep->add_option("--system", sweep_arguments->system, "System YAML (overrides the sweep file's)")
      ->check(CLI::ExistingFile);
  sweep->add_option("--workload", sweep_arguments->workload,
                    "Workload YAML (overrides the sweep file's)")
      ->check(CLI::ExistingFile);
  sweep->add_option("--set", sweep_arguments->sets,
                    "key=value: a list value ([2,4,8]) adds a sweep axis, a scalar fixes the key "
                    "for every point (repeatable)")
      ->allow_extra_args(false);
  sweep->add_option("-o,--output", sweep_arguments->output,
                    "Results CSV: appended to, and its finished points skipped on a rerun (required "
                    "unless --validate)");
  sweep->add_option("-j,--jobs", sweep_arguments->jobs, "Points run in parallel (default: all cores)");
  sweep->add_option("--shard", sweep_arguments->shard,
                    "i/n: run only the points whose index % n == i (0 <= i < n)");
  sweep->add_flag("--retry-errors", sweep_arguments->retry_errors,
                  "Rerun points whose row in the CSV failed (by default any row counts as done)");
  sweep->add_flag("--fail-fast", sweep_arguments->fail_fast,
                  "Start no new point after the first failure");
  sweep->add_flag("--validate", sweep_arguments->validate,
                  "Check every point's configs as `t3sim validate` does, simulate nothing, write no CSV; "
                  "exit 2 if any point is bad");
  sweep->callback([sweep_arguments, &exit_code] {
    report_user_errors(exit_code, [&] { return run_sweep_command(*sweep_arguments); });
  });

  auto merge_output = std::make_shared<std::string>();
  auto merge_inputs = std::make_shared<std::vector<std::string>>();
  CLI::App* merge = app.add_subcommand("merge", "Join sweep CSVs (e.g. shards) into one");
  merge->footer(kMergeFooter);
  merge->add_option("-o,--output", *merge_output, "Merged CSV (written atomically)")->required();
  merge->add_option("INPUTS", *merge_inputs, "Sweep CSVs")->required()->check(CLI::ExistingFile);
  merge->callback([merge_output, merge_inputs, &exit_code] {
    report_user_errors(exit_code, [&] {
      const std::vector<std::filesystem::path> inputs(merge_inputs->begin(), merge_inputs->end());
      const MergeSummary summary = merge_results(inputs, *merge_output);
      std::printf("%s\n", summary.line(*merge_output).c_str());
      return 0;
    });
  });
}

}  // namespace t3sim
