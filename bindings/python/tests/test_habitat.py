"""The habitat Python package against the CLI: same numbers on every fixture, one error type, the tracker on a
machine without a GPU. Run by ctest (python_package) with PYTHONPATH at the built package."""
import glob
import gzip
import json
import os
import subprocess

import pytest

import habitat

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
FIXTURES = os.environ.get("HABITAT_FIXTURES", os.path.join(ROOT, "fixtures"))
CLI = os.environ.get("HABITAT_CLI", os.path.join(ROOT, "build", "habitat"))

TRACES = sorted(glob.glob(os.path.join(FIXTURES, "kineto", "*", "*.json.gz")) + glob.glob(os.path.join(FIXTURES, "heldout", "*", "*.json.gz"))
                + glob.glob(os.path.join(FIXTURES, "host", "*", "*.json.gz")))
DESTS = ["H200", "A100 SXM4 80GB", "T4", "L4"]


def cli_json(*args):
    out = subprocess.run([CLI, "predict", "-q", "--format", "json", *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), out.stderr


def test_fixtures_found():
    assert len(TRACES) >= 30


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: os.path.relpath(p, FIXTURES))
def test_python_and_cli_agree(trace):
    args = [trace]
    for d in DESTS:
        args += ["--to", d]
    expected, stderr = cli_json(*args, "--batch", "16")
    r = habitat.predict(trace, to=DESTS, batch=16)
    assert r.to_dict() == expected  # every number, exactly: the same C++ code wrote both
    warnings = [l[len("habitat: warning: "):] for l in stderr.splitlines() if l.startswith("habitat: warning: ")]
    assert r.warnings == warnings
    for d in DESTS:
        p = r[d]
        assert p.iteration_ms > 0 and p.gpu_active_ms > 0
        assert p.throughput == pytest.approx(16 / (p.iteration_ms / 1e3))


def test_what_if_and_data_parallel_agree():
    trace = os.path.join(FIXTURES, "whatif", "h100", "resnet50_fp32_b32.json.gz")
    expected, _ = cli_json(trace, "--to", "H100", "--to", "T4", "--batch", "32", "--what-if", "precision=bf16", "--what-if", "batch=64")
    r = habitat.predict(trace, to=["H100", "T4"], batch=32, what_if=["precision=bf16", "batch=64"])
    assert r.to_dict() == expected
    assert r.what_if["changes"] == "batch=64, precision=bf16"
    ddp, _ = cli_json(trace, "--to", "H100", "--world-size", "4", "--batch", "32")
    q = habitat.predict(trace, to="H100", world_size=4, batch=32)
    assert q.to_dict() == ddp
    assert q["H100"].data_parallel["world_size"] == 4
    gpt = os.path.join(FIXTURES, "parallel", "h200x2", "gpt512_bf16_b8.n1.json.gz")
    fsdp, _ = cli_json(gpt, "--to", "H200", "--world-size", "2", "--parallel", "fsdp,grad_op")
    f = habitat.predict(gpt, to="H200", world_size=2, parallel="fsdp,grad_op")
    assert f.to_dict() == fsdp
    pp, _ = cli_json(gpt, "--to", "H200", "--parallel", "pp=2,microbatches=4")
    p = habitat.predict(gpt, to="H200", parallel="pp=2,microbatches=4")
    assert p.to_dict() == pp
    assert p["H200"].data_parallel["plan"].startswith("Pipeline parallel (2 stages, 4 micro-batches, 1F1B")
    assert f["H200"].data_parallel["plan"].startswith("FSDP shard-grad-op")
    tp, _ = cli_json(gpt, "--to", "H200", "--parallel", "tp=2,megatron")
    assert habitat.predict(gpt, to="H200", parallel="tp=2,megatron").to_dict() == tp
    with pytest.raises(habitat.Error, match="--parallel"):
        habitat.predict(gpt, to="H200", world_size=4, parallel="tp=2")


