#!/usr/bin/env python3
"""How well a GPU's own rows predict each other: a reference for the op study's leave-one-GPU-out errors.

For each GPU and operation family of `habitat-gemm-study --dump-ops FILE`, a small MLP (two hidden layers of 64,
inputs: the log of the row's dimensions and of the physics model's kernel time for it) is trained on 80% of that GPU's
own rows and scored (MAPE) on the other 20%, for three random splits. It sees the GPU, so it is no
model habitat could ship for an unseen one; where even it misses by X%, a model of the shape that never saw the
GPU is unlikely to do better than about X% on those rows. Needs pandas and torch (Debian: python3-pandas,
python3-torch).

    ./build/habitat-gemm-study --public ../shared/data/neusight --opdata data/opdata --part ops --dump-ops /tmp/ops.csv
    python3 scripts/same_gpu_ceiling.py [--with-order] /tmp/ops.csv [conv ln softmax add]

--with-order adds the row's place in its file (the dump's seq column) as an input: NeuSight's convolution calls
grow along each file (the measuring host), which no function of the shape can learn.
"""
import sys

import numpy as np
import pandas as pd
import torch

DIMS = {"conv": ["d0", "d1", "d2", "d4"]}  # batch, in and out channels, side (NeuSight's are all 3x3, stride 1)


def ceiling(rows: pd.DataFrame, dims: list, seed: int, with_order: bool) -> float:
    torch.manual_seed(seed)
    order_col = [rows.seq.astype(float)] if with_order else []
    # The model's kernel time, not its timed call: the call of a public convolution depends on the row's place.
    x = np.column_stack([np.log(rows[d].astype(float)) for d in dims] + [np.log(rows.kernel_ms)] + order_col).astype(np.float32)
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    y = np.log(rows.measured_ms.values).astype(np.float32)
    order = np.random.RandomState(seed).permutation(len(y))
    train, test = order[: int(0.8 * len(y))], order[int(0.8 * len(y)):]
    xt, yt = torch.tensor(x), torch.tensor(y)
    net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, 1))
    opt = torch.optim.Adam(net.parameters(), 1e-2)
    for _ in range(1500):
        opt.zero_grad()
        loss = ((net(xt[train]).squeeze(1) - yt[train]) ** 2).mean()
        loss.backward()
        opt.step()
    pred = net(xt[test]).squeeze(1).detach().numpy()
    return float(np.mean(np.abs(np.exp(pred - y[test]) - 1)))


def main() -> None:
    args = sys.argv[1:]
    with_order = "--with-order" in args
    args = [a for a in args if a != "--with-order"]
    if not args:
        sys.exit(__doc__)
    rows = pd.read_csv(args[0])
    ops = args[1:] or ["conv", "ln", "softmax", "add"]
    print("| GPU | op | rows | same-GPU MLP, held-out rows (mean of 3 splits) |\n|---|---|---|---|")
    for op in ops:
        for gpu, r in rows[rows.op == op].groupby("gpu", sort=False):
            e = np.mean([ceiling(r, DIMS.get(op, ["d0", "d1"]), s, with_order) for s in range(3)])
            print(f"| {gpu} | {op} | {len(r)} | {100 * e:.1f}% |", flush=True)


if __name__ == "__main__":
    main()
