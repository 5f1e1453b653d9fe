// Text form of workgroup traces: parser and writer (traces/FORMAT.md).

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <span>
#include <optional>
#include <ostream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/config.h"
#include "trace/trace.h"

namespace t3sim {
namespace {

constexpr std::string_view kFlagWords[] = {"cached", "uncached", "update", "ll", "ll128", "unfenced", "carry"};
constexpr std::string_view kOpWords[] = {"compute", "load", "store", "wait", "set", "loop", "end"};
constexpr std::string_view kTopWords[] = {"kernel", "attr", "resources", "params", "program", "wgs", "wg"};

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool is_reserved(std::string_view s) {
  return s == "all" || std::find(std::begin(kFlagWords), std::end(kFlagWords), s) != std::end(kFlagWords);
}

std::string suggest(std::string_view word, std::initializer_list<std::span<const std::string_view>> lists) {
  std::vector<std::string> candidates;
  for (auto list : lists) candidates.insert(candidates.end(), list.begin(), list.end());
  const std::string best = closest_match(word, candidates);  // the config reader's did-you-mean
  return best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
}

// An unsigned integer, decimal or 0x-hex; nullopt if malformed or above `max`.
std::optional<std::uint64_t> parse_unsigned(std::string_view s, std::uint64_t max = UINT64_MAX) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return std::nullopt;
    // d > max first: (max - d) would wrap (a single digit above a small max got in).
    if (static_cast<std::uint64_t>(d) > max ||
        v > (max - static_cast<std::uint64_t>(d)) / static_cast<std::uint64_t>(base))
      return std::nullopt;
    v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
  }
  return v;
}

struct OpenLoop {
  std::uint32_t op;
  int line;
  std::string var;
};

class Parser {
 public:
  Parser(std::string_view text, std::string file) : text_(text) { trace_.source = std::move(file); }

  KernelTrace run() {
    std::size_t pos = 0;
    while (pos <= text_.size()) {
      std::size_t eol = text_.find('\n', pos);
      if (eol == std::string_view::npos) eol = text_.size();
      ++line_;
      std::string_view raw = text_.substr(pos, eol - pos);
      pos = eol + 1;
      if (const std::size_t hash = raw.find('#'); hash != std::string_view::npos) raw = raw.substr(0, hash);
      handle_line(trim(raw));
      if (eol == text_.size()) break;
    }
    finish();
    return std::move(trace_);
  }

