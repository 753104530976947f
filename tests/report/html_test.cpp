// The HTML report: one bar per GPU, nothing non-finite printed, names escaped, the what-if beside the step.
#include <catch2/catch.hpp>

#include <cctype>
#include <limits>
#include <sstream>

#include "builtin_data.hpp"
#include "fixtures.hpp"
#include "habitat/habitat.hpp"
#include "habitat/kineto/reader.hpp"
#include "habitat/report/html.hpp"
#include "habitat/sim/compose.hpp"

using namespace habitat;

namespace {

// The ResNet-50 trace predicted as `habitat predict --to H100 --to A100-SXM4-40GB --to L4 --to V100 --batch 32` does.
struct Predicted {
  Trace trace = kineto::read_trace(test::fixture("h100", "resnet50_fp32_b32"));
  report::HtmlInput in;
  std::vector<const Device*> dests;

  Predicted() {
    const Catalog& cat = test::catalog();
    const Device origin = resolve_origin(cat, trace, std::nullopt);
    const auto work = kernel_work(trace);
    const sim::HostModel own = sim::host_model(test::hosts(), origin, origin);
    in.trace = &trace;
    in.origin = {origin.name, 0, trace.gpu_active_us(), sim::origin_timeline(trace, own)};
    in.origin.iteration_us = in.origin.simulated->timeline.period_us;
    in.batch = 32;
    in.source = "resnet50_fp32_b32.json.gz";
    for (const char* name : {"H100", "A100 SXM4 40GB", "L4", "V100"}) {
      const Device& d = cat.at(name);
      auto p = predict_trace(trace, work, origin, d, RooflineScaling{});
      const sim::HostModel hm = sim::host_model(test::hosts(), origin, d);
      sim::compose(p, trace, sim::build_program(trace, hm), d, in.batch);
      p.host = hm.runs_on;
      in.predictions.push_back(std::move(p));
      in.validation.push_back(d.validation);
      in.usd_per_hour.push_back(d.price ? d.price->usd_per_hour : 0);
      dests.push_back(&d);
    }
  }
  [[nodiscard]] std::string html() const {
    std::ostringstream os;
    report::write_html(os, in);
    return os.str();
  }
};

const Predicted& predicted() {
  static const Predicted p;
  return p;
}

// The text of the first <svg> whose data-chart is `kind` ("" where there is none).
std::string chart(const std::string& html, const std::string& kind) {
  const auto start = html.find("class=\"chart\" data-chart=\"" + kind + "\"");
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</svg>", start) - start);
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

// "nan" or "inf" printed as a word (a number), not inside a name such as "inference".
bool prints_non_finite(const std::string& s) {
  std::string low(s);
  for (auto& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const std::string w : {"nan", "inf"})
    for (auto at = low.find(w); at != std::string::npos; at = low.find(w, at + 1)) {
      const bool before = at > 0 && std::isalpha(static_cast<unsigned char>(low[at - 1]));
      const bool after = at + 3 < low.size() && std::isalpha(static_cast<unsigned char>(low[at + 3]));
      if (!before && !after) return true;
    }
  return false;
}

}  // namespace

TEST_CASE("html report draws one iteration bar per destination GPU", "[report][html]") {
  const std::string html = predicted().html();
  CHECK(count(chart(html, "iteration"), "class=\"bar\"") == 4);
  CHECK(count(chart(html, "throughput"), "class=\"bar\"") == 4);
  for (const Device* d : predicted().dests) CHECK(chart(html, "iteration").find(">" + d->name + "</text>") != std::string::npos);
  CHECK_FALSE(chart(html, "breakdown-op").empty());
  CHECK_FALSE(chart(html, "breakdown-method").empty());
  CHECK(count(chart(html, "timeline"), "class=\"kernel\"") > 10);
  CHECK(chart(html, "what-if").empty());  // none given
}

TEST_CASE("html report says which GPUs were validated", "[report][html]") {
  Predicted p;
  p.in.validation = {"checked against 13 measured traces", "", "", ""};
  const std::string html = p.html();
  CHECK(count(html, "physics only, not validated against measurements") == 3);
  CHECK(html.find("checked against 13 measured traces") != std::string::npos);
  CHECK(html.find(p.in.predictions[0].method_summary()) != std::string::npos);
}

TEST_CASE("html report is self-contained", "[report][html]") {
  const std::string html = predicted().html();
  CHECK(html.find("http") == std::string::npos);
  CHECK(html.find("src=") == std::string::npos);
  CHECK(count(html, "<script") == 1);
}

TEST_CASE("html report never prints nan or inf", "[report][html]") {
  CHECK_FALSE(prints_non_finite("void cudnn::infer_kernel"));  // the check itself: names may contain the letters
  CHECK(prints_non_finite("<td>nan</td>"));
  CHECK(prints_non_finite("y=\"-inf\""));
  Predicted p;
  CHECK_FALSE(prints_non_finite(p.html()));
  p.in.predictions[1].iteration_us = std::numeric_limits<double>::quiet_NaN();
  p.in.predictions[2].throughput = std::numeric_limits<double>::infinity();
  p.in.predictions[0].by_operation.front().predicted_us = std::numeric_limits<double>::quiet_NaN();
  const std::string html = p.html();
  CHECK_FALSE(prints_non_finite(html));
  CHECK(html.find("–") != std::string::npos);
  CHECK(count(chart(html, "iteration"), "class=\"bar\"") == 3);  // no bar for the broken value
}

TEST_CASE("html report escapes device and operation names", "[report][html]") {
  Predicted p;
  p.in.predictions[0].device = "GPU <b>&\"x\"";
  p.in.predictions[0].by_operation.front().key = "op<script>alert(1)</script>";
  p.in.source = "a<b>.json";
  const std::string html = p.html();
  CHECK(html.find("GPU &lt;b&gt;&amp;&quot;x&quot;") != std::string::npos);
  CHECK(html.find("GPU <b>") == std::string::npos);
  CHECK(html.find("<script>alert") == std::string::npos);
  CHECK(html.find("a&lt;b&gt;.json") != std::string::npos);
}

TEST_CASE("html report shows the what-if beside the traced step", "[report][html]") {
  Predicted p;
  report::WhatIfSummary w;
  w.label = "batch=64";
  w.batch = 64;
  w.notes = {"activations scale with the batch"};
  w.memory = whatif::MemoryEstimate{2.0 * (1 << 30), 6.0 * (1 << 30)};
  w.predictions = p.in.predictions;
  for (auto& q : w.predictions) q.iteration_us *= 1.9;
  w.fits = {1, 1, 0, 1};
  p.in.what_if = &w;
  const std::string html = p.html();
  const std::string whatif = chart(html, "what-if");
  CHECK(count(whatif, "class=\"bar\"") == 2 * p.in.predictions.size());
  CHECK(count(chart(html, "iteration"), "class=\"bar\"") == 4);  // the what-if adds no bar to the iteration chart
  CHECK(count(html, "class=\"nofit\">does not fit") == 1);
  CHECK(html.find("8.00 GiB") != std::string::npos);
  CHECK(html.find("activations scale with the batch") != std::string::npos);
}
