"""The fair-share floor of issue 15's contention bar, measured with a synthetic workload.

    python benchmarks/fair_share.py [--threads 1 2 4 8] [--busy N] [--runs 30] [--scale 1.0]

Compiles ``fair_share.c`` (beside this file) with the system's C compiler and OpenMP, then,
for each thread count, runs its synthetic network of 60 steps (perfectly divisible arithmetic
in registers, 24.7 ms on one core at ``--scale 1``) quiet and beside ``--busy`` CPU-bound
processes (default: one per core), under two runtimes: ``join`` (OpenMP, a join per step, as
oneDNN's primitives) and ``redo`` (a pool of our own in which no thread waits for a preempted
one: a stalled item is recomputed by a free thread). Prints busy / quiet per runtime and
thread count, the machine and the load average. The checksums of the two runtimes must agree
(the redo protocol keeps every result). docs/decisions.md has the figures.

Exit codes: 0 done, 1 the program failed to build or run, 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def build(workdir: Path) -> Path:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise RuntimeError("no C compiler (cc or gcc) on PATH")
    exe = workdir / "fair_share"
    cmd = [
        cc,
        "-O2",
        "-march=native",
        "-fopenmp",
        "-o",
        str(exe),
        str(HERE / "fair_share.c"),
        "-lm",
        "-lpthread",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return exe


def parse(line: str) -> dict[str, str]:
    words = line.split()
    return {"mode": words[0], **dict(zip(words[1::2], words[2::2], strict=True))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every step's work")
    args = ap.parse_args(argv)
    if min(args.threads) < 1 or args.busy < 0 or args.runs < 1 or not args.scale > 0:
        print("fair_share: --threads and --runs must be >= 1, --busy >= 0, --scale > 0", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    import vs_ncnn  # the machine line and the load average, as the other benchmarks print them

    env = {**os.environ, "GOMP_SPINCOUNT": os.environ.get("GOMP_SPINCOUNT", "20000")}
    print(f"# {vs_ncnn.machine()}; {args.busy} busy processes; median of {args.runs} runs; "
          f"GOMP_SPINCOUNT={env['GOMP_SPINCOUNT']}; load {vs_ncnn.loadavg()}")  # fmt: skip
    print(f"{'threads':>7} {'runtime':>7} {'quiet ms':>9} {'busy ms':>9} {'busy/quiet':>10}  checksum")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            exe = build(Path(tmp))
        except RuntimeError as e:
            print(f"fair_share: {e}", file=sys.stderr)
            return 1
        cal = subprocess.run([str(exe), "calibrate"], capture_output=True, text=True)
        if cal.returncode != 0:
            print(f"fair_share: calibration failed ({cal.returncode}): {cal.stderr.strip()}", file=sys.stderr)
            return 1
        rounds = cal.stdout.strip()
        for t in args.threads:
            sums = set()
            for mode in ("join", "redo"):
                cmd = [str(exe), mode, str(t), str(args.busy), str(args.runs), str(args.scale), rounds]
                r = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if r.returncode != 0 or not r.stdout.strip():
                    print(
                        f"fair_share: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}",
                        file=sys.stderr,
                    )
                    return 1
                f = parse(r.stdout.strip())
                sums.add(f["checksum"])
                print(f"{t:>7} {mode:>7} {float(f['quiet']):>9.2f} {float(f['busy']):>9.2f} "
                      f"{float(f['ratio']):>9.2f}x  {f['checksum']}", flush=True)  # fmt: skip
            if len(sums) != 1:
                print(
                    f"fair_share: the runtimes' results differ at {t} threads: {sorted(sums)}",
                    file=sys.stderr,
                )
                return 1
    print(f"# load {vs_ncnn.loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
