#pragma once
// Host profiles (habitat.host-profile/1): what a machine's CPU costs per framework operation, measured by
// `habitat-host-profile` (LibTorch) and its Python twin, plus what torch.profiler adds per record there.
// A catalog GPU may name the host it usually comes in (`reference_host`); predictions use it.
#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "habitat/detail/json_fields.hpp"
#include "habitat/device/device.hpp"
#include "habitat/error.hpp"
#include "habitat/sim/host_model.hpp"
#include "habitat/sim/hosts_data.hpp"

namespace habitat::sim {

// Per-operation host times a profile may hold, best first: the speed of two hosts is compared on the first
// one both profiles have. An op that launches a kernel, timed in C++, tracks the host-bound fixtures best
// (H100 -> H200 host: 0.60 here, against 0.51-0.89 measured on host-bound workloads); from Python the
// interpreter's share hides the difference (0.97).
inline constexpr std::array<std::string_view, 5> host_speed_keys{"cuda_launch_op_us", "python_cuda_launch_op_us", "dispatch_us",
                                                                 "python_dispatch_us", "cpu_op_us"};

struct HostProfile {
  std::string name, cpu, gpu, recorded_utc, source;
  std::map<std::string, double, std::less<>> per_op_us;  // by host_speed_keys entry
  std::optional<ProfilerCost> profiler;
  std::string profiler_method;
  std::optional<StepCost> step_cost;
};

[[nodiscard]] inline HostProfile parse_host_profile(const boost::json::value& v, const habitat::detail::JsonPlace& at) {
  if (!v.is_object()) throw make_error(at.file, at.place, "a host profile must be a JSON object");
  const auto& o = v.get_object();
  HostProfile h;
  h.source = std::string(at.file);
  const auto name = habitat::detail::opt_string(o, "name", at);
  if (!name || name->empty()) throw make_error(at.file, at.place, "missing string field 'name'");
  h.name = *name;
  h.cpu = habitat::detail::opt_string(o, "cpu", at).value_or("");
  h.gpu = habitat::detail::opt_string(o, "gpu", at).value_or("");
  h.recorded_utc = habitat::detail::opt_string(o, "recorded_utc", at).value_or("");
  // Host speeds are compared as ratios: a time of 1e-300 us would make one host 1e300 times faster. The
  // shipped profiles hold 0.3 to 10 us per op; 1 ns is below any framework operation.
  constexpr habitat::detail::Range per_op{0.001, 1e6, "microseconds"};
  for (const auto key : host_speed_keys)
    if (auto x = habitat::detail::opt_number_in(o, key, at, per_op)) h.per_op_us.emplace(std::string(key), *x);
  if (const auto* p = o.if_contains("profiler"); p && !p->is_null()) {
    const habitat::detail::JsonPlace pat{at.file, at.place + ".profiler"};
    if (!p->is_object()) throw make_error(at.file, pat.place, "must be an object");
    const auto& po = p->get_object();
    constexpr habitat::detail::Range cost{0, 1e4, "microseconds"};
    const double op = habitat::detail::number_in(po, "per_op_us", pat, cost), call = habitat::detail::number_in(po, "per_call_us", pat, cost);
    const double slowdown = habitat::detail::opt_number_in(po, "slowdown", pat, {1, 10}).value_or(1.0);
    h.profiler = ProfilerCost{op, call, slowdown};
    h.profiler_method = habitat::detail::opt_string(po, "method", pat).value_or("");
  }
  if (const auto* p = o.if_contains("step_cost"); p && !p->is_null()) {
    const habitat::detail::JsonPlace pat{at.file, at.place + ".step_cost"};
    if (!p->is_object()) throw make_error(at.file, pat.place, "must be an object");
    const auto& po = p->get_object();
    constexpr habitat::detail::Range cost{0, 1e4, "microseconds"};
    StepCost c;
    for (auto [key, count] : {std::pair{"unprofiled", &c.unprofiled}, {"profiled", &c.profiled}}) {
      const auto* q = po.if_contains(key);
      const habitat::detail::JsonPlace qat{at.file, pat.place + "." + key};
      if (!q || !q->is_object()) {
        std::string keys;  // the count's terms, as record_terms has them
        for (const auto& term : record_terms)
          if (!term.profiled_only || count == &c.profiled) keys += (keys.empty() ? "" : ", ") + std::string(term.key) + (term.profiled_only ? " (optional)" : "");
        throw make_error(at.file, qat.place, "missing object (" + keys + ")");
      }
      const auto& qo = q->get_object();
      for (const auto& term : record_terms) {
        if (!term.profiled_only) {
          (*count).*term.cost = habitat::detail::number_in(qo, term.key, qat, cost);
          continue;
        }
        (*count).*term.cost = habitat::detail::opt_number_in(qo, term.key, qat, cost).value_or(0);
        if (count == &c.unprofiled && (*count).*term.cost > 0)
          throw make_error(at.file, qat.place + "." + std::string(term.key), "must be 0: only a profiled step has these records");
      }
      if (!(count->per_step_us + count->per_top_op_us + count->per_enqueue_us > 0))
        throw make_error(at.file, qat.place, "per_step_us, per_top_op_us and per_enqueue_us are all 0: nothing to count");
    }
    c.above = habitat::detail::opt_number_in(po, "above", pat, {0, 10, "share"}).value_or(c.above);
    c.below = habitat::detail::opt_number_in(po, "below", pat, {0, 1, "share"}).value_or(c.below);
    h.step_cost = c;
  }
  return h;
}

class HostRegistry {
 public:
  [[nodiscard]] static HostRegistry builtin() {
    HostRegistry r;
    const auto doc = habitat::detail::parse_document(habitat::detail::builtin_hosts_json, "<built-in host profiles>");
    const auto& a = doc.as_array();
    for (std::size_t i = 0; i < a.size(); ++i)
      r.add(parse_host_profile(a[i], {"<built-in host profiles>", "profile #" + std::to_string(i + 1)}));
    return r;
  }
  [[nodiscard]] HostProfile read_file(const std::string& path) const {
    std::ifstream in(path);
    if (!in) throw make_error(path, "", "cannot open host profile");
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_host_profile(habitat::detail::parse_document(ss.str(), path), {path, "top level"});
  }
  void add(HostProfile h) {
    std::erase_if(hosts_, [&](const HostProfile& x) { return x.name == h.name; });
    hosts_.push_back(std::move(h));
  }
  [[nodiscard]] const HostProfile* find(std::string_view name) const {
    for (const auto& h : hosts_)
      if (h.name == name) return &h;
    return nullptr;
  }
  // A name of a known profile, or a file holding one.
  [[nodiscard]] HostProfile resolve(const std::string& name_or_file) const {
    if (const auto* h = find(name_or_file)) return *h;
    std::ifstream probe(name_or_file);
    if (probe) return read_file(name_or_file);
    std::string known;
    for (const auto& h : hosts_) known += (known.empty() ? "" : ", ") + h.name;
    throw make_error(name_or_file, "--host", "neither a host profile file nor a known host (known: " + known + ")");
  }
  [[nodiscard]] const std::vector<HostProfile>& hosts() const { return hosts_; }

