#!/usr/bin/env python3
"""Runs `habitat predict` on every public trace of fixtures/wild/ as a user would (no flags but the ones the
manifest gives) and checks the outcome the manifest names: a prediction (exit 0, every destination's times finite
and positive, the origin's GPU time kept on the origin), or a refusal (exit 2, one error line that names what is
missing). Nothing may crash, hang or print a non-finite number. Usage: check_wild.py HABITAT_BINARY FIXTURE_DIR"""
import json
import math
import subprocess
import sys


def numbers(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from numbers(v)
    elif isinstance(x, list):
        for v in x:
            yield from numbers(v)
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield float(x)


def check(binary, folder, row):
    path = f"{folder}/{row['file']}"
    cmd = [binary, "predict", path, "--to", "H100 SXM", "--to", "MI300X", "--to", "T4", "--format", "json", "-q"] + row.get("flags", [])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "hung (120 s)"
    if r.returncode not in (0, 2):
        return f"exit {r.returncode}: {r.stderr.strip()[-300:]}"
    if row["expect"] == "refuse":
        if r.returncode != 2:
            return "predicted where the manifest expects a refusal"
        lines = [l for l in r.stderr.splitlines() if l.startswith("habitat: error:")]
        if len(lines) != 1 or row["says"] not in lines[0] or row["file"] not in lines[0]:
            return f"refusal does not name the file and say '{row['says']}': {r.stderr.strip()[-300:]}"
        return None
    if r.returncode != 0:
        return f"refused where the manifest expects a prediction: {r.stderr.strip()[-300:]}"
    doc = json.loads(r.stdout)
    if not all(math.isfinite(x) for x in numbers(doc)):
        return "a non-finite number in the output"
    rows = doc["predictions"]
    if len(rows) != 3:
        return f"{len(rows)} predictions for 3 GPUs"
    for p in rows:
        for key, low in (("iteration_ms", 1e-6), ("gpu_active_ms", 0)):
            v = p[key]
            if not (isinstance(v, (int, float)) and low <= v < 1e7):
                return f"{p['device']}: {key} = {v}"
    return None


def main():
    binary, folder = sys.argv[1], sys.argv[2]
    manifest = json.load(open(f"{folder}/manifest.json"))
    bad = 0
    for row in manifest["traces"]:
        problem = check(binary, folder, row)
        print(("ok    " if problem is None else "FAIL  ") + " ".join([row["file"]] + row.get("flags", [])) + ("" if problem is None else ": " + problem))
        bad += problem is not None
    print(f"{len(manifest['traces']) - bad} of {len(manifest['traces'])} as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
