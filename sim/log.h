#pragma once
// Logging: spdlog, always to stderr (stdout carries only the result summary).
// Each component logs under its hierarchical name ("gpu3.mc7"). Loggers are not put
// in spdlog's global registry, so simulations on different sweep threads never
// collide on a name.

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

namespace t3sim {

// The level for loggers made from now on and the default logger: "trace", "debug",
// "info", "warn", "error", "off". Throws std::invalid_argument on an unknown name.
void set_log_level(const std::string& level);
spdlog::level::level_enum log_level();

// A logger writing to the shared stderr sink.
std::shared_ptr<spdlog::logger> make_logger(const std::string& name);

}  // namespace t3sim
