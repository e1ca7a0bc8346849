"""Measure the cost model's rates (src/plan/cost.rs) on Spark in local mode: run sort-merge joins
of several sizes with AQE off (one task per shuffle partition), read every task's run time and
records from Spark's REST API, and fit, by least squares,

    join task seconds = task_s + records read * join_row_s      (the join stage's tasks)
    scan task seconds = task_s + rows read * scan_row_s          (the map stages' tasks)

Usage: .venv/bin/python bench/cost_calibration.py [ROWS ...]   (default 200000 1000000 4000000)
Prints the rates and the fit's error; docs/cost-model.md records a run.
"""
import random
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cost_fit import tasks_of  # noqa: E402  (each task's time, rows and bytes, from the REST API)


def fit(points):
    """Least squares of y = a + b x over (x, y); the mean absolute error."""
    n = len(points)
    sx = sum(p[0] for p in points)
    sy = sum(p[1] for p in points)
    sxx = sum(p[0] * p[0] for p in points)
    sxy = sum(p[0] * p[1] for p in points)
    b = (n * sxy - sx * sy) / max(n * sxx - sx * sx, 1e-12)
    a = (sy - b * sx) / n
    err = sum(abs(a + b * x - y) for x, y in points) / n
    return a, b, err


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [200_000, 1_000_000, 4_000_000]
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "true").config("spark.ui.port", "0")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.adaptive.enabled", "false")
             .config("spark.sql.autoBroadcastJoinThreshold", "-1").config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    d = Path(tempfile.mkdtemp())
    rng = random.Random(3)
    joins, scans = [], []
    for n in sizes:
        for parts, hot in [(16, 0.0), (16, 0.3), (64, 0.1)]:
            spark.conf.set("spark.sql.shuffle.partitions", str(parts))
            k = ["hot" if rng.random() < hot else f"k{rng.randrange(50_000):05d}" for _ in range(n)]
            f = d / f"f{n}_{parts}_{hot}.parquet"
            pq.write_table(pa.table({"k": k, "v": list(range(n))}), f)
            dim = d / "dim.parquet"
            if not dim.exists():
                pq.write_table(pa.table({"k": [f"k{i:05d}" for i in range(50_000)] + ["hot"], "name": [f"n{i}" for i in range(50_001)]}), dim)
            spark.read.parquet(str(f)).createOrReplaceTempView("f")
            spark.read.parquet(str(dim)).createOrReplaceTempView("d")
            tasks_of(spark, "SELECT f.k, f.v, d.name FROM f JOIN d ON f.k = d.k")  # warm up
            wall, tasks = tasks_of(spark, "SELECT f.k, f.v, d.name FROM f JOIN d ON f.k = d.k")
            joins += [(t["shuffle_records"], t["seconds"]) for t in tasks if t["shuffle_records"] > 0]
            scans += [(t["input_rows"], t["seconds"]) for t in tasks if t["input_rows"] > 0]
            print(f"rows {n:>9,} partitions {parts:>3} hot {hot:.1f}: {wall:.2f} s wall, largest join task "
                  f"{max(t['shuffle_records'] for t in tasks):,} records in {max(t['seconds'] for t in tasks if t['shuffle_records'] > 0):.2f} s")
    a, b, e = fit(joins)
    print(f"join tasks ({len(joins)}): task_s {a:.4f} s, join_row_s {b:.3e} s per record, mean abs error {e:.3f} s")
    a2, b2, e2 = fit(scans)
    print(f"scan tasks ({len(scans)}): task_s {a2:.4f} s, scan_row_s {b2:.3e} s per row, mean abs error {e2:.3f} s")
    print(f"spark {spark.version}")


if __name__ == "__main__":
    main()