def test_in_memory_trace_and_table():
    trace = os.path.join(FIXTURES, "kineto", "h100", "resnet50_fp32_b32.json.gz")
    with gzip.open(trace, "rt") as f:
        doc = json.load(f)
    a = habitat.predict(doc, to=["H200"], batch=32)
    b = habitat.predict(trace, to=["H200"], batch=32)
    assert a.to_dict() == b.to_dict()
    assert "H200" in str(a) and "iteration ms" in str(a)
    assert a["h200"] is a["H200"] or a["h200"] == a["H200"]  # the CLI's name rules for lookups


def test_dataframe():
    pd = pytest.importorskip("pandas")
    trace = os.path.join(FIXTURES, "kineto", "h100", "resnet50_fp32_b32.json.gz")
    df = habitat.predict(trace, to=["H200", "L4"], batch=32, what_if="batch=64").to_dataframe()
    assert isinstance(df, pd.DataFrame)
    assert list(df["scenario"]) == ["as traced", "as traced", "what-if", "what-if"]
    assert set(df["device"]) == {"H200", "L4"}


def test_devices():
    ds = habitat.devices()
    assert len(ds) >= 26
    assert habitat.device("h100").name == "H100 SXM"
    assert habitat.device("A100-SXM4-40GB").name == "A100 SXM4 40GB"
    with pytest.raises(habitat.Error, match="ambiguous"):
        habitat.device("A100")
    with pytest.raises(habitat.Error, match="unknown GPU"):
        habitat.device("GTX 9999")


@pytest.mark.parametrize("kwargs, message", [
    ({"trace": "/nonexistent/trace.json", "to": ["H200"]}, "no such file"),
    ({"to": ["Voodoo 5"]}, "unknown GPU"),
    ({"to": ["A100"]}, "ambiguous"),
    ({"to": ["H200"], "what_if": "lr=3"}, "unknown key"),
    ({"to": ["H200"], "what_if": "batch=64"}, "needs the trace's own batch"),
    ({"to": ["H200"], "predictor": "oracle"}, "predictor"),
    ({"to": ["H200"], "world_size": 0}, None),
    ({"trace": 42, "to": ["H200"]}, "expected a path"),
])
def test_errors_are_habitat_error(kwargs, message):
    kwargs = dict(kwargs)
    kwargs.setdefault("trace", os.path.join(FIXTURES, "kineto", "h100", "resnet50_fp32_b32.json.gz"))
    if kwargs.get("world_size") == 0:
        # world_size=0 means "not given" (1 GPU), as in the CLI; a negative one is refused
        kwargs["world_size"] = -3
        message = "world_size"
    with pytest.raises(habitat.Error, match=message):
        habitat.predict(**kwargs)


def test_malformed_trace_is_habitat_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": "long"}]')
    with pytest.raises(habitat.Error, match="bad.json"):
        habitat.predict(str(bad), to=["H200"])
    empty = tmp_path / "empty.json"
    empty.write_text("")
    with pytest.raises(habitat.Error):
        habitat.predict(str(empty), to=["H200"])


OLD_FORMAT = os.path.join(ROOT, "..", "shared", "data", "wild", "kineto_v100dgxs_resnet50_w0.pt.trace.json.gz")


@pytest.mark.skipif(not os.path.exists(OLD_FORMAT), reason="../shared/data/wild is missing")
def test_old_format_trace_needs_infer_steps():
    with pytest.raises(habitat.Error, match="PyTorch 1.9.*--infer-steps"):
        habitat.predict(OLD_FORMAT, to=["H200"])
    r = habitat.predict(OLD_FORMAT, to=["H200"], infer_steps=True)
    assert r["H200"].gpu_active_ms > 0
    assert any("PyTorch 1.9" in w for w in r.warnings)


def test_step_marker_reads_the_users_own_steps():
    """A record_function("train_step") around the iteration instead of ProfilerStep#N: the same prediction."""
    path = os.path.join(FIXTURES, "kineto", "h100", "encoder_fp32_b16.json.gz")
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    for e in doc["traceEvents"]:
        if str(e.get("name", "")).startswith("ProfilerStep#"):
            e["name"] = "train_step"
    with pytest.raises(habitat.Error, match="--step-marker.*'train_step'"):
        habitat.predict(doc, to=["H200"])
    marked = habitat.predict(doc, to=["H200"], step_marker="train_step")
    plain = habitat.predict(path, to=["H200"])
    assert marked["H200"].gpu_active_ms == pytest.approx(plain["H200"].gpu_active_ms, rel=1e-9)
    assert marked["H200"].iteration_ms == pytest.approx(plain["H200"].iteration_ms, rel=1e-9)
    with pytest.raises(habitat.Error, match="no annotation or operator named 'step'"):
        habitat.predict(doc, to=["H200"], step_marker="step")


