# Type hints of the habitat package (the implementation is __init__.py, track.py and operation_tracker.py over the C++ core).
import os
from typing import Any, ContextManager, Iterator, Mapping, Optional, Sequence, Union

__version__: str

class Error(ValueError): ...
class UnknownDevice(Error, AttributeError): ...

class _Catalog(type):
    def __getattr__(cls, name: str) -> Device: ...

class Device(metaclass=_Catalog):
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
    raw: Mapping[str, Any]

class Prediction:
    device: str
    iteration_ms: float
    gpu_active_ms: float
    bound: Optional[str]
    host: Optional[str]
    throughput: Optional[float]
    cost_normalized_throughput: Optional[float]
    raw: Mapping[str, Any]
    @property
    def timeline(self) -> Optional[Mapping[str, Any]]: ...
    @property
    def trust(self) -> Mapping[str, Any]: ...
    @property
    def data_parallel(self) -> Optional[Mapping[str, Any]]: ...

class Result(Mapping[str, Prediction]):
    origin: Mapping[str, Any]
    what_if: Optional[Mapping[str, Any]]
    warnings: list[str]
    def __getitem__(self, gpu: str) -> Prediction: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def to_dict(self) -> dict[str, Any]: ...
    def to_dataframe(self) -> Any: ...

Paths = Union[str, os.PathLike[str], Sequence[str], None]

def devices(device_files: Paths = ...) -> list[Device]: ...
def device(name: str, device_files: Paths = ...) -> Device: ...
def predict(trace: Any, to: Union[str, Sequence[str]] = ..., batch: Optional[int] = ..., what_if: Union[str, Sequence[str], None] = ...,
            world_size: Optional[int] = ..., host: Optional[str] = ..., origin: Optional[str] = ..., origin_host: Optional[str] = ...,
            predictor: str = ..., devices: Paths = ..., step: Optional[int] = ..., whole_trace: bool = ...,
            parallel: str = ..., infer_steps: bool = ..., step_marker: Optional[str] = ...) -> Result: ...

class Tracker:
    steps_needed: int
    origin: Optional[str]
    sync: bool
    def __enter__(self) -> Tracker: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None: ...
    def step(self) -> None: ...
    def predict(self, to: Union[str, Sequence[str]] = ..., **kwargs: Any) -> Result: ...
    def save(self, path: str) -> str: ...

def track(origin: Optional[str] = ..., sync: bool = ...) -> Tracker: ...

class PredictedTrace:
    prediction: Prediction
    device: str
    run_time_ms: float
    warnings: list[str]

class TrackedTrace:
    path: str
    origin_device: str
    run_time_ms: float
    profiled_ms: float
    warnings: list[str]
    def __init__(self, path: str, origin_device: Union[Device, str, None] = ..., _owner: Any = ..., step_marker: Optional[str] = ...,
                 **predict_args: Any) -> None: ...
    def to_device(self, device: Union[Device, str]) -> PredictedTrace: ...

class OperationTracker:
    origin_device: Union[Device, str, None]
    sync: bool
    def __init__(self, origin_device: Union[Device, str, None] = ..., sync: bool = ..., **predict_args: Any) -> None: ...
    def track(self) -> ContextManager[OperationTracker]: ...
    def get_tracked_trace(self) -> TrackedTrace: ...
    def save(self, path: str) -> str: ...
