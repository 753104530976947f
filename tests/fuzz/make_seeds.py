#!/usr/bin/env python3
"""Writes the fuzz seed corpora (tests/fuzz/corpus/<target>/) as small excerpts of the fixtures.

Run from anywhere; the seeds are checked in, so this is only needed when a format changes. Small seeds
keep the fuzzers fast: each is a few KB cut from a real file, not the file itself.
"""
import gzip
import json
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "corpus"


def put(target, name, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def kineto_excerpt(path, ops_kept=12):
    """One ProfilerStep with its first few ops, their runtime calls and the GPU work they launched."""
    doc = json.load(gzip.open(path))
    ev = doc["traceEvents"]
    step = next(e for e in ev if str(e.get("name", "")).startswith("ProfilerStep") and e.get("cat") == "user_annotation")
    lo, hi = step["ts"], step["ts"] + step["dur"]
    inside = [e for e in ev if e.get("ph") == "X" and lo <= e.get("ts", -1) <= hi]
    ops = sorted((e for e in inside if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])[:ops_kept]
    end = max(e["ts"] + e["dur"] for e in ops)
    calls = [e for e in inside if e.get("cat") == "cuda_runtime" and e["ts"] <= end][:2 * ops_kept]
    corr = {e["args"].get("correlation") for e in calls}
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("args", {}).get("correlation") in corr]
    for e in gpu:
        e["name"] = e["name"][:60]
    steps = [e for e in ev if str(e.get("name", "")).startswith("ProfilerStep")]
    keep = {"schemaVersion": doc.get("schemaVersion"), "deviceProperties": doc["deviceProperties"],
            "traceEvents": steps + ops + calls + gpu}
    return json.dumps(keep, separators=(",", ":"))


def ncu_excerpt(path, rows=4):
    lines = Path(path).read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    import csv
    table = list(csv.reader(lines[start:start + 2 + rows]))
    head = table[0]
    want = [i for i, h in enumerate(head) if h in ("ID", "Kernel Name", "Block Size", "Grid Size", "device__attribute_display_name")
            or h.startswith(("dram__bytes", "gpu__time_duration", "launch__shared_mem", "sm__sass_thread_inst_executed_op_f",
                             "sm__ops_path_tensor"))]
    out = []
    for r in table:
        out.append(",".join('"' + r[i].replace('"', '""')[:60] + '"' for i in want))
    return "==PROF== Connected to process 1\n" + "\n".join(out) + "\n"


def metrics_excerpt(path, kernels=4):
    doc = json.load(open(path))
    doc["kernels"] = doc["kernels"][:kernels]
    for k in doc["kernels"]:
        k["name"] = k["name"][:60]
    return json.dumps(doc, separators=(",", ":"))


def tiny_model(path, hidden=3):
    """The shipped elementwise model cut to `hidden` units per layer: a valid file of a few hundred bytes."""
    raw = Path(path).read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    data = raw[8 + n:]

    def tensor(name):
        t = head[name]
        b, e = t["data_offsets"]
        vals = list(struct.unpack("<%df" % ((e - b) // 4), data[b:e]))
        return t["shape"], vals

    def cut(shape, vals, rows, cols):
        if len(shape) == 1:
            return [rows], vals[:rows]
        return [rows, cols], [vals[r * shape[1] + c] for r in range(rows) for c in range(cols)]

    layers = int(head["__metadata__"]["layers"])
    tensors = {"input_mean": tensor("input_mean"), "input_std": tensor("input_std")}
    nin = tensors["input_mean"][0][0]
    for l in range(layers):
        rows = 1 if l == layers - 1 else hidden
        cols = nin if l == 0 else hidden
        tensors[f"layer{l}.weight"] = cut(*tensor(f"layer{l}.weight"), rows, cols)
        tensors[f"layer{l}.bias"] = cut(*tensor(f"layer{l}.bias"), rows, 0)
    out_head = {"__metadata__": head["__metadata__"]}
    blob = b""
    for name, (shape, vals) in tensors.items():
        out_head[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(blob), len(blob) + 4 * len(vals)]}
        blob += struct.pack("<%df" % len(vals), *vals)
    h = json.dumps(out_head, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + blob


def main():
    fx = ROOT / "fixtures"
    trace = kineto_excerpt(fx / "kineto/h100/dcgan_fp32_b128.json.gz")
    put("kineto_trace", "dcgan_step.json", trace)
    lstm = kineto_excerpt(fx / "kineto/h200/lstm_fp32_b64.json.gz", ops_kept=8)
    put("kineto_trace", "lstm_step.json", lstm)
    put("kineto_trace_gz", "dcgan_step.json.gz", gzip.compress(trace.encode(), mtime=0))
    put("kineto_trace_gz", "lstm_step.json", lstm)  # plain JSON: the target gzips it itself

    put("ncu_csv", "dcgan.ncu.csv", ncu_excerpt(fx / "metrics/h100/dcgan_fp32_b128.ncu.csv"))
    put("metric_file", "lstm.cupti.json", metrics_excerpt(fx / "metrics/h100/lstm_fp32_b64.cupti.json"))
    put("metric_file", "dcgan.ncu.json", metrics_excerpt(fx / "metrics/h100/dcgan_fp32_b128.ncu.json", kernels=2))

    cat = json.load(open(ROOT / "data/devices.json"))
    by = {d["name"]: d for d in cat["devices"]}
    arch = {k: cat["architectures"][k] for k in ("8.0", "9.0")}
    put("device_file", "h100_a100.json", json.dumps({"schema": "habitat.devices/1", "architectures": arch,
                                                     "devices": [by["H100 SXM"], by["A100 SXM4 40GB"]]}, indent=1))
    put("device_file", "user_override.json", json.dumps({"devices": [
        {"name": "H100 SXM", "measured_bandwidth_gbps": 3000},
        {"name": "My GPU", "compute_capability": "9.0", "sms": 100, "boost_clock_mhz": 1500, "bandwidth_gbps": 2000,
         "fp32_tflops": 40, "bf16_tflops": 400, "memory_gib": 80, "l2_mib": 50, "price": {"usd_per_hour": 2.5}}]}))

    put("op_csv", "neusight_layout.csv", (ROOT / "tests/data/ops_neusight_layout.csv").read_text())
    for op in ("linear", "conv2d", "layer_norm"):
        put("op_csv", f"opdata_{op}.csv", "\n".join((fx.parent / f"data/opdata/h100/{op}.csv").read_text().splitlines()[:5]) + "\n")

    put("safetensors", "elementwise_tiny.safetensors", tiny_model(ROOT / "models/elementwise.safetensors"))

    for host in ("cpu-only-dev", "h100-sxm-testbed"):
        doc = json.load(open(ROOT / f"data/hosts/{host}.json"))
        doc = {k: v for k, v in doc.items() if not isinstance(v, (list, dict)) and k != "method" and not k.endswith("method")}
        put("host_profile", f"{host}.json", json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