  // The first profile that measured forward-only step counts (StepCost): for traces from a host that did not.
  [[nodiscard]] const HostProfile* counted_host() const {
    for (const auto& h : hosts_)
      if (h.step_cost) return &h;
    return nullptr;
  }

  // The median profiler cost over the profiles that measured one: for traces from an unprofiled host.
  [[nodiscard]] std::optional<ProfilerCost> typical_profiler_cost() const {
    std::vector<double> op, call, slow;
    for (const auto& h : hosts_)
      if (h.profiler) {
        op.push_back(h.profiler->per_op_us);
        call.push_back(h.profiler->per_call_us);
        slow.push_back(h.profiler->slowdown);
      }
    if (op.empty()) return std::nullopt;
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    };
    return ProfilerCost{med(op), med(call), med(slow)};
  }

 private:
  std::vector<HostProfile> hosts_;
};

// Destination host time / recording host time, on the first per-op measurement both profiles have.
[[nodiscard]] inline std::optional<std::pair<double, std::string>> host_speed_ratio(const HostProfile& recorded, const HostProfile& runs) {
  for (const auto key : host_speed_keys) {
    auto a = recorded.per_op_us.find(key), b = runs.per_op_us.find(key);
    if (a != recorded.per_op_us.end() && b != runs.per_op_us.end()) return std::pair{b->second / a->second, std::string(key)};
  }
  return std::nullopt;
}

