#!/usr/bin/env python3
"""NeuSight's training labels predicted by the CLI from one-GPU H100 traces: its 4-GPU steps (issue 24) and its
one-GPU steps on the H100 itself and on three AMD GPUs (issue 22).

For each published 4-GPU step (fixtures/neusight_train/labels.json: GPT-2 large and GPT-3 XL, data, tensor and
pipeline parallel on 4 H100s and 4 A100s) the CLI predicts the plan from the H100 trace of the per-GPU batch
(fixtures/neusight_train/h100, recorded with fixtures/record/record_neusight_train.py), as a user would type it;
where no one-GPU trace of that batch fits an 80 GB GPU, through the batch what-if. Prints every row with the two
baselines of a user without a parallel model (habitat's one-GPU step of the same batch, and that / 4) and the
mean error per plan; fails if a prediction is missing or non-finite, or a plan's mean error exceeds its bound.

Usage: neusight_parallel_check.py HABITAT_CLI FIXTURE_DIR
"""
import json
import math
import os
import subprocess
import sys

# label -> (trace, CLI arguments, what-if batch or None). Megatron-LM's tensor parallel (NeuSight ran the plans
# through Accelerate's Megatron-LM plugin), 1F1B with one micro-batch for pp4_1, DDP for dp4.
ROWS = {
    "gpt2_large-train-1024-4-dp4": ("gpt2_large-train-1024-1", ["--world-size", "4"], None),
    "gpt2_large-train-1024-16-dp4": ("gpt2_large-train-1024-4", ["--world-size", "4"], None),
    "gpt2_large-train-1024-4-tp4": ("gpt2_large-train-1024-4", ["--parallel", "tp=4,megatron"], None),
    "gpt2_large-train-1024-16-tp4": ("gpt2_large-train-1024-4", ["--parallel", "tp=4,megatron"], 16),
    "gpt2_large-train-1024-4-pp4_1": ("gpt2_large-train-1024-4", ["--parallel", "pp=4,microbatches=1"], None),
    "gpt2_large-train-1024-16-pp4_1": ("gpt2_large-train-1024-4", ["--parallel", "pp=4,microbatches=1"], 16),
    "gpt3_xl-train-2048-4-tp4": ("gpt3_xl-train-2048-1", ["--parallel", "tp=4,megatron"], 4),
    "gpt3_xl-train-2048-4-pp4_1": ("gpt3_xl-train-2048-1", ["--parallel", "pp=4,microbatches=1"], 4),
}
# Mean |error| bound per plan: the 8% where it was met when this check was written (2026-11-28); TP on
# the A100 was not (+12%), so TP's bound only catches a regression.
BOUND = {"dp4": 0.08, "pp4_1": 0.08, "tp4": 0.12}
# One-GPU steps (2026-11-28): H100 6.5%, MI100 8.7%, MI210 16.8%, MI250 16.6% (two AMD rows that look off against
# their neighbours, labels.json's one_gpu_what, make most of it). Regression guards, not claims.
ONE_GPU_BOUND = {"H100 SXM": 0.12, "MI100": 0.15, "MI210": 0.22, "MI250": 0.22}


def trace_batch(trace):
    return int(trace.rsplit("-", 1)[1])


