// tests/fuzz/replay_main.cpp - runs a fuzz target without libFuzzer, so that
// every build (g++, ThreadSanitizer, AddressSanitizer) runs it as a test:
//
//   <target>_replay [--random N] [--seed S] [--max-len L] [file or directory]...
//
// replays each file (a directory: each file in it, e.g. the committed corpus),
// then N inputs of up to L pseudo-random bytes from seed S. A failed check
// aborts; the line before it names the input, and a random one is written to
// ./fuzz-failure-<seed>-<i> so that it can be replayed (and minimized by the
// libFuzzer build: scripts/fuzz.sh).
#include "fuzz_input.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace {

void run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "cannot read " << path << "\n";
    std::exit(2);
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  std::cerr << "replaying " << path.string() << " (" << bytes.size() << " bytes)\n";
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

} // namespace

int main(int argc, char** argv) {
  unsigned long random_inputs = 0, seed = 1, max_len = 512;
  std::vector<std::filesystem::path> paths;
  for (int i = 1; i < argc; ++i) {
    const auto value = [&] {
      if (i + 1 >= argc) {
        std::cerr << argv[i] << " needs a value\n";
        std::exit(2);
      }
      return std::stoul(argv[++i]);
    };
    if (std::strcmp(argv[i], "--random") == 0)
      random_inputs = value();
    else if (std::strcmp(argv[i], "--seed") == 0)
      seed = value();
    else if (std::strcmp(argv[i], "--max-len") == 0)
      max_len = value();
    else
      paths.emplace_back(argv[i]);
  }

  std::size_t files = 0;
  for (const auto& p : paths) {
    if (std::filesystem::is_directory(p)) {
      std::vector<std::filesystem::path> entries;
      for (const auto& e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file()) entries.push_back(e.path());
      std::sort(entries.begin(), entries.end());
      for (const auto& e : entries) run_file(e), ++files;
    } else {
      run_file(p), ++files;
    }
  }

  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> buf;
  for (unsigned long i = 0; i < random_inputs; ++i) {
    buf.resize(rng() % (max_len + 1));
    for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
    const std::string name = "fuzz-failure-" + std::to_string(seed) + "-" + std::to_string(i);
    {
      // Written first, removed after: a crash leaves the input behind.
      std::ofstream(name, std::ios::binary)
          .write(reinterpret_cast<const char*>(buf.data()), std::streamsize(buf.size()));
    }
    LLVMFuzzerTestOneInput(buf.data(), buf.size());
    std::filesystem::remove(name);
  }
  std::cerr << "replayed " << files << " file(s) and " << random_inputs
            << " random input(s): all checks passed\n";
  return 0;
}
