"""`rewrite` of TPC-DS queries at scale factor 1 (the data from tests/py/tpcds.py), with every
table found by `--tables`: the 10-join q72 at Spark's default 10 MB broadcast threshold and at
1 KB (which has every join of the chain planned, counted through the joins before it), and
all 99 queries at 10 MB one after another. Beside them, in the same run, DuckDB and Polars
counting the rows per value of q72's eleven join key columns (a GROUP BY each), the reading
a user would do by hand to look for hot keys. Wall time and peak RSS, median of 3.

    .venv-bench/bin/python bench/tpcds_rewrite_bench.py [TPCDS_FOLDER]   (default target/tpcds-sf1)"""
import pathlib
import statistics
import subprocess
import sys
import time

TPC = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/tpcds-sf1")
BIN = "target/release/skewjoin"
PY = sys.executable
Q72 = TPC / "queries" / "q72.sql"
KEYS = {  # q72's join keys, per table
    "catalog_sales": ["cs_item_sk", "cs_bill_cdemo_sk", "cs_bill_hdemo_sk", "cs_sold_date_sk", "cs_ship_date_sk", "cs_promo_sk"],
    "inventory": ["inv_item_sk", "inv_warehouse_sk", "inv_date_sk"],
    "catalog_returns": ["cr_item_sk"],
}


def timed(cmd):
    out = []
    for _ in range(3):
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True, text=True, check=True)
        secs, kb = p.stderr.strip().splitlines()[-1].split()
        out.append((float(secs), int(kb)))
    return statistics.median(s for s, _ in out), max(k for _, k in out) / 1024


def all_99():
    out = []
    for _ in range(3):
        t = time.time()
        for q in sorted((TPC / "queries").glob("q*.sql")):
            subprocess.run([BIN, "rewrite", q, "--tables", TPC / "tables", "--format", "json", "-q", "-o", "/dev/null"], check=True)
        out.append(time.time() - t)
    return statistics.median(out)


def group_bys(engine):
    lines = []
    for t, cols in KEYS.items():
        f = TPC / "tables" / f"{t}.parquet"
        for c in cols:
            if engine == "duckdb":
                lines.append(f"duckdb.sql(\"SELECT {c}, count(*) FROM read_parquet('{f}') GROUP BY {c}\").fetchall()")
            else:
                lines.append(f"pl.scan_parquet('{f}').group_by('{c}').len().collect()")
    head = "import duckdb" if engine == "duckdb" else "import polars as pl"
    return [PY, "-c", "\n".join([head, *lines])]


RUNS = {
    "skewjoin rewrite q72 --tables (10 MB threshold)": [BIN, "rewrite", Q72, "--tables", TPC / "tables", "--format", "json", "-q", "-o", "/dev/null"],
    "skewjoin rewrite q72 --tables --broadcast-threshold 1KB (every join planned)":
        [BIN, "rewrite", Q72, "--tables", TPC / "tables", "--format", "json", "-q", "--broadcast-threshold", "1KB", "-o", "/dev/null"],
    "DuckDB: GROUP BY each of q72's 10 fact-side key columns": group_bys("duckdb"),
    "Polars: group_by().len() of each of them": group_bys("polars"),
}

for name, cmd in RUNS.items():
    s, mb = timed([str(c) for c in cmd])
    print(f"| {name} | {s:.2f} s | {mb:.0f} MiB |")
print(f"| skewjoin rewrite of all 99 queries, one process each (10 MB threshold) | {all_99():.1f} s | - |")
