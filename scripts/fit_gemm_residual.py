#!/usr/bin/env python3
"""Fit the GEMM tile model's per-architecture residual (what a GPU's cuBLAS does that the shared tile model
does not) and write it as C++ constants.

cuBLAS picks its kernels per SM version and shape: GPUs of one compute capability run the same kernel list,
so the part of their time the tile model misses is a function of the shape, learned once per architecture
and carried to every GPU of it (H100 SXM/PCIe, H200, H800, H20 and GH200 share sm_90; the A100s sm_80; ...).
The GPU's own physics (SMs, clocks, bandwidth) stays in the tile model.

Input: `habitat-gemm-study --dump` (every measured linear/bmm row with the time of the tile model the residuals correct,
`shipped_us`, and their waves). Per architecture, the mean of MEMBERS 7-32-32-1 ReLU networks maps the shape (log2 M,
N, K, batch, the layout, log2 waves) and log2 of the tile model's time to log(measured / shipped), each trained with the MAPE loss on four fifths of the
configurations from its own seed (one network's seed alone spread NeuSight's forward passes over up to 0.9 point); the
held-out fifth (`held_out(batch, m, n, k)`, the same rule in C++) is reported here and checked by ctest.
Deterministic (seeds 0..MEMBERS-1, one thread).

With --across-architectures it also asks whether one residual could serve every architecture: for each GPU left out,
one network fitted on the other GPUs' rows (on the tile model fitted without it), its inputs the shape and the tile
model's time, those and the protocol (timed call or kernel sum), or those and the catalog's facts of the GPU, judged on
the left-out GPU.

Usage: scripts/fit_gemm_residual.py DUMP.csv --header include/habitat/predict/gemm_residual_fit.hpp
       [--report fixtures/gemm_residual.md] [--across-architectures]
"""
import argparse
import sys

import numpy as np
import pandas as pd
import torch

HIDDEN, EPOCHS, BATCH, LR, DECAY = 32, 40, 256, 1e-3, 1e-4  # C++ checks HIDDEN, MEMBERS and the inputs (static_assert)
MEMBERS = 5
MAX_BOARDS = 2  # ArchResidual::boards


def held_out(b, m, n, k):
    """The configurations never trained on: one in five, by a hash of the shape (same rule in C++)."""
    return ((m * 73 + n * 151 + k * 269 + b * 397) % 1009) % 5 == 0


N_INPUTS = 7
# The tile model's time, not range-checked (gemm::residual_time_input): checked, GEMMs of a few microseconds whose shapes
# were fitted can come out shorter on the tile model than every fitted row, and fall back (fresh H200 bmm 23.6% -> 26.8%).
TIME_INPUT = 6


def features(x, base="shipped_us"):
    """The network's inputs, and log2 FLOPs last (range only): residual_inputs_of() in C++. The layout is the
    weight's transposition (NeuSight's linear: x @ W^T; bmm: nn). The time of the tile model corrected (`base`)
    is an input, kept as measured: every held-out row better or equal, Hopper's kernel sums (no capped clock, no call
    overhead) as much as capped cards' timed calls."""
    shared = (x.op == "linear").values  # one weight for every batch: one GEMM of batch x M rows
    m = np.where(shared, x.m * x.batch, x.m)
    b = np.where(shared, 1, x.batch)
    return np.column_stack([np.log2(m), np.log2(x.n), np.log2(x.k), np.log2(b), x.tn.astype(float),
                            np.log2(x.shipped_waves.clip(lower=1 / 64)), np.log2(x[base].clip(lower=1e-3)), np.log2(2 * b * m * x.n * x.k)]).astype(np.float64)


def train(X, y, seed=0):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(X.shape[1], HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
                              torch.nn.Linear(HIDDEN, 1)).double()
    opt = torch.optim.Adam(net.parameters(), LR, weight_decay=DECAY)
    Xt, yt = torch.tensor(X), torch.tensor(y)
    g = torch.Generator().manual_seed(seed)
    for _ in range(EPOCHS):
        perm = torch.randperm(len(Xt), generator=g)
        for b in range(0, len(Xt), BATCH):
            i = perm[b:b + BATCH]
            loss = (torch.exp(net(Xt[i]).squeeze(1) - yt[i]) - 1).abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return net


def standardization(X):
    return X.mean(0), X.std(0) + 1e-9


def mean_log_factor(nets, mu, sd, X):
    """The members' mean output on standardized inputs (residual_log() in C++), unclamped."""
    with torch.no_grad():
        return np.mean([n(torch.tensor((X - mu) / sd)).squeeze(1).numpy() for n in nets], axis=0)


