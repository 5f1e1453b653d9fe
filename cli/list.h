#pragma once
// `t3sim list`: every registry of swappable implementations, each name with its
// one-line description, so a user sees what a key accepts without reading code.

#include <string>

namespace t3sim {

// The listing `t3sim list` prints: one section per registry.
std::string registry_listing();

}  // namespace t3sim
