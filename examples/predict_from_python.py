#!/usr/bin/env python3
"""Which GPU should this training step run on? The bundled H100 ResNet-50 trace predicted on every GPU of the
catalog, cheapest per sample first. Run from the checkout after the README's first command (or with
PYTHONPATH=build/python)."""
import os

import habitat

trace = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "kineto", "h100", "resnet50_fp32_b32.json.gz")
result = habitat.predict(trace, to="all", batch=32)
for w in result.warnings:
    print("assumed:", w)
rows = sorted((p for p in result.values() if p.cost_normalized_throughput), key=lambda p: -p.cost_normalized_throughput)
print(f"{'GPU':<18} {'step ms':>9} {'samples/s':>10} {'samples/$':>10}  bound")
for p in rows:
    print(f"{p.device:<18} {p.iteration_ms:9.2f} {p.throughput:10.1f} {p.cost_normalized_throughput:10.0f}  {p.bound}")