class Model:
    """Standardization, the fitted input range (beyond it the residual steps aside) and the networks."""

    def __init__(self, rows, base_col):
        self.base_col = base_col
        X = features(rows, base_col)
        timed = rows.timed_alone.unique()
        assert len(timed) == 1, "an architecture's rows are all timed calls or all kernel sums"
        self.whole_call = bool(timed[0])
        self.boards = sorted(rows.gpu.unique())
        assert len(self.boards) <= MAX_BOARDS
        # The fitted range per layout; a layout never measured gets an empty range (lo > hi).
        self.lo, self.hi = np.full((2, X.shape[1]), 1e300), np.full((2, X.shape[1]), -1e300)
        for t in (0, 1):
            sel = X[:, 4] == t
            if sel.any():
                self.lo[t], self.hi[t] = X[sel].min(0), X[sel].max(0)
        X = X[:, :-1]
        self.mu, self.sd = standardization(X)
        y = np.log(rows.measured_us.values / rows[base_col].values)
        self.nets = [train((X - self.mu) / self.sd, y, seed) for seed in range(MEMBERS)]

    def log_factor(self, rows):
        """The clamped log factor; 0 where the shape is outside the fitted range (C++ then takes the GPU's library
        efficiency instead, so the C++ test's numbers can differ from this report's in the last digit)."""
        X = features(rows, self.base_col)
        t = X[:, 4].astype(int)
        checked = np.arange(X.shape[1]) != TIME_INPUT
        inside = np.all(((X >= self.lo[t]) & (X <= self.hi[t]))[:, checked], axis=1)
        out = mean_log_factor(self.nets, self.mu, self.sd, X[:, :-1])
        return np.where(inside, np.clip(out, -LOG_CLAMP, LOG_CLAMP), 0.0)


LOG_CLAMP = 1.5  # the factor stays within 0.22x-4.5x whatever the network does outside its data


def catalog_features(x, which):
    """What the catalog knows of each row's GPU (log2), and the protocol: the inputs a residual shared by every
    architecture could take beside the shape."""
    peak = x.sms * x.flops_per_clk_sm * x.load_mhz
    cols = {"timed call": x.timed_alone.astype(float), "peak": np.log2(peak), "bandwidth": np.log2(x.bandwidth_gbps),
            "ridge": np.log2(peak / x.bandwidth_gbps), "L2": np.log2(x.l2_mib), "shared memory": np.log2(x.smem_kib), "SMs": np.log2(x.sms)}
    return np.column_stack([cols[w] for w in which]).astype(np.float64) if which else np.empty((len(x), 0))


ACROSS = {"shape, time": [], "shape, time, protocol": ["timed call"],
          "shape, time, protocol, catalog": ["timed call", "peak", "bandwidth", "ridge", "L2", "shared memory", "SMs"]}


def across_architectures(d, gpus):
    """One residual for every architecture, each GPU left out (one network, seed 0, per GPU and input set)."""
    lines = ["", "## One residual for every architecture? (each GPU left out; one network fitted on the other GPUs' rows)", "",
             "| GPU | op | n | tile model, GPU left out | " + " | ".join(f"+ residual on {k}" for k in ACROSS) + " |",
             "|---|---|---|---|" + "---|" * len(ACROSS)]
    results = {}
    for i, g in enumerate(gpus):
        col = f"wo{i}"
        tr, te = d[d.gpu != g], d[d.gpu == g]
        shape_tr, shape_te = features(tr, col)[:, :-1], features(te, col)[:, :-1]  # the range column dropped
        y = np.log(tr.measured_us.values / tr[col].values)
        for name, which in ACROSS.items():
            X = np.column_stack([shape_tr, catalog_features(tr, which)])
            mu, sd = standardization(X)
            net = train((X - mu) / sd, y)
            out = mean_log_factor([net], mu, sd, np.column_stack([shape_te, catalog_features(te, which)]))
            results[(g, name)] = np.clip(out, -LOG_CLAMP, LOG_CLAMP)
            print(f"fit_gemm_residual: across architectures, {g} left out, inputs: {name}", file=sys.stderr)
        for op in ("linear", "bmm"):
            sel = (te.op == op).values
            r = te[sel]
            cells = " | ".join(f"{mape(r[col] * np.exp(results[(g, k)][sel]), r.measured_us):.1f}%" for k in ACROSS)
            lines.append(f"| {g} | {op} | {len(r)} | {mape(r[col], r.measured_us):.1f}% | {cells} |")
    return lines


def mape(pred, meas):
    return 100 * np.mean(np.abs(pred / meas - 1))


def cpp_array(v):
    return "{" + ", ".join(f"{x:.17g}" for x in np.asarray(v).ravel()) + "}"


