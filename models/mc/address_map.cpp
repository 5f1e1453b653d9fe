#include "models/mc/address_map.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "sim/config.h"

namespace t3sim {

namespace {
std::uint32_t log2_exact(std::uint64_t v) { return static_cast<std::uint32_t>(std::countr_zero(v)); }
}  // namespace

AddressMap::AddressMap(const AddressMapConfig& cfg, const HbmConfig& hbm) : cfg_(cfg) {
  if (!std::has_single_bit(cfg.interleave_bytes) || cfg.interleave_bytes < hbm.access_bytes ||
      cfg.interleave_bytes > hbm.row_bytes) {
    throw std::invalid_argument(fmt::format(
        "expected a power of two between the access size ({} B) and the row size ({} B), got {} B",
        hbm.access_bytes, hbm.row_bytes, cfg.interleave_bytes));
  }
  offset_bits_ = log2_exact(hbm.access_bytes);
  low_column_bits_ = log2_exact(cfg.interleave_bytes / hbm.access_bytes);
  channels_ = hbm.channels;
  modulo_channels_ = !std::has_single_bit(hbm.channels);
  hash_bits_ = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(std::bit_width(channels_ - 1)));
  // ceil(64 / hash_bits_) chunks, folded in halves: shifts of hash_bits_ x 2^k for
  // 2^k below the chunk count, largest first (each below 64).
  const std::uint32_t chunks = (64 + hash_bits_ - 1) / hash_bits_;
  std::uint32_t span = 1;
  while (span < chunks) span *= 2;
  for (span /= 2; span >= 1; span /= 2) folds_[num_folds_++] = hash_bits_ * span;
  hash_modulo_ = modulo_channels_ || channels_ == 1;
  const std::array<std::uint32_t, kNumFields> width = {
      log2_exact(hbm.rows), log2_exact(hbm.banks_per_group), log2_exact(hbm.bank_groups),
      log2_exact(hbm.columns()) - low_column_bits_, modulo_channels_ ? 0 : log2_exact(hbm.channels)};

  // Parse "ro-ba-co-bg-ch" (most significant first).
  std::array<int, kNumFields> position{};
  position.fill(-1);
  std::vector<Field> fields;
  std::string_view rest = cfg.order;
  while (!rest.empty()) {
    const auto dash = rest.find('-');
    const std::string_view name = rest.substr(0, dash);
    rest = dash == std::string_view::npos ? std::string_view{} : rest.substr(dash + 1);
    Field f;
    if (name == "ro") f = kRow;
    else if (name == "ba") f = kBank;
    else if (name == "bg") f = kBankGroup;
    else if (name == "co") f = kColumn;
    else if (name == "ch") f = kChannel;
    else
      throw std::invalid_argument(fmt::format(
          "'{}' is not a field (expected ro, ba, bg, co, ch, most significant first, e.g. "
          "ro-ba-co-bg-ch)", name));
    if (position[f] >= 0) throw std::invalid_argument(fmt::format("field '{}' appears twice", name));
    position[f] = static_cast<int>(fields.size());
    fields.push_back(f);
  }
  if (fields.size() != kNumFields)
    throw std::invalid_argument("expected each of ro, ba, bg, co, ch exactly once");

  if (modulo_channels_ && fields.back() != kChannel) {
    throw std::invalid_argument(fmt::format(
        "with {} channels (not a power of two) the channel must be the last field, e.g. ro-co-ba-bg-ch",
        hbm.channels));
  }
  // A power-of-two channel count is a bit field like the others. Otherwise consecutive
  // interleave units go round-robin over the channels (unit % channels) and the other
  // fields are cut from unit / channels.
  std::uint32_t shift = modulo_channels_ ? 0 : offset_bits_ + low_column_bits_;
  for (auto it = fields.rbegin(); it != fields.rend(); ++it) {
    slice_[*it] = Slice{shift, width[*it]};
    shift += width[*it];
  }
}

