"""Listing 1 of the Habitat paper (habitat.OperationTracker, habitat.Device.<name>) over habitat's predictor: the
names, the errors, and the tracked iterations of fixtures/track/listing1 (one H200 session) against the same
iterations timed without a profiler."""
import glob
import json
import math
import os
import statistics

import pytest

import habitat

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
FIXTURES = os.environ.get("HABITAT_FIXTURES", os.path.join(ROOT, "fixtures"))
LISTING1 = os.path.join(FIXTURES, "track", "listing1")


def test_devices_by_attribute_as_the_paper_names_them():
    assert habitat.Device.V100.name == "V100"
    assert habitat.Device.RTX2070.name == "RTX 2070"
    assert habitat.Device.RTX2080Ti.name == "RTX 2080 Ti"
    assert habitat.Device.P4000.name == "P4000"
    assert habitat.Device.T4 == habitat.device("T4")
    with pytest.raises(habitat.Error, match="ambiguous"):
        habitat.Device.A100  # noqa: B018  (four GPUs)
    with pytest.raises(AttributeError):
        habitat.Device.NoSuchGPU  # noqa: B018
    assert not hasattr(habitat.Device, "NoSuchGPU")
    assert not hasattr(habitat.Device, "_private")


def test_tracker_without_a_gpu_says_so():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the tracker records real iterations here")
    tracker = habitat.OperationTracker(origin_device=habitat.Device.H100)
    with pytest.raises(habitat.Error, match="saw no GPU work"):
        with tracker.track():
            pass
    with pytest.raises(habitat.Error, match="nothing tracked yet"):
        tracker.get_tracked_trace()


SESSIONS = [LISTING1, os.path.join(LISTING1, "run2")]  # two H200 machines of one day, 30 minutes apart


def manifest(folder):
    with open(os.path.join(folder, "manifest.json")) as f:
        return {w["workload"]: w for w in json.load(f)["workloads"]}


def measured_ms(w):
    """The loop's period without a profiler: the mean of its medians before and after the tracking (host drift)."""
    return (w["back_to_back_ms"]["median"] + w["back_to_back_after_ms"]["median"]) / 2


def test_listing1_iterations_against_the_unprofiled_loop():
    """Each iteration tracked alone (with the tracker's in-session warm-up step), predicted back on the H200, in two
    sessions on two machines: within 15% of the un-profiled loop on average (11.7% measured; 7.7% and 15.8% per
    session), far better than the profiled iteration as it is, and better than the traces recorded without the
    warm-up step (19.9%). The worst single iteration (56.7%: a step the profiler stretched) bounds the check at 60%."""
    err = {"warm": [], "cold": []}
    profiled = []
    for folder in SESSIONS:
        runs = manifest(folder)
        assert len(runs) == 10
        session = []
        for name, w in runs.items():
            truth = measured_ms(w)
            for tag in err:
                paths = sorted(glob.glob(os.path.join(folder, f"{name}.{tag}*.json.gz")))
                assert len(paths) == 3, name
                for p in paths:
                    t = habitat.TrackedTrace(p)
                    assert t.origin_device == "H200"
                    assert math.isfinite(t.run_time_ms) and 0 < t.run_time_ms < t.profiled_ms
                    err[tag].append(abs(t.run_time_ms / truth - 1))
                    if tag == "warm":
                        profiled.append(abs(t.profiled_ms / truth - 1))
                        session.append(err[tag][-1])
        assert statistics.mean(session) < 0.2, folder
    warm, cold = statistics.mean(err["warm"]), statistics.mean(err["cold"])
    print(f"Listing 1 on the H200: {len(err['warm'])} tracked iterations, mean |error| {100 * warm:.1f}% "
          f"(max {100 * max(err['warm']):.1f}%), without the warm-up step {100 * cold:.1f}%, profiled as is "
          f"{100 * statistics.mean(profiled):.1f}%")
    assert warm < 0.15 and max(err["warm"]) < 0.6
    assert warm < cold and warm < statistics.mean(profiled) / 5


def test_tracked_trace_moves_to_other_gpus():
    t = habitat.TrackedTrace(os.path.join(LISTING1, "resnet50_fp32_b32.warm0.json.gz"), origin_device=habitat.Device.H200)
    v100, b200 = t.to_device(habitat.Device.V100), t.to_device("B200")
    assert v100.device == "V100" and b200.device == "B200"
    assert math.isfinite(v100.run_time_ms) and v100.run_time_ms > t.run_time_ms > 0
    # the same numbers as habitat.predict with the tracker's step
    r = habitat.predict(t.path, to=["V100"], step_marker="habitat::tracked_iteration")
    assert v100.run_time_ms == pytest.approx(r["V100"].iteration_ms, rel=1e-12)
    assert v100.prediction.gpu_active_ms == pytest.approx(r["V100"].gpu_active_ms, rel=1e-12)


def test_a_profiler_trace_of_yours_needs_its_own_steps():
    path = os.path.join(FIXTURES, "kineto", "h100", "resnet50_fp32_b32.json.gz")
    with pytest.raises(habitat.Error, match="habitat::tracked_iteration"):
        habitat.TrackedTrace(path)
    t = habitat.TrackedTrace(path, step_marker=None)
    assert t.origin_device == "H100 SXM" and t.run_time_ms > 0
