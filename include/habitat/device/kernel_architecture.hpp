#pragma once
// The GPU generation a trace's kernel names tell, for traces without deviceProperties. cuBLAS, cuDNN, CUTLASS
// and Tensile name many kernels after the architecture they were written for ("sm90_xmma_gemm_...",
// "ampere_sgemm_...", "Cijk_..._ISA942_..."). Most such names only bound the GPU from below: an H100 runs
// sm80_ kernels (every FP32 trace of fixtures/neusight_e2e/h100 has only those), an RTX 2080 Ti runs volta_
// ones (../shared/data/wild/param_rtx2080ti_*), a Pascal GPU maxwell_ ones. A few name exactly one generation:
// Hopper's wgmma kernels (sm90_, sm90a) and Blackwell's tcgen05 ones (sm100_) run on no other, nor do Tensile's
// kernels built for one gfx target. The generation is then known, not the GPU: the catalog GPU taken for it is
// the most common one of that generation, said in a warning.
#include <array>
#include <cctype>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/device/device.hpp"

namespace habitat {

struct KernelArchitecture {
  std::string_view generation;              // as the messages name it
  Vendor vendor;
  int order;                                // newer generations of a vendor higher
  std::array<std::string_view, 3> markers;  // substrings of kernel names written for it ("" unused)
  bool only_this;                           // its kernels run on this generation only; else on newer GPUs too
  std::string_view default_gpu;             // the catalog GPU taken for it ("" where only_this is false)
};

// The one table of what kernel names tell. A marker is matched in the lower-cased name, and not followed by a digit
// ("sm90" in "sm90_xmma_gemm", "sm90a", "<Sm90, ...>"; not in "sm900").
inline constexpr std::array<KernelArchitecture, 11> kernel_architectures{{
    {"Maxwell or Pascal", Vendor::nvidia, 1, {"maxwell_", "sm50", "sm60"}, false, ""},
    {"Volta", Vendor::nvidia, 2, {"volta_", "sm70", "sm_70"}, false, ""},
    {"Turing", Vendor::nvidia, 3, {"turing_", "sm75", "sm_75"}, false, ""},
    {"Ampere", Vendor::nvidia, 4, {"ampere_", "sm80", "sm86"}, false, ""},
    {"Ada", Vendor::nvidia, 5, {"sm89", "sm_89", ""}, false, ""},
    {"Hopper", Vendor::nvidia, 6, {"sm90", "sm_90", ""}, true, "H100 SXM"},
    {"Blackwell", Vendor::nvidia, 7, {"sm100", "sm_100", ""}, true, "B200"},
    {"AMD Instinct (no gfx target named)", Vendor::amd, 0, {"cijk_", "aiter_", "igemm_fwd_gtc"}, false, ""},
    {"AMD CDNA 1 (gfx908)", Vendor::amd, 1, {"isa908", "gfx908", ""}, true, "MI100"},
    {"AMD CDNA 2 (gfx90a)", Vendor::amd, 2, {"isa90a", "gfx90a", ""}, true, "MI250X"},
    {"AMD CDNA 3 (gfx942)", Vendor::amd, 3, {"isa942", "gfx942", ""}, true, "MI300X"},
}};

// What a trace's kernel names say: the generation and GPU to take, or why none can be taken.
struct ArchitectureGuess {
  const KernelArchitecture* architecture = nullptr;  // set where the names decide
  std::size_t kernels = 0;                           // kernels whose names carry the deciding marker
  std::string example;                               // one such name, at most 60 characters
  std::string why_not;                               // where they do not decide: why, as the end of a sentence
};

[[nodiscard]] inline ArchitectureGuess architecture_from_kernel_names(const std::vector<std::string_view>& names) {
  std::array<std::size_t, kernel_architectures.size()> count{};
  std::array<std::string, kernel_architectures.size()> example;
  auto has = [](std::string_view name, std::string_view marker) {
    for (auto at = name.find(marker); at != std::string_view::npos; at = name.find(marker, at + 1)) {
      const std::size_t after = at + marker.size();
      if (after == name.size() || name[after] < '0' || name[after] > '9') return true;
    }
    return false;
  };
  std::string lower;
  for (const std::string_view n : names) {
    lower.assign(n);
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (std::size_t i = 0; i < kernel_architectures.size(); ++i)
      for (const std::string_view m : kernel_architectures[i].markers)
        if (!m.empty() && has(lower, m)) {
          if (count[i]++ == 0) example[i] = std::string(n.substr(0, 60));
          break;
        }
  }
  ArchitectureGuess out;
  const KernelArchitecture* newest[2] = {nullptr, nullptr};  // per vendor
  std::vector<const KernelArchitecture*> exact;
  std::size_t vendors = 0;
  for (std::size_t i = 0; i < kernel_architectures.size(); ++i) {
    if (count[i] == 0) continue;
    const KernelArchitecture& a = kernel_architectures[i];
    const KernelArchitecture*& n = newest[a.vendor == Vendor::amd];
    if (!n) ++vendors;
    if (!n || a.order > n->order) n = &a;
    if (a.only_this) exact.push_back(&a);
  }
  auto quoted = [&](const KernelArchitecture& a) {
    const auto i = static_cast<std::size_t>(&a - kernel_architectures.data());
    return std::to_string(count[i]) + (count[i] == 1 ? " kernel" : " kernels") + " such as '" + example[i] + "'";
  };
  if (vendors == 0) {
    out.why_not = "its kernels' names do not tell the GPU's architecture";
  } else if (vendors == 2) {
    out.why_not = "its kernels' names are of both NVIDIA (" + quoted(*newest[0]) + ") and AMD GPUs (" + quoted(*newest[1]) + ")";
  } else {
    const KernelArchitecture& a = *(newest[0] ? newest[0] : newest[1]);
    if (exact.size() > 1) {
      out.why_not = "its kernels' names are of " + std::to_string(exact.size()) + " architectures that each run only their own (";
      for (std::size_t i = 0; i < exact.size(); ++i) out.why_not += (i ? "; " : "") + std::string(exact[i]->generation) + ": " + quoted(*exact[i]);
      out.why_not += ")";
    } else if (!a.only_this) {
      out.why_not = "its kernels' names (" + quoted(a) + ") are of " + std::string(a.generation) +
                    (a.vendor == Vendor::amd ? " GPUs" : " GPUs, which newer GPUs run too");
    } else {
      out.architecture = &a;
      const auto i = static_cast<std::size_t>(&a - kernel_architectures.data());
      out.kernels = count[i];
      out.example = example[i];
    }
  }
  return out;
}

}  // namespace habitat
