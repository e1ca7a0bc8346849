"""The embedded engine against `--engine spark` (local mode through pyspark, the same machine)
on the 40M-row benchmark file: `keys -c title_id` and `plan` of a self-join on title_id, each
whole-process (Spark's start included), wall time, median of 3.

    .venv-bench/bin/python bench/spark_engine_bench.py [FILE] [PYTHON-WITH-PYSPARK]"""
import statistics
import subprocess
import sys

FILE = sys.argv[1] if len(sys.argv) > 1 else "bench/data/events_40000000.parquet"
PYSPARK = sys.argv[2] if len(sys.argv) > 2 else ".venv/bin/python"
BIN = "target/release/skewjoin"
SPARK = ["--engine", "spark", "--python", PYSPARK, "--master", "local[2]", "--conf", "spark.driver.memory=2g"]


def timed(cmd):
    out = []
    for _ in range(3):
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True, text=True, check=True)
        out.append(float(p.stderr.strip().splitlines()[-1].split()[0]))
    return statistics.median(out)


KEYS = [BIN, "keys", FILE, "-c", "title_id", "-q", "--format", "json"]
PLAN = [BIN, "plan", "--left", FILE, "--right", FILE, "--on", "title_id", "-q", "--format", "json"]
for name, cmd in {"keys -c title_id": KEYS, "plan (self-join on title_id)": PLAN}.items():
    e, s = timed(cmd), timed(cmd + SPARK)
    print(f"| {name} | {e:.2f} s | {s:.2f} s | {s / e:.1f}x |")
