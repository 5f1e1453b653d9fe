#pragma once
// The three kinds of failure, kept apart because they mean different things to a user:
//   UserError        bad config, trace or command line: exit code 2, one clear line.
//   SimulationError  the simulated system went wrong (deadlock, livelock): exit code 1,
//                    with a report of what each component had in flight.
//   InternalError    a model's invariant broke (T3SIM_CHECK, a bug or an input no check
//                    at the edge caught): a SimulationError naming the component and the
//                    tick, to which the simulator adds its in-flight report. Never an abort.

#include <stdexcept>
#include <string>

#include "sim/time.h"

namespace t3sim {

// Where a value came from: a file and line, or a description such as "--set".
struct SourceLocation {
  std::string file;  // empty: built-in default
  int line = 0;      // 0: not from a line of a file (e.g. a --set override)
  int column = 0;
  std::string str() const;  // "sys.yaml:14", "--set", "<default>"
};

class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "sys.yaml:14: system.gpu.l2.asoc: unknown key (did you mean 'assoc'?)"
class ConfigError : public UserError {
 public:
  ConfigError(SourceLocation where, std::string key, std::string message);
  const SourceLocation& where() const { return where_; }
  const std::string& key() const { return key_; }
  const std::string& message() const { return message_; }

 private:
  SourceLocation where_;
  std::string key_;
  std::string message_;
};

class SimulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A SimulationError from a broken invariant rather than from the simulated system
// (a deadlock is the system's; a check failing is the simulator's).
class InternalError : public SimulationError {
 public:
  using SimulationError::SimulationError;
};

// Internal invariant violated: throws InternalError("internal error at t=... in
// <component>: <message> (<file>:<line>)").
[[noreturn]] void internal_error(Tick now, const std::string& component, const std::string& message,
                                 const char* file, int line);

}  // namespace t3sim

// Checks an internal invariant inside a Component member (uses now() and name()).
#define T3SIM_CHECK(cond, msg) T3SIM_CHECK_FOR(*this, cond, msg)
// The same in a part of a component that is no component itself (a stage of the L2, the
// network's mirror): the failure names `owner`, at its time.
#define T3SIM_CHECK_FOR(owner, cond, msg)                                             \
  do {                                                                                \
    if (!(cond)) ::t3sim::internal_error((owner).now(), (owner).name(),               \
                                         std::string("check failed: " #cond ": ") + (msg), \
                                         __FILE__, __LINE__);                         \
  } while (0)