 private:
  static std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
  }

  static std::vector<std::string_view> split(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      std::size_t j = i;
      while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (j > i) out.push_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }

  [[noreturn]] void fail(const std::string& message, int at_line = -1) const {
    throw TraceError(SourceLocation{trace_.source, at_line < 0 ? line_ : at_line, 0}, message);
  }

  void handle_line(std::string_view line) {
    if (line.empty()) return;
    const std::vector<std::string_view> tok = split(line);
    if (!have_header_) {
      if (tok[0] != "t3trace") {
        fail(fmt::format("missing header: expected 't3trace {}' as the first line, found '{}'",
                         kTraceFormatVersion, tok[0]));
      }
      if (tok.size() != 2) fail(fmt::format("expected 't3trace {}'", kTraceFormatVersion));
      const auto v = parse_unsigned(tok[1]);
      if (!v) fail(fmt::format("bad version '{}' (expected 't3trace {}')", tok[1], kTraceFormatVersion));
      if (*v != static_cast<std::uint64_t>(kTraceFormatVersion)) {
        fail(fmt::format("unsupported trace format version {} (this build reads version {})", *v,
                         kTraceFormatVersion));
      }
      have_header_ = true;
      return;
    }
    if (in_program_) {
      handle_op(tok);
      return;
    }
    const std::string_view word = tok[0];
    if (word == "t3trace") fail("a second 't3trace' header");
    if (word == "kernel") {
      if (have_kernel_) fail("a second 'kernel' line (one kernel per file)");
      if (tok.size() != 2) fail("expected 'kernel NAME'");
      trace_.name = std::string(tok[1]);
      have_kernel_ = true;
      return;
    }
    if (!have_kernel_) fail(fmt::format("expected 'kernel NAME' before '{}'", word));
    if (word == "attr") {
      if (have_wgs_) fail("'attr' after 'wgs' (metadata goes before the programs' WGs)");
      if (tok.size() < 2) fail("expected 'attr KEY VALUE'");
      std::string_view rest = line.substr(4);
      rest = trim(rest).substr(tok[1].size());
      trace_.attrs.emplace_back(std::string(tok[1]), std::string(trim(rest)));
    } else if (word == "resources") {
      handle_resources(tok);
    } else if (word == "params") {
      if (have_params_) fail("a second 'params' line");
      if (!trace_.programs.empty()) fail("'params' must come before the first program");
      for (std::size_t i = 1; i < tok.size(); ++i) {
        check_new_name(tok[i], "parameter");
        trace_.params.emplace_back(tok[i]);
      }
      if (trace_.params.size() >= kTraceMaxVars) fail(fmt::format("at most {} parameters", kTraceMaxVars - 1));
      have_params_ = true;
    } else if (word == "program") {
      if (have_wgs_) fail("'program' after 'wgs' (programs come before the WG list)");
      if (tok.size() != 2 || !is_identifier(tok[1])) fail("expected 'program NAME' (NAME a letter then letters, digits, _)");
      if (trace_.find_program(tok[1]) >= 0) fail(fmt::format("a second program called '{}'", tok[1]));
      if (trace_.programs.size() >= 65535) fail("too many programs");
      program_ = TraceProgram{};
      program_.name = std::string(tok[1]);
      program_line_ = line_;
      in_program_ = true;
    } else if (word == "wgs") {
      if (have_wgs_) fail("a second 'wgs' line");
      if (!have_resources_) fail("expected 'resources ...' before 'wgs'");
      if (trace_.programs.empty()) fail("expected at least one 'program' before 'wgs'");
      if (tok.size() != 2) fail("expected 'wgs COUNT'");
      const auto n = parse_unsigned(tok[1], kTraceMaxWgs);
      if (!n || *n == 0) fail(fmt::format("bad WG count '{}' (expected an integer in [1, {}])", tok[1], kTraceMaxWgs));
      declared_wgs_ = *n;
      // The count is only a promise until the 'wg' lines arrive (one line each): reserve
      // for at most a million up front, so a huge count in a short file costs nothing
      // before it fails with "'wgs N' declared but M 'wg' lines follow" (issue 21, C11).
      const std::uint64_t reserve = std::min<std::uint64_t>(*n, 1u << 20);
      trace_.wg_program.reserve(reserve);
      trace_.wg_params.reserve(reserve * trace_.params.size());
      have_wgs_ = true;
      wgs_line_ = line_;
    } else if (word == "wg") {
      handle_wg(tok);
    } else if (word == "end") {
      fail("'end' outside a program");
    } else if (std::find(std::begin(kOpWords), std::end(kOpWords), word) != std::end(kOpWords)) {
      fail(fmt::format("op '{}' outside a program (expected 'program NAME' first)", word));
    } else {
      fail(fmt::format("unknown directive '{}'{} (expected one of kernel, attr, resources, params, program, wgs, wg)",
                       word, suggest(word, {kTopWords, kOpWords})));
    }
  }

  void check_new_name(std::string_view name, const char* what) const {
    if (!is_identifier(name)) {
      fail(fmt::format("bad {} name '{}' (expected a letter or _ then letters, digits, _)", what, name));
    }
    if (is_reserved(name)) fail(fmt::format("'{}' is a reserved word and cannot name a {}", name, what));
    if (std::find(trace_.params.begin(), trace_.params.end(), name) != trace_.params.end()) {
      fail(fmt::format("'{}' is already a parameter", name));
    }
    for (const OpenLoop& l : loops_) {
      if (l.var == name) fail(fmt::format("'{}' is already the variable of an enclosing loop", name));
    }
  }

  void handle_resources(const std::vector<std::string_view>& tok) {
    if (have_resources_) fail("a second 'resources' line");
    bool have_wfs = false;
    bool have_threads = false;
    TraceResources& r = trace_.resources;
    for (std::size_t i = 1; i < tok.size(); ++i) {
      const std::size_t eq = tok[i].find('=');
      if (eq == std::string_view::npos) fail(fmt::format("expected KEY=VALUE in 'resources', found '{}'", tok[i]));
      const std::string_view key = tok[i].substr(0, eq);
      const std::string_view value = tok[i].substr(eq + 1);
      auto number = [&](std::uint64_t max) {
        const auto v = parse_unsigned(value, max);
        if (!v) fail(fmt::format("resources: bad number '{}' for {} (expected an integer in [0, {}])", value, key, max));
        return *v;
      };
      if (key == "wfs") {
        r.wfs_per_wg = static_cast<std::uint32_t>(number(1024));
        have_wfs = true;
      } else if (key == "threads") {
        r.threads_per_wg = static_cast<std::uint32_t>(number(1u << 20));
        have_threads = true;
      } else if (key == "regs_per_thread") {
        r.regs_per_thread = static_cast<std::uint32_t>(number(1u << 20));
      } else if (key == "lds_bytes") {
        r.lds_bytes = number(UINT64_MAX);
      } else if (key == "stages") {
        r.stages = static_cast<std::uint32_t>(number(kTraceMaxStages));
        if (r.stages == 0) fail(fmt::format("resources: stages must be in [1, {}]", kTraceMaxStages));
      } else if (key == "tma") {
        r.tma = number(1) == 1;
      } else if (key == "boost") {
        r.boost_clock = number(1) == 1;
      } else if (key == "persistent") {
        r.persistent_wgs = static_cast<std::uint32_t>(number(1u << 20));
      } else if (key == "persistent_static") {
        r.persistent_static = static_cast<std::uint32_t>(number(kTraceMaxPersistentStatic));
      } else if (key == "cluster") {
        r.cluster = static_cast<std::uint32_t>(number(kTraceMaxCluster));
        if (r.cluster == 0) fail(fmt::format("resources: cluster must be in [1, {}]", kTraceMaxCluster));
      } else {
        static constexpr std::string_view kKeys[] = {"wfs",    "threads", "regs_per_thread", "lds_bytes",
                                                     "stages", "tma",     "boost",           "persistent",
                                                     "persistent_static", "cluster"};
        fail(fmt::format("resources: unknown key '{}'{} (expected wfs, threads, regs_per_thread, lds_bytes, stages, "
                         "tma, boost, persistent, persistent_static, cluster)",
                         key, suggest(key, {kKeys})));
      }
    }
    if (r.persistent_static != 0 && r.persistent_wgs == 0)
      fail("resources: persistent_static needs persistent=N (the programs a persistent WG owns)");
    if (r.cluster > 1 && (r.persistent_wgs == 0 || r.persistent_wgs % r.cluster != 0))
      fail(fmt::format("resources: cluster={} needs persistent=N, a multiple of it (clusters of persistent WGs)",
                       r.cluster));
    if (!have_wfs || !have_threads) fail("resources: wfs=N and threads=N are required");
    if (r.wfs_per_wg == 0) fail("resources: wfs must be at least 1");
    if (r.threads_per_wg < r.wfs_per_wg || r.threads_per_wg % r.wfs_per_wg != 0) {
      fail(fmt::format("resources: threads ({}) must be a multiple of wfs ({})", r.threads_per_wg, r.wfs_per_wg));
    }
    have_resources_ = true;
  }

  void handle_wg(const std::vector<std::string_view>& tok) {
    if (!have_wgs_) fail("'wg' before 'wgs COUNT'");
    const std::uint64_t id = trace_.wg_program.size();
    if (id >= declared_wgs_) fail(fmt::format("more 'wg' lines than 'wgs {}' declared", declared_wgs_));
    if (tok.size() != 3 + trace_.params.size()) {
      fail(fmt::format("expected 'wg ID PROGRAM' and {} parameter values ({}), found {} values",
                       trace_.params.size(), fmt::join(trace_.params, " "),
                       tok.size() < 3 ? 0 : tok.size() - 3));
    }
    const auto n = parse_unsigned(tok[1]);
    if (!n || *n != id) fail(fmt::format("bad WG id '{}' (expected {}: WGs are listed in order)", tok[1], id));
    const int prog = trace_.find_program(tok[2]);
    if (prog < 0) fail(fmt::format("unknown program '{}'", tok[2]));
    trace_.wg_program.push_back(static_cast<std::uint16_t>(prog));
    for (std::size_t i = 3; i < tok.size(); ++i) {
      std::string_view s = tok[i];
      const bool neg = !s.empty() && s[0] == '-';
      if (neg) s.remove_prefix(1);
      const auto v = parse_unsigned(s, neg ? (1ull << 63) : INT64_MAX);
      if (!v) {
        fail(fmt::format("bad value '{}' for parameter '{}' (expected a 64-bit integer)", tok[i],
                         trace_.params[i - 3]));
      }
      trace_.wg_params.push_back(neg ? static_cast<std::int64_t>(0 - *v) : static_cast<std::int64_t>(*v));
    }
  }

  // ---- expressions

  std::optional<std::uint32_t> lookup(std::string_view name) const {
    for (std::size_t i = 0; i < trace_.params.size(); ++i) {
      if (trace_.params[i] == name) return static_cast<std::uint32_t>(i);
    }
    for (const OpenLoop& l : loops_) {
      if (l.var == name) return program_.ops[l.op].loop_var;
    }
    return std::nullopt;
  }

  TraceExpr parse_expr(std::string_view s, std::string_view what) {
    auto bad = [&](const std::string& why) {
      fail(fmt::format("bad expression '{}' for {}: {} (expected integers, parameters and loop variables joined "
                       "by + - *, e.g. 'a+64*k')",
                       s, what, why));
    };
    std::int64_t constant = 0;
    std::vector<TraceTerm> terms;
    std::size_t i = 0;
    bool first = true;
    while (i < s.size() || first) {
      int sign = 1;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
        sign = s[i] == '-' ? -1 : 1;
        ++i;
      } else if (!first) {
        bad(fmt::format("expected + or - at '{}'", s.substr(i)));
      }
      first = false;
      // term: factor (* factor)*, at most one factor a variable
      std::int64_t coef = sign;
      std::optional<std::uint32_t> var;
      while (true) {
        std::size_t j = i;
        while (j < s.size() && s[j] != '+' && s[j] != '-' && s[j] != '*') ++j;
        const std::string_view factor = s.substr(i, j - i);
        if (factor.empty()) bad("a missing operand");
        if (std::isdigit(static_cast<unsigned char>(factor[0]))) {
          const auto v = parse_unsigned(factor, INT64_MAX);
          if (!v) bad(fmt::format("'{}' is not a number below 2^63", factor));
          if (__builtin_mul_overflow(coef, static_cast<std::int64_t>(*v), &coef)) bad("a value above 2^63");
        } else {
          if (!is_identifier(factor)) bad(fmt::format("'{}' is neither a number nor a name", factor));
          if (var) bad("a product of two variables (expressions are affine)");
          var = lookup(factor);
          if (!var) {
            std::vector<std::string> names(trace_.params.begin(), trace_.params.end());
            for (const OpenLoop& l : loops_) names.push_back(l.var);
            bad(fmt::format("unknown variable '{}' (known here: {})", factor,
                            names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
          }
        }
        i = j;
        if (i < s.size() && s[i] == '*') {
          ++i;
          continue;
        }
        break;
      }
      if (var) {
        terms.push_back(TraceTerm{coef, *var});
      } else if (__builtin_add_overflow(constant, coef, &constant)) {
        bad("a value above 2^63");
      }
    }
    return program_.expr(constant, terms);
  }

  // ---- ops

  void handle_op(const std::vector<std::string_view>& tok) {
    const std::string_view word = tok[0];
    TraceOp op;
    std::vector<std::string_view> pos;
    std::vector<std::pair<std::string_view, std::string_view>> opts;
    std::vector<std::string_view> flags;
    for (std::size_t i = 1; i < tok.size(); ++i) {
      const std::size_t eq = tok[i].find('=');
      if (eq != std::string_view::npos) {
        opts.emplace_back(tok[i].substr(0, eq), tok[i].substr(eq + 1));
      } else if (std::find(std::begin(kFlagWords), std::end(kFlagWords), tok[i]) != std::end(kFlagWords)) {
        flags.push_back(tok[i]);
      } else {
        pos.push_back(tok[i]);
      }
    }
    auto expect = [&](std::size_t n_pos, std::initializer_list<std::string_view> allowed_opts,
                      std::initializer_list<std::string_view> allowed_flags, const char* usage) {
      if (pos.size() != n_pos) fail(fmt::format("expected '{}'", usage));
      for (const auto& opt : opts) {
        const auto& k = opt.first;  // not a structured binding: clang 14 (the fuzz build) cannot capture one
        if (std::find(allowed_opts.begin(), allowed_opts.end(), k) == allowed_opts.end()) {
          fail(fmt::format("'{}' takes no option '{}' (expected '{}')", word, k, usage));
        }
        if (std::count_if(opts.begin(), opts.end(), [&](const auto& o) { return o.first == k; }) > 1) {
          fail(fmt::format("option '{}' given twice", k));
        }
      }
      for (std::string_view f : flags) {
        if (std::find(allowed_flags.begin(), allowed_flags.end(), f) == allowed_flags.end()) {
          fail(fmt::format("'{}' takes no flag '{}' (expected '{}')", word, f, usage));
        }
        if (std::count(flags.begin(), flags.end(), f) > 1) fail(fmt::format("flag '{}' given twice", f));
      }
    };
    auto option = [&](std::string_view key) -> std::optional<std::string_view> {
      for (const auto& [k, v] : opts) {
        if (k == key) return v;
      }
      return std::nullopt;
    };
    auto has_flag = [&](std::string_view f) { return std::find(flags.begin(), flags.end(), f) != flags.end(); };
    auto take_wf = [&]() {
      const auto wf = option("wf");
      if (wf && *wf != "all") {
        op.all_wfs = false;
        op.wf = parse_expr(*wf, "wf");
      }
    };
    auto take_peer = [&]() {
      if (const auto peer = option("peer")) {
        op.flags |= kTraceRemote;
        op.arg[4] = parse_expr(*peer, "peer");
      }
    };
    auto take_range = [&]() {
      op.arg[0] = parse_expr(pos[0], "address");
      op.arg[1] = parse_expr(pos[1], "bytes");
      const auto rows = option("rows");
      op.arg[2] = rows ? parse_expr(*rows, "rows") : program_.expr(1);
      if (const auto stride = option("stride")) {
        op.arg[3] = parse_expr(*stride, "stride");
      } else {
        op.arg[3] = parse_expr(pos[1], "bytes");  // contiguous rows
      }
    };

    if (word == "compute") {
      op.kind = TraceOpKind::kCompute;
      expect(1, {"flops", "lds", "issue", "wf"}, {"carry"}, "compute CYCLES [flops=F] [lds=B] [issue=C] [carry] [wf=W]");
      if (has_flag("carry")) op.flags |= kTraceCarry;
      op.arg[0] = parse_expr(pos[0], "cycles");
      if (const auto f = option("flops")) op.arg[1] = parse_expr(*f, "flops");
      if (const auto l = option("lds")) op.arg[2] = parse_expr(*l, "lds");
      if (const auto i = option("issue")) op.arg[3] = parse_expr(*i, "issue");
      take_wf();
    } else if (word == "load") {
      op.kind = TraceOpKind::kLoad;
      expect(2, {"rows", "stride", "wf"}, {"cached", "uncached"},
             "load ADDR BYTES [rows=R] [stride=S] [cached|uncached] [wf=W]");
      if (has_flag("cached") && has_flag("uncached")) fail("a load is either cached or uncached");
      if (has_flag("uncached")) op.flags |= kTraceUncached;
      take_range();
      take_wf();
    } else if (word == "store") {
      op.kind = TraceOpKind::kStore;
      expect(2, {"rows", "stride", "peer", "wf"}, {"cached", "uncached", "update", "ll", "ll128"},
             "store ADDR BYTES [rows=R] [stride=S] [cached|uncached] [update] [ll|ll128] [peer=P] [wf=W]");
      if (has_flag("cached") && has_flag("uncached")) fail("a store is either cached or uncached");
      if (has_flag("ll") && has_flag("ll128")) fail("a store is in either LL or LL128 lines");
      if (has_flag("uncached")) op.flags |= kTraceUncached;
      if (has_flag("update")) op.flags |= kTraceUpdate;
      if (has_flag("ll")) op.flags |= kTraceLl;
      if (has_flag("ll128")) op.flags |= kTraceLl128;
      take_range();
      take_peer();
      if ((op.flags & (kTraceLl | kTraceLl128)) != 0 && (op.flags & kTraceRemote) == 0)
        fail("ll and ll128 describe a remote store's lines: they need peer=P");
      take_wf();
    } else if (word == "wait") {
      op.kind = TraceOpKind::kWait;
      expect(2, {"wf"}, {}, "wait FLAG VALUE [wf=W]");
      op.arg[0] = parse_expr(pos[0], "flag");
      op.arg[1] = parse_expr(pos[1], "value");
      take_wf();
    } else if (word == "set") {
      op.kind = TraceOpKind::kSet;
      expect(2, {"peer", "wf"}, {"unfenced"}, "set FLAG VALUE [peer=P] [unfenced] [wf=W]");
      op.arg[0] = parse_expr(pos[0], "flag");
      op.arg[1] = parse_expr(pos[1], "value");
      if (has_flag("unfenced")) op.flags |= kTraceUnfenced;
      take_peer();
      take_wf();
    } else if (word == "loop") {
      op.kind = TraceOpKind::kLoop;
      expect(2, {}, {}, "loop VAR COUNT");
      check_new_name(pos[0], "loop variable");
      if (loops_.size() >= kTraceMaxLoopDepth) fail(fmt::format("loops nested deeper than {}", kTraceMaxLoopDepth));
      op.arg[0] = parse_expr(pos[1], "loop count");
      // Loops that follow each other may share a variable name, and so its slot.
      const auto same = std::find(program_.loop_vars.begin(), program_.loop_vars.end(), pos[0]);
      if (same != program_.loop_vars.end()) {
        op.loop_var = static_cast<std::uint8_t>(trace_.params.size() +
                                                static_cast<std::size_t>(same - program_.loop_vars.begin()));
      } else {
        if (trace_.params.size() + program_.loop_vars.size() >= kTraceMaxVars) {
          fail(fmt::format("more than {} parameters and loop variables in one program", kTraceMaxVars));
        }
        op.loop_var = static_cast<std::uint8_t>(trace_.params.size() + program_.loop_vars.size());
        program_.loop_vars.emplace_back(pos[0]);
      }
      loops_.push_back(OpenLoop{static_cast<std::uint32_t>(program_.ops.size()), line_, std::string(pos[0])});
    } else if (word == "end") {
      if (tok.size() != 1) fail("expected 'end' alone on its line");
      if (loops_.empty()) {  // closes the program
        trace_.programs.push_back(std::move(program_));
        in_program_ = false;
        return;
      }
      op.kind = TraceOpKind::kEnd;
      op.jump = loops_.back().op;
      program_.ops[op.jump].jump = static_cast<std::uint32_t>(program_.ops.size());
      loops_.pop_back();
    } else {
      fail(fmt::format("unknown op '{}'{} (expected one of compute, load, store, wait, set, loop, end)", word,
                       suggest(word, {kOpWords})));
    }
    program_.ops.push_back(op);
    program_.lines.push_back(static_cast<std::uint32_t>(line_));
  }

  void finish() {
    if (!have_header_) fail(fmt::format("missing header: the file is empty (expected 't3trace {}')", kTraceFormatVersion));
    if (in_program_) {
      if (!loops_.empty()) {
        fail(fmt::format("unterminated loop '{}' (expected 'end' before the end of the file)", loops_.back().var),
             loops_.back().line);
      }
      fail(fmt::format("unterminated program '{}' (expected 'end' before the end of the file)", program_.name),
           program_line_);
    }
    if (!have_kernel_) fail("missing 'kernel NAME' line");
    if (!have_resources_) fail("missing 'resources wfs=N threads=N ...' line");
    if (!have_wgs_) fail("missing 'wgs COUNT' line and the WG list");
    if (trace_.wg_program.size() != declared_wgs_) {
      fail(fmt::format("'wgs {}' declared but {} 'wg' lines follow", declared_wgs_, trace_.wg_program.size()),
           wgs_line_);
    }
    validate_trace(trace_);
  }

  std::string_view text_;
  KernelTrace trace_;
  int line_ = 0;
  bool have_header_ = false;
  bool have_kernel_ = false;
  bool have_resources_ = false;
  bool have_params_ = false;
  bool have_wgs_ = false;
  bool in_program_ = false;
  int program_line_ = 0;
  int wgs_line_ = 0;
  std::uint64_t declared_wgs_ = 0;
  TraceProgram program_;
  std::vector<OpenLoop> loops_;
};

