#include "sim/output.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "sim/error.h"

namespace t3sim {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Unique per process and call, so concurrent writers (sweep points running in
// threads or processes) never share a temporary file. The leading dot hides it.
fs::path temporary_path_for(const fs::path& path) {
  static std::atomic<std::uint64_t> counter{0};
  return path.parent_path() /
         fmt::format(".{}.tmp.{}.{}", path.filename().string(), ::getpid(), counter++);
}

// Deterministic text: sorted keys, two-space indent, invalid UTF-8 replaced instead
// of failing the run at its very end.
std::string dump(const json& j) {
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

json metadata_json(const RunMetadata& m) {
  return json{{"version", m.version},
              {"git_revision", m.git_revision},
              {"command_line", m.command_line},
              {"configuration", m.configuration},
              {"seed", m.seed},
              {"resolved_config", m.resolved_config},
              {"events", m.events},
              {"simulated_time_ps", m.simulated_time.ps()}};
}

json run_info_json(const RunMetadata& m) {
  return json{{"wall_seconds", m.wall_seconds},
              {"events", m.events},
              {"events_per_second",
               m.wall_seconds > 0 ? static_cast<double>(m.events) / m.wall_seconds : 0.0},
              {"partitions", m.partitions},
              {"threads", m.threads},
              {"peak_rss_bytes", m.peak_rss_bytes},
              {"host", host_name()}};
}

void remove_stale(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
  if (ec) throw UserError(fmt::format("cannot remove stale '{}': {}", path.string(), ec.message()));
}

}  // namespace

void write_file_atomically(const fs::path& path,
                           const std::function<void(std::ostream&)>& write_content) {
  const fs::path temporary = temporary_path_for(path);
  try {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw UserError(fmt::format("cannot write '{}': {}", path.string(), std::strerror(errno)));
    }
    write_content(out);
    out.close();  // flushes; a full disk shows up here
    if (!out) throw UserError(fmt::format("cannot write '{}': write failed", path.string()));
    std::error_code ec;
    fs::rename(temporary, path, ec);
    if (ec) throw UserError(fmt::format("cannot write '{}': {}", path.string(), ec.message()));
  } catch (...) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw;
  }
}

void write_file_atomically(const fs::path& path, const std::string& content) {
  write_file_atomically(path, [&content](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  });
}

void check_output_directory(const fs::path& dir, std::uint64_t bytes_needed) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw UserError(fmt::format("cannot create output directory '{}': {}", dir.string(),
                                ec ? ec.message() : "not a directory"));
  }
  const fs::path probe = dir / ".t3sim-write-probe";
  {
    std::ofstream out(probe, std::ios::binary | std::ios::trunc);
    if (out) out << "probe\n";
    if (out) out.close();
    if (!out) {
      const int err = errno;
      fs::remove(probe, ec);
      throw UserError(fmt::format("cannot write in output directory '{}': {}", dir.string(),
                                  err != 0 ? std::strerror(err) : "write failed"));
    }
  }
  fs::remove(probe, ec);
  const fs::space_info space = fs::space(dir, ec);
  if (!ec && space.available < bytes_needed)
    throw UserError(fmt::format("output directory '{}' has {} MB free; the run's outputs need about {} MB",
                                dir.string(), space.available / 1000000, (bytes_needed + 999999) / 1000000));
}

void write_run_outputs(const fs::path& dir, const RunMetadata& metadata, const json& results,
                       const StatsRegistry& stats, const Timeline& timeline, Tick end) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw UserError(fmt::format("cannot create output directory '{}': {}", dir.string(),
                                ec ? ec.message() : "not a directory"));
  }
  // Until the new results.json lands, the directory must not look complete.
  remove_stale(dir / "results.json");

  write_file_atomically(dir / "stats.csv", [&](std::ostream& out) { stats.write_csv(out, end); });
  if (timeline.enabled()) {
    timeline.write(dir / "timeline.json");
  } else {
    remove_stale(dir / "timeline.json");
  }
  write_file_atomically(dir / "run_info.json", dump(run_info_json(metadata)));

  const json document = {
      {"metadata", metadata_json(metadata)}, {"results", results}, {"stats", stats.to_json(end)}};
  write_file_atomically(dir / "results.json", dump(document));
}

}  // namespace t3sim
