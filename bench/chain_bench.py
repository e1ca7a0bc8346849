"""The chain benchmark: generated 4-7-join analytic queries (comma joins, filters on the
dimensions, a GROUP BY) over a star schema with NULL-heavy and Zipf-hot foreign keys, large
enough that a task takes seconds on a 2-core machine. Each query goes through
`skewjoin rewrite` with the job's settings; every rewritten query is run with the original on
Spark in local mode (AQE on, and again off), median of 3: the rows must be identical, the
rewrite no slower than 1.1x, and its SQL within the bound.

Usage: .venv/bin/python bench/chain_bench.py [--rows N] [--queries N] [--seed S] [--repeat N]
                                            [--broadcast-off] [--forced]
(the binary: $SKEWJOIN_BIN, else target/release/skewjoin)
Writes target/chain-bench.json and prints a table for BENCHMARKS.md.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python" / "skewjoin"))
import _spark_driver as runner  # noqa: E402  (verify's REST API readers: the tasks of a run)
DIMS = ["customer", "product", "store", "promo", "ship", "region", "channel"]


def zipf_keys(gen, n, distinct, null_share, hot_share):
    """n foreign keys: null_share NULL, hot_share the key 1, the rest Zipf-like over distinct."""
    r = gen.random(n)
    keys = np.floor(distinct ** gen.random(n)).astype(np.int64)
    keys[(r >= null_share) & (r < null_share + hot_share)] = 1
    return pa.array(keys, mask=r < null_share)


def make_data(d, rows, rng):
    """The star: `sales` in 4 files (its map tasks), 7 dimensions of 5 to 50,000 rows. Numpy's
    generator, seeded from `rng`: the same data for the same seed."""
    gen = np.random.default_rng(rng.randrange(2**32))
    d.mkdir(parents=True, exist_ok=True)
    facts = {"amount": pa.array(gen.random(rows) * 100), "qty": pa.array(gen.integers(1, 9, rows))}
    for i, dim in enumerate(DIMS):
        distinct = [50_000, 20_000, 500, 200, 50, 20, 5][i]
        null_share, hot_share = [(0.3, 0.05), (0.02, 0.25), (0.0, 0.4), (0.5, 0.0), (0.0, 0.1), (0.1, 0.0), (0.0, 0.0)][i]
        facts[f"{dim}_id"] = zipf_keys(gen, rows, distinct, null_share, hot_share)
        pq.write_table(pa.table({f"{dim}_id": pa.array(range(1, distinct + 1), pa.int64()),
                                 f"{dim}_name": [f"{dim} {k}" for k in range(1, distinct + 1)],
                                 f"{dim}_grp": [f"g{k % 7}" for k in range(1, distinct + 1)]}),
                       d / f"{dim}.parquet")
    t = pa.table(facts)
    (d / "sales").mkdir(exist_ok=True)
    for i in range(4):
        a, b = i * rows // 4, (i + 1) * rows // 4
        pq.write_table(t.slice(a, b - a), d / "sales" / f"part-{i}.parquet")


def make_query(rng):
    k = rng.randint(4, 7)
    dims = rng.sample(DIMS, k)
    group = rng.choice(dims)
    where = [f"s.{d}_id = {d}.{d}_id" for d in dims]
    for d in rng.sample(dims, rng.randint(1, 2)):
        where.append(f"{d}.{d}_grp <> 'g{rng.randrange(7)}'")
    return (f"SELECT {group}.{group}_grp, count(*) AS n, sum(s.amount) AS amount\n"
            f"FROM sales s, {', '.join(dims)}\nWHERE {' AND '.join(where)}\nGROUP BY {group}.{group}_grp")


def run_spark(spark, sql, repeat, label):
    """The query `repeat` times: the median wall time, the largest shuffle-read task in records
    and the task time summed (of the median run, from Spark's REST API), and the rows."""
    sc = spark.sparkContext
    runs, rows = [], None
    for i in range(repeat):
        group = f"chain-{label}-{i}-{time.time()}"
        sc.setJobGroup(group, group)
        t0 = time.time()
        rows = spark.sql(sql).collect()
        wall = time.time() - t0
        sc.setLocalProperty("spark.jobGroup.id", None)
        stages = runner.stages_of(sc, group)
        runs.append((wall, max((s["max_task_records"] for s in stages), default=0),
                     sum(s["task_ms"] for s in stages) / 1000))
    wall, largest, task_s = sorted(runs)[len(runs) // 2]
    counts = Counter(tuple(round(v, 6) if isinstance(v, float) else v for v in r) for r in rows)
    return {"seconds": round(wall, 2), "largest_task": largest, "task_seconds": round(task_s, 1),
            "runs": [round(r[0], 2) for r in runs]}, counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--queries", type=int, default=8)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--broadcast-off", action="store_true", help="spark.sql.autoBroadcastJoinThreshold=-1: every join shuffles")
    ap.add_argument("--forced", action="store_true", help="also run the rewrite of every join it can rewrite (--min-gain off)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    d = ROOT / "target" / f"chain-bench-{a.rows}-np"
    if not (d / "sales").exists():
        make_data(d, a.rows, rng)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.driver.memory", "6g").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.ui.port", "0")
             .config("spark.ui.retainedTasks", "10000000")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    extra_conf = ["--conf", "spark.sql.autoBroadcastJoinThreshold=-1"] if a.broadcast_off else []
    if a.broadcast_off:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    spark.read.parquet(str(d / "sales")).createOrReplaceTempView("sales")
    for dim in DIMS:
        spark.read.parquet(str(d / f"{dim}.parquet")).createOrReplaceTempView(dim)
    binary = Path(os.environ.get("SKEWJOIN_BIN") or ROOT / "target" / "release" / "skewjoin")
    results = []
    tmp = Path(tempfile.mkdtemp())
    for i in range(a.queries):
        sql = make_query(rng)
        q = tmp / f"q{i}.sql"
        q.write_text(sql)
        for aqe in ["true", "false"]:
            spark.conf.set("spark.sql.adaptive.enabled", aqe)
            p = subprocess.run([str(binary), "rewrite", str(q), "--tables", str(d), "--cores", "2", "--format", "json", "-q",
                                "--conf", f"spark.sql.adaptive.enabled={aqe}", *extra_conf], capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                results.append({"query": i, "aqe": aqe, "error": p.stderr.strip()})
                continue
            r = json.loads(p.stdout)
            decisions = [c["decision"]["code"] for c in r["changes"]] + [u["decision"]["code"] for u in r["unchanged_joins"] if u.get("decision")]
            entry = {"query": i, "joins": len(r["joins"]), "aqe": aqe, "rewritten": len(r["changes"]), "decisions": decisions,
                     "sql_bytes": [len(sql), len(r["sql"])]}
            entry["before"], c0 = run_spark(spark, sql, a.repeat, f"{i}-{aqe}-before")
            if r["changes"]:
                entry["after"], c1 = run_spark(spark, r["sql"], a.repeat, f"{i}-{aqe}-after")
                entry["identical"] = c0 == c1
            if a.forced:
                # What the decisions avoided: every join the tool can rewrite, rewritten.
                p = subprocess.run([str(binary), "rewrite", str(q), "--tables", str(d), "--cores", "2", "--format", "json", "-q",
                                    "--min-gain", "off", "--conf", f"spark.sql.adaptive.enabled={aqe}", *extra_conf],
                                   capture_output=True, text=True, timeout=600)
                f = json.loads(p.stdout)
                entry["forced"] = {"rewritten": len(f["changes"]), "sql_bytes": len(f["sql"])}
                if f["changes"]:
                    forced, c2 = run_spark(spark, f["sql"], a.repeat, f"{i}-{aqe}-forced")
                    entry["forced"].update(forced, identical=c0 == c2)
            results.append(entry)
            print(json.dumps(entry), flush=True)
    (ROOT / "target" / "chain-bench.json").write_text(json.dumps(results, indent=1))
    print(f"spark {spark.version}, {a.rows:,} fact rows")


if __name__ == "__main__":
    main()
