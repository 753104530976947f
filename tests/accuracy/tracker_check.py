#!/usr/bin/env python3
"""The same training steps recorded three ways on one H100 (fixtures/track: torch.profiler, habitat.track, and the
CUPTI tracker injected with no profiler) and predicted by the CLI.

Checks, and fails where one does not hold:
* the CUPTI tracker's traces lose no profiler cost (they record no operations; the tracker's start/stop work falls
  outside the step it marks), the profiler's do;
* on the GPU it was recorded on, the injected trace replays the step it marks within 5%, timed with CUDA events in
  the same process (`marked_step_ms`; measured +0.1% to +0.9%); the median of 20 tracked steps is printed beside it
  (the host moved between them: ResNet-50's marked step took 36.2 ms, the median 30.2);
* on the H200, the A100 SXM4 80GB and the L4, habitat.track's GPU active times agree with the profiler trace's
  within 1% (measured: 0.3%), and the injected tracker's, whose kernels have no shapes and take the rule for
  unknown work, within 15% each and 6% on average (measured: 0.3% to 13.3%, 4.5% on average).

Usage: tracker_check.py HABITAT_CLI FIXTURE_DIR
"""
import json
import os
import sys

from habitat_cli import predict

WORKLOADS = ["resnet50_fp32_b32", "encoder_fp32_b16", "dcgan_fp32_b128"]
RECORDERS = ["profiler", "track", "inject"]
ORIGIN, CHECKED = "H100 SXM", ["H200", "A100 SXM4 80GB", "L4"]


def main():
    cli, fixtures = sys.argv[1], sys.argv[2]
    fails, inject_misses = [], []
    print(f"{'workload':18s} {'recorder':8s} {'profiler cost':>13s} " + " ".join(f"{g[:14]:>14s}" for g in CHECKED))
    for w in WORKLOADS:
        preds = {}
        for rec in RECORDERS:
            preds[rec], origin = predict(cli, os.path.join(fixtures, f"{w}.{rec}.json.gz"), [ORIGIN] + CHECKED)
            if "profiler_cost_ms" not in origin:
                raise SystemExit(f"FAIL: {w}.{rec}: the CLI wrote no profiler_cost_ms")
            cost = origin["profiler_cost_ms"]
            if (rec == "inject") != (cost == 0):
                fails.append(f"{w}.{rec}: {cost:.2f} ms removed as profiler cost")
            cells = []
            for g in CHECKED:
                gpu = preds[rec][g][1]
                ref = preds["profiler"][g][1]
                e = gpu / ref - 1
                cells.append(f"{gpu:7.2f} {100*e:+5.1f}%")
                bound = {"track": 0.01, "inject": 0.15}.get(rec, 0)
                if abs(e) > bound:
                    fails.append(f"{w}.{rec} on {g}: GPU active {100*e:+.1f}% from the profiler trace's (bound {100*bound:.0f}%)")
                if rec == "inject":
                    inject_misses.append(abs(e))
            print(f"{w:18s} {rec:8s} {cost:10.2f} ms " + " ".join(cells))
        with open(os.path.join(fixtures, f"{w}.inject_times.json")) as f:
            times = json.load(f)
        marked, tracked = times["marked_step_ms"], times["tracked_steps_ms"]["median"]
        it = preds["inject"][ORIGIN][0]
        e = it / marked - 1
        print(f"{w:18s} inject on the {ORIGIN}: iteration {it:.2f} ms; the marked step {marked:.2f} ({100*e:+.1f}%), "
              f"the median tracked step {tracked:.2f} ({100*(it/tracked-1):+.1f}%)")
        if abs(e) > 0.05:
            fails.append(f"{w}.inject: iteration {100*e:+.1f}% from the step it marks (bound 5%)")
    mean = sum(inject_misses) / len(inject_misses)
    print(f"injected tracker against the profiler trace, GPU active on {', '.join(CHECKED)}: mean |difference| {100*mean:.1f}%")
    if mean > 0.06:
        fails.append(f"the injected tracker's mean difference {100*mean:.1f}% (bound 6%)")
    if fails:
        raise SystemExit("FAIL: " + "; ".join(fails))
    print("ok")


if __name__ == "__main__":
    main()
