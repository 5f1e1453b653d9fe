#pragma once
// Tests too long for CI's budget (each simulates for minutes) run only when the
// environment sets T3SIM_LONG_TESTS (README.md, "Tests too long for CI"); otherwise
// they are skipped, and ctest reports them as skipped, not passed.

#include <cstdlib>

#include <gtest/gtest.h>

namespace t3sim::testing_support {

inline bool long_tests_enabled() { return std::getenv("T3SIM_LONG_TESTS") != nullptr; }

}  // namespace t3sim::testing_support

// In a test body: skip it, saying why it is long, unless T3SIM_LONG_TESTS is set.
#define T3SIM_SKIP_UNLESS_LONG_TESTS(why)                       \
  do {                                                          \
    if (!::t3sim::testing_support::long_tests_enabled())        \
      GTEST_SKIP() << (why) << ": T3SIM_LONG_TESTS=1 runs it";  \
  } while (false)
