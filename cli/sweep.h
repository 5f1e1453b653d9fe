#pragma once
// Parameter sweeps: many runs of one system + workload over the cartesian product of
// parameter values, run in parallel, each finished point appended to one CSV at once.
//
// A sweep file (all keys but `parameters` optional; paths relative to the file):
//
//   system: ../systems/ring8.yaml
//   workload: ../workloads/ring_rs.yaml
//   parameters:                  # cartesian product; the first key varies slowest
//     system.num_gpus: [2, 4, 8, 16]
//     workload.size: [1MiB, 16MiB, 192MiB]
//     run.config: [sequential]   # run.config / run.seed choose the configuration / seed
//   set: [system.net.latency=500ns]   # fixed overrides, applied before the parameters
//
// Resume: the CSV is the sweep's memory. A rerun reads it, drops a torn last line (a
// write cut by a crash), and skips every point whose parameter values already have a
// row (with --retry-errors, only ok rows count; failed rows are removed and rerun).
// Only parameter values identify a point: after changing `set:`, the system or the
// workload, write to a new CSV.
//
// Sharding: `--shard i/n` runs the points whose index % n == i, which fits a Slurm job
// array `--array=0-(n-1)` with `--shard $SLURM_ARRAY_TASK_ID/n`. Give each shard its own
// CSV (`-o out.$SLURM_ARRAY_TASK_ID.csv`) and join them with merge_results (`t3sim
// merge`), or with `head -1 a.csv > all.csv; tail -q -n +2 a.csv b.csv >> all.csv`
// when their headers are identical.

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/run.h"
#include "sim/error.h"

namespace t3sim {

// One axis of the sweep: a dotted key starting with system., workload. or run., and its
// values as YAML text, applied per point as the override "key=value".
struct SweepParameter {
  std::string key;
  std::vector<std::string> values;
  SourceLocation where;
};

struct SweepSpec {
  std::filesystem::path system;
  std::filesystem::path workload;
  std::vector<SweepParameter> parameters;  // declaration order = CSV column order
  std::vector<std::string> fixed;          // "key=value", applied to every point first
};

// Load a sweep file. Unknown keys (with did-you-mean), a parameter key without a
// system./workload./run. prefix, an empty or duplicated value list, and bad run.*
// values are ConfigErrors at their file:line.
SweepSpec load_sweep_spec(const std::filesystem::path& sweep_file);

// Apply one command-line `--set key=value`. A YAML list value ("system.num_gpus=[2,4,8]")
// is a sweep axis: it replaces the axis of the same key, or is appended. A scalar value
// is a fixed override, and pins that key: an axis of the same key is removed.
void apply_command_line_set(SweepSpec& spec, std::string_view assignment);

// One point of the product: `index` is its position in the whole (unsharded) product.
struct SweepPoint {
  std::size_t index = 0;
  std::vector<std::string> values;  // one per parameter, in parameter order
};

// The cartesian product, first parameter varying slowest. No parameters: one point.
std::vector<SweepPoint> enumerate_points(const SweepSpec& spec);
// "system.num_gpus=2;workload.size=1MiB" (parameters in declaration order).
std::string point_key(const SweepSpec& spec, const SweepPoint& point);
// The run of one point: fixed overrides, then the point's values; run.config and
// run.seed go to RunRequest::configuration and ::seed. Writes no files.
RunRequest make_run_request(const SweepSpec& spec, const SweepPoint& point);

// `--shard i/n`: 0 <= i < n.
struct Shard {
  std::size_t index = 0;
  std::size_t count = 1;
  bool contains(const SweepPoint& point) const { return point.index % count == index; }
};
// Parses "i/n"; anything else is a UserError quoting the text.
Shard parse_shard(std::string_view text);

// --- CSV ----------------------------------------------------------------------------
// Columns: point,<parameter keys...>,status,error,<metric names...>. Metric columns are
// the union, in first-seen order, of the metric names of the ok points (they depend
// only on the workload kind); failed rows leave them empty.

enum class PointStatus { kOk, kUserError, kSimError };
std::string_view status_name(PointStatus status);  // "ok", "user_error", "sim_error"

// Quote a cell if it holds a comma, quote, CR or LF (RFC 4180).
std::string csv_quote(std::string_view cell);
// Cells joined by commas, quoted as needed, ending in '\n'.
std::string csv_line(const std::vector<std::string>& cells);

struct CsvText {
  std::vector<std::vector<std::string>> records;  // header first; blank lines skipped
  std::vector<std::size_t> lines;                 // the line each record starts on
  std::size_t complete_bytes = 0;  // length of the complete records; more is a torn tail
};
// Parse RFC 4180 text (quoted cells may span lines). A last record that is not ended
// by a newline is torn: it is left out of `records` and `complete_bytes`.
CsvText parse_csv(std::string_view text);

// A results CSV loaded in memory (used by resume and merge).
struct ResultsTable {
  std::vector<std::string> parameter_keys;
  std::vector<std::string> metric_names;
  struct Row {
    std::size_t index = 0;
    std::vector<std::string> values;  // parameter values
    PointStatus status = PointStatus::kOk;
    std::string error;
    std::vector<std::string> metrics;  // one per metric_names entry
  };
  std::vector<Row> rows;
  bool dropped_torn_line = false;
};
// Read and validate a results CSV (header shape, cell counts, statuses); errors are
// UserErrors naming the file and line. A torn last line is dropped (the file is not
// modified).
ResultsTable read_results(const std::filesystem::path& path);
// Write `table` to `path` atomically (a temporary file, fsync, rename).
void write_results_atomically(const std::filesystem::path& path, const ResultsTable& table);

// --- Running ------------------------------------------------------------------------

using SweepRunner = std::function<RunOutcome(const RunRequest&)>;

enum class ProgressStyle {
  kNone,
  kLines,    // one line per finished point (stderr is a file or pipe)
  kInPlace,  // one bar redrawn with '\r' (stderr is a terminal)
};

struct SweepOptions {
  std::filesystem::path output;  // the results CSV
  unsigned jobs = 0;             // worker threads; 0 = all cores
  Shard shard;
  bool retry_errors = false;     // rerun points whose existing row failed
  bool fail_fast = false;        // stop scheduling points after the first failure
  std::FILE* progress = nullptr; // where progress goes (stderr); nullptr = nowhere
  ProgressStyle progress_style = ProgressStyle::kNone;
};

struct SweepSummary {
  std::size_t total = 0;    // points in this shard
  std::size_t ok = 0;       // of `total`, with an ok row (new or already there)
  std::size_t failed = 0;   // of `total`, with a failed row (new or already there)
  std::size_t skipped = 0;  // of `total`, already in the CSV and not rerun
  std::size_t not_run = 0;  // of `total`, left out by --fail-fast
  std::size_t runs = 0;     // runner calls made
  // "48 points: 45 ok, 3 failed, 12 skipped (already done); results in OUT.csv"
  std::string line(const std::filesystem::path& output) const;
};

// Run the shard's points not yet in the CSV on `jobs` threads, appending each finished
// point to the CSV with one write + fsync. UserError / SimulationError (and the
// std::invalid_argument models throw for parameter combinations they reject) thrown by
// the runner become failed rows; any other exception stops scheduling, waits for the
// running points (their rows are kept) and is rethrown. Setup problems (an output CSV
// of other parameters, a bad shard) are UserErrors.
SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& options,
                       const SweepRunner& runner);