def write_header(path, models, n_rows):
    w = lambda i, n: n[i].weight.detach().numpy()
    b = lambda i, n: n[i].bias.detach().numpy()
    boards = ", ".join(b for m in models.values() for b in m.boards)
    out = ["#pragma once",
           f"// Generated by scripts/fit_gemm_residual.py from {n_rows} measured FP32 linear/bmm configurations (four fifths) of",
           f"// {boards}",
           "// (NeuSight's public timings, sitar-lab/NeuSight, MIT, and habitat's own measurements): per compute capability,",
           f"// the weights of {MEMBERS} {N_INPUTS}-{HIDDEN}-{HIDDEN}-1 networks. Constants only; no rows are shipped.",
           "#include <array>", "", '#include "habitat/predict/gemm_residual.hpp"', "", "namespace habitat::gemm {", "",
           f"static_assert(residual_inputs == {N_INPUTS} && residual_time_input == {TIME_INPUT} && residual_hidden == {HIDDEN} && residual_members == {MEMBERS},",
           '              "regenerate with scripts/fit_gemm_residual.py");',
           f"inline constexpr double residual_log_clamp = {LOG_CLAMP};",
           f"inline constexpr std::array<ArchResidual, {len(models)}> arch_residuals{{{{"]
    for (major, minor), m in sorted(models.items()):
        lo, hi = "{" + ", ".join(cpp_array(r) for r in m.lo) + "}", "{" + ", ".join(cpp_array(r) for r in m.hi) + "}"
        names = "{" + ", ".join(f'"{b}"' for b in m.boards + [""] * (MAX_BOARDS - len(m.boards))) + "}"
        nets = ",\n".join(f"      {{{cpp_array(w(0, n))},\n       {cpp_array(b(0, n))},\n       {cpp_array(w(2, n))},\n"
                          f"       {cpp_array(b(2, n))},\n       {cpp_array(w(4, n))}, {b(4, n)[0]:.17g}}}" for n in m.nets)
        out.append(f"    {{{major}, {minor}, {str(m.whole_call).lower()}, {names}, {{{lo}}}, {{{hi}}}, {cpp_array(m.mu)}, {cpp_array(m.sd)},\n"
                   f"     {{{{\n{nets}}}}}}},")
    out += ["}};", "", "}  // namespace habitat::gemm", ""]
    open(path, "w").write("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--header", required=True)
    ap.add_argument("--report")
    ap.add_argument("--across-architectures", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    d = pd.read_csv(a.dump)
    d["held_out"] = held_out(d.batch.astype(np.int64), d.m.astype(np.int64), d.n.astype(np.int64), d.k.astype(np.int64))
    gpus = list(d.gpu.unique())
    lines = []
    models = {}
    train_rows = d[~d.held_out]
    for key, rows in train_rows.groupby(["cc_major", "cc_minor"]):
        print(f"fit_gemm_residual: sm_{key[0]}{key[1]}: {len(rows)} rows of {', '.join(rows.gpu.unique())} ...", file=sys.stderr)
        models[key] = Model(rows, "shipped_us")
    write_header(a.header, models, len(train_rows))

    lines += ["## The held-out fifth of configurations, GPU in training (MAPE of the timed call or kernel sum)", "",
              "| GPU | op | n | tile model | + one median factor per layout | **+ architecture residual** |",
              "|---|---|---|---|---|---|"]
    for g in gpus:
        tr, te = train_rows[train_rows.gpu == g], d[(d.gpu == g) & d.held_out]
        m = models[(te.cc_major.iloc[0], te.cc_minor.iloc[0])]
        # A simpler baseline than C++'s library efficiency: one median factor per op over the GPU's training rows.
        cal = {op: np.exp(np.median(np.log(r.measured_us / r.shipped_us))) for op, r in tr.groupby("op")}
        for op, r in te.groupby("op"):
            f = np.exp(m.log_factor(r))
            lines.append(f"| {g} | {op} | {len(r)} | {mape(r.shipped_us, r.measured_us):.1f}% | "
                         f"{mape(r.shipped_us * cal[op], r.measured_us):.1f}% | **{mape(r.shipped_us * f, r.measured_us):.1f}%** |")
    # Carried to another GPU of the architecture: each Hopper GPU from the other's rows alone, on the tile model fitted
    # without it (the study's wo<i> columns), every configuration.
    lines += ["", "## Carried to another GPU of the same architecture (fitted on the other's rows, every configuration)", "",
              "| GPU | from | op | n | tile model, GPU left out | **+ the other's residual** |", "|---|---|---|---|---|---|"]
    for key, rows in d.groupby(["cc_major", "cc_minor"]):
        names = list(rows.gpu.unique())
        if len(names) < 2:
            continue
        for g in names:
            col = f"wo{gpus.index(g)}"
            src = rows[rows.gpu != g]
            m = Model(src.assign(base=src[col]), "base")
            te = rows[rows.gpu == g]
            for op, r in te.groupby("op"):
                f = np.exp(m.log_factor(r.assign(base=r[col])))
                lines.append(f"| {g} | {', '.join(src.gpu.unique())} | {op} | {len(r)} | {mape(r[col], r.measured_us):.1f}% | "
                             f"**{mape(r[col] * f, r.measured_us):.1f}%** |")
    if a.across_architectures:
        lines += across_architectures(d, gpus)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.report:
        open(a.report, "w").write("# GEMM residual per architecture (`scripts/fit_gemm_residual.py`)\n\n" + text)


if __name__ == "__main__":
    main()
