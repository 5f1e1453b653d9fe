#pragma once
// Workgroup (WG) traces: what a kernel's WGs do, for the CU model to replay.
//
// A KernelTrace is one kernel: a grid of WGs, each with `wfs_per_wg` wavefronts
// (WFs), its occupancy needs (threads, registers, LDS), and one or more *programs*
// (op sequences with loops). Every WG runs one program with its own values of the
// kernel's *parameters* (e.g. the base addresses of its tiles), so a GEMM of
// thousands of WGs is a few programs plus one short line per WG. The text form is
// documented in traces/FORMAT.md (versioned: `t3trace 1`).
//
// Representation for fast replay: a program is a flat vector of small POD ops; every
// numeric operand is an affine expression `constant + sum(coef * variable)` whose
// terms live in the program's flat term pool; variables are the kernel parameters
// (slots 0..P-1) and the program's loop variables (slots P..). A WgExpander steps
// through one WG's ops with loops unrolled and expressions evaluated; it never
// allocates and is trivially copyable (copy it to look ahead, e.g. to prefetch the
// loads of the next K step).

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/error.h"

namespace t3sim {

inline constexpr int kTraceFormatVersion = 1;
// Where a workload's buffers start: on 2 MiB boundaries (a large page), each after the
// one before it, so the buffers of a GEMM, a collective and a copy never share a page and
// their addresses interleave over the memory channels the same way whatever came before.
inline constexpr std::uint64_t kBufferAlign = std::uint64_t{2} << 20;
inline constexpr std::size_t kTraceMaxVars = 32;       // parameters + loop variables
inline constexpr std::size_t kTraceMaxLoopDepth = 8;

// A malformed trace: "gemm.trace:12: unknown op 'lod' (did you mean 'load'?)".
class TraceError : public ConfigError {
 public:
  TraceError(SourceLocation where, std::string message)
      : ConfigError(std::move(where), "", std::move(message)) {}
};

struct TraceTerm {
  std::int64_t coef = 0;
  std::uint32_t var = 0;  // variable slot
};

// constant + sum of terms[first .. first+count) of the owning program's pool.
struct TraceExpr {
  std::int64_t constant = 0;
  std::uint32_t first = 0;
  std::uint32_t count = 0;
  bool is_constant() const { return count == 0; }
};

enum class TraceOpKind : std::uint8_t { kCompute, kLoad, kStore, kWait, kSet, kLoop, kEnd };
std::string_view to_string(TraceOpKind kind);

// Access flags of loads and stores (a `set` may carry kTraceRemote).
enum : std::uint8_t {
  kTraceUncached = 1,  // bypass the L2 (T3's GEMM output)
  kTraceUpdate = 2,    // op-and-store at memory (near-memory reduction) instead of a plain write
  kTraceRemote = 4,    // goes to peer GPU arg[4] (a fine-grained remote store / flag set)
  // A remote store whose data travel in a collective protocol's flagged lines (NCCL
  // LL: 8 B of data and 8 B of flags per 16 B; LL128: 120 B of data per 128 B line),
  // so the link carries 2x / 16/15x the payload.
  kTraceLl = 8,
  kTraceLl128 = 16,
  // A `set` that does not wait for the WG's stores to be acknowledged (LL / LL128:
  // the flag travels behind the data on the same path instead of after a fence).
  kTraceUnfenced = 32,
  // A `compute` whose group's loaded values are added into the next group's when it
  // completes: a running sum over a WG's load groups (an embedding bag's accumulator,
  // one row per group), so a later store carries the sum of every carried group.
  kTraceCarry = 64,
};

// One op. Operands by kind:
//   kCompute  arg0 cycles (matrix-core cycles of the CU), arg1 flops (0: not given),
//             arg2 LDS bytes its matrix work reads (0: none), arg3 issue cycles (the
//             WG's non-matrix cycles of the step: 0 none)
//   kLoad     arg0 address, arg1 bytes per row, arg2 rows, arg3 row stride
//   kStore    as kLoad, plus arg4 peer GPU when flags has kTraceRemote
//   kWait     arg0 flag id, arg1 value (wait until flag >= value)
//   kSet      arg0 flag id, arg1 value; arg4 peer GPU when flags has kTraceRemote
//   kLoop     arg0 iteration count; loop_var = the variable slot; jump = index of its kEnd
//   kEnd      jump = index of its kLoop
struct TraceOp {
  TraceOpKind kind = TraceOpKind::kCompute;
  std::uint8_t flags = 0;
  bool all_wfs = true;        // the whole WG's op; false: only WF `wf` does it
  std::uint8_t loop_var = 0;  // kLoop
  std::uint32_t jump = 0;     // kLoop / kEnd
  TraceExpr wf;
  TraceExpr arg[5];
};

struct TraceProgram {
  std::string name;
  std::vector<TraceOp> ops;
  std::vector<TraceTerm> terms;        // pool of expression terms
  std::vector<std::string> loop_vars;  // loop_vars[i] is variable slot num_params + i
  std::vector<std::uint32_t> lines;    // source line of each op (empty or 0: generated); not compared