def predict(cli, path, args, batch, what_if, gpu):
    cmd = [cli, "predict", path, "--to", gpu, "--format", "json", "-q", "--batch", str(batch)] + args
    if what_if:
        cmd += ["--what-if", f"batch={what_if}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    d = json.loads(r.stdout)
    p = (d["what_if"] if what_if else d)["predictions"][0]
    dp = p["data_parallel"]
    return dp["step_ms"], dp["single_gpu_ms"]


def one_gpu(cli, fixtures, labels):
    """The one-GPU steps: the H100 against itself (how far these traces reproduce NeuSight's own H100 steps), then
    the AMD GPUs from the H100 traces, next to the same-time and FP32-peak-ratio baselines. Returns the mean |error|
    per AMD GPU."""
    h100 = labels["one_gpu_ms"]["H100 SXM"]
    print(f"\none-GPU training steps from the H100 traces (NeuSight's labels)\n"
          f"{'workload':26s} {'GPU':9s} {'measured':>9s} {'habitat':>9s} {'error':>8s} {'same':>8s} {'FLOPSr':>8s}")
    peak = {}
    for line in subprocess.run([cli, "devices"], capture_output=True, text=True, check=True).stdout.splitlines():
        for name in ("H100 SXM", "MI100", "MI210", "MI250"):
            if line.startswith(name + " ") and not line.startswith(name + "X"):
                peak[name] = float(line[len(name):].split()[6])  # FP32 TFLOPS column
    means = {}
    for gpu, rows in labels["one_gpu_ms"].items():
        errs = []
        for name, measured in rows.items():
            path = os.path.join(fixtures, "h100", name + ".json.gz")
            if not os.path.exists(path):
                raise SystemExit(f"FAIL: {name} has a label but no one-GPU trace in {fixtures}/h100")
            r = subprocess.run([cli, "predict", path, "--to", gpu, "--format", "json", "-q"], capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise SystemExit(f"FAIL: {name} on {gpu}: {r.stderr.strip()}")
            ms = json.loads(r.stdout)["predictions"][0]["iteration_ms"]
            if not (math.isfinite(ms) and ms > 0):
                raise SystemExit(f"FAIL: {name} on {gpu}: {ms}")
            e = ms / measured - 1
            same = h100[name] / measured - 1 if name in h100 else float("nan")
            flops = h100[name] * peak["H100 SXM"] / peak[gpu] / measured - 1 if name in h100 else float("nan")
            errs.append((e, same, flops))
            print(f"{name:26s} {gpu:9s} {measured:9.1f} {ms:9.1f} {100*e:+7.1f}% {100*same:+7.1f}% {100*flops:+7.1f}%")
        if errs:
            m = [sum(abs(x[i]) for x in errs) / len(errs) for i in range(3)]
            means[gpu] = m[0]
            print(f"  {gpu}: n={len(errs)}, mean |error| habitat {100*m[0]:.1f}%, same time {100*m[1]:.1f}%, FLOPS ratio {100*m[2]:.1f}%")
    return means


def main():
    cli, fixtures = sys.argv[1], sys.argv[2]
    with open(os.path.join(fixtures, "labels.json")) as f:
        labels = json.load(f)
    errs = {}
    print(f"{'label':34s} {'GPU':15s} {'measured':>9s} {'habitat':>9s} {'error':>8s} {'one GPU':>8s} {'one/4':>8s}  how")
    for gpu, rows in labels["four_gpu_ms"].items():
        for name, measured in rows.items():
            trace, args, what_if = ROWS[name]
            step, single = predict(cli, os.path.join(fixtures, "h100", trace + ".json.gz"), args, trace_batch(trace), what_if, gpu)
            if not (math.isfinite(step) and step > 0):
                raise SystemExit(f"FAIL: {name} on {gpu}: step {step}")
            plan = name.rsplit("-", 1)[1]
            e = step / measured - 1
            errs.setdefault(plan, {}).setdefault(gpu, []).append(e)
            how = " ".join(args) + (f" --what-if batch={what_if}" if what_if else "") + f" (trace {trace})"
            print(f"{name:34s} {gpu:15s} {measured:9.1f} {step:9.1f} {100*e:+7.1f}% {100*(single/measured-1):+7.1f}% "
                  f"{100*(single/4/measured-1):+7.1f}%  {how}")
    ok = True
    print("\nmean |error| per plan and GPU:")
    for plan, by_gpu in errs.items():
        all_e = [abs(x) for v in by_gpu.values() for x in v]
        mean = sum(all_e) / len(all_e)
        per = ", ".join(f"{g} {100*sum(map(abs, v))/len(v):.1f}% (n={len(v)})" for g, v in by_gpu.items())
        print(f"  {plan:6s} {100*mean:5.1f}%  [{per}]  bound {100*BOUND[plan]:.0f}%")
        ok &= mean <= BOUND[plan]
    one = one_gpu(cli, fixtures, labels)
    for gpu, m in one.items():
        if gpu not in ONE_GPU_BOUND:
            raise SystemExit(f"FAIL: {gpu} has one-GPU labels but no bound here")
        ok &= m <= ONE_GPU_BOUND[gpu]
    if not ok:
        raise SystemExit("FAIL: a mean error is above its bound")
    print("ok")


if __name__ == "__main__":
    main()
