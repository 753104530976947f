#!/usr/bin/env python3
"""NeuSight's 4-GPU training labels (issue 24) predicted by the CLI from one-GPU H100 traces.

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
    if not ok:
        raise SystemExit("FAIL: a plan's mean error is above its bound")
    print("ok")


if __name__ == "__main__":
    main()
