#pragma once
// Run-time choice among the compile-time predictor configurations (--scaling, --waves, --gamma).
#include <string>
#include <vector>
#include <variant>

#include "habitat/predict/roofline_scaling.hpp"
#include "habitat/predict/wave_scaling.hpp"

namespace habitat::cli {

// --predictor's choices (the CLI's flag check and the Python package's argument check).
inline const std::vector<std::string> predictor_names{"physics", "tile", "scaling", "wave", "hybrid"};

using AnyPredictor = std::variant<RooflineScaling, WaveScaling<waves::Exact, gamma::RooflineUtilization>, WaveScaling<waves::Exact, gamma::Roofline>,
                                  WaveScaling<waves::Exact, gamma::Fixed<1>>, WaveScaling<waves::Many, gamma::RooflineUtilization>,
                                  WaveScaling<waves::Many, gamma::Roofline>, WaveScaling<waves::Many, gamma::Fixed<1>>>;

// --scaling roofline (default) ignores --waves and --gamma; --scaling wave is the paper's Eq. 1/2 with a gamma.
inline AnyPredictor make_predictor(const std::string& scaling, const std::string& waves, const std::string& gamma) {
  if (scaling == "roofline") return RooflineScaling{};
  const int w = waves == "eq1" ? 0 : 1;
  const int g = gamma == "roofline-utilization" ? 0 : gamma == "roofline" ? 1 : 2;
  switch (w * 3 + g) {
    case 0: return WaveScaling<waves::Exact, gamma::RooflineUtilization>{};
    case 1: return WaveScaling<waves::Exact, gamma::Roofline>{};
    case 2: return WaveScaling<waves::Exact, gamma::Fixed<1>>{};
    case 3: return WaveScaling<waves::Many, gamma::RooflineUtilization>{};
    case 4: return WaveScaling<waves::Many, gamma::Roofline>{};
    default: return WaveScaling<waves::Many, gamma::Fixed<1>>{};
  }
}

}  // namespace habitat::cli
