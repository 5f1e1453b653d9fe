#pragma once
// The C3 scenarios of ../shared/seeds/003 (Table I: the GEMMs, from LLaMA-70B and
// LLaMA-405B training at 8192 tokens; Table II: GEMM tag x collective size, with the
// paper's taxonomy). Sizes are as the paper writes them, M x N x K; collective sizes
// in binary units (896M = 896 MiB = mb1's 57344 x 8192 FP16 weights, the FSDP
// all-gather of its layer).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace t3sim {

struct C3Gemm {
  std::string tag;     // "cb1"
  std::uint64_t m = 0, n = 0, k = 0;
  std::string source;  // "LLaMA-70B"
  bool compute_bound = false;  // the paper's cb / mb tag (measured op-to-byte vs machine)
};

struct C3Case {
  std::string name;      // "mb1_896M"
  std::string gemm;      // a C3Gemm tag
  std::uint64_t collective_bytes = 0;
  std::string taxonomy;  // the paper's: G-long, C-long or GC-equal
  std::string source;    // "LLaMA-70B" or "synthetic"
};

const std::vector<C3Gemm>& c3_gemms();
const std::vector<C3Case>& c3_cases();
// UserError for an unknown name, with the list and a did-you-mean.
const C3Gemm& find_c3_gemm(std::string_view tag);
const C3Case& find_c3_case(std::string_view name);

}  // namespace t3sim