struct HostChoice {
  std::optional<std::string> runs_on;      // --host: the destination machine's host; "reference": each GPU's reference host
  std::optional<std::string> recorded_on;  // --origin-host: the machine the trace was recorded on
  static constexpr const char* reference_hosts = "reference";
  // Each destination GPU on its catalog reference host (the machine it was measured in), where it has one.
  [[nodiscard]] static HostChoice reference() { return {std::string(reference_hosts), std::nullopt}; }
};

// Which hosts a prediction from `origin` to `dest` assumes, and what that makes of the trace's host time.
// Recording host: --origin-host, else the origin GPU's reference host. Destination host: --host, else the
// recording host for every destination (the user keeps their CPU: one host assumption for a whole table);
// --host reference: each destination GPU's reference host, else the recording host.
[[nodiscard]] inline HostModel host_model(const HostRegistry& reg, const Device& origin, const Device& dest, const HostChoice& choice = {}) {
  HostModel m;
  std::optional<HostProfile> rec, run;
  auto reference = [&](const Device& d) -> std::optional<HostProfile> {
    if (d.reference_host.empty()) return std::nullopt;
    if (const auto* h = reg.find(d.reference_host)) return *h;
    m.assumptions.push_back("reference host '" + d.reference_host + "' of " + d.name + " is not among the host profiles");
    return std::nullopt;
  };
  rec = choice.recorded_on ? std::optional(reg.resolve(*choice.recorded_on)) : reference(origin);
  const bool by_reference = choice.runs_on && *choice.runs_on == HostChoice::reference_hosts;
  run = by_reference ? reference(dest) : choice.runs_on ? std::optional(reg.resolve(*choice.runs_on)) : rec;
  if (by_reference && !run && dest.name != origin.name)
    m.assumptions.push_back(dest.name + " has no reference host: the recording host is kept for it");
  if (!run) run = rec;
  if (rec) m.recorded_on = rec->name;
  if (run) m.runs_on = run->name;

  if (rec && rec->step_cost) {
    m.step_cost = rec->step_cost;
  } else if (const HostProfile* counted = reg.counted_host()) {
    // Another host's counts, scaled by the two hosts' speed where their profiles share a measurement.
    const auto r = rec ? host_speed_ratio(*counted, *rec) : std::nullopt;
    m.step_cost = counted->step_cost->scaled(r ? r->first : 1.0);
    char how[64];
    std::snprintf(how, sizeof how, "x%.2f, the hosts' speed ratio", r ? r->first : 1.0);
    m.step_cost->borrowed = "forward-only step: the record counts of host " + counted->name + " (" +
                            (r ? std::string(how) : rec ? "unscaled: the hosts share no measurement" : "unscaled: the recording host is unknown") +
                            "; " + (rec ? rec->name : std::string("this host")) + " measured none)";
  }
  if (rec && rec->profiler) {
    m.profiler = *rec->profiler;
  } else if (auto typical = reg.typical_profiler_cost()) {
    m.profiler = *typical;
    m.assumptions.push_back("profiler cost of the recording host unknown: the median of the shipped hosts' is removed");
  }
  if (rec && run && rec->name != run->name) {
    if (auto r = host_speed_ratio(*rec, *run)) m.speed_ratio = r->first;
    else m.assumptions.push_back("hosts " + rec->name + " and " + run->name + " share no measurement: host time kept as recorded");
  } else if (!rec && run) {
    m.assumptions.push_back("the recording host is unknown (--origin-host names it): host time kept as recorded, on " + run->name);
  } else if (!rec && !run) {
    m.assumptions.push_back("no host profile for the machine of the " + origin.name +
                            " (--origin-host names it, --host another): the recorded host time is kept");
  }
  return m;
}

}  // namespace habitat::sim