std::uint32_t AddressMap::channel_hash(std::uint64_t above) const {
  if (!cfg_.channel_xor) return 0;
  // Fold the bits above the channel field into channel-sized chunks: the XOR of every
  // hash_bits_-wide chunk, by a tree of shifts (constructor).
  std::uint64_t x = above;
  for (std::uint32_t i = 0; i < num_folds_; ++i) x ^= x >> folds_[i];
  const std::uint64_t h = x & ((std::uint64_t{1} << hash_bits_) - 1);
  // A power-of-two count above 1 has h < channels_ already (no division).
  return static_cast<std::uint32_t>(hash_modulo_ ? h % channels_ : h);
}

DecodedAddress AddressMap::decode(std::uint64_t address) const {
  const std::uint64_t unit = address >> (offset_bits_ + low_column_bits_);
  const std::uint64_t fields = modulo_channels_ ? unit / channels_ : address;
  auto field = [&](Field f) {
    const Slice s = slice_[f];
    return static_cast<std::uint32_t>((fields >> s.shift) & ((std::uint64_t{1} << s.bits) - 1));
  };
  DecodedAddress d;
  d.channel = channel(address);
  d.bank.bank_group = field(kBankGroup);
  d.bank.bank = field(kBank);
  d.bank.row = field(kRow);  // addresses beyond the capacity wrap around
  const std::uint32_t low =
      static_cast<std::uint32_t>((address >> offset_bits_) & ((std::uint64_t{1} << low_column_bits_) - 1));
  d.bank.column = (field(kColumn) << low_column_bits_) | low;
  return d;
}

std::uint32_t AddressMap::channel(std::uint64_t address) const {
  if (modulo_channels_) {
    const std::uint64_t unit = address >> (offset_bits_ + low_column_bits_);
    return static_cast<std::uint32_t>((unit % channels_ + channel_hash(unit / channels_)) % channels_);
  }
  const Slice s = slice_[kChannel];
  const auto raw = static_cast<std::uint32_t>((address >> s.shift) & ((std::uint64_t{1} << s.bits) - 1));
  return raw ^ channel_hash(address >> (s.shift + s.bits));
}

std::uint64_t AddressMap::channel_local(std::uint64_t address) const {
  if (modulo_channels_) {
    const std::uint32_t unit_bits = offset_bits_ + low_column_bits_;
    const std::uint64_t unit = address >> unit_bits;
    return ((unit / channels_) << unit_bits) | (address & ((std::uint64_t{1} << unit_bits) - 1));
  }
  // The channel field's value is fixed by the bits above it (and the XOR hash) for a
  // given channel, so dropping it loses nothing among one channel's addresses.
  const Slice s = slice_[kChannel];
  return ((address >> (s.shift + s.bits)) << s.shift) | (address & ((std::uint64_t{1} << s.shift) - 1));
}

std::uint64_t AddressMap::encode(const DecodedAddress& d) const {
  auto put = [&](Field f, std::uint64_t v) { return v << slice_[f].shift; };
  const std::uint64_t low = d.bank.column & ((std::uint64_t{1} << low_column_bits_) - 1);
  const std::uint64_t others = put(kBankGroup, d.bank.bank_group) | put(kBank, d.bank.bank) | put(kRow, d.bank.row) |
                               put(kColumn, d.bank.column >> low_column_bits_);
  if (modulo_channels_) {
    const std::uint32_t raw = (d.channel + channels_ - channel_hash(others)) % channels_;
    const std::uint64_t unit = others * channels_ + raw;
    return (unit << (offset_bits_ + low_column_bits_)) | (low << offset_bits_);
  }
  const Slice c = slice_[kChannel];
  const std::uint64_t above = (others | (low << offset_bits_)) >> (c.shift + c.bits);
  return put(kChannel, d.channel ^ channel_hash(above)) | others | (low << offset_bits_);
}

AddressMapConfig read_address_map_config(ConfigNode node, const HbmConfig& hbm) {
  AddressMapConfig cfg;
  cfg.order = node.get_string("order", cfg.order);
  cfg.interleave_bytes = node.get_bytes("interleave", cfg.interleave_bytes);
  cfg.channel_xor = node.get_enum("channel_hash", "xor", {"xor", "none"}) == "xor";
  try {
    AddressMap probe(cfg, hbm);
  } catch (const std::invalid_argument& e) {
    const std::string_view msg = e.what();
    node.fail(msg.starts_with("expected a power") ? "interleave" : "order", e.what());
  }
  node.finish();
  return cfg;
}

}  // namespace t3sim
