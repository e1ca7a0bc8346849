"""Fit the cost model's rates (src/plan/cost.rs) to the skew benchmark's own queries: run each
shape of bench/skew_bench.py as written and as rewritten for 64 cores, on Spark in local mode
with a 64-core cluster's parallelism and AQE on (as `verify --cores 64` runs them), read every
task's run time, input rows and bytes and shuffle records from Spark's REST API, and fit by
least squares

    scan task seconds = a + rows read x scan_row_s + compressed bytes read x scan_byte_s
    join task seconds = task_s + records read x join_row_s

(The scan's intercept `a`, 0.04 s, is left out of the model: its scan costs the stage's rows
and bytes spread over the cores, and a stage's start, `stage_s`.)

A scan's cost follows what its rows weigh: the benchmark's full outer join reads 32-byte
random strings, three times the cost per row of the calibration's short keys.

Usage: .venv/bin/python bench/cost_fit.py tasks [LETTERS]   (runs the queries: target/cost-fit.json)
       .venv/bin/python bench/cost_fit.py fit                (the fit from that file)
Needs the benchmark's data (bench/skew_bench.py gen) and $SKEWJOIN_BIN or target/release/skewjoin.
"""
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import skew_bench  # noqa: E402

OUT = skew_bench.ROOT / "target" / "cost-fit.json"


def session(cores):
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "true").config("spark.ui.port", "0")
             .config("spark.ui.showConsoleProgress", "false").config("spark.default.parallelism", str(cores))
             .config("spark.driver.memory", "8g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def tasks_of(spark, sql):
    """Each task of the query's stages: its stage, run time and what it read and wrote."""
    sc = spark.sparkContext
    group = f"fit-{time.time_ns()}"
    sc.setJobGroup(group, group)
    t0 = time.time()
    spark.sql(sql).write.format("noop").mode("overwrite").save()
    wall = time.time() - t0
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"
    stages = set()
    for j in sc.statusTracker().getJobIdsForGroup(group):
        stages.update(sc.statusTracker().getJobInfo(j).stageIds)
    time.sleep(1)
    out = []
    for sid in sorted(stages):
        for a in json.load(urllib.request.urlopen(f"{base}/stages/{sid}")):
            if a["status"] != "COMPLETE":
                continue
            for t in json.load(urllib.request.urlopen(f"{base}/stages/{sid}/{a['attemptId']}/taskList?length=100000")):
                m = t["taskMetrics"]
                out.append({"stage": sid, "seconds": m["executorRunTime"] / 1000,
                            "input_rows": m["inputMetrics"]["recordsRead"],
                            "input_bytes": m["inputMetrics"]["bytesRead"],
                            "shuffle_records": m["shuffleReadMetrics"]["recordsRead"],
                            "shuffle_write_bytes": m["shuffleWriteMetrics"]["bytesWritten"],
                            "shuffle_write_records": m["shuffleWriteMetrics"]["recordsWritten"]})
    return wall, out


def rewritten(sql_file, targs, cores):
    p = subprocess.run([skew_bench.binary(), "rewrite", str(sql_file), *targs, "--cores", str(cores), "-q"],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"rewrite failed: {p.stderr.strip()}")
    return p.stdout


def collect(only):
    spark = session(64)
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    for letter, name, tables, sql in skew_bench.SHAPES:
        if only and letter not in only:
            continue
        for t in tables:
            spark.read.parquet(str(skew_bench.DATA / t)).createOrReplaceTempView(t)
        q = skew_bench.DATA / f"{name}.sql"
        q.write_text(sql + "\n")
        targs = [x for t in tables for x in ("--table", f"{t}={skew_bench.DATA / t}")]
        after = rewritten(q, targs, 64)
        r = {}
        for label, text in (("before", sql), ("after", after)):
            wall, tasks = tasks_of(spark, text)
            r[label] = {"wall_s": wall, "tasks": tasks}
            print(f"({letter}) {name} {label}: {wall:.1f} s, {len(tasks)} tasks", flush=True)
        results[letter] = r
        OUT.write_text(json.dumps(results))


def lsq(rows):
    """Least squares of the last column on the others, with an intercept; the coefficients
    (intercept first) and the mean absolute error."""
    a = np.array(rows, dtype=float)
    x = np.column_stack([np.ones(len(a)), a[:, :-1]])
    coef, *_ = np.linalg.lstsq(x, a[:, -1], rcond=None)
    return coef, float(np.mean(np.abs(x @ coef - a[:, -1])))


def fit():
    res = json.loads(OUT.read_text())
    scans, joins = [], []
    for r in res.values():
        for run in r.values():
            for t in run["tasks"]:
                if t["input_rows"] > 0 and t["shuffle_records"] == 0:
                    scans.append((t["input_rows"], t["input_bytes"], t["seconds"]))
                elif t["shuffle_records"] > 0 and t["input_rows"] == 0:
                    joins.append((t["shuffle_records"], t["seconds"]))
    (s0, srow, sbyte), serr = lsq(scans)
    (j0, jrow), jerr = lsq(joins)
    print(f"scan tasks ({len(scans)}): task_s {s0:.4f} s, scan_row_s {srow:.3e}, scan_byte_s {sbyte:.3e}, "
          f"mean abs error {serr:.3f} s (mean task {np.mean([s[-1] for s in scans]):.3f} s)")
    print(f"join tasks ({len(joins)}): task_s {j0:.4f} s, join_row_s {jrow:.3e}, "
          f"mean abs error {jerr:.3f} s (mean task {np.mean([s[-1] for s in joins]):.3f} s)")
    for letter, r in res.items():
        line = []
        for label, run in r.items():
            line.append(f"{label} {run['wall_s']:.1f} s wall, {sum(t['seconds'] for t in run['tasks']):.1f} s tasks")
        print(f"({letter}) " + "; ".join(line))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "tasks":
        collect(set(sys.argv[2]) if len(sys.argv) > 2 else None)
    elif len(sys.argv) > 1 and sys.argv[1] == "fit":
        fit()
    else:
        raise SystemExit(__doc__)
