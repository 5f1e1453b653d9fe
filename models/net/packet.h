#pragma once
// What crosses an inter-GPU link: a block of data with its functional payload.

#include <cstdint>

#include "models/common/payload.h"

namespace t3sim {

struct Packet {
  std::uint32_t src_gpu = 0;
  std::uint32_t dst_gpu = 0;
  std::uint64_t address = 0;  // where the data goes in the destination's memory
  std::uint64_t bytes = 0;    // payload bytes on the wire
  std::uint32_t step = 0;     // collective step that sent it
  Payload data;

  std::uint64_t size_bytes() const { return bytes; }
};

}  // namespace t3sim
