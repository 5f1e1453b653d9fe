// Running a sweep: its points in parallel into the results CSV, with a progress line
// on stderr; validating one without running it. The spec is sweep_spec.cpp's, the
// CSV sweep_results.cpp's.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "cli/sweep.h"
#include "cli/sweep_results_file.h"
#include "models/system/configuration.h"

namespace t3sim {

namespace fs = std::filesystem;

namespace {

// Progress on stderr. Called under one lock by the workers.
class ProgressReporter {
 public:
  ProgressReporter(std::FILE* out, ProgressStyle style, std::size_t total, std::size_t done,
                   std::size_t failed)
      : out_(style == ProgressStyle::kNone ? nullptr : out),
        style_(style),
        total_(total),
        done_(done),
        failed_(failed),
        start_(std::chrono::steady_clock::now()) {
    if (out_ && style_ == ProgressStyle::kInPlace) draw();
  }

  void point_finished(const std::string& key, const ResultsTable::Row& row) {
    ++done_;
    ++finished_here_;
    if (row.status != PointStatus::kOk) ++failed_;
    if (!out_) return;
    std::string note;
    if (row.status != PointStatus::kOk) {
      const std::string_view first_line = std::string_view(row.error).substr(0, row.error.find('\n'));
      note = fmt::format("point {} ({}) failed: {}: {}", row.index, key, status_name(row.status),
                         first_line);
    }
    if (style_ == ProgressStyle::kInPlace) {
      if (!note.empty()) std::fprintf(out_, "\r\033[K%s\n", note.c_str());
      draw();
    } else {
      std::fprintf(out_, "%s  [point %zu %s: %s]\n", bar().c_str(), row.index, key.c_str(),
                   std::string(status_name(row.status)).c_str());
      if (!note.empty()) std::fprintf(out_, "%s\n", note.c_str());
    }
    std::fflush(out_);
  }

  void finish() {
    if (out_ && style_ == ProgressStyle::kInPlace) {
      std::fputc('\n', out_);
      std::fflush(out_);
    }
  }

 private:
  std::string bar() const {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double eta = finished_here_ == 0
                           ? -1.0
                           : elapsed / static_cast<double>(finished_here_) *
                                 static_cast<double>(total_ - done_);
    return format_progress(done_, total_, failed_, elapsed, eta);
  }
  void draw() {
    std::fprintf(out_, "\r\033[K%s", bar().c_str());
    std::fflush(out_);
  }

  std::FILE* out_;
  ProgressStyle style_;
  std::size_t total_;
  std::size_t done_;      // includes points already in the CSV
  std::size_t failed_;
  std::size_t finished_here_ = 0;  // points run by this process: the rate for the ETA
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

// --- Running --------------------------------------------------------------------------

std::string format_duration(double seconds) {
  if (seconds < 0) return "--";
  const auto total = static_cast<std::uint64_t>(seconds + 0.5);
  const std::uint64_t hours = total / 3600;
  const std::uint64_t minutes = total / 60 % 60;
  const std::uint64_t secs = total % 60;
  if (hours > 0) return fmt::format("{}h{:02}m{:02}s", hours, minutes, secs);
  if (minutes > 0) return fmt::format("{}m{:02}s", minutes, secs);
  return fmt::format("{}s", secs);
}

std::string format_progress(std::size_t done, std::size_t total, std::size_t failed,
                            double elapsed_seconds, double eta_seconds) {
  constexpr std::size_t kWidth = 20;
  std::string bar(kWidth, ' ');
  if (total == 0 || done >= total) {
    bar.assign(kWidth, '=');
  } else {
    const std::size_t filled = done * kWidth / total;
    std::fill_n(bar.begin(), filled, '=');
    bar[filled] = '>';
  }
  return fmt::format("[{}] {}/{} points, {} failed, elapsed {}, ETA {}", bar, done, total, failed,
                     format_duration(elapsed_seconds), format_duration(eta_seconds));
}

std::string SweepSummary::line(const fs::path& output) const {
  std::string text = fmt::format("{} points: {} ok, {} failed, {} skipped (already done)", total, ok,
                                 failed, skipped);
  if (not_run > 0) text += fmt::format(", {} not run (--fail-fast)", not_run);
  return text + fmt::format("; results in {}", output.string());
}

SweepValidation validate_sweep(const SweepSpec& spec, const Shard& shard, const SweepRunner& runner) {
  if (shard.count == 0 || shard.index >= shard.count)
    throw UserError(fmt::format("--shard: expected i/n with 0 <= i < n, got '{}/{}'", shard.index, shard.count));
  SweepValidation v;
  for (const SweepPoint& point : enumerate_points(spec)) {
    if (!shard.contains(point)) continue;
    ++v.points;
    try {
      RunRequest request = make_run_request(spec, point);
      request.validate_only = true;
      (void)runner(request);
    } catch (const UserError& e) {
      v.errors.push_back(fmt::format("point {} ({}): {}", point.index, point_key(spec, point), e.what()));
    } catch (const std::invalid_argument& e) {  // a parameter combination a model rejects
      v.errors.push_back(fmt::format("point {} ({}): {}", point.index, point_key(spec, point), e.what()));
    }
  }
  return v;
}

SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& options,
                       const SweepRunner& runner) {
  if (options.shard.count == 0 || options.shard.index >= options.shard.count) {
    throw UserError(fmt::format("--shard: expected i/n with 0 <= i < n, got '{}/{}'",
                                options.shard.index, options.shard.count));
  }
  std::vector<std::string> parameter_keys;
  for (const SweepParameter& parameter : spec.parameters) parameter_keys.push_back(parameter.key);
  ResultsFile results(options.output, parameter_keys, options.retry_errors);

  // What the CSV already holds, by parameter values (an ok row wins over a failed one).
  std::map<std::vector<std::string>, PointStatus> done;
  for (const ResultsTable::Row& row : results.table().rows) {
    auto [it, inserted] = done.emplace(row.values, row.status);
    if (!inserted && row.status == PointStatus::kOk) it->second = PointStatus::kOk;
  }

  SweepSummary summary;
  std::vector<SweepPoint> todo;
  for (SweepPoint& point : enumerate_points(spec)) {
    if (!options.shard.contains(point)) continue;
    ++summary.total;
    const auto it = done.find(point.values);
    if (it == done.end()) {
      todo.push_back(std::move(point));
      continue;
    }
    ++summary.skipped;
    ++(it->second == PointStatus::kOk ? summary.ok : summary.failed);
  }

  // Points whose configuration takes a kind's chained run (the ideal bounds, c3's
  // concurrent ones: takes_chained_run) after the others: with several workers they
  // would otherwise start beside the sequential point of their case and simulate its
  // run again.
  if (const auto config = std::find(parameter_keys.begin(), parameter_keys.end(), "run.config");
      config != parameter_keys.end()) {
    const std::size_t k = static_cast<std::size_t>(config - parameter_keys.begin());
    std::stable_partition(todo.begin(), todo.end(),
                          [k](const SweepPoint& p) { return !takes_chained_run(p.values[k]); });
  }

  ProgressReporter progress(options.progress, options.progress_style, summary.total,
                            summary.skipped, summary.failed);
  std::mutex mutex;  // guards summary, progress and first_exception
  std::exception_ptr first_exception;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};

