"""``habitat.track``: record training steps with torch.profiler the way the predictor needs them, in memory.

The schedule is the one habitat's fixtures use: one step skipped, two warm-up steps (the first profiled steps of a
process pay CUPTI's start-up), one active step with shapes recorded. The user calls ``t.step()`` after each
training step, as with ``prof.step()``; ``t.steps_needed`` says how many.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Optional, Sequence, Union

from ._habitat import Error

WAIT, WARMUP, ACTIVE = 1, 2, 1


def save_trace(recorded: str, path: str) -> str:
    """Copy a recorded trace to ``path``, gzipped if the name ends in .gz."""
    import gzip
    import shutil
    opener = gzip.open if path.endswith(".gz") else open
    with open(recorded, "rb") as src, opener(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


class Tracker:
    """Context manager around training steps; ``predict`` afterwards (the arguments of :func:`habitat.predict`)."""

    steps_needed = WAIT + WARMUP + ACTIVE

    def __init__(self, origin: Optional[str] = None, sync: bool = True):
        self.origin = origin
        self.sync = sync  # synchronize after each step, so each profiled step holds its own GPU work
        self._prof = None
        self._steps = 0
        self._trace: Optional[str] = None
        self._cuda = False

    def __enter__(self) -> "Tracker":
        try:
            import torch
            from torch.profiler import ProfilerActivity, profile, schedule
        except ImportError as e:
            raise Error("habitat.track needs PyTorch (import torch failed: %s)" % e) from e
        self._torch = torch
        self._cuda = torch.cuda.is_available()
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self._cuda else [])
        self._prof = profile(activities=activities, record_shapes=True,
                             schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1))
        self._prof.__enter__()
        return self

    def step(self) -> None:
        """Call once after each training step (like ``prof.step()``)."""
        if self._prof is None:
            raise Error("habitat.track: step() outside the 'with' block")
        if self.sync and self._cuda:
            self._torch.cuda.synchronize()
        self._prof.step()
        self._steps += 1

    def __exit__(self, exc_type, exc, tb) -> None:
        prof, self._prof = self._prof, None
        if prof is None:
            return
        prof.__exit__(exc_type, exc, tb)
        if exc_type is not None:
            return
        if self._steps < self.steps_needed:
            raise Error(f"habitat.track: {self._steps} step(s) recorded; call t.step() after each of at least "
                        f"{self.steps_needed} training steps (1 skipped, 2 warm-up, 1 measured)")
        if not self._cuda:
            raise Error("habitat.track: saw no GPU work: PyTorch finds no CUDA device here (torch.cuda.is_available() is "
                        "False), so there is no GPU step to predict from. Run the steps on a GPU.")
        fd, path = tempfile.mkstemp(prefix="habitat-track-", suffix=".json")
        os.close(fd)
        prof.export_chrome_trace(path)
        self._trace = path

    def predict(self, to: Union[str, Sequence[str]] = ("all",), **kwargs: Any):
        """The tracked step on other GPUs: :func:`habitat.predict` with the recorded trace."""
        from . import predict
        if self._trace is None:
            raise Error("habitat.track: nothing recorded yet; predict after the 'with' block")
        kwargs.setdefault("origin", self.origin)
        return predict(self._trace, to=to, **kwargs)

    def save(self, path: str) -> str:
        """Keep the recorded trace (gzip if the name ends in .gz), e.g. to use it with the CLI."""
        if self._trace is None:
            raise Error("habitat.track: nothing recorded yet")
        return save_trace(self._trace, path)

    def __del__(self) -> None:
        if self._trace:
            try:
                os.remove(self._trace)
            except OSError:
                pass


def track(origin: Optional[str] = None, sync: bool = True) -> Tracker:
    """``with habitat.track() as t:`` around at least ``t.steps_needed`` training steps, each followed by
    ``t.step()``; then ``t.predict(to=[...])``. ``origin`` names the GPU where the trace cannot."""
    return Tracker(origin, sync)
