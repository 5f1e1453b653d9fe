#include "trace/trace.h"

#include <algorithm>

#include <fmt/format.h>

namespace t3sim {

std::string_view to_string(TraceOpKind kind) {
  switch (kind) {
    case TraceOpKind::kCompute: return "compute";
    case TraceOpKind::kLoad: return "load";
    case TraceOpKind::kStore: return "store";
    case TraceOpKind::kWait: return "wait";
    case TraceOpKind::kSet: return "set";
    case TraceOpKind::kLoop: return "loop";
    case TraceOpKind::kEnd: return "end";
  }
  return "?";
}

namespace {

// Appends constant + terms [begin, end) to `pool` as an expression: terms of the same
// variable merged (in order of first appearance), zero coefficients dropped. Merges in
// place, at the pool's end: no allocation beyond the pool's growth (a collective's
// programs build thousands of expressions). [begin, end) must not be in `pool`.
TraceExpr append_expr(std::vector<TraceTerm>& pool, std::int64_t constant, const TraceTerm* begin,
                      const TraceTerm* end) {
  const auto first = static_cast<std::ptrdiff_t>(pool.size());
  for (const TraceTerm* t = begin; t != end; ++t) {
    const auto it = std::find_if(pool.begin() + first, pool.end(), [&](const TraceTerm& m) { return m.var == t->var; });
    if (it == pool.end()) {
      pool.push_back(*t);
    } else {
      it->coef += t->coef;
    }
  }
  pool.erase(std::remove_if(pool.begin() + first, pool.end(), [](const TraceTerm& t) { return t.coef == 0; }),
             pool.end());
  TraceExpr e;
  e.constant = constant;
  e.count = static_cast<std::uint32_t>(pool.size() - static_cast<std::size_t>(first));
  e.first = e.count == 0 ? 0 : static_cast<std::uint32_t>(first);
  return e;
}

}  // namespace

TraceOp TraceProgram::constant_op(TraceOpKind kind, std::initializer_list<std::int64_t> args) {
  TraceOp o;
  o.kind = kind;
  int i = 0;
  for (std::int64_t a : args) o.arg[i++] = expr(a);
  return o;
}

TraceExpr TraceProgram::expr(std::int64_t constant, std::initializer_list<TraceTerm> list) {
  return append_expr(terms, constant, list.begin(), list.end());
}

TraceExpr TraceProgram::expr(std::int64_t constant, const std::vector<TraceTerm>& list) {
  return append_expr(terms, constant, list.data(), list.data() + list.size());
}

int KernelTrace::find_program(std::string_view program_name) const {
  for (std::size_t i = 0; i < programs.size(); ++i) {
    if (programs[i].name == program_name) return static_cast<int>(i);
  }
  return -1;
}

void KernelTrace::add_wg(std::uint16_t program, std::initializer_list<std::int64_t> values) {
  wg_program.push_back(program);
  wg_params.insert(wg_params.end(), values.begin(), values.end());
}

const std::string* KernelTrace::attr(std::string_view key) const {
  for (const auto& [k, v] : attrs) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace {

bool same_expr(const TraceProgram& pa, const TraceExpr& a, const TraceProgram& pb, const TraceExpr& b) {
  if (a.constant != b.constant || a.count != b.count) return false;
  for (std::uint32_t i = 0; i < a.count; ++i) {
    const TraceTerm& ta = pa.terms[a.first + i];
    const TraceTerm& tb = pb.terms[b.first + i];
    if (ta.coef != tb.coef || ta.var != tb.var) return false;
  }
  return true;
}

bool same_program(const TraceProgram& a, const TraceProgram& b) {
  if (a.name != b.name || a.loop_vars != b.loop_vars || a.ops.size() != b.ops.size()) return false;
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const TraceOp& x = a.ops[i];
    const TraceOp& y = b.ops[i];
    if (x.kind != y.kind || x.flags != y.flags || x.all_wfs != y.all_wfs || x.loop_var != y.loop_var ||
        x.jump != y.jump) {
      return false;
    }
    if (!x.all_wfs && !same_expr(a, x.wf, b, y.wf)) return false;
    for (int k = 0; k < 5; ++k) {
      if (!same_expr(a, x.arg[k], b, y.arg[k])) return false;
    }
  }
  return true;
}

}  // namespace

bool operator==(const KernelTrace& a, const KernelTrace& b) {
  if (a.name != b.name || a.attrs != b.attrs || !(a.resources == b.resources) || a.params != b.params ||
      a.programs.size() != b.programs.size() || a.wg_program != b.wg_program || a.wg_params != b.wg_params) {
    return false;
  }
  for (std::size_t i = 0; i < a.programs.size(); ++i) {
    if (!same_program(a.programs[i], b.programs[i])) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Replay

void WgExpander::reset(const KernelTrace& trace, std::uint32_t wg) {
  const TraceProgram& p = trace.program_of(wg);
  ops_ = p.ops.data();
  terms_ = p.terms.data();
  num_ops_ = static_cast<std::uint32_t>(p.ops.size());
  pc_ = 0;
  depth_ = 0;
  const std::int64_t* values = trace.params_of(wg);
  std::copy(values, values + trace.params.size(), vars_);
}

bool WgExpander::next(WgOp& out) {
  while (pc_ < num_ops_) {
    const TraceOp& op = ops_[pc_];
    switch (op.kind) {
      case TraceOpKind::kLoop: {
        const std::int64_t count = eval(op.arg[0]);
        if (count <= 0) {
          pc_ = op.jump + 1;
        } else {
          stack_[depth_++] = Frame{pc_, count};
          vars_[op.loop_var] = 0;
          ++pc_;
        }
        continue;
      }
      case TraceOpKind::kEnd: {
        Frame& f = stack_[depth_ - 1];
        std::int64_t& iter = vars_[ops_[f.loop_pc].loop_var];
        if (++iter < f.count) {
          pc_ = f.loop_pc + 1;
        } else {
          --depth_;
          ++pc_;
        }
        continue;
      }
      default: break;
    }
    out.kind = op.kind;
    out.flags = op.flags;
    out.wf = op.all_wfs ? -1 : static_cast<std::int32_t>(eval(op.wf));
    out.peer = (op.flags & kTraceRemote) ? static_cast<std::int32_t>(eval(op.arg[4])) : -1;
    out.op_index = pc_;
    for (int k = 0; k < 4; ++k) out.v[k] = static_cast<std::uint64_t>(eval(op.arg[k]));
    ++pc_;
    return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Totals

void TraceTotals::add(const WgOp& op) {
  switch (op.kind) {
    case TraceOpKind::kCompute:
      ++compute_ops;
      compute_cycles += op.cycles();
      flops += op.flops();
      break;
    case TraceOpKind::kLoad:
      ++loads;
      load_bytes += op.bytes();
      if (op.uncached()) load_bytes_uncached += op.bytes();
      break;
    case TraceOpKind::kStore:
      ++stores;
      store_bytes += op.bytes();
      (op.uncached() ? store_bytes_uncached : store_bytes_cached) += op.bytes();
      if (op.update()) store_bytes_update += op.bytes();
      if (op.remote()) store_bytes_remote += op.bytes();
      break;
    case TraceOpKind::kWait: ++waits; break;
    case TraceOpKind::kSet: ++sets; break;
    default: break;
  }
}

TraceTotals& TraceTotals::operator+=(const TraceTotals& o) {
  wgs += o.wgs;
  compute_ops += o.compute_ops;
  compute_cycles += o.compute_cycles;
  flops += o.flops;
  loads += o.loads;
  load_bytes += o.load_bytes;
  load_bytes_uncached += o.load_bytes_uncached;
  stores += o.stores;
  store_bytes += o.store_bytes;
  store_bytes_cached += o.store_bytes_cached;
  store_bytes_uncached += o.store_bytes_uncached;
  store_bytes_update += o.store_bytes_update;
  store_bytes_remote += o.store_bytes_remote;
  waits += o.waits;
  sets += o.sets;
  return *this;
}

TraceTotals wg_totals(const KernelTrace& trace, std::uint32_t wg) {
  TraceTotals t;
  t.wgs = 1;
  WgExpander x(trace, wg);
  WgOp op;
  while (x.next(op)) t.add(op);
  return t;
}

TraceTotals trace_totals(const KernelTrace& trace) {
  TraceTotals t;
  for (std::uint32_t wg = 0; wg < trace.num_wgs(); ++wg) t += wg_totals(trace, wg);
  return t;
}

// ---------------------------------------------------------------------------
// Validation

namespace {

SourceLocation op_location(const KernelTrace& trace, const TraceProgram& p, std::size_t op) {
  SourceLocation where;
  where.file = trace.source.empty() ? "<generated>" : trace.source;
  where.line = op < p.lines.size() ? static_cast<int>(p.lines[op]) : 0;
  return where;
}

[[noreturn]] void fail_op(const KernelTrace& trace, const TraceProgram& p, std::size_t op,
                          const std::string& message) {
  throw TraceError(op_location(trace, p, op),
                   fmt::format("{} (program '{}', op {}: {})", message, p.name, op, to_string(p.ops[op].kind)));
}

void validate_structure(const KernelTrace& trace) {
  const SourceLocation file{trace.source.empty() ? "<generated>" : trace.source, 0, 0};
  const TraceResources& r = trace.resources;
  if (r.wfs_per_wg == 0) throw TraceError(file, "resources: wfs must be at least 1");
  if (r.threads_per_wg < r.wfs_per_wg || r.threads_per_wg % r.wfs_per_wg != 0) {
    throw TraceError(file, fmt::format("resources: threads ({}) must be a multiple of wfs ({})",
                                       r.threads_per_wg, r.wfs_per_wg));
  }
  if (trace.programs.empty()) throw TraceError(file, "the kernel has no program");
  const std::size_t num_params = trace.params.size();
  if (trace.wg_params.size() != static_cast<std::size_t>(trace.num_wgs()) * num_params) {
    throw TraceError(file, "wg parameter table does not match the number of WGs x parameters");
  }
  for (std::uint16_t prog : trace.wg_program) {
    if (prog >= trace.programs.size()) throw TraceError(file, "a WG names a program that does not exist");
  }
  for (const TraceProgram& p : trace.programs) {
    const std::size_t num_vars = num_params + p.loop_vars.size();
    if (num_vars > kTraceMaxVars) {
      throw TraceError(file, fmt::format("program '{}' has {} variables (at most {})", p.name, num_vars,
                                         kTraceMaxVars));
    }
    for (const TraceTerm& t : p.terms) {
      if (t.var >= num_vars) throw TraceError(file, fmt::format("program '{}': bad variable slot", p.name));
    }
    std::vector<std::uint32_t> open;
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const TraceOp& op = p.ops[i];
      auto check_expr = [&](const TraceExpr& e) {
        if (e.count > 0 && static_cast<std::size_t>(e.first) + e.count > p.terms.size()) {
          fail_op(trace, p, i, "expression outside the term pool");
        }
      };
      check_expr(op.wf);
      for (const TraceExpr& e : op.arg) check_expr(e);
      if (op.kind == TraceOpKind::kLoop) {
        if (op.loop_var < num_params || op.loop_var >= num_vars) fail_op(trace, p, i, "bad loop variable slot");
        open.push_back(static_cast<std::uint32_t>(i));
        if (open.size() > kTraceMaxLoopDepth) {
          fail_op(trace, p, i, fmt::format("loops nested deeper than {}", kTraceMaxLoopDepth));
        }
        if (op.jump <= i || op.jump >= p.ops.size() || p.ops[op.jump].kind != TraceOpKind::kEnd) {
          fail_op(trace, p, i, "loop without a matching end");
        }
      } else if (op.kind == TraceOpKind::kEnd) {
        if (open.empty() || op.jump != open.back() || p.ops[open.back()].jump != i) {
          fail_op(trace, p, i, "end without a matching loop");
        }
        open.pop_back();
      }
    }
    if (!open.empty()) fail_op(trace, p, open.back(), "loop without a matching end");
  }
}

// Walks one WG with checked arithmetic. Expressions are affine in the loop
// variables and a loop's count is affine in the enclosing ones, so every value and
// every partial sum over the whole iteration space is extreme at a corner: visiting
// only the first and last iteration of each loop checks them all.
class CheckedWalk {
 public:
  CheckedWalk(const KernelTrace& trace, std::uint32_t wg) : trace_(trace), wg_(wg), p_(trace.program_of(wg)) {
    const std::int64_t* values = trace.params_of(wg);
    std::copy(values, values + trace.params.size(), vars_);
  }

  void run() {
    struct Frame {
      std::size_t loop_pc;
      std::int64_t count;
    };
    Frame stack[kTraceMaxLoopDepth];
    std::size_t depth = 0;
    std::size_t pc = 0;
    while (pc < p_.ops.size()) {
      const TraceOp& op = p_.ops[pc];
      pc_ = pc;
      if (op.kind == TraceOpKind::kLoop) {
        const std::int64_t count = eval(op.arg[0], "loop count");
        // Bounded so a WG ends in reasonable time (issue 15): the iterations of this
        // loop nest, the enclosing loops' counts multiplied in.
        auto nest = static_cast<std::uint64_t>(count);
        bool overflow = false;
        for (std::size_t d = 0; d < depth; ++d)
          overflow |= __builtin_mul_overflow(nest, static_cast<std::uint64_t>(stack[d].count), &nest);
        if (overflow || nest > kTraceMaxIterations)
          fail(fmt::format("loop count evaluates to {}: {} iterations with the loops around it (expected at most "
                           "{} per WG)",
                           count, overflow ? std::string("more than 2^64") : std::to_string(nest), kTraceMaxIterations));
        if (count == 0) {
          pc = op.jump + 1;
        } else {
          stack[depth++] = Frame{pc, count};
          vars_[op.loop_var] = 0;
          ++pc;
        }
        continue;
      }
      if (op.kind == TraceOpKind::kEnd) {
        Frame& f = stack[depth - 1];
        std::int64_t& iter = vars_[p_.ops[f.loop_pc].loop_var];
        if (iter + 1 < f.count) {
          iter = f.count - 1;  // the last iteration (see above)
          pc = f.loop_pc + 1;
        } else {
          --depth;
          ++pc;
        }
        continue;
      }
      if (!op.all_wfs) {
        const std::int64_t wf = eval(op.wf, "wf");
        if (wf >= static_cast<std::int64_t>(trace_.resources.wfs_per_wg)) {
          fail(fmt::format("wf evaluates to {} (expected below the kernel's {} WFs per WG)", wf,
                           trace_.resources.wfs_per_wg));
        }
      }
      if (op.flags & kTraceRemote) {
        if (eval(op.arg[4], "peer") > INT32_MAX) fail("peer out of range");
      }
      static constexpr const char* kNames[7][4] = {
          {"cycles", "flops", "lds", "issue"},
          {"address", "bytes", "rows", "stride"},
          {"address", "bytes", "rows", "stride"},
          {"flag", "value", nullptr, nullptr},
          {"flag", "value", nullptr, nullptr},
          {nullptr, nullptr, nullptr, nullptr},
          {nullptr, nullptr, nullptr, nullptr}};
      const auto& names = kNames[static_cast<int>(op.kind)];
      std::int64_t values[4] = {0, 0, 0, 0};
      for (int k = 0; k < 4; ++k) {
        if (names[k] != nullptr) values[k] = eval(op.arg[k], names[k]);
      }
      if (op.kind == TraceOpKind::kCompute) {
        // A K step's LDS reads and issue cycles stay far below what a run can time.
        if (values[2] > kTraceMaxComputeExtra)
          fail(fmt::format("lds evaluates to {} (expected at most {} bytes)", values[2], kTraceMaxComputeExtra));
        if (values[3] > kTraceMaxComputeExtra)
          fail(fmt::format("issue evaluates to {} (expected at most {} cycles)", values[3], kTraceMaxComputeExtra));
      }
      if (op.kind == TraceOpKind::kLoad || op.kind == TraceOpKind::kStore) {
        // What the memory system can carry (issue 21, C03, C04, C14): a request is at
        // least one byte in at least one row, its rows do not overlap, and it stays
        // within the request's 32-bit row size and a bounded tile.
        const std::int64_t bytes = values[1], rows = values[2], stride = values[3];
        if (bytes == 0) fail("bytes evaluates to 0 (expected an access of at least 1 byte)");
        if (bytes > kTraceMaxAccessBytes)
          fail(fmt::format("bytes evaluates to {} (expected at most {} per row)", bytes, kTraceMaxAccessBytes));
        if (rows == 0) fail("rows evaluates to 0 (expected at least 1)");
        if (rows > kTraceMaxAccessRows)
          fail(fmt::format("rows evaluates to {} (expected at most {})", rows, kTraceMaxAccessRows));
        if (bytes * rows > kTraceMaxAccessTotal)
          fail(fmt::format("{} rows of {} bytes is more than {} bytes in one access", rows, bytes,
                           kTraceMaxAccessTotal));
        if (rows > 1 && stride < bytes)
          fail(fmt::format("stride {} is smaller than a row's {} bytes: the rows would overlap", stride, bytes));
        // The range's last byte must be addressable.
        std::int64_t span = 0;
        std::int64_t end = 0;
        if (values[2] > 0 && values[1] > 0 &&
            (__builtin_mul_overflow(values[2] - 1, values[3], &span) ||
             __builtin_add_overflow(values[0], span, &end) || __builtin_add_overflow(end, values[1], &end))) {
          fail("the address range overflows 64 bits");
        }
      }
      ++pc;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    fail_op(trace_, p_, pc_, fmt::format("WG {}: {}", wg_, message));
  }

  std::int64_t eval(const TraceExpr& e, const char* what) const {
    std::int64_t v = e.constant;
    for (std::uint32_t i = 0; i < e.count; ++i) {
      const TraceTerm& t = p_.terms[e.first + i];
      std::int64_t product = 0;
      if (__builtin_mul_overflow(t.coef, vars_[t.var], &product) || __builtin_add_overflow(v, product, &v)) {
        fail(fmt::format("{} overflows 64 bits", what));
      }
    }
    if (v < 0) fail(fmt::format("{} evaluates to {} (expected a value >= 0)", what, v));
    return v;
  }

  const KernelTrace& trace_;
  std::uint32_t wg_;
  const TraceProgram& p_;
  std::size_t pc_ = 0;
  std::int64_t vars_[kTraceMaxVars] = {};
};

}  // namespace

void validate_trace(const KernelTrace& trace) {
  validate_structure(trace);
  for (std::uint32_t wg = 0; wg < trace.num_wgs(); ++wg) CheckedWalk(trace, wg).run();
}

}  // namespace t3sim