  // An expression in this program's pool (terms of the same variable merged, zero
  // coefficients dropped).
  TraceExpr expr(std::int64_t constant, std::initializer_list<TraceTerm> terms = {});
  TraceExpr expr(std::int64_t constant, const std::vector<TraceTerm>& terms);
  // An op of `kind` whose arguments are these constants, in order (the generators of
  // spelled-out persistent kernels).
  TraceOp constant_op(TraceOpKind kind, std::initializer_list<std::int64_t> args);
};

// The most WGs a kernel may have: 2^24 (16.7 M). Every WG costs host memory in the
// trace and the dispatcher; the largest GEMM of the C3 study (../seeds/003, Table I,
// about 29 TFLOP) has about 20 k output tiles of 256 x 128.
inline constexpr std::uint64_t kTraceMaxWgs = std::uint64_t{1} << 24;
// The most iterations a WG's loop nest may run: 2^32 (a GEMM WG with K = 1 M in steps
// of 32 runs 32 K): more would not end in any reasonable time.
inline constexpr std::uint64_t kTraceMaxIterations = std::uint64_t{1} << 32;

// Per-WG needs, for occupancy.
// The largest load or store the memory system takes (validate_trace checks every
// WG's): a row of at most 1 GiB (requests carry a 32-bit row size), at most 2^20 rows,
// at most 4 GiB in all (a tile the L2 splits into line pieces, at most 2^30 of them).
inline constexpr std::int64_t kTraceMaxAccessBytes = std::int64_t{1} << 30;
inline constexpr std::int64_t kTraceMaxAccessRows = std::int64_t{1} << 20;
inline constexpr std::int64_t kTraceMaxAccessTotal = std::int64_t{1} << 32;
inline constexpr std::uint32_t kTraceMaxStages = 16;
// The most programs a persistent WG may own (TraceResources::persistent_static).
inline constexpr std::uint32_t kTraceMaxPersistentStatic = 64;
// The most WGs a cluster may have (TraceResources::cluster): Hopper's non-portable 16.
inline constexpr std::uint32_t kTraceMaxCluster = 16;
// The most LDS bytes or issue cycles one compute op may carry (2^40).
inline constexpr std::int64_t kTraceMaxComputeExtra = std::int64_t{1} << 40;

struct TraceResources {
  std::uint32_t wfs_per_wg = 1;
  std::uint32_t threads_per_wg = 64;
  std::uint32_t regs_per_thread = 0;  // registers per WG = threads_per_wg * regs_per_thread
  std::uint64_t lds_bytes = 0;        // LDS bytes per WG
  // K-step tile buffers the kernel prefetches into (the CU issues the loads of K step
  // g once step g - stages has computed): 2 = double buffering; Hopper GEMMs 3-5.
  std::uint32_t stages = 2;
  // The kernel loads its tiles with Hopper's Tensor Memory Accelerator (bulk async
  // copies into shared memory tracked by barriers): its loads do not hold the L1's
  // MSHRs (CuConfig::max_inflight_load_bytes); the stages bound what is in flight.
  bool tma = false;
  // A persistent kernel (cuBLAS's and CUTLASS's Hopper GEMMs: a grid of about one CTA
  // per SM, each looping over output tiles): at most this many WGs are ever placed,
  // and a placed WG that finishes its WG program takes the next one in WG id order on
  // the same CU, without giving its slot back; 0: one WG per program instance, as
  // launched (the default). Simplification: placed WGs that would find no work left
  // (tiles all taken) are not placed at all; on the machine they start and exit.
  std::uint32_t persistent_wgs = 0;
  // Of a persistent kernel: how many programs each WG owns before it asks for more. WG
  // slot s (the s-th placed) takes programs s, s + persistent_wgs, ... (this many) first,
  // whenever it is placed; the rest go in order to whichever WG asks. A slot that cannot
  // be placed (its CU taken by another kernel) keeps its programs until it is, so they
  // run last. cuBLAS's Hopper GEMM owns 2 (results/h200-measurements/tile_order.csv:
  // with one SM held, the held cluster's first two tiles are written after every other
  // tile); 0: every program in order to whichever WG asks.
  std::uint32_t persistent_static = 0;
  // Of a persistent kernel: WGs per thread-block cluster (Hopper; cuBLAS's GEMMs run 2).
  // Slots 0..cluster-1 form the first cluster, and so on; the GPU places a cluster's
  // slots together, on CUs of one placement group (GpuConfig::cluster_group_cus), or
  // not at all. 1: no cluster.
  std::uint32_t cluster = 1;
  // The kernel's matrix steps run at the CU's boost clock (CuConfig::clock_hz), not the
  // power cap's compute clock: a kernel whose matrix work draws too little power to hold
  // the GPU at its cap (cuBLAS's align2 fallback on the H200: 136 W at 1,980 MHz,
  // results/h200-measurements/gemm_k_sweep_random_points.csv). Default false.
  bool boost_clock = false;
  bool operator==(const TraceResources&) const = default;
};

struct KernelTrace {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;  // free-form metadata, in order
  TraceResources resources;
  std::vector<std::string> params;            // per-WG parameter names (variable slots 0..)
  std::vector<TraceProgram> programs;
  std::vector<std::uint16_t> wg_program;      // WG id -> program index (WG id = dispatch order)
  std::vector<std::int64_t> wg_params;        // WG id * params.size() + i -> value
  std::string source;                         // file it was read from (messages); not compared

