#pragma once
// The `sweep` and `merge` subcommands of t3sim (see cli/sweep.h for what they do).

#include <CLI/CLI.hpp>

namespace t3sim {

// Adds `sweep` and `merge` to `app`. They run inside app.parse (as CLI11 callbacks)
// and set `exit_code`: 0 if every point of the sweep (shard) is ok, 1 if any point
// failed (its CSV row says why), 2 for a usage or config error (bad sweep file, --set,
// --shard, an output CSV of another sweep, a merge input of another sweep), which
// they print to stderr as "t3sim: error: ..." themselves.
void register_sweep_commands(CLI::App& app, int& exit_code);

}  // namespace t3sim
