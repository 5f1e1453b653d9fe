#pragma once
// The sweep's output CSV, opened for appending (run_sweep writes each finished point
// through it). Internal to cli/; sweep_results.cpp holds its body beside the CSV's
// reading and writing.

#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/sweep.h"

namespace t3sim {

// Every append is one write(2) of a whole line followed by fsync, so a crash leaves at
// most a torn last line, which the next run drops. Thread-safe.
class ResultsFile {
 public:
  // Loads what `path` holds already (its parameter columns must be `parameter_keys`;
  // retry_errors drops its failed rows), then opens it for appending. UserError for a
  // path that is not a regular file, or results of other parameters.
  ResultsFile(std::filesystem::path path, std::vector<std::string> parameter_keys, bool retry_errors);
  ~ResultsFile();
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;

  const ResultsTable& table() const { return table_; }
  // Appends a finished point, its metrics put in the header's order (new names widen
  // the header, which rewrites the file once).
  void append(ResultsTable::Row row, const std::vector<std::pair<std::string, std::string>>& metrics);
  // A sweep whose rows were all skipped (or that had no points) still leaves a CSV.
  void ensure_header();

 private:
  void load_existing(bool retry_errors);
  void open_for_append();
  void write_durably(std::string_view text);

  std::filesystem::path path_;
  ResultsTable table_;
  bool header_on_disk_ = false;
  int fd_ = -1;
  std::mutex mutex_;
};

}  // namespace t3sim