def test_track_without_a_gpu_says_so():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the tracker records real steps here")
    x = torch.randn(64, 64)
    with pytest.raises(habitat.Error, match="saw no GPU work"):
        with habitat.track() as t:
            for _ in range(t.steps_needed):
                (x @ x).sum()
                t.step()


def test_track_needs_enough_steps():
    torch = pytest.importorskip("torch")
    with pytest.raises(habitat.Error, match="step"):
        with habitat.track() as t:
            t.step()


# fixtures/track: the same steps on the H100 recorded by habitat.track and by torch.profiler as the fixtures are
# (fixtures/record/track_check.py): the same kernels, the same GPU time, the same predictions.
TRACK = os.path.join(FIXTURES, "track")


def recorded_kernels(path):
    """Every kernel of the trace: both recorders keep one active step (and what it left running)."""
    with gzip.open(path, "rt") as f:
        ev = json.load(f)["traceEvents"]
    return sorted(e["name"] for e in ev if e.get("cat") == "kernel")


@pytest.mark.parametrize("name", ["resnet50_fp32_b32", "encoder_fp32_b16", "dcgan_fp32_b128"])
def test_cupti_tracker_records_the_same_kernels(name):
    a, b = os.path.join(TRACK, name + ".inject.json.gz"), os.path.join(TRACK, name + ".profiler.json.gz")
    assert recorded_kernels(a) == recorded_kernels(b)
    ra, rb = habitat.predict(a, to=["H200"]), habitat.predict(b, to=["H200"])
    assert ra.origin["gpu_active_ms"] == pytest.approx(rb.origin["gpu_active_ms"], rel=0.015)  # another process: 1.3% at most


@pytest.mark.parametrize("name", ["resnet50_fp32_b32", "encoder_fp32_b16", "dcgan_fp32_b128"])
def test_track_agrees_with_the_profiler(name):
    a, b = os.path.join(TRACK, name + ".track.json.gz"), os.path.join(TRACK, name + ".profiler.json.gz")
    ka, kb = recorded_kernels(a), recorded_kernels(b)
    assert len(ka) == len(kb) and ka == kb
    ra, rb = habitat.predict(a, to=DESTS), habitat.predict(b, to=DESTS)
    assert ra.origin["gpu_active_ms"] == pytest.approx(rb.origin["gpu_active_ms"], rel=0.01)
    for d in DESTS:
        assert ra[d].gpu_active_ms == pytest.approx(rb[d].gpu_active_ms, rel=0.01)


def test_example_script_runs():
    out = subprocess.run([__import__("sys").executable, os.path.join(ROOT, "examples", "predict_from_python.py")], capture_output=True, text=True,
                         env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert "samples/$" in out.stdout and "H200" in out.stdout


def test_amd_trace_predicts_and_says_it_is_unvalidated():
    """A public ROCm trace (an MI250 GCD, 'AMD Radeon Graphics'): read, described as an AMD GPU, predicted."""
    mi300x = habitat.device("AMD Instinct MI300X")
    assert mi300x.name == "MI300X" and mi300x.raw["vendor"] == "AMD" and mi300x.raw["isa"] == "gfx942"
    assert habitat.device("H100").raw["vendor"] == "NVIDIA"
    r = habitat.predict(os.path.join(FIXTURES, "wild", "hta_mi250_minitoy_train_rocm6.2.json.gz"), to=["MI210", "MI300X", "H100"])
    assert 0 < r["MI300X"].gpu_active_ms < r["MI210"].gpu_active_ms
    assert any("AMD GPUs are unvalidated" in w for w in r.warnings)
