"""`keys --sample 1%` against the exact count, on Spark and embedded, on one table of 100M rows.

    .venv/bin/python bench/spark_sample_bench.py [--rows 100000000] [--files 400] [--runs 3]
                                                 [--sample 1%] [--bin target/release/skewjoin]

Writes bench/data/spark_sample_<rows>/ once from a seed (numpy, pyarrow): `files` Parquet files
of equal rows, a key `k` (int64) whose values 1, 2 and 3 hold 10%, 5% and 2% of the rows, 1%
NULL, the rest uniform over 5M values, and a payload `v` (float64). Then starts the Spark
standalone cluster of the tests (tests/py/cluster.py: a master and two workers of 1 core and
2 GB on 127.0.0.1) and times, alternating in each round, whole processes:

- `keys TABLE -c k --top 10 --engine spark --master spark://...` (exact, on the cluster);
- the same with `--sample P --seed ROUND` (Spark draws whole files);
- the embedded engine, exact and with the same sample, on this machine.

It prints a Markdown table: median and range of the wall seconds and the Spark applications'
own time (`spark.spark_ms`); and for each sampled run the error of the top 10 shares against the
exact ones: the largest absolute error, and how many were within their stated 95% interval."""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "py"))


def generate(folder, rows, files):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    folder.mkdir(parents=True)
    rng = np.random.default_rng(53)
    per = rows // files
    for i in range(files):
        u = rng.random(per)
        k = np.where(u < 0.10, 1, np.where(u < 0.15, 2, np.where(u < 0.17, 3, rng.integers(10, 5_000_010, per))))
        mask = rng.random(per) < 0.01
        t = pa.table({"k": pa.array(k, mask=mask), "v": rng.random(per)})
        pq.write_table(t, folder / f"part-{i:05d}.parquet", row_group_size=per)


def run(cmd, env=None):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr[-1000:]}")
    j = json.loads(p.stdout)
    return wall, j


def errors(sampled, exact):
    """(largest |share - exact share|, within their interval, compared) over the top values."""
    truth = {json.dumps(e["value"]): e["share"] for e in exact["columns"][0]["top"]}
    worst, inside, n = 0.0, 0, 0
    for e in sampled["columns"][0]["top"]:
        t = truth.get(json.dumps(e["value"]))
        if t is None:
            continue
        d = abs(e["share"] - t)
        worst, n = max(worst, d), n + 1
        inside += d <= e["share_error"]
    return worst, inside, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--files", type=int, default=400)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sample", default="1%")
    ap.add_argument("--bin", default=str(ROOT / "target" / "release" / "skewjoin"))
    a = ap.parse_args()
    table = ROOT / "bench" / "data" / f"spark_sample_{a.rows}"
    if not table.exists():
        t = time.perf_counter()
        generate(table, a.rows, a.files)
        print(f"wrote {table} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    size = sum(p.stat().st_size for p in table.iterdir()) / 2**20
    from cluster import Cluster
    c = Cluster(ROOT / "target" / "bench-cluster").start()
    try:
        spark = ["--engine", "spark", "--python", sys.executable, "--master", c.master_url]
        base = [a.bin, "keys", str(table), "-c", "k", "--top", "10", "--format", "json", "-q"]
        tools = {"spark exact": base + spark, "spark sample": base + spark + ["--sample", a.sample],
                 "embedded exact": base, "embedded sample": base + ["--sample", a.sample]}
        res = {t: [] for t in tools}
        exact = None
        for r in range(a.runs):
            for name, cmd in tools.items():
                if "sample" in name:
                    cmd = cmd + ["--seed", str(r + 1)]
                wall, j = run(cmd, c.env())
                res[name].append((wall, j))
                exact = exact or (j if name == "embedded exact" else None)
                print(f"round {r + 1} {name}: {wall:.1f} s", file=sys.stderr)
        spark_exact = res["spark exact"][0][1]
        assert spark_exact["columns"][0]["top"] == exact["columns"][0]["top"] or \
            [(e["value"], e["count"]) for e in spark_exact["columns"][0]["top"]] == \
            [(e["value"], e["count"]) for e in exact["columns"][0]["top"]], "Spark's exact top differs from the embedded engine's"
        print(f"Table: {table.name}, {a.rows:,} rows in {a.files} files, {size:.0f} MB; cluster: Spark {c.version}, "
              f"2 workers x 1 core x 2 GB on 127.0.0.1; {a.runs} alternating rounds, whole processes.\n")
        print("| engine | count | seconds (median, range) | in Spark, s | read | top-10 share error: largest | within 95% interval |")
        print("|---|---|---:|---:|---|---:|---:|")
        for name, runs in res.items():
            walls = [w for w, _ in runs]
            spark_s = [j["spark"]["spark_ms"] / 1000 for _, j in runs if "spark" in j]
            col = runs[0][1]["columns"][0]
            read = col.get("sample")
            how = "all rows" if not read else f"{read['rows_read']:,} rows ({read['fraction']:.1%}), " + (
                f"{read['files_read']} of {read['files_total']} files" if read.get("files_read") else read["method"])
            err = [errors(j, exact) for _, j in runs] if read else []
            worst = f"{max(e[0] for e in err):.5f}" if err else "-"
            inside = f"{sum(e[1] for e in err)} of {sum(e[2] for e in err)}" if err else "-"
            engine, count = name.split()
            print(f"| {engine} | {count} | {statistics.median(walls):.1f} ({min(walls):.1f}-{max(walls):.1f}) | "
                  f"{statistics.median(spark_s):.1f} |" if spark_s else
                  f"| {engine} | {count} | {statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f}) | - |", end="")
            print(f" {how} | {worst} | {inside} |")
    finally:
        c.stop()


if __name__ == "__main__":
    main()
