// habitat._habitat: the C++ core for Python. No logic of its own: the same functions as `habitat predict` and
// `habitat devices` (tools/habitat/predict_cmd.hpp), their JSON returned as text for the package to wrap.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "predict_cmd.hpp"

namespace py = pybind11;
using namespace habitat;

namespace {

cli::Common common(const std::vector<std::string>& device_files, const std::string& format) {
  cli::Common c;
  c.device_files = device_files;
  c.format = format;
  c.quiet = true;
  return c;
}

// (JSON report, table, warnings): the documents `habitat predict --format json` and the table print, warnings one per
// line as the CLI writes them.
std::tuple<std::string, std::string, std::string> predict(const std::string& trace, const std::vector<std::string>& to, const std::optional<std::string>& origin,
                                            const std::optional<int>& batch, const std::vector<std::string>& what_if, int world_size,
                                            const std::optional<std::string>& host, const std::optional<std::string>& origin_host,
                                            const std::string& predictor, const std::vector<std::string>& device_files,
                                            const std::optional<long>& step, bool whole_trace, bool infer_steps, const std::string& parallel,
                                            const std::string& step_marker) {
  if (to.empty()) throw make_error(trace, "to", "name at least one destination GPU (or 'all')");
  if (world_size < 1 || world_size > (1 << 20)) throw make_error(trace, "world_size", "must be 1 to 2^20 GPUs");
  if (batch && *batch < 1) throw make_error(trace, "batch", "must be a positive number of samples");
  if (std::find(cli::predictor_names.begin(), cli::predictor_names.end(), predictor) == cli::predictor_names.end())
    throw make_error(trace, "predictor", "must be physics, tile, scaling, wave or hybrid");
  cli::Common c = common(device_files, "json");
  c.predictor = predictor;
  c.step = step;
  c.whole_trace = whole_trace;
  c.infer_steps = infer_steps;
  c.step_marker = step_marker;
  cli::PredictArgs a;
  a.trace_path = trace;
  a.to = to;
  a.origin_name = origin;
  a.batch = batch;
  if (host) a.host_args.runs_on = *host;
  if (origin_host) a.host_args.recorded_on = *origin_host;
  a.ddp.world_size = world_size;
  a.what_if_args = what_if;
  a.parallel = parallel;
  const Catalog cat = cli::load_catalog(c);
  std::ostringstream out, table, err;
  {
    py::gil_scoped_release unlocked;  // prediction is pure C++: let other Python threads run
    cli::run_predict(a, c, cat, out, err, &table);
  }
  return {out.str(), table.str(), err.str()};
}

// One GPU by the CLI's name rules (aliases; an ambiguous name is an error listing the candidates).
std::string device(const std::string& name, const std::vector<std::string>& device_files) {
  const Catalog cat = cli::load_catalog(common(device_files, "json"));
  return habitat::detail::json_text(cli::device_json(cat.at(name)));
}

std::string devices(const std::vector<std::string>& device_files) {
  std::ostringstream out;
  cli::cmd_devices(common(device_files, "json"), out);
  return out.str();
}

}  // namespace

PYBIND11_MODULE(_habitat, m) {
  m.doc() = "habitat's C++ core (use the habitat package, not this module)";
  // One exception type for every input error, with the C++ message (file, place, problem).
  py::register_exception<habitat::error>(m, "Error", PyExc_ValueError);
  m.def("predict", &predict, py::arg("trace"), py::arg("to"), py::arg("origin"), py::arg("batch"), py::arg("what_if"), py::arg("world_size"),
        py::arg("host"), py::arg("origin_host"), py::arg("predictor"), py::arg("devices"), py::arg("step"), py::arg("whole_trace"), py::arg("infer_steps"),
        py::arg("parallel"), py::arg("step_marker"));
  m.def("device", &device, py::arg("name"), py::arg("devices"));
  m.def("devices", &devices, py::arg("devices"));
  m.attr("__version__") = HABITAT_VERSION;
}
