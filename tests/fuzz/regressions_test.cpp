// Replays every input the fuzzers once crashed on (regressions/<target>/) through the same target function
// libFuzzer runs (targets/<target>.hpp): each must now be refused with habitat::error or accepted with
// finite values. A crash aborts the test, as it aborted the fuzzer; under scripts/sanitize.sh the
// sanitizers watch these inputs too.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/targets/device_file.hpp"
#include "fuzz/targets/host_profile.hpp"
#include "fuzz/targets/kineto_trace.hpp"
#include "fuzz/targets/kineto_trace_gz.hpp"
#include "fuzz/targets/metric_file.hpp"
#include "fuzz/targets/ncu_csv.hpp"
#include "fuzz/targets/op_csv.hpp"
#include "fuzz/targets/safetensors.hpp"

namespace {

using Target = void (*)(const std::uint8_t*, std::size_t);

// Replays regressions/<folder>/* (sorted, so a failure names the same file every run); returns how many.
int replay(const std::string& folder, Target target) {
  const std::filesystem::path dir = std::filesystem::path(HABITAT_FUZZ_REGRESSIONS) / folder;
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.is_regular_file() && e.path().filename() != "README.md") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    INFO("regression input " << f.string());
    std::ifstream in(f, std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    target(bytes.data(), bytes.size());
    SUCCEED();
  }
  return static_cast<int>(files.size());
}

}  // namespace

TEST_CASE("fuzz regressions: ncu CSV", "[fuzz]") { CHECK(replay("ncu_csv", habitat::fuzz::ncu_csv) > 0); }
TEST_CASE("fuzz regressions: metric files", "[fuzz]") { CHECK(replay("metric_file", habitat::fuzz::metric_file) > 0); }
TEST_CASE("fuzz regressions: device files", "[fuzz]") { CHECK(replay("device_file", habitat::fuzz::device_file) > 0); }
TEST_CASE("fuzz regressions: predict-ops CSV", "[fuzz]") { CHECK(replay("op_csv", habitat::fuzz::op_csv) > 0); }
TEST_CASE("fuzz regressions: safetensors", "[fuzz]") { CHECK(replay("safetensors", habitat::fuzz::safetensors) > 0); }
TEST_CASE("fuzz regressions: host profiles", "[fuzz]") { CHECK(replay("host_profile", habitat::fuzz::host_profile) > 0); }

// Kineto inputs: .json.gz files through the gzip target, the rest as plain JSON.
TEST_CASE("fuzz regressions: Kineto traces", "[fuzz][kineto]") {
  replay("kineto", [](const std::uint8_t* data, std::size_t size) {
    const bool gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    (gz ? habitat::fuzz::kineto_trace_gz : habitat::fuzz::kineto_trace)(data, size);
  });
}
