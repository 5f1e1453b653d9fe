#include "sim/timeline.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/output.h"

namespace t3sim {

namespace {

// A JSON string literal, quotes included. Invalid UTF-8 is replaced rather than
// failing the whole write.
std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Picoseconds as a decimal count of microseconds, exact: 1234567 ps -> "1.234567",
// 2000000 ps -> "2". Written from the integer, so no rounding and identical output
// on every platform.
void append_us(fmt::memory_buffer& buf, Tick t) {
  const Tick::rep whole = t.ps() / 1'000'000;
  Tick::rep frac = t.ps() % 1'000'000;
  if (frac == 0) {
    fmt::format_to(std::back_inserter(buf), "{}", whole);
    return;
  }
  int digits = 6;
  while (frac % 10 == 0) {
    frac /= 10;
    --digits;
  }
  fmt::format_to(std::back_inserter(buf), "{}.{:0{}}", whole, frac, digits);
}

void check_track(std::size_t track, std::size_t num_tracks) {
  if (track >= num_tracks) {
    throw std::logic_error(fmt::format("timeline: unknown track id {}", track));
  }
}

}  // namespace

thread_local std::uint32_t Timeline::current_lane_ = 0;

Timeline::TrackId Timeline::track(std::string_view hierarchical_name) {
  if (const auto it = track_ids_.find(hierarchical_name); it != track_ids_.end()) return it->second;
  if (tracks_frozen_) {
    throw std::logic_error(fmt::format("timeline: track '{}' registered during a partitioned run "
                                       "(register tracks when the component is built)",
                                       hierarchical_name));
  }

  const std::size_t dot = hierarchical_name.find('.');
  const std::string_view process = hierarchical_name.substr(0, dot);
  const std::string_view thread =
      dot == std::string_view::npos ? hierarchical_name : hierarchical_name.substr(dot + 1);

  auto process_it = process_ids_.find(process);
  if (process_it == process_ids_.end()) {
    const auto pid = static_cast<std::uint32_t>(process_ids_.size() + 1);
    process_it = process_ids_.emplace(std::string(process), pid).first;
    threads_per_process_.push_back(0);
  }
  const std::uint32_t pid = process_it->second;
  const std::uint32_t tid = ++threads_per_process_[pid - 1];

  const auto id = static_cast<TrackId>(tracks_.size());
  tracks_.push_back(Track{pid, tid, std::string(process), std::string(thread)});
  track_ids_.emplace(std::string(hierarchical_name), id);
  return id;
}

void Timeline::enable(std::uint64_t max_events) {
  enabled_ = true;
  max_events_ = max_events;
  set_lanes(static_cast<std::uint32_t>(lanes_.size()));
}

void Timeline::set_lanes(std::uint32_t lanes) {
  if (lanes == 0) throw std::logic_error("timeline: at least one lane");
  lanes_.resize(lanes);
  for (Lane& l : lanes_) {
    l.max_events = max_events_ / lanes;
    // Reserving up front spares the copies of a growing vector; untouched reserved
    // pages cost nothing. Capped so a huge limit doesn't reserve gigabytes.
    constexpr std::uint64_t kMaxReserve = 1u << 20;
    if (enabled_) l.events.reserve(static_cast<std::size_t>(std::min(l.max_events, kMaxReserve)));
  }
}

std::uint64_t Timeline::recorded() const {
  std::uint64_t n = 0;
  for (const Lane& l : lanes_) n += l.events.size();
  return n;
}

std::uint64_t Timeline::dropped() const {
  std::uint64_t n = 0;
  for (const Lane& l : lanes_) n += l.dropped;
  return n;
}

Timeline::Record* Timeline::admit(char phase, TrackId track, std::string_view name, Tick at) {
  if (!enabled_) return nullptr;
  check_track(track, tracks_.size());
  Lane& l = lane();
  if (l.events.size() >= l.max_events) {
    ++l.dropped;
    return nullptr;
  }
  Record& r = l.events.emplace_back();
  r.phase = phase;
  r.track = track;
  r.name = intern(l, name);
  r.start = at;
  return &r;
}

std::uint32_t Timeline::intern(Lane& lane, std::string_view name) {
  InternHint& hint = lane.intern_hints[(reinterpret_cast<std::uintptr_t>(name.data()) >> 3) % lane.intern_hints.size()];
  if (hint.data == name.data() && hint.size == name.size() && lane.names[hint.id] == name) return hint.id;
  std::uint32_t id;
  if (const auto it = lane.name_ids.find(name); it != lane.name_ids.end()) {
    id = it->second;
  } else {
    id = static_cast<std::uint32_t>(lane.names.size());
    lane.names.emplace_back(name);
    lane.name_ids.emplace(std::string(name), id);
  }
  hint = InternHint{name.data(), name.size(), id};
  return id;
}

void Timeline::slice(TrackId track, std::string_view name, Tick start, Tick end) {
  if (enabled_ && end < start) {
    check_track(track, tracks_.size());
    throw std::logic_error(fmt::format("timeline: slice '{}' on track '{}.{}' ends ({} ps) before it starts ({} ps)",
                                       name, tracks_[track].process, tracks_[track].thread, end.ps(),
                                       start.ps()));
  }
  if (Record* r = admit('X', track, name, start)) r->end_ps = end.ps();
}

void Timeline::counter(TrackId track, std::string_view name, Tick at, double value) {
  // JSON has no NaN or infinity; a counter holding one is a bug at the caller.
  if (enabled_ && !std::isfinite(value)) {
    throw std::logic_error(fmt::format("timeline: counter '{}' set to non-finite value", name));
  }
  if (Record* r = admit('C', track, name, at)) r->value = value;
}

void Timeline::instant(TrackId track, std::string_view name, Tick at) {
  admit('i', track, name, at);
}

void Timeline::write(const std::filesystem::path& path) const {
  write_file_atomically(path, [this](std::ostream& out) {
    fmt::memory_buffer buf;
    auto it = std::back_inserter(buf);
    // Timelines can hold a million events: hand the text over in chunks instead of
    // building one document in memory.
    const auto flush_if_full = [&] {
      if (buf.size() >= (1u << 20)) {
        out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
        buf.clear();
      }
    };


    fmt::format_to(it, "{{\"traceEvents\":[\n");
    bool first = true;
    const auto separator = [&] {
      if (!first) fmt::format_to(it, ",\n");
      first = false;
    };

    std::uint32_t named_processes = 0;
    for (const Track& t : tracks_) {
      if (t.pid > named_processes) {  // pids are handed out in track order
        named_processes = t.pid;
        separator();
        fmt::format_to(it, R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})",
                       t.pid, json_string(t.process));
      }
      separator();
      fmt::format_to(it, R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                     t.pid, t.tid, json_string(t.thread));
    }

    // Lanes in order (partition 0's records, then partition 1's...): the file does
    // not depend on how the partitions were spread over host threads.
    for (const Lane& lane : lanes_) {
    std::vector<std::string> quoted_names;
    quoted_names.reserve(lane.names.size());
    for (const std::string& name : lane.names) quoted_names.push_back(json_string(name));
    // Counter names are per (track, name) pair: quote each pair once.
    std::unordered_map<std::uint64_t, std::string> counter_names;
    for (const Record& r : lane.events) {
      const Track& t = tracks_[r.track];
      separator();
      switch (r.phase) {
        case 'X':
          fmt::format_to(it, R"({{"ph":"X","name":{},"pid":{},"tid":{},"ts":)", quoted_names[r.name],
                         t.pid, t.tid);
          append_us(buf, r.start);
          fmt::format_to(it, R"(,"dur":)");
          append_us(buf, Tick(r.end_ps) - r.start);
          fmt::format_to(it, "}}");
          break;
        case 'i':
          fmt::format_to(it, R"({{"ph":"i","s":"t","name":{},"pid":{},"tid":{},"ts":)",
                         quoted_names[r.name], t.pid, t.tid);
          append_us(buf, r.start);
          fmt::format_to(it, "}}");
          break;
        case 'C': {
          const std::uint64_t key = (std::uint64_t{r.track} << 32) | r.name;
          auto name_it = counter_names.find(key);
          if (name_it == counter_names.end()) {
            name_it = counter_names.emplace(key, json_string(t.thread + "." + lane.names[r.name])).first;
          }
          fmt::format_to(it, R"({{"ph":"C","name":{},"pid":{},"tid":{},"ts":)", name_it->second, t.pid,
                         t.tid);
          append_us(buf, r.start);
          fmt::format_to(it, R"(,"args":{{{}:{}}}}})", quoted_names[r.name], r.value);
          break;
        }
      }
      flush_if_full();
    }
    }

    fmt::format_to(it, "\n],\n\"displayTimeUnit\":\"ns\",\n");
    fmt::format_to(it, R"("otherData":{{"dropped_events":{},"recorded_events":{},"time_unit":"us"}})",
                   dropped(), recorded());
    fmt::format_to(it, "\n}}\n");
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
  });
}

}  // namespace t3sim
