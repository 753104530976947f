"""habitat: how long would this training step take on a GPU you don't have?

Predict from a trace of the step on the GPU you have, in Python::

    import habitat
    r = habitat.predict("fixtures/kineto/h100/resnet50_fp32_b32.json.gz", to=["H200", "A100 SXM4 80GB"], batch=32)
    print(r)                      # the table `habitat predict` prints
    r["H200"].iteration_ms        # what CUDA events around each step would measure, no profiler

or track a step live and predict it, with no file to manage::

    with habitat.track() as t:
        for _ in range(t.steps_needed):
            train_step()
            t.step()
    print(t.predict(to=["H200", "L4"], batch=32))

or, as in Listing 1 of the Habitat paper (USENIX ATC'21), track one iteration and move it to another GPU::

    tracker = habitat.OperationTracker(origin_device=habitat.Device.H100)
    with tracker.track():
        train_step()
    trace = tracker.get_tracked_trace()
    print(trace.run_time_ms, trace.to_device(habitat.Device.V100).run_time_ms)

The numbers are those of ``habitat predict --format json``: the same C++ code computes both.
Every input error raises :class:`habitat.Error` with the file, the place and the problem.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

from . import _habitat
from ._habitat import Error

__all__ = ["Error", "UnknownDevice", "Device", "Prediction", "Result", "devices", "device", "predict", "track", "Tracker",
           "OperationTracker", "TrackedTrace", "PredictedTrace", "__version__"]
__version__: str = _habitat.__version__

# The learned operation models of predictor="hybrid" travel with an installed package.
_models = os.path.join(os.path.dirname(__file__), "models")
if os.path.isdir(_models):
    os.environ.setdefault("HABITAT_MODELS", _models)


class UnknownDevice(Error, AttributeError):
    """``habitat.Device.<name>`` for a name the catalog does not know, or one that fits several GPUs."""


class _Catalog(type):
    """``habitat.Device.V100``, ``habitat.Device.RTX2070``: a catalog GPU by attribute, as Listing 1 of the Habitat
    paper names them (the CLI's name rules: case and punctuation aside)."""

    def __getattr__(cls, name: str) -> "Device":
        if name.startswith("_") or name in cls.__dict__.get("__annotations__", {}):
            raise AttributeError(name)
        try:
            return device(name)
        except Error as e:
            raise UnknownDevice(f"habitat.Device.{name}: {e}") from None


@dataclass(frozen=True)
class Device(metaclass=_Catalog):
    """One GPU of the catalog (``habitat devices``): its physics, price and how far it was validated.
    ``habitat.Device.V100`` (any catalog name as an attribute) is :func:`habitat.device` ("V100")."""

    name: str
    compute_capability: str
    sms: int
    boost_clock_mhz: float
    sustained_clock_mhz: float
    memory_gib: float
    bandwidth_gbps: float
    fp32_tflops: float
    bf16_tflops: float
    usd_per_hour: Optional[float]
    validated: Optional[str]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def _from(cls, d: Mapping[str, Any]) -> "Device":
        return cls(d["name"], d["compute_capability"], d["sms"], d["boost_clock_mhz"], d["sustained_clock_mhz"], d["memory_gib"],
                   d["bandwidth_gbps"], d["fp32_tflops"], d["bf16_tflops"], d["usd_per_hour"], d["validated"], d)


def _as_list(x: Union[str, os.PathLike, Iterable[str], None]) -> list:
    if x is None:
        return []
    if isinstance(x, (str, os.PathLike)):
        return [os.fspath(x)]
    return [os.fspath(v) for v in x]


def devices(device_files: Union[str, os.PathLike, Sequence[str], None] = None) -> list:
    """The GPU catalog as :class:`Device` objects, with GPUs of ``device_files`` (habitat.devices/1) added."""
    return [Device._from(d) for d in json.loads(_habitat.devices(_as_list(device_files)))["devices"]]


def device(name: str, device_files: Union[str, os.PathLike, Sequence[str], None] = None) -> Device:
    """One GPU by the CLI's name rules: catalog names and aliases, case and punctuation aside ("h100",
    "A100-SXM4-40GB"); an unknown name, or one that fits several GPUs ("A100"), raises :class:`Error`."""
    return Device._from(json.loads(_habitat.device(name, _as_list(device_files))))


def _norm(s: str) -> str:
    return "".join(c for c in s.lower() if c.isalnum())


@dataclass(frozen=True)
class Prediction:
    """The step on one GPU: the fields of one entry of ``predictions`` in ``habitat predict --format json``."""

    device: str
    iteration_ms: float
    gpu_active_ms: float
    bound: Optional[str]
    host: Optional[str]
    throughput: Optional[float]
    cost_normalized_throughput: Optional[float]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def timeline(self) -> Optional[Mapping[str, Any]]:
        return self.raw.get("timeline")

    @property
    def trust(self) -> Mapping[str, Any]:
        return self.raw.get("trust", {})

    @property
    def data_parallel(self) -> Optional[Mapping[str, Any]]:
        return self.raw.get("data_parallel")

    @classmethod
    def _from(cls, p: Mapping[str, Any]) -> "Prediction":
        tl = p.get("timeline") or {}
        return cls(p["device"], p["iteration_ms"], p["gpu_active_ms"], tl.get("bound"), p.get("host"), p.get("throughput"),
                   p.get("cost_normalized_throughput"), p)


class Result(Mapping[str, Prediction]):
    """All destinations of one prediction, by GPU name; ``origin``, ``what_if`` and ``warnings`` beside them.

    ``str(result)`` is the table the CLI prints; ``to_dict()`` the JSON document; ``to_dataframe()`` one row per
    GPU (and per what-if scenario) where pandas is installed.
    """

    def __init__(self, doc: Mapping[str, Any], warnings: Sequence[str], table: str, device_files: Sequence[str] = ()):
        self._doc = doc
        self._device_files = list(device_files)
        self._by_name = {p["device"]: Prediction._from(p) for p in doc["predictions"]}
        self.origin: Mapping[str, Any] = doc["origin"]
        self.what_if: Optional[Mapping[str, Any]] = doc.get("what_if")
        self.warnings: list = list(warnings)
        self._table = table

    def __getitem__(self, gpu: str) -> Prediction:
        if gpu in self._by_name:
            return self._by_name[gpu]
        hits = [n for n in self._by_name if _norm(n) == _norm(gpu)]
        if len(hits) == 1:
            return self._by_name[hits[0]]
        try:  # an alias ("H100", "A100-SXM4-40GB"): the catalog's name rules
            name = device(gpu, self._device_files).name
        except Error:
            name = None
        if name in self._by_name:
            return self._by_name[name]
        raise KeyError(f"{gpu!r} is not among the predicted GPUs: {', '.join(self._by_name)}")

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __str__(self) -> str:
        return self._table

    def __repr__(self) -> str:
        rows = ", ".join(f"{n}: {p.iteration_ms:.2f} ms" for n, p in self._by_name.items())
        return f"<habitat.Result origin {self.origin['device']} {self.origin['iteration_ms']:.2f} ms; {rows}>"

    def to_dict(self) -> dict:
        """The document ``habitat predict --format json`` writes (schema habitat.prediction/1)."""
        return json.loads(json.dumps(self._doc))

    def to_dataframe(self):
        """One row per destination GPU (and per what-if GPU, scenario 'what-if'); needs pandas."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the machine
            raise Error("to_dataframe needs pandas (Debian: apt-get install python3-pandas)") from e
        rows = []
        for scenario, preds in [("as traced", self._doc["predictions"])] + (
                [("what-if", self.what_if["predictions"])] if self.what_if else []):
            for p in preds:
                tl = p.get("timeline") or {}
                rows.append({"scenario": scenario, "device": p["device"], "iteration_ms": p["iteration_ms"],
                             "gpu_active_ms": p["gpu_active_ms"], "gpu_busy_ms": tl.get("gpu_busy_ms"), "bound": tl.get("bound"),
                             "samples_per_s": p.get("throughput"), "samples_per_usd": p.get("cost_normalized_throughput"),
                             "host": p.get("host"), "methods": (p.get("trust") or {}).get("methods")})
        return pd.DataFrame(rows)


def _trace_path(trace: Any, keep: list) -> str:
    """A file the C++ reader can open: a path as it is, a torch.profiler.profile exported to a temporary file."""
    if isinstance(trace, (str, os.PathLike)):
        path = os.fspath(trace)
        if not os.path.exists(path) and path != "-":
            raise Error(f"{path}: no such file")
        return path
    if hasattr(trace, "export_chrome_trace"):
        fd, path = tempfile.mkstemp(prefix="habitat-", suffix=".json")
        os.close(fd)
        keep.append(path)
        trace.export_chrome_trace(path)
        return path
    if isinstance(trace, Mapping) and "traceEvents" in trace:  # an in-memory Kineto trace
        fd, path = tempfile.mkstemp(prefix="habitat-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(trace, f)
        keep.append(path)
        return path
    raise Error(f"trace: expected a path, a torch.profiler.profile or a Kineto trace dict, not {type(trace).__name__}")


def predict(trace: Any, to: Union[str, Sequence[str]] = ("all",), batch: Optional[int] = None,
            what_if: Union[str, Sequence[str], None] = None, world_size: Optional[int] = None, host: Optional[str] = None,
            origin: Optional[str] = None, origin_host: Optional[str] = None, predictor: str = "physics",
            devices: Union[str, Sequence[str], None] = None, step: Optional[int] = None, whole_trace: bool = False,
            parallel: str = "ddp", infer_steps: bool = False, step_marker: Optional[str] = None) -> Result:
    """Predict a traced training step on other GPUs.

    trace: a Kineto trace file (.json or .json.gz), a ``torch.profiler.profile`` after its step, or the trace as a dict.
    to: destination GPU names (the CLI's rules), or "all". batch: samples per step, for samples/s and samples/$.
    what_if: "batch=N", "precision=bf16|fp16|tf32" (one string or several). world_size: data parallel over N GPUs.
    parallel: how the world_size GPUs share the step: "ddp" (default), "tp[=N][,dtensor|megatron]" (tensor
    parallel: the split linears dispatched by torch's DTensor, the default, or by Megatron-LM's layers), "fsdp[,grad_op][,bf16][,units=blocks|layers|N]"
    or "pp[=S][,microbatches=M][,schedule=1f1b|gpipe]" (pipeline parallel: S stages, one GPU each).
    host: the host of every destination (a host profile name or file, or "reference": each GPU's catalog reference
    host); default: the recording host, for every row. origin_host: the recording machine's host profile.
    origin: the GPU the trace was recorded on, where it does not
    say. predictor: physics (default), tile, scaling, wave or hybrid. devices: device files (habitat.devices/1).
    step: the ProfilerStep number (default: the last with GPU work, or the most typical where that one is an outlier).
    whole_trace: a trace with no ProfilerStep#N is read as one step (else it is an error).
    infer_steps: a trace with no ProfilerStep#N of PyTorch 1.10 or later: PyTorch 1.9's ProfilerStep operators, or the
    iterations between optimizer steps, are taken as its steps (not validated; else it is an error saying what it has).
    step_marker: the name of an annotation of yours around each iteration (e.g. ``record_function("train_step")``):
    each event of that exact name is a step, numbered 1, 2, ... (``step`` picks one); ProfilerStep#N is then ignored.
    """
    keep: list = []
    try:
        path = _trace_path(trace, keep)
        args = (path, _as_list(to), origin, batch, _as_list(what_if), world_size or 1, host, origin_host, predictor,
                _as_list(devices), step, whole_trace, infer_steps, parallel, step_marker or "")
        text, table, warnings = _habitat.predict(*args)
    finally:
        for p in keep:
            try:
                os.remove(p)
            except OSError:
                pass
    lines = [w[len("habitat: warning: "):] if w.startswith("habitat: warning: ") else w for w in warnings.splitlines() if w]
    return Result(json.loads(text), lines, table, _as_list(devices))


from .track import Tracker, track  # noqa: E402  (uses predict)
from .operation_tracker import OperationTracker, PredictedTrace, TrackedTrace  # noqa: E402  (the paper's Listing 1)
