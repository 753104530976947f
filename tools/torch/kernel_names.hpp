#pragma once
// Names of the kernels an operation launches, seen through CUPTI's launch callbacks (driver domain,
// which every runtime launch also reaches). Optional: without CUPTI, or when another tool already
// subscribed, recording is off and the collector writes no kernel names.
#include <memory>
#include <string>
#include <vector>

namespace habitat::collect {

class KernelNames {
 public:
  KernelNames();
  ~KernelNames();
  KernelNames(const KernelNames&) = delete;
  KernelNames& operator=(const KernelNames&) = delete;

  [[nodiscard]] bool available() const;
  [[nodiscard]] const std::string& why_unavailable() const;
  void begin();                      // start collecting launches
  std::vector<std::string> end();    // distinct demangled names since begin(), in launch order

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace habitat::collect
