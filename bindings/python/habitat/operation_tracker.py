"""The seed paper's interface (Habitat, Yu et al., USENIX ATC'21, Listing 1), over habitat's predictor::

    tracker = habitat.OperationTracker(origin_device=habitat.Device.RTX2070)
    with tracker.track():
        run_my_training_iteration()
    trace = tracker.get_tracked_trace()
    trace.run_time_ms                                    # the iteration on the origin GPU, without the profiler
    trace.to_device(habitat.Device.V100).run_time_ms     # the same iteration predicted on the V100

The block under ``track()`` is one iteration. torch.profiler records it with shapes, inside an annotation that makes
the block the step (nothing around it counts), the GPU synchronized at its end so that the step holds its own GPU
work. Where the paper's library re-ran each operation to time it, this one predicts from the profiled iteration
with the host model (the profiler's cost removed), as ``habitat predict`` does. A process's first profiler session
pays CUPTI's start-up in its host time, so the tracker runs a short throwaway session first. Warm the iteration
up before tracking it (cuDNN's autotuning, the caching allocator), as before timing it.

Recording needs only PyTorch (fixtures/record/listing1_check.py runs it on a GPU machine, with a stand-in for the
extension); prediction goes through :func:`habitat.predict`.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any, Dict, Iterator, Optional

from ._habitat import Error
from .track import save_trace

# The annotation around the tracked block; habitat.predict takes it as the step (step_marker).
STEP_MARKER = "habitat::tracked_iteration"

_profiler_warmed = False


def _name(device: Any) -> Optional[str]:
    """A GPU given as a habitat.Device, a catalog name, or None."""
    if device is None:
        return None
    return getattr(device, "name", device)


def warm_profiler(torch: Any) -> None:
    """One throwaway profiler session per process: the first pays CUPTI's initialisation on the host."""
    global _profiler_warmed
    if _profiler_warmed:
        return
    from torch.profiler import ProfilerActivity, profile
    x = torch.randn(64, 64, device="cuda")
    for _ in range(2):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True):
            for _ in range(20):
                x = torch.tanh(x @ x)
            torch.cuda.synchronize()
    _profiler_warmed = True


def _warmup_work(torch: Any) -> None:
    """A short step of small GPU operations of several kinds, synchronized."""
    x = torch.randn(128, 128, device="cuda")
    for _ in range(10):
        x = torch.nn.functional.gelu(x @ x).softmax(-1) + 1.0
    torch.cuda.synchronize()


class PredictedTrace:
    """The tracked iteration on one GPU: ``run_time_ms`` (what CUDA events around it would measure there),
    ``device``, and ``prediction`` (the :class:`habitat.Prediction` behind it, with its timeline)."""

    def __init__(self, prediction: Any, warnings: list):
        self.prediction = prediction
        self.device: str = prediction.device
        self.run_time_ms: float = prediction.iteration_ms
        self.warnings = warnings

    def __repr__(self) -> str:
        return f"<habitat.PredictedTrace {self.device}: {self.run_time_ms:.2f} ms>"


