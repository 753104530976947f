// KernelNames without CUPTI: recording is off and says why.
#include "kernel_names.hpp"

namespace habitat::collect {

struct KernelNames::Impl {
  std::string why = "built without CUPTI";
};

KernelNames::KernelNames() : impl_(std::make_unique<Impl>()) {}
KernelNames::~KernelNames() = default;
bool KernelNames::available() const { return false; }
const std::string& KernelNames::why_unavailable() const { return impl_->why; }
void KernelNames::begin() {}
std::vector<std::string> KernelNames::end() { return {}; }

}  // namespace habitat::collect
