#!/usr/bin/env python3
"""Listing 1 of the Habitat paper (USENIX ATC'21), as its users wrote it, on habitat (needs PyTorch with a GPU):
one training iteration tracked on the GPU you have, its run time there and predicted on a V100 and an L4."""
import torch
import torchvision

import habitat

model = torchvision.models.resnet50().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 3, 224, 224, device="cuda"), torch.randint(0, 1000, (32,), device="cuda")


def run_my_training_iteration():
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


for _ in range(3):  # warm up first (cuDNN's algorithm search, the allocator), as before timing an iteration
    run_my_training_iteration()

tracker = habitat.OperationTracker(
    origin_device=None,  # the GPU the trace names; or e.g. habitat.Device.H100 where it cannot tell
)

with tracker.track():
    run_my_training_iteration()

trace = tracker.get_tracked_trace()
print("Iteration run time here ({}): {:.2f} ms".format(trace.origin_device, trace.run_time_ms))
for gpu in (habitat.Device.V100, habitat.Device.L4):
    print("Pred. iter. exec. time on {}: {:.2f} ms".format(gpu.name, trace.to_device(gpu).run_time_ms))