// ---- writer

std::string var_name(const KernelTrace& t, const TraceProgram& p, std::uint32_t slot) {
  return slot < t.params.size() ? t.params[slot] : p.loop_vars[slot - t.params.size()];
}

void format_expr(fmt::memory_buffer& out, const KernelTrace& t, const TraceProgram& p, const TraceExpr& e) {
  for (std::uint32_t i = 0; i < e.count; ++i) {
    const TraceTerm& term = p.terms[e.first + i];
    const bool neg = term.coef < 0;
    const std::uint64_t mag = neg ? 0 - static_cast<std::uint64_t>(term.coef) : static_cast<std::uint64_t>(term.coef);
    if (neg) {
      out.push_back('-');
    } else if (i > 0) {
      out.push_back('+');
    }
    if (mag != 1) fmt::format_to(std::back_inserter(out), "{}*", mag);
    fmt::format_to(std::back_inserter(out), "{}", var_name(t, p, term.var));
  }
  if (e.count == 0) {
    fmt::format_to(std::back_inserter(out), "{}", e.constant);
  } else if (e.constant != 0) {
    fmt::format_to(std::back_inserter(out), "{}{}", e.constant > 0 ? "+" : "", e.constant);
  }
}

bool expr_equal(const TraceProgram& p, const TraceExpr& a, const TraceExpr& b) {
  if (a.constant != b.constant || a.count != b.count) return false;
  for (std::uint32_t i = 0; i < a.count; ++i) {
    if (p.terms[a.first + i].coef != p.terms[b.first + i].coef || p.terms[a.first + i].var != p.terms[b.first + i].var) {
      return false;
    }
  }
  return true;
}

