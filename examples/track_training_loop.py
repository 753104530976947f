#!/usr/bin/env python3
"""habitat.track around your own training loop (needs PyTorch with a GPU): four steps recorded in memory, then
the prediction on other GPUs, with no trace file to manage."""
import torch
import torchvision

import habitat

model = torchvision.models.resnet18().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 3, 224, 224, device="cuda"), torch.randint(0, 1000, (32,), device="cuda")


def train_step():
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


for _ in range(3):  # warm up outside the tracker (cuDNN's algorithm search, allocator)
    train_step()
with habitat.track() as t:
    for _ in range(t.steps_needed):
        train_step()
        t.step()
print(t.predict(to=["H200", "A100 SXM4 80GB", "L4", "T4"], batch=32))
