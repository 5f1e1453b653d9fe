#include "sim/log.h"

#include <atomic>
#include <stdexcept>

#include <spdlog/sinks/stdout_sinks.h>

namespace t3sim {

namespace {
std::atomic<spdlog::level::level_enum> g_level{spdlog::level::warn};

spdlog::sink_ptr stderr_sink() {
  static spdlog::sink_ptr sink = [] {
    auto s = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    s->set_pattern("[%l] %n: %v");
    return s;
  }();
  return sink;
}
}  // namespace

void set_log_level(const std::string& level) {
  const auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off")
    throw std::invalid_argument("unknown log level '" + level +
                                "' (expected trace, debug, info, warn, error or off)");
  g_level = lvl;
}

spdlog::level::level_enum log_level() { return g_level.load(); }

std::shared_ptr<spdlog::logger> make_logger(const std::string& name) {
  auto logger = std::make_shared<spdlog::logger>(name, stderr_sink());
  logger->set_level(g_level.load());
  return logger;
}

}  // namespace t3sim
