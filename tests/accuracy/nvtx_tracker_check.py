#!/usr/bin/env python3
"""The same training steps on one H200 (fixtures/track/nvtx) recorded by torch.profiler, by habitat.track, by the
CUPTI tracker alone and by the CUPTI tracker with PyTorch's emit_nvtx(record_shapes=True), predicted by the CLI.

Checks, and fails where one does not hold:
* every convolution configuration of the tracker's trace carries the stride, padding, groups (and transposed flag)
  that the profiler recorded for it: inferred from the backward's output (nvtx_conv_geometry.hpp), recorded there;
* every recorder's trace has the same GPU operations (count) and GPU active time on its own GPU within 3% (one
  process each: the steps differ, the LSTM's by 2.6%);
* emit_nvtx's cost is removed from a trace with its ranges, and the output says so; nothing from the tracker's alone;
* with emit_nvtx's operator ranges the tracker's predictions on the H100 SXM, the A100 SXM4 80GB and the L4 agree
  with the profiler trace's within 1% on average and 3% each; habitat.track's too;
* the tracker alone (no shapes: the rule for unknown work) is printed beside them, bounded at 8% on average.

Usage: nvtx_tracker_check.py HABITAT_CLI FIXTURE_DIR
"""
import collections
import gzip
import json
import os
import re
import subprocess
import sys

from habitat_cli import predict

WORKLOADS = ["resnet50_fp32_b32", "encoder_fp32_b16", "dcgan_fp32_b128", "mobilenetv2_fp32_b32", "lstm_fp32_b32", "dlrm_fp32_b512"]
# Where stride, padding, groups and the transposed flag are in each convolution operator's arguments (ATen schema).
CONV_ARGS = {"aten::cudnn_convolution": (3, 2, 5, None), "aten::cudnn_convolution_transpose": (4, 2, 6, None),
             "aten::convolution_backward": (4, 5, 9, 7)}
RECORDERS = ["profiler", "track", "nvtx", "inject"]
ORIGIN, CHECKED = "H200", ["H100 SXM", "A100 SXM4 80GB", "L4"]
# Per prediction, and on average over the workloads and GPUs: each recorder ran in a process of its own, whose step
# differs by up to 2.6% on its own GPU (the LSTM's), so the bound per row is that of the origin's spread.
BOUND = {"track": 0.03, "nvtx": 0.03, "inject": 0.30}
MEAN_BOUND = {"track": 0.01, "nvtx": 0.01, "inject": 0.08}


def gpu_ops_and_notes(cli, path):
    """The reader's count of the step's GPU operations, and the CLI's warnings, from a plain run."""
    r = subprocess.run([cli, "predict", path, "--to", ORIGIN], capture_output=True, text=True, timeout=300)
    m = re.search(r"(\d+) GPU ops", r.stderr)
    if r.returncode != 0 or not m:
        raise SystemExit(f"FAIL: {path}: {r.stderr.strip()[:300]}")
    return int(m.group(1)), r.stderr


def conv_geometry(path):
    """{(operator, its first three inputs' shapes): the set of its (stride, padding, groups, transposed)}."""
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    out = collections.defaultdict(set)
    for e in events:
        if e.get("cat") == "cpu_op" and e.get("name") in CONV_ARGS:
            a, at = e.get("args", {}), CONV_ARGS[e["name"]]
            v = a.get("Concrete Inputs") or []
            out[(e["name"], json.dumps(a.get("Input Dims", [])[:3]))].add(tuple(v[i] if v and i is not None else None for i in at))
    return out


def main():
    cli, fixtures = sys.argv[1], sys.argv[2]
    fails, errors = [], {r: [] for r in RECORDERS[1:]}
    print(f"{'workload':18s} {'recorder':8s} {'own GPU':>9s} " + " ".join(f"{g[:14]:>15s}" for g in CHECKED))
    for w in WORKLOADS:
        truth, inferred = (conv_geometry(os.path.join(fixtures, f"{w}.{r}.json.gz")) for r in ("profiler", "nvtx"))
        differ = [k for k in truth if inferred.get(k) != truth[k]] + [k for k in inferred if k not in truth]
        print(f"{w}: {len(truth)} convolution configurations recorded by the profiler, {len(truth) - len(differ)} inferred alike")
        if differ:
            fails.append(f"{w}: convolution geometry inferred unlike the profiler's record for {differ[:3]}")
        preds = {}
        for rec in RECORDERS:
            preds[rec], origin = predict(cli, os.path.join(fixtures, f"{w}.{rec}.json.gz"), [ORIGIN] + CHECKED)
            if rec in ("nvtx", "inject") and (rec == "nvtx") != (origin.get("profiler_cost_ms", 0) > 0):
                fails.append(f"{w}.{rec}: {origin.get('profiler_cost_ms')} ms removed as the recorder's cost (emit_nvtx's ranges only)")
            n, notes = gpu_ops_and_notes(cli, os.path.join(fixtures, f"{w}.{rec}.json.gz"))
            if rec == "profiler":
                n_profiler = n
            elif n != n_profiler:
                fails.append(f"{w}.{rec}: {n} GPU operations, the profiler's trace {n_profiler}")
            if (rec == "nvtx") != ("emit_nvtx's cost" in notes):
                fails.append(f"{w}.{rec}: the output does not say what emit_nvtx's ranges cost the host (or says it wrongly)")
            own = preds[rec][ORIGIN][1] / preds["profiler"][ORIGIN][1] - 1
            if abs(own) > 0.03:
                fails.append(f"{w}.{rec}: GPU active on the {ORIGIN} {100*own:+.1f}% from the profiler trace's")
            cells = []
            for g in CHECKED:
                e = preds[rec][g][1] / preds["profiler"][g][1] - 1
                cells.append(f"{preds[rec][g][1]:8.2f} {100*e:+5.1f}%")
                if rec != "profiler":
                    errors[rec].append(abs(e))
                    if abs(e) > BOUND[rec]:
                        fails.append(f"{w}.{rec} on {g}: GPU active {100*e:+.1f}% from the profiler trace's (bound {100*BOUND[rec]:.0f}%)")
            print(f"{w:18s} {rec:8s} {preds[rec][ORIGIN][1]:8.2f}  " + " ".join(cells))
    for rec, e in errors.items():
        mean = sum(e) / len(e)
        print(f"{rec}: mean {100*mean:.2f}%, worst {100*max(e):.2f}% from the profiler trace's predictions")
        if mean > MEAN_BOUND[rec]:
            fails.append(f"{rec}: mean {100*mean:.2f}% from the profiler trace's predictions (bound {100*MEAN_BOUND[rec]:.0f}%)")
    if fails:
        raise SystemExit("FAIL:\n  " + "\n  ".join(fails))
    print("OK")


if __name__ == "__main__":
    main()
