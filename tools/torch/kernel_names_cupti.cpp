// CUPTI side of KernelNames (compiled only when CUPTI is found).
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "kernel_names.hpp"

namespace habitat::collect {

struct KernelNames::Impl {
  CUpti_SubscriberHandle subscriber{};
  bool ok = false;
  std::string why;
  std::mutex mu;
  bool on = false;
  std::vector<std::string> names;

  static void CUPTIAPI callback(void* user, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
    auto* self = static_cast<Impl*>(user);
    const auto* info = static_cast<const CUpti_CallbackData*>(data);
    if (info->callbackSite != CUPTI_API_ENTER || info->symbolName == nullptr) return;
    std::lock_guard lock(self->mu);
    if (!self->on) return;
    int status = 0;
    char* d = abi::__cxa_demangle(info->symbolName, nullptr, nullptr, &status);
    std::string name = status == 0 && d ? d : info->symbolName;
    std::free(d);
    if (std::find(self->names.begin(), self->names.end(), name) == self->names.end()) self->names.push_back(std::move(name));
  }
};

KernelNames::KernelNames() : impl_(std::make_unique<Impl>()) {
  const CUptiResult r = cuptiSubscribe(&impl_->subscriber, &Impl::callback, impl_.get());
  if (r != CUPTI_SUCCESS) {
    const char* s = nullptr;
    cuptiGetResultString(r, &s);
    impl_->why = std::string("cuptiSubscribe failed: ") + (s ? s : "unknown error");
    return;
  }
  if (cuptiEnableDomain(1, impl_->subscriber, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) {
    impl_->why = "cuptiEnableDomain(driver API) failed";
    cuptiUnsubscribe(impl_->subscriber);
    return;
  }
  impl_->ok = true;
}

KernelNames::~KernelNames() {
  if (impl_->ok) cuptiUnsubscribe(impl_->subscriber);
}

bool KernelNames::available() const { return impl_->ok; }
const std::string& KernelNames::why_unavailable() const { return impl_->why; }

void KernelNames::begin() {
  std::lock_guard lock(impl_->mu);
  impl_->names.clear();
  impl_->on = true;
}

std::vector<std::string> KernelNames::end() {
  std::lock_guard lock(impl_->mu);
  impl_->on = false;
  return std::move(impl_->names);
}

}  // namespace habitat::collect
