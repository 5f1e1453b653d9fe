#pragma once
// Shared helpers of the libFuzzer targets (fuzz/README.md).
//
// An input is text cut into positional sections by separator lines: a line that
// starts with "#@@" ends one section and starts the next (the rest of the line is
// ignored; to YAML it is a comment, so a mutated separator stays valid YAML). Each
// target says what its sections are: a config file, its `base:` file, a trace, a
// list of `--set` overrides, ...
//
// Files go to a scratch directory made once per process under $TMPDIR:
//
//   <scratch>/configs/memory, examples       -> symlinks to the source tree's
//   <scratch>/configs/systems/*.yaml          -> symlinks to each shipped file, beside
//   <scratch>/configs/workloads/..., sweeps/     which the targets write their own
//   <scratch>/traces                          -> symlink to the source tree's traces/
//
// so a fuzzed file may say `base: table1.yaml` or `base: ../memory/hbm2.yaml` exactly as
// a shipped one does, and the deep validation of a real system is reached. Targets
// use absolute paths (path()); the working directory is left alone, since libFuzzer
// reads its corpus and writes its artifacts relative to it. Nothing is ever written
// into the source tree.
//
// Outcomes: t3sim::UserError (ConfigError, TraceError, ...) is the normal answer to a
// bad input, and so is std::invalid_argument where the CLI maps it to exit 2. Any
// other exception escaping is a finding: it is printed and the target aborts, which
// libFuzzer reports as a crash with the input saved.

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <new>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <string_view>
#include <typeinfo>
#include <vector>

#include <cxxabi.h>

#include "sim/config.h"
#include "sim/error.h"
#include "sim/log.h"

#ifndef T3SIM_SOURCE_DIR
#error "T3SIM_SOURCE_DIR must name the source tree (fuzz/CMakeLists.txt defines it)"
#endif

namespace t3sim_fuzz {

namespace fs = std::filesystem;

inline constexpr std::string_view kSeparator = "#@@";

// The sections of an input, split at separator lines.
inline std::vector<std::string> split_sections(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> sections(1);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    const std::size_t next = end == std::string_view::npos ? text.size() : end + 1;
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    if (line.starts_with(kSeparator)) {
      sections.emplace_back();
    } else {
      sections.back().append(text.substr(pos, next - pos));
    }
    pos = next;
  }
  return sections;
}

// The non-empty lines of a section (e.g. one `--set` assignment per line).
inline std::vector<std::string> lines_of(const std::string& section) {
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < section.size()) {
    std::size_t end = section.find('\n', pos);
    if (end == std::string::npos) end = section.size();
    std::string line = section.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(std::move(line));
    pos = end + 1;
  }
  return lines;
}

// The per-process scratch directory described above; removed at exit.
class Scratch {
 public:
  static Scratch& get() {
    // Never destroyed: the atexit handler below still needs the path.
    static Scratch* scratch = new Scratch;
    return *scratch;
  }

  const fs::path& root() const { return root_; }
  // The absolute path of a scratch file.
  std::string path(const std::string& relative) const { return (root_ / relative).string(); }

  // Write `text` to `relative` (under the scratch root), or remove it when
  // `present` is false, so no file outlives the input that wrote it.
  void put(const std::string& relative, const std::string& text, bool present = true) {
    const fs::path path = root_ / relative;
    std::error_code ec;
    if (!present) {
      fs::remove(path, ec);
      return;
    }
    fs::create_directories(path.parent_path(), ec);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out) {
      std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
      std::abort();
    }
  }

 private:
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/t3sim-fuzz.XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) {
      std::perror("fuzz: mkdtemp");
      std::abort();
    }
    root_ = templ;
    const fs::path src = fs::path(T3SIM_SOURCE_DIR);
    const fs::path configs = src / "configs";
    fs::create_directories(root_ / "configs");
    // Folders the targets write into get one symlink per shipped entry; the others
    // are linked whole.
    for (const auto& entry : fs::directory_iterator(configs)) {
      const std::string name = entry.path().filename().string();
      if (name == "systems" || name == "workloads" || name == "sweeps") {
        fs::create_directories(root_ / "configs" / name);
        for (const auto& item : fs::directory_iterator(entry.path()))
          fs::create_symlink(item.path(), root_ / "configs" / name / item.path().filename());
      } else {
        fs::create_symlink(entry.path(), root_ / "configs" / name);
      }
    }
    fs::create_symlink(src / "traces", root_ / "traces");
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(Scratch::get().root_, ec);
    });
  }

  fs::path root_;
};

