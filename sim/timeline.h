#pragma once
// Timeline in Chrome trace-event format (JSON), which Perfetto (ui.perfetto.dev)
// and chrome://tracing open. A track is named hierarchically like the components:
// the first name segment is the process ("gpu3"), the rest the thread
// ("link.next"), so each GPU is one process with a track per unit.
//
// Recording is off unless enabled, and then bounded by max_events: beyond it,
// events are counted as dropped (reported in the file's metadata) instead of
// growing the file without bound.
//
// A partitioned simulation records into one lane per partition (set_lanes; the
// simulator says which lane a host thread records into), each bounded by its share
// of max_events, so what is recorded and dropped does not depend on how partitions
// are spread over threads. Tracks must then all exist before the run (track() is
// refused while lanes record concurrently). Timestamps are written in microseconds with
// picosecond precision.

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/time.h"

namespace t3sim {

class Timeline {
 public:
  using TrackId = std::uint32_t;

  Timeline() = default;
  void enable(std::uint64_t max_events = 1'000'000);
  bool enabled() const { return enabled_; }

  // Contract: the same name always gives the same id. Cheap enough to call at
  // construction time; components keep the id.
  TrackId track(std::string_view hierarchical_name);

  // A slice [start, end) on a track ("ph":"X").
  void slice(TrackId track, std::string_view name, Tick start, Tick end);
  // A counter sample ("ph":"C"); the counter is drawn as a step function.
  void counter(TrackId track, std::string_view name, Tick at, double value);
  // A point event ("ph":"i").
  void instant(TrackId track, std::string_view name, Tick at);

  std::uint64_t recorded() const;
  std::uint64_t dropped() const;

  // One lane per partition (at least 1); call before recording. max_events is split
  // evenly between them.
  void set_lanes(std::uint32_t lanes);
  // The lane this host thread records into (the simulator sets it per window).
  static void set_current_lane(std::uint32_t lane) { current_lane_ = lane; }
  // While frozen (a partitioned run), track() only finds existing tracks.
  void freeze_tracks(bool frozen) { tracks_frozen_ = frozen; }

  // Write {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}} with
  // process/thread name metadata. Writes to a temporary file and renames it, so a
  // crash never leaves a half-written timeline.json looking complete. Counter events
  // are named "<thread>.<name>" (Chrome keys counters by process and name only) and
  // carry their value as args {name: value}. Throws UserError if the file can't be
  // written.
  void write(const std::filesystem::path& path) const;

 private:
  struct Record {  // 32 bytes: a full timeline holds a million of them
    Tick start;
    union {
      Tick::rep end_ps;  // 'X'
      double value;      // 'C'
    };
    TrackId track;
    std::uint32_t name;  // index into names_
    char phase;          // 'X', 'C', 'i'
  };
  struct Track {
    std::uint32_t pid;
    std::uint32_t tid;
    std::string process;
    std::string thread;
  };
  // Lets the maps be searched with a string_view, so recording allocates nothing.
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <class V>
  using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

  struct InternHint {
    const char* data = nullptr;
    std::size_t size = 0;
    std::uint32_t id = 0;
  };
  struct Lane {
    std::uint64_t max_events = 0;
    std::uint64_t dropped = 0;
    std::vector<Record> events;
    std::vector<std::string> names;  // Record::name indexes these
    StringMap<std::uint32_t> name_ids;
    std::array<InternHint, 16> intern_hints{};
  };
  static thread_local std::uint32_t current_lane_;
  Lane& lane() { return lanes_[current_lane_ < lanes_.size() ? current_lane_ : 0]; }
  // The lane's next record with these fields set, or nullptr when recording is off
  // or the lane is full.
  Record* admit(char phase, TrackId track, std::string_view name, Tick at);
  static std::uint32_t intern(Lane& lane, std::string_view name);
  bool enabled_ = false;
  bool tracks_frozen_ = false;
  std::uint64_t max_events_ = 0;
  // intern()'s recent answers (Lane::intern_hints) are keyed by the name's address and
  // length (callers pass string literals), confirmed by comparing the text: no hashing
  // of the name per record.
  std::vector<Lane> lanes_ = std::vector<Lane>(1);
  std::vector<Track> tracks_;
  StringMap<TrackId> track_ids_;
  StringMap<std::uint32_t> process_ids_;
  std::vector<std::uint32_t> threads_per_process_;  // indexed by pid - 1
};

}  // namespace t3sim