// Checks every point of the shard as `t3sim validate` would (the runner gets requests
// with validate_only set), without simulating or writing anything: a sweep that
// would fail at its 40th point after hours fails here in seconds. Returns one line per
// bad point ("point 7 (workload.size=1MiB): workload.size: ..."), empty when all are
// good. A runner exception other than bad input is rethrown.
struct SweepValidation {
  std::size_t points = 0;
  std::vector<std::string> errors;
};
SweepValidation validate_sweep(const SweepSpec& spec, const Shard& shard, const SweepRunner& runner);

// The progress line: "[=====>     ] 12/48 points, 3 failed, elapsed 1m02s, ETA 3m10s".
std::string format_progress(std::size_t done, std::size_t total, std::size_t failed,
                            double elapsed_seconds, double eta_seconds);
// "45s", "1m02s", "2h03m04s"; negative = unknown: "--".
std::string format_duration(double seconds);

// --- Merge --------------------------------------------------------------------------

struct MergeSummary {
  std::size_t files = 0;
  std::size_t rows = 0;        // rows written
  std::size_t duplicates = 0;  // rows dropped because another row had the same point
  std::string line(const std::filesystem::path& output) const;
};

// Join results CSVs (e.g. shards) into `output`, written atomically. The point,
// parameter, status and error columns must be identical in every input (else a
// UserError naming the file); metric columns are united. Rows are deduplicated by
// parameter values (an ok row wins over a failed one, else the first one read) and
// sorted by point index.
MergeSummary merge_results(const std::vector<std::filesystem::path>& inputs,
                           const std::filesystem::path& output);

// --- The `sweep` command ------------------------------------------------------------

// The `t3sim sweep` command line, parsed.
struct SweepCommandLine {
  std::filesystem::path sweep_file;  // empty: none
  std::filesystem::path system;      // override the sweep file's (required without one)
  std::filesystem::path workload;
  std::vector<std::string> sets;     // --set key=value (a list value is an axis)
  SweepOptions options;
};

// The sweep the command line describes (sweep file, then --system/--workload, then
// each --set in order). UserError if system or workload is missing.
SweepSpec build_sweep_spec(const SweepCommandLine& command_line);

}  // namespace t3sim
