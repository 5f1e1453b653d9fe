#pragma once
// Where a physical address lives in a GPU's HBM: channel, bank group, bank, row and
// column, from a configurable interleaving order (Ramulator-style "RoBaCoBgCh").
//
// Layout, least significant bits first:
//   [byte in access: log2(access_bytes)]
//   [column bits inside one interleave unit: log2(interleave / access_bytes)]
//   [the fields of `order`, last-named lowest]
// so consecutive `interleave`-byte units go to the field named last (the channel, by
// default), and a request never straddles a channel if it stays inside one unit.
// A channel count that is not a power of two (H200's six HBM3e stacks) must be the
// last field: units go round-robin over channels and the rest is cut from the quotient.

#include <array>
#include <cstdint>
#include <string>

#include "models/hbm/hbm_channel.h"

namespace t3sim {

class ConfigNode;

struct AddressMapConfig {
  // Fields from most to least significant, '-'-separated: ro, ba, bg, co, ch, each once.
  std::string order = "ro-ba-co-bg-ch";
  std::uint64_t interleave_bytes = 256;  // bytes kept together in one channel and row
  // XOR the channel with the address bits above it, as GPUs do, so a power-of-two
  // stride (a matrix column, a tile's rows) spreads over channels instead of
  // hammering one ("partition camping").
  bool channel_xor = true;
};

AddressMapConfig read_address_map_config(ConfigNode node, const HbmConfig& hbm);

struct DecodedAddress {
  std::uint32_t channel = 0;
  BankAddress bank;  // bank group, bank, row, column (in access_bytes units)
};

class AddressMap {
 public:
  // Contract: throws std::invalid_argument when `order` is malformed or the interleave
  // does not fit a row (the config reader turns these into ConfigErrors).
  AddressMap(const AddressMapConfig& cfg, const HbmConfig& hbm);

  DecodedAddress decode(std::uint64_t address) const;
  std::uint32_t channel(std::uint64_t address) const;
  // The address inside its channel, the channel's bits squeezed out: dense, and
  // one-to-one among the addresses of one channel. A channel's functional store is
  // indexed by it, so it holds 1/channels of an array, not every channel a sparse copy.
  std::uint64_t channel_local(std::uint64_t address) const;
  // The lowest address that decodes to `d` (inverse of decode, for tests and tools).
  std::uint64_t encode(const DecodedAddress& d) const;
  std::uint64_t interleave_bytes() const { return cfg_.interleave_bytes; }

 private:
  enum Field { kRow, kBank, kBankGroup, kColumn, kChannel, kNumFields };
  struct Slice {
    std::uint32_t shift = 0, bits = 0;
  };
  AddressMapConfig cfg_;
  std::uint32_t offset_bits_ = 0;      // byte within an access
  std::uint32_t low_column_bits_ = 0;  // column bits inside an interleave unit
  std::array<Slice, kNumFields> slice_{};
  std::uint32_t channel_hash(std::uint64_t quotient) const;  // fold of the bits above the channel
  std::uint32_t channels_ = 1;
  bool modulo_channels_ = false;  // channel count not a power of two: unit % channels
  // channel_hash: chunk width, and the shifts (largest first, a multiple of the width
  // each) of a tree fold that XORs every chunk of a 64-bit value into the lowest.
  std::uint32_t hash_bits_ = 1;
  bool hash_modulo_ = true;  // the folded chunk can reach channels_ (not a power of two, or 1 channel)
  std::uint32_t num_folds_ = 0;
  std::array<std::uint32_t, 7> folds_{};
};

}  // namespace t3sim