  const auto work = [&] {
    try {
      while (!stop) {
        const std::size_t i = next++;
        if (i >= todo.size()) return;
        const SweepPoint& point = todo[i];
        ResultsTable::Row row{point.index, point.values, PointStatus::kOk, "", {}};
        std::vector<std::pair<std::string, std::string>> metrics;
        {
          std::lock_guard lock(mutex);
          ++summary.runs;
        }
        try {
          RunRequest request = make_run_request(spec, point);
          // Points of one case share their isolated runs (c3: c3_base, c3_sp and the
          // CU-partitioned points), kept beside the CSV for this sweep and the next.
          request.isolated_cache = options.output.parent_path() / "isolated-cache";
          metrics = runner(request).metrics;
        } catch (const UserError& e) {
          row.status = PointStatus::kUserError;
          row.error = e.what();
        } catch (const SimulationError& e) {
          row.status = PointStatus::kSimError;
          row.error = e.what();
        } catch (const std::invalid_argument& e) {
          // Models reject parameter combinations only they can judge this way (as in
          // `t3sim run`, where it is a usage error).
          row.status = PointStatus::kUserError;
          row.error = e.what();
        } catch (const std::bad_alloc&) {
          // A point too large for this host fails alone; the sweep goes on (as `t3sim run`).
          row.status = PointStatus::kSimError;
          row.error = "out of host memory while setting up the run";
        } catch (const std::exception& e) {
          row.status = PointStatus::kSimError;
          row.error = fmt::format("internal error: {}", e.what());
        }
        results.append(row, metrics);
        std::lock_guard lock(mutex);
        ++(row.status == PointStatus::kOk ? summary.ok : summary.failed);
        progress.point_finished(point_key(spec, point), row);
        if (row.status != PointStatus::kOk && options.fail_fast) stop = true;
      }
    } catch (...) {
      // Not a point failure (a bug, a full disk): stop the sweep, keep finished rows.
      stop = true;
      std::lock_guard lock(mutex);
      if (!first_exception) first_exception = std::current_exception();
    }
  };

  const unsigned jobs = options.jobs > 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  {
    std::vector<std::jthread> workers;
    for (std::size_t w = 0; w < std::min<std::size_t>(jobs, todo.size()); ++w) workers.emplace_back(work);
  }
  progress.finish();
  if (first_exception) std::rethrow_exception(first_exception);
  results.ensure_header();
  summary.not_run = summary.total - summary.ok - summary.failed;
  return summary;
}

}  // namespace t3sim
