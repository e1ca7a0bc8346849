"""The window/GROUP BY planner on the 40M-row benchmark file, beside a plain GROUP BY of the same
key in DuckDB and Polars (what a user would run to look at the key by hand), in one run:
wall time and peak RSS of each, median of 3. `plan --partition-by title_id --shape group-by`
finds the hot titles and, because they are hot, counts the records each of Spark's map tasks
sends (the second pass); `--partition-by user_id` finds nothing hot and skips it.

    .venv-bench/bin/python bench/window_bench.py [FILE]"""
import json
import statistics
import subprocess
import sys

FILE = sys.argv[1] if len(sys.argv) > 1 else "bench/data/events_40000000.parquet"
BIN = "target/release/skewjoin"
PY = sys.executable


def timed(cmd):
    out = []
    for _ in range(3):
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True, text=True, check=True)
        secs, kb = p.stderr.strip().splitlines()[-1].split()
        out.append((float(secs), int(kb)))
    return statistics.median(s for s, _ in out), max(k for _, k in out) / 1024


RUNS = {
    "skewjoin plan --partition-by title_id --shape group-by (hot: records pass)":
        [BIN, "plan", "--left", FILE, "--partition-by", "title_id", "--shape", "group-by", "-q", "--format", "json"],
    "skewjoin plan --partition-by user_id --shape group-by (nothing hot)":
        [BIN, "plan", "--left", FILE, "--partition-by", "user_id", "--shape", "group-by", "-q", "--format", "json"],
    "DuckDB: SELECT title_id, count(*) ... GROUP BY title_id":
        [PY, "-c", f"import duckdb; duckdb.sql(\"SELECT title_id, count(*) FROM read_parquet('{FILE}') GROUP BY title_id\").fetchall()"],
    "Polars: scan_parquet().group_by('title_id').len()":
        [PY, "-c", f"import polars as pl; pl.scan_parquet('{FILE}').group_by('title_id').len().collect()"],
}

for name, cmd in RUNS.items():
    s, mb = timed(cmd)
    print(f"| {name} | {s:.2f} s | {mb:.0f} MiB |")
print(json.dumps({"file": FILE}))