class TrackedTrace:
    """One tracked iteration, recorded by :meth:`OperationTracker.track` (or a trace file it saved).

    ``run_time_ms``: the iteration on the GPU it was recorded on, as CUDA events would measure it without the
    profiler (habitat's host model removes the profiler's cost). ``profiled_ms``: the iteration as the profiler
    saw it. ``to_device(gpu)``: the iteration predicted on another GPU. ``TrackedTrace(path)`` reads a trace that
    :meth:`OperationTracker.save` wrote; ``TrackedTrace(path, step_marker=None)`` any torch.profiler trace, its step
    taken as ``habitat predict`` takes it."""

    def __init__(self, path: str, origin_device: Any = None, _owner: Any = None, step_marker: Optional[str] = STEP_MARKER,
                 **predict_args: Any):
        self.path = path
        self._marker = step_marker  # None: a torch.profiler trace of yours, its ProfilerStep as habitat predict takes it
        self._owner = _owner  # the tracker whose temporary file this is stays alive while the trace is used
        self._origin = _name(origin_device)
        self._args = predict_args
        self._cache: Dict[str, Any] = {}
        first = self._result(self._origin or "H100 SXM")
        self.origin_device: str = first.origin["device"]
        self.run_time_ms: float = first.origin["iteration_ms"]
        self.profiled_ms: float = first.origin["profiled_step_ms"]
        self.warnings: list = first.warnings

    def _result(self, gpu: str) -> Any:
        if gpu not in self._cache:
            from . import predict
            self._cache[gpu] = predict(self.path, to=[gpu], origin=self._origin, step_marker=self._marker, **self._args)
        return self._cache[gpu]

    def to_device(self, device: Any) -> PredictedTrace:
        """The iteration on ``device`` (a habitat.Device or a catalog name: "V100", "A100 SXM4 80GB", ...)."""
        r = self._result(_name(device))
        (prediction,) = r.values()
        return PredictedTrace(prediction, r.warnings)

    def __repr__(self) -> str:
        return f"<habitat.TrackedTrace {self.origin_device}: {self.run_time_ms:.2f} ms>"


class OperationTracker:
    """Tracks one training iteration under ``with tracker.track():`` (Listing 1 of the Habitat paper).

    origin_device: the GPU the iteration runs on (a habitat.Device or a name), where the trace cannot say it.
    sync: synchronize the GPU at the end of the block, so that the step holds its own GPU work.
    Other keyword arguments go to :func:`habitat.predict` (batch, host, predictor, devices, what_if, ...)."""

    def __init__(self, origin_device: Any = None, sync: bool = True, **predict_args: Any):
        self.origin_device = origin_device
        self.sync = sync
        self.session_warmup = True
        self._args = predict_args
        self._path: Optional[str] = None  # the last tracked iteration's trace
        self._files: list = []  # every temporary trace, removed with the tracker (a TrackedTrace keeps it alive)

    @contextlib.contextmanager
    def track(self) -> Iterator["OperationTracker"]:
        try:
            import torch
            from torch.autograd.profiler import record_function
            from torch.profiler import ProfilerActivity, profile
        except ImportError as e:
            raise Error("habitat.OperationTracker needs PyTorch (import torch failed: %s)" % e) from e
        if not torch.cuda.is_available():
            raise Error("habitat.OperationTracker: saw no GPU work: PyTorch finds no CUDA device here "
                         "(torch.cuda.is_available() is False), so there is no GPU iteration to predict from. Run it on a GPU.")
        warm_profiler(torch)
        if not self.session_warmup:
            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True)
            with prof:
                with record_function(STEP_MARKER):
                    yield self
                    if self.sync:
                        torch.cuda.synchronize()
        else:
            # The session's first step pays the profiler's start: a short step of the tracker's own work takes it
            # (discarded: the schedule's warm-up), and the block is the session's second, recorded step.
            from torch.profiler import schedule
            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                           schedule=schedule(wait=0, warmup=1, active=1, repeat=1))
            with prof:
                _warmup_work(torch)
                prof.step()
                with record_function(STEP_MARKER):
                    yield self
                    if self.sync:
                        torch.cuda.synchronize()
                prof.step()
        fd, path = tempfile.mkstemp(prefix="habitat-tracked-", suffix=".json")
        os.close(fd)
        self._files.append(path)
        prof.export_chrome_trace(path)
        self._path = path

    def get_tracked_trace(self) -> TrackedTrace:
        if self._path is None:
            raise Error("habitat.OperationTracker: nothing tracked yet; call get_tracked_trace() after 'with tracker.track():'")
        return TrackedTrace(self._path, self.origin_device, self, **self._args)

    def save(self, path: str) -> str:
        """Keep the tracked iteration's trace (gzip if the name ends in .gz); ``TrackedTrace(path)`` reads it back."""
        if self._path is None:
            raise Error("habitat.OperationTracker: nothing tracked yet")
        return save_trace(self._path, path)

    def __del__(self) -> None:
        for path in self._files:
            try:
                os.remove(path)
            except OSError:
                pass