  std::uint32_t num_wgs() const { return static_cast<std::uint32_t>(wg_program.size()); }
  const std::int64_t* params_of(std::uint32_t wg) const {
    return wg_params.data() + static_cast<std::size_t>(wg) * params.size();
  }
  const TraceProgram& program_of(std::uint32_t wg) const { return programs[wg_program[wg]]; }
  // Index of the program called `name`, or -1.
  int find_program(std::string_view program_name) const;
  // Append a WG running `program` with these parameter values (one per param).
  void add_wg(std::uint16_t program, std::initializer_list<std::int64_t> values);
  const std::string* attr(std::string_view key) const;
};

// Structural equality (expressions compared by their terms, not pool positions;
// source lines and file name ignored).
bool operator==(const KernelTrace& a, const KernelTrace& b);

// ---------------------------------------------------------------------------
// Text form (traces/FORMAT.md)

// Parse a trace; `display_name` names it in errors. Throws TraceError (file:line:
// what was expected) for malformed input, including expressions that evaluate to a
// negative or overflowing value, or a WF index out of range, for any WG.
KernelTrace parse_trace(std::string_view text, std::string display_name);
KernelTrace read_trace(const std::filesystem::path& path);
// Writes the canonical text; parse_trace(write) == the trace.
void write_trace(const KernelTrace& trace, std::ostream& out);
std::string trace_to_string(const KernelTrace& trace);
void write_trace_file(const KernelTrace& trace, const std::filesystem::path& path);

// The checks parse_trace makes after parsing (structure, then every WG expanded
// with overflow checks). For traces built in code.
void validate_trace(const KernelTrace& trace);

// ---------------------------------------------------------------------------
// Replay

// One op of one WG with every operand evaluated (loops are not yielded).
struct WgOp {
  TraceOpKind kind = TraceOpKind::kCompute;
  std::uint8_t flags = 0;
  std::int32_t wf = -1;     // -1: the whole WG
  std::int32_t peer = -1;   // -1: local
  std::uint32_t op_index = 0;  // index in the program (source line: program.lines)
  std::uint64_t v[4] = {0, 0, 0, 0};

