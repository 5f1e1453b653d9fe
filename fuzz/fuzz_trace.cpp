// Fuzz target: the workgroup trace reader (trace/trace.h, traces/FORMAT.md).
//
// The whole input is one trace's text. What runs: parse_trace (which also runs
// validate_trace: structure, then every WG walked with overflow checks); on success
// read_trace of the same text from a file, and properties beyond "no crash, only
// UserError":
//   - write_trace's canonical text parses back to an equal trace (trace.h's contract);
//   - replaying WGs with WgExpander (the CU model's unchecked path; at most kMaxOps
//     ops per input) yields only what validate_trace promises: loads and stores of
//     1 B .. 1 GiB per row, 1 .. 2^20 rows, at most 4 GiB, rows that do not overlap,
//     address ranges within 64 bits, `wf` below the WG's WFs, and loops that end.

#include <cstddef>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "fuzz/fuzz_common.h"
#include "trace/trace.h"

namespace {

using namespace t3sim;
using t3sim_fuzz::expect_user_error;
using t3sim_fuzz::property_failed;

constexpr std::uint64_t kMaxOps = 200'000;

void check_op(const KernelTrace& trace, std::uint32_t wg, const WgOp& op) {
  const auto fail = [&](const std::string& what) {
    property_failed(fmt::format("WG {} op {} ({}): {}", wg, op.op_index, to_string(op.kind), what));
  };
  if (op.wf >= 0 && static_cast<std::uint64_t>(op.wf) >= trace.resources.wfs_per_wg)
    fail(fmt::format("wf {} of {}", op.wf, trace.resources.wfs_per_wg));
  if (op.kind != TraceOpKind::kLoad && op.kind != TraceOpKind::kStore) return;
  const std::uint64_t bytes = op.row_bytes(), rows = op.rows(), stride = op.stride();
  if (bytes < 1 || bytes > static_cast<std::uint64_t>(kTraceMaxAccessBytes)) fail(fmt::format("row bytes {}", bytes));
  if (rows < 1 || rows > static_cast<std::uint64_t>(kTraceMaxAccessRows)) fail(fmt::format("rows {}", rows));
  if (bytes * rows > static_cast<std::uint64_t>(kTraceMaxAccessTotal)) fail(fmt::format("{} x {} bytes", rows, bytes));
  if (rows > 1 && stride < bytes) fail(fmt::format("stride {} below row bytes {}", stride, bytes));
  const unsigned __int128 end = static_cast<unsigned __int128>(op.addr()) +
                                static_cast<unsigned __int128>(rows - 1) * stride + bytes;
  if (end > static_cast<unsigned __int128>(INT64_MAX)) fail("address range past 64 bits");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  t3sim_fuzz::quiet();
  t3sim_fuzz::Scratch::get();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  KernelTrace trace;
  if (!expect_user_error([&] { trace = parse_trace(text, "fuzz.trace"); }, false)) return 0;

  // The file reader on the same text.
  auto& scratch = t3sim_fuzz::Scratch::get();
  scratch.put("fuzz.trace", text);
  KernelTrace from_file;
  if (!expect_user_error([&] { from_file = read_trace(scratch.path("fuzz.trace")); }, false))
    property_failed("parse_trace accepts the text but read_trace rejects the file");
  if (!(from_file == trace)) property_failed("read_trace and parse_trace disagree");

  // Canonical text round trip.
  std::string canonical;
  expect_user_error([&] { canonical = trace_to_string(trace); }, false);
  KernelTrace again;
  try {
    again = parse_trace(canonical, "canonical.trace");
  } catch (const std::exception& e) {
    property_failed(fmt::format("write_trace text does not parse back: {}\n--- text:\n{}", e.what(), canonical));
  }
  if (!(again == trace)) property_failed(fmt::format("write_trace text parses to another trace\n--- text:\n{}", canonical));

  // Replay: what validate_trace promised, for the first kMaxOps ops (first WG,
  // last WG, then the others in order).
  std::uint64_t ops = 0;
  std::vector<std::uint32_t> order;
  if (trace.num_wgs() > 0) {
    order.push_back(trace.num_wgs() - 1);
    for (std::uint32_t wg = 0; wg + 1 < trace.num_wgs() && wg < 4096; ++wg) order.push_back(wg);
  }
  for (std::uint32_t wg : order) {
    WgExpander expander(trace, wg);
    WgOp op;
    while (ops < kMaxOps && expander.next(op)) {
      check_op(trace, wg, op);
      ++ops;
    }
    if (ops >= kMaxOps) break;
  }
  return 0;
}
