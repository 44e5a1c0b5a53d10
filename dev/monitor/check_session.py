#!/usr/bin/env python3
"""Checks the run files of dev/monitor/device_session.sh (issue 9, deliverable 3).

Usage: check_session.py ON_DIR ON_STDOUT OFF_DIR
ON_DIR holds the run file of a monitored `gpuvs bench compute.gemm memory.hbm
launch.overhead --quick --gpu 0`; OFF_DIR the one of `launch.overhead` with
--monitor-interval 0. Prints every check; exits 1 when one fails.
"""
import glob
import json
import sys

failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (f": {detail}" if detail else ""))
    if not ok:
        failures.append(name)


def run_file(directory):
    files = sorted(glob.glob(f"{directory}/**/*.json", recursive=True))
    if not files:
        print(f"FAIL no run file in {directory}")
        sys.exit(1)
    with open(files[-1]) as f:
        return json.load(f)


on_dir, on_stdout, off_dir = sys.argv[1:4]
on = run_file(on_dir)
tl = on.get("timeline")
check("timeline present", tl is not None)
if tl is None:
    sys.exit(1)
print("timeline source:", tl["source"], "notes:", tl["notes"])
gpm = tl["source"] == "nvml+gpm"
if not gpm:
    print("WARN no GPM here: the SM/tensor/DRAM checks are skipped")
check("interval 0.1 s", tl["interval_s"] == 0.1, str(tl["interval_s"]))
check("one GPU sampled, GPU 0", [g["gpu"] for g in tl["gpus"]] == [0],
      str([g["gpu"] for g in tl["gpus"]]))
g = tl["gpus"][0]
n = len(g["t_s"])
cols = ["sm_util_pct", "tensor_util_pct", "dram_bw_util_pct", "gpu_util_pct", "power_w", "sm_mhz"]
check("columns as long as t_s", all(len(g[c]) == n for c in cols))
check("t_s non-decreasing", all(a <= b for a, b in zip(g["t_s"], g["t_s"][1:])))
span = g["t_s"][-1] - g["t_s"][0]
# Never faster than asked; at most a few rounds lost to NVML calls on a busy host.
check("no faster than every 100 ms", n <= span / 0.1 + 3, f"{n} samples over {span:.1f} s")
check("not much slower than every 100 ms", n >= 0.8 * span / 0.1, f"{n} samples over {span:.1f} s")

steps = {}
for r in on["results"]:
    u = r.get("utilization")
    if r["status"] == "ok":
        check(f"{r['id']} has utilization", u is not None)
    if u is None:
        continue
    check(f"{r['id']} window ordered", 0 <= u["t_begin_s"] <= u["t_end_s"])
    steps.setdefault(u["step"], (u["t_begin_s"], u["t_end_s"], u))
check("three steps", sorted(steps) == ["compute.gemm", "launch.overhead", "memory.hbm"],
      str(sorted(steps)))
windows = sorted((b, e) for b, e, _ in steps.values())
check("step windows do not overlap", all(a[1] <= b[0] for a, b in zip(windows, windows[1:])))


def figure(step, key):
    u = steps.get(step, (0, 0, {"gpus": [{}]}))[2]
    d = u["gpus"][0].get(key) if u["gpus"] else None
    return d["mean"] if isinstance(d, dict) else d


for step in steps:
    print(f"{step}: SM {figure(step, 'sm_util_pct')}, tensor {figure(step, 'tensor_util_pct')}, "
          f"DRAM {figure(step, 'dram_bw_util_pct')}, GPU util {figure(step, 'gpu_util_pct')}, "
          f"power {figure(step, 'power_w_mean')} W")
if gpm and "compute.gemm" in steps and "memory.hbm" in steps:
    check("GEMM keeps the SMs busy (SM > 80 %)", (figure("compute.gemm", "sm_util_pct") or 0) > 80)
    check("GEMM uses tensor cores (tensor > 30 %)",
          (figure("compute.gemm", "tensor_util_pct") or 0) > 30)
    check("HBM copy uses DRAM bandwidth (> 50 %)",
          (figure("memory.hbm", "dram_bw_util_pct") or 0) > 50)
    check("HBM copy uses no tensor cores (< 5 %)",
          (figure("memory.hbm", "tensor_util_pct") or 0) < 5)
check("GEMM draws power (> 100 W)", (figure("compute.gemm", "power_w_mean") or 0) > 100)

with open(on_stdout) as f:
    text = f.read()
check("terminal summary has the utilization lines",
      "utilization (mean over each step):" in text and "compute.gemm on GPU 0" in text)

off = run_file(off_dir)
check("--monitor-interval 0: no timeline", off.get("timeline") is None)
check("--monitor-interval 0: no utilization",
      all(r.get("utilization") is None for r in off["results"]))


def launch(run):
    return {r["id"]: r["value"] for r in run["results"] if r["id"].startswith("launch.")}


lon, loff = launch(on), launch(off)
for k in sorted(set(lon) & set(loff)):  # information: the sampler's perturbation
    print(f"info {k}: monitored {lon[k]:.3e}, unmonitored {loff[k]:.3e} "
          f"({(lon[k] / loff[k] - 1) * 100:+.1f} %)")

print("FAILED: " + ", ".join(failures) if failures else "all checks passed")
sys.exit(1 if failures else 0)