template <typename... T>
void emit(fmt::memory_buffer& out, fmt::format_string<T...> f, T&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<T>(args)...);
}

}  // namespace

KernelTrace parse_trace(std::string_view text, std::string display_name) {
  return Parser(text, std::move(display_name)).run();
}

KernelTrace read_trace(const std::filesystem::path& path) {
  // Only a regular file: a device or a directory would be read without end or fail
  // obscurely (issue 21, C07).
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw TraceError(SourceLocation{path.string(), 0, 0}, "not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(SourceLocation{path.string(), 0, 0}, "cannot open the trace file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_trace(ss.str(), path.string());
}

void write_trace(const KernelTrace& t, std::ostream& os) {
  fmt::memory_buffer out;
#define w(...) emit(out, __VA_ARGS__)
  w("t3trace {}\n", kTraceFormatVersion);
  w("kernel {}\n", t.name);
  for (const auto& [k, v] : t.attrs) {
    if (v.empty()) w("attr {}\n", k);
    else w("attr {} {}\n", k, v);
  }
  const TraceResources& r = t.resources;
  w("resources wfs={} threads={} regs_per_thread={} lds_bytes={}", r.wfs_per_wg, r.threads_per_wg, r.regs_per_thread,
    r.lds_bytes);
  if (r.stages != TraceResources{}.stages) w(" stages={}", r.stages);  // the default is left out
  if (r.tma) w(" tma=1");
  if (r.boost_clock) w(" boost=1");
  if (r.persistent_wgs) w(" persistent={}", r.persistent_wgs);
  if (r.persistent_static) w(" persistent_static={}", r.persistent_static);
  if (r.cluster != 1) w(" cluster={}", r.cluster);
  w("\n");
  if (!t.params.empty()) w("params {}\n", fmt::join(t.params, " "));
  for (const TraceProgram& p : t.programs) {
    w("program {}\n", p.name);
    int depth = 1;
    for (const TraceOp& op : p.ops) {
      if (op.kind == TraceOpKind::kEnd) --depth;
      for (int i = 0; i < depth; ++i) w("  ");
      w("{}", to_string(op.kind));
      auto arg = [&](const TraceExpr& e) {
        out.push_back(' ');
        format_expr(out, t, p, e);
      };
      auto opt = [&](const char* key, const TraceExpr& e) {
        w(" {}=", key);
        format_expr(out, t, p, e);
      };
      switch (op.kind) {
        case TraceOpKind::kCompute:
          arg(op.arg[0]);
          if (!(op.arg[1].is_constant() && op.arg[1].constant == 0)) opt("flops", op.arg[1]);
          if (!(op.arg[2].is_constant() && op.arg[2].constant == 0)) opt("lds", op.arg[2]);
          if (!(op.arg[3].is_constant() && op.arg[3].constant == 0)) opt("issue", op.arg[3]);
          if (op.flags & kTraceCarry) w(" carry");
          break;
        case TraceOpKind::kLoad:
        case TraceOpKind::kStore:
          arg(op.arg[0]);
          arg(op.arg[1]);
          if (!(op.arg[2].is_constant() && op.arg[2].constant == 1)) opt("rows", op.arg[2]);
          if (!expr_equal(p, op.arg[3], op.arg[1])) opt("stride", op.arg[3]);
          if (op.flags & kTraceUncached) w(" uncached");
          else if (op.kind == TraceOpKind::kStore) w(" cached");
          if (op.flags & kTraceUpdate) w(" update");
          if (op.flags & kTraceLl) w(" ll");
          if (op.flags & kTraceLl128) w(" ll128");
          if (op.flags & kTraceRemote) opt("peer", op.arg[4]);
          break;
        case TraceOpKind::kWait:
        case TraceOpKind::kSet:
          arg(op.arg[0]);
          arg(op.arg[1]);
          if (op.flags & kTraceUnfenced) w(" unfenced");
          if (op.flags & kTraceRemote) opt("peer", op.arg[4]);
          break;
        case TraceOpKind::kLoop:
          w(" {}", var_name(t, p, op.loop_var));
          arg(op.arg[0]);
          ++depth;
          break;
        case TraceOpKind::kEnd: break;
      }
      if (!op.all_wfs) opt("wf", op.wf);
      out.push_back('\n');
    }
    w("end\n");
  }
  w("wgs {}\n", t.num_wgs());
  const std::size_t np = t.params.size();
  for (std::uint32_t wg = 0; wg < t.num_wgs(); ++wg) {
    w("wg {} {}", wg, t.programs[t.wg_program[wg]].name);
    const std::int64_t* v = t.params_of(wg);
    for (std::size_t i = 0; i < np; ++i) w(" {}", v[i]);
    out.push_back('\n');
    if (out.size() > (1u << 20)) {
      os.write(out.data(), static_cast<std::streamsize>(out.size()));
      out.clear();
    }
  }
  os.write(out.data(), static_cast<std::streamsize>(out.size()));
#undef w
}

std::string trace_to_string(const KernelTrace& trace) {
  std::ostringstream ss;
  write_trace(trace, ss);
  return ss.str();
}

void write_trace_file(const KernelTrace& trace, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UserError(fmt::format("{}: cannot open for writing", path.string()));
  write_trace(trace, out);
  out.close();
  if (!out) throw UserError(fmt::format("{}: write failed", path.string()));
}

}  // namespace t3sim
