// tests/fuzz/fuzz_input.hpp - what every fuzz target shares: reading the
// fuzzer's bytes as a program of operations, and failing loudly.
//
// Each target is a model-based test: it decodes the input into a sequence of
// API calls, runs them on one thread against a model (std::map) and checks
// every result, so a failure is any disagreement, not only a crash. Inputs
// are read leniently - running out of bytes yields zeros - so every byte
// string is a valid program and the fuzzer's mutations never get rejected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

// Every target defines this (libFuzzer's entry point; replay_main.cpp calls
// it in builds without libFuzzer).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace fuzz {

class input {
public:
  input(const std::uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}

  bool empty() const noexcept { return pos_ >= size_; }
  std::uint8_t byte() noexcept { return pos_ < size_ ? data_[pos_++] : 0; }
  /// A value in [0, n), n >= 1, from one byte (or two when n > 256).
  unsigned below(std::size_t n) noexcept {
    const std::size_t raw = n > 256 ? byte() | std::size_t(byte()) << 8 : byte();
    return static_cast<unsigned>(raw % n);
  }
  bool coin() noexcept { return (byte() & 1u) != 0; }
  std::uint64_t u64() noexcept {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t(byte()) << (8 * i);
    return v;
  }
  /// Up to max_len bytes of the input itself (fewer at its end).
  std::string_view bytes(std::size_t max_len) noexcept {
    std::size_t len = below(max_len + 1);
    const std::size_t at = pos_ < size_ ? pos_ : size_;
    if (len > size_ - at) len = size_ - at;
    pos_ = at + len;
    return {reinterpret_cast<const char*>(data_) + at, len};
  }

private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

} // namespace fuzz