  std::uint64_t cycles() const { return v[0]; }     // kCompute
  std::uint64_t flops() const { return v[1]; }      // kCompute (0: not given)
  std::uint64_t lds_bytes() const { return v[2]; }  // kCompute: LDS-to-register bytes
  std::uint64_t issue_cycles() const { return v[3]; }  // kCompute: non-matrix cycles
  std::uint64_t addr() const { return v[0]; }       // kLoad / kStore
  std::uint64_t row_bytes() const { return v[1]; }
  std::uint64_t rows() const { return v[2]; }
  std::uint64_t stride() const { return v[3]; }
  std::uint64_t bytes() const { return v[1] * v[2]; }
  std::uint64_t flag() const { return v[0]; }       // kWait / kSet
  std::uint64_t value() const { return v[1]; }
  bool uncached() const { return (flags & kTraceUncached) != 0; }
  bool update() const { return (flags & kTraceUpdate) != 0; }
  bool remote() const { return (flags & kTraceRemote) != 0; }
  bool unfenced() const { return (flags & kTraceUnfenced) != 0; }
  bool carry() const { return (flags & kTraceCarry) != 0; }
  bool operator==(const WgOp&) const = default;
};

// Steps through one WG's ops. No allocation; trivially copyable. The trace must
// outlive it and have passed validate_trace (parse_trace does that); evaluation is
// unchecked.
class WgExpander {
 public:
  WgExpander() = default;
  WgExpander(const KernelTrace& trace, std::uint32_t wg) { reset(trace, wg); }
  void reset(const KernelTrace& trace, std::uint32_t wg);
  // The next op, false when the WG is done.
  bool next(WgOp& op);
  bool done() const { return pc_ >= num_ops_; }

 private:
  struct Frame {
    std::uint32_t loop_pc;
    std::int64_t count;
  };
  std::int64_t eval(const TraceExpr& e) const {
    std::int64_t v = e.constant;
    for (std::uint32_t i = 0; i < e.count; ++i) {
      const TraceTerm& t = terms_[e.first + i];
      v += t.coef * vars_[t.var];
    }
    return v;
  }

  const TraceOp* ops_ = nullptr;
  const TraceTerm* terms_ = nullptr;
  std::uint32_t num_ops_ = 0;
  std::uint32_t pc_ = 0;
  std::uint32_t depth_ = 0;
  Frame stack_[kTraceMaxLoopDepth] = {};
  std::int64_t vars_[kTraceMaxVars] = {};
};

// ---------------------------------------------------------------------------
// Totals, for tests and summaries. Store classes overlap: a store is cached or
// uncached, and may also be an update and/or remote.
struct TraceTotals {
  std::uint64_t wgs = 0;
  std::uint64_t compute_ops = 0;
  std::uint64_t compute_cycles = 0;
  std::uint64_t flops = 0;
  std::uint64_t loads = 0;
  std::uint64_t load_bytes = 0;
  std::uint64_t load_bytes_uncached = 0;
  std::uint64_t stores = 0;
  std::uint64_t store_bytes = 0;
  std::uint64_t store_bytes_cached = 0;
  std::uint64_t store_bytes_uncached = 0;
  std::uint64_t store_bytes_update = 0;
  std::uint64_t store_bytes_remote = 0;
  std::uint64_t waits = 0;
  std::uint64_t sets = 0;

  void add(const WgOp& op);
  TraceTotals& operator+=(const TraceTotals& o);
  bool operator==(const TraceTotals&) const = default;
};

TraceTotals wg_totals(const KernelTrace& trace, std::uint32_t wg);
TraceTotals trace_totals(const KernelTrace& trace);

}  // namespace t3sim
