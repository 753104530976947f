// The libFuzzer entry of every target: HABITAT_FUZZ_TARGET names the function that targets/<name>.hpp
// defines, shared with the regression tests (regressions_test.cpp) that replay the crashes found.
#include <cstddef>
#include <cstdint>

#include HABITAT_FUZZ_HEADER

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  habitat::fuzz::HABITAT_FUZZ_TARGET(data, size);
  return 0;
}
