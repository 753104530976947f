"""The accuracy checks' one way of asking the CLI: `habitat predict --format json` of a trace on some GPUs."""
import json
import math
import subprocess


def predict(cli, path, gpus):
    """Returns ({device: (iteration_ms, gpu_active_ms)}, the origin's JSON); exits with FAIL on an error or a
    non-finite or non-positive number."""
    args = [cli, "predict", path, "--format", "json", "-q"]
    for g in gpus:
        args += ["--to", g]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(args)}: {r.stderr.strip()}")
    d = json.loads(r.stdout)
    out = {}
    for p in d["predictions"]:
        it, gpu = p["iteration_ms"], p["gpu_active_ms"]
        if not (math.isfinite(it) and math.isfinite(gpu) and it > 0 and gpu > 0):
            raise SystemExit(f"FAIL: {path} on {p['device']}: {it}, {gpu}")
        out[p["device"]] = (it, gpu)
    return out, d["origin"]