inline std::string type_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : type.name();
  std::free(demangled);
  return name;
}

// An exception the readers must never let escape: print it and abort (a finding).
[[noreturn]] inline void finding(const char* what, const std::type_info& type) {
  std::fprintf(stderr, "\n==== t3sim fuzz finding: uncaught %s: %s\n", type_name(type).c_str(), what);
  std::abort();
}

// Run `body`; a UserError (or, with `invalid_argument_ok`, std::invalid_argument,
// which the CLI reports as a bad input too) is a normal outcome and returns false;
// success returns true; anything else is a finding.
template <typename Body>
bool expect_user_error(Body&& body, bool invalid_argument_ok = true) {
  try {
    body();
    return true;
  } catch (const t3sim::UserError&) {
    return false;
  } catch (const std::invalid_argument& e) {
    if (!invalid_argument_ok) finding(e.what(), typeid(e));
    return false;
  } catch (const std::exception& e) {
    finding(e.what(), typeid(e));
  } catch (...) {
    finding("(not a std::exception)", typeid(void));
  }
}

// A property the target checks failed: print it and abort.
[[noreturn]] inline void property_failed(const std::string& what) {
  std::fprintf(stderr, "\n==== t3sim fuzz finding: %s\n", what.c_str());
  std::abort();
}

// Quiet logs (a run's warnings would flood the fuzzer's output).
inline void quiet() { t3sim::set_log_level("off"); }

// Structural equality of two config trees, ignoring source locations.
// Where two trees first differ ("" if nowhere): a path like "system.memory.l2[1]"
// with what each side holds there, so a finding names the key.
inline std::string first_difference(const t3sim::ConfigValue& a, const t3sim::ConfigValue& b,
                                    const std::string& path = "") {
  using Kind = t3sim::ConfigValue::Kind;
  const auto describe = [](const t3sim::ConfigValue& v) -> std::string {
    switch (v.kind) {
      case Kind::kNull: return "null";
      case Kind::kScalar: {
        std::string shown = "scalar '";
        for (const char c : v.scalar) {
          if (c >= 0x20 && c < 0x7f) shown += c;
          else shown += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        }
        return shown + "'";
      }
      case Kind::kList: return "a list of " + std::to_string(v.list.size());
      case Kind::kMap: return "a map of " + std::to_string(v.map.size());
    }
    return "?";
  };
  const std::string where = path.empty() ? std::string("(root)") : path;
  if (a.kind != b.kind || (a.kind == Kind::kScalar && a.scalar != b.scalar) ||
      (a.kind == Kind::kList && a.list.size() != b.list.size()) ||
      (a.kind == Kind::kMap && a.map.size() != b.map.size()))
    return where + ": " + describe(a) + " vs " + describe(b);
  if (a.kind == Kind::kList) {
    for (std::size_t i = 0; i < a.list.size(); ++i) {
      std::string d = first_difference(a.list[i], b.list[i], path + "[" + std::to_string(i) + "]");
      if (!d.empty()) return d;
    }
  }
  if (a.kind == Kind::kMap) {
    for (std::size_t i = 0; i < a.map.size(); ++i) {
      const std::string key = path.empty() ? a.map[i].first : path + "." + a.map[i].first;
      if (a.map[i].first != b.map[i].first) return key + ": key vs '" + b.map[i].first + "'";
      std::string d = first_difference(a.map[i].second, b.map[i].second, key);
      if (!d.empty()) return d;
    }
  }
  return {};
}

inline bool same_tree(const t3sim::ConfigValue& a, const t3sim::ConfigValue& b) {
  return first_difference(a, b).empty();
}

}  // namespace t3sim_fuzz
