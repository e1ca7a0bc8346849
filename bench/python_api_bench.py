"""What the Python API adds to the command: `import skewjoin`, and `skewjoin.keys` against the
same `skewjoin keys --format json` run as a process, on the samples.

    python bench/python_api_bench.py [--runs 30] [--bin target/release/skewjoin]

Runs the package from python/ (SKEWJOIN_BIN=--bin), so it measures this tree's layer over the
given binary. Each figure is the median of --runs runs, alternating the two sides of each pair:
- import: `python -c "import skewjoin"` against `python -c "pass"` (a fresh interpreter each);
- keys: one `skewjoin.keys(...)` call in a warm interpreter (process start, --also-text file,
  JSON parse, typed report) against `subprocess.run` of the same command with --format json.
Prints a Markdown table.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def wall(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--bin", default=str(ROOT / "target" / "release" / "skewjoin"))
    a = ap.parse_args()
    os.environ["SKEWJOIN_BIN"] = str(pathlib.Path(a.bin).resolve())
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    sys.path.insert(0, str(ROOT / "python"))
    import skewjoin

    events = str(ROOT / "samples" / "events.parquet")
    cmd = [a.bin, "keys", events, "-c", "title_id", "--top", "20", "--format", "json", "-q"]
    pairs = {
        "import skewjoin (fresh interpreter)": (
            lambda: subprocess.run([sys.executable, "-c", "import skewjoin"], env=env, check=True),
            lambda: subprocess.run([sys.executable, "-c", "pass"], env=env, check=True),
        ),
        "keys title_id on events (200,000 rows)": (
            lambda: skewjoin.keys(events, "title_id", top=20),
            lambda: subprocess.run(cmd, capture_output=True, check=True),
        ),
    }
    print("| what | API / with import (ms) | CLI / bare python (ms) | added (ms) |")
    print("|---|---|---|---|")
    for name, (api, cli) in pairs.items():
        api(), cli()
        x, y = [], []
        for _ in range(a.runs):
            x.append(wall(api))
            y.append(wall(cli))
        mx, my = statistics.median(x) * 1000, statistics.median(y) * 1000
        print(f"| {name} | {mx:.1f} | {my:.1f} | {mx - my:.1f} |")


if __name__ == "__main__":
    main()
