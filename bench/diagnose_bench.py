"""Benchmark `skewjoin diagnose` on a large event log against the rate at which the machine can
merely parse the log's JSON, in one run.

    .venv-bench/bin/python bench/diagnose_bench.py [--gib 2] [--runs 3] [--bin target/release/skewjoin]

The log (bench/data/hot_join_<gib>gib.json, made once): the synthetic worked hot-key job of
tests/py/synthlogs.py, with the TaskStart/TaskEnd events of its join stage repeated (new task
ids, a new index per copy) until the file holds --gib GiB; the stage's task count is raised to
match. Measured, each the median of --runs:
- skewjoin diagnose --format json, whole process: wall time and peak RSS (GNU time's %M);
- the log read and thrown away (`cat > /dev/null`): the disk's rate;
- every line parsed by orjson in one Python process (one core) and by DuckDB's json_valid over
  read_json_objects (all cores): the rate of parsing alone.
The bench environment is .venv-bench (bench/requirements-store.txt, orjson added).
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "py"))


def make_log(path, gib):
    """The worked hot-key log with the join stage's task events repeated to `gib` GiB."""
    import synthlogs

    base = path.with_suffix(".base.json")
    synthlogs.worked_hot_key(str(base))
    lines = base.read_bytes().splitlines()
    events = [json.loads(l) for l in lines]
    join_stage = 2
    tasks = [
        (l, e) for l, e in zip(lines, events)
        if e["Event"] in ("SparkListenerTaskStart", "SparkListenerTaskEnd") and e["Stage ID"] == join_stage
    ]
    per_copy = sum(len(l) + 1 for l, _ in tasks)
    other = sum(len(l) + 1 for l in lines) - per_copy
    copies = max(1, int((gib * 2**30 - other) // per_copy))
    n_per_copy = sum(1 for _, e in tasks if e["Event"] == "SparkListenerTaskEnd")
    next_id = 10_000_000
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        for l, e in zip(lines, events):
            kind = e["Event"]
            if kind in ("SparkListenerTaskStart", "SparkListenerTaskEnd") and e["Stage ID"] == join_stage:
                continue
            if kind in ("SparkListenerStageSubmitted", "SparkListenerStageCompleted") and e["Stage Info"]["Stage ID"] == join_stage:
                e["Stage Info"]["Number of Tasks"] = n_per_copy * copies
                l = json.dumps(e, separators=(",", ":")).encode()
            out.write(l + b"\n")
            if kind == "SparkListenerStageSubmitted" and e["Stage Info"]["Stage ID"] == join_stage:
                for c in range(copies):
                    for tl, te in tasks:
                        te = dict(te)
                        info = dict(te["Task Info"])
                        info["Task ID"] = next_id + c * 1_000_000 + info["Task ID"]
                        info["Index"] = c * n_per_copy + info["Index"]
                        te["Task Info"] = info
                        out.write(json.dumps(te, separators=(",", ":")).encode() + b"\n")
    os.replace(tmp, path)
    base.unlink()
    return n_per_copy * copies


def timed(cmd, **kw):
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, **kw)
    return time.perf_counter() - t, r


def skewjoin_run(binary, log):
    el, r = timed(["/usr/bin/time", "-f", "%M", binary, "diagnose", str(log), "--format", "json"])
    if r.returncode != 0:
        sys.exit(f"skewjoin failed: {r.stderr.decode()[-2000:]}")
    rss_kib = int(r.stderr.decode().strip().splitlines()[-1])
    return el, rss_kib * 1024, json.loads(r.stdout)


PARSE_ORJSON = "import orjson,sys\nn=0\nwith open(sys.argv[1],'rb') as f:\n    for l in f:\n        orjson.loads(l); n+=1\nprint(n)"
PARSE_DUCKDB = (
    "import duckdb,sys\ncon=duckdb.connect()\n"
    "print(con.execute(\"select count(*), sum(json_valid(json)::int) from read_json_objects(?, format='newline_delimited', maximum_object_size=100000000)\", [sys.argv[1]]).fetchone())"
)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bin", default=str(ROOT / "target" / "release" / "skewjoin"))
    a = ap.parse_args()
    log = ROOT / "bench" / "data" / f"hot_join_{a.gib:g}gib.json"
    log.parent.mkdir(parents=True, exist_ok=True)
    if not log.exists():
        n = make_log(log, a.gib)
        print(f"wrote {log}: {log.stat().st_size / 2**30:.2f} GiB, {n:,} tasks in the join stage", file=sys.stderr)
    size = log.stat().st_size
    rows = {"skewjoin diagnose": [], "cat > /dev/null": [], "orjson, 1 core": [], "DuckDB json_valid": []}
    rss = []
    for _ in range(a.runs):
        el, peak, d = skewjoin_run(a.bin, log)
        rows["skewjoin diagnose"].append(el)
        rss.append(peak)
        rows["cat > /dev/null"].append(timed(["sh", "-c", f"cat '{log}' > /dev/null"])[0])
        rows["orjson, 1 core"].append(timed([sys.executable, "-c", PARSE_ORJSON, str(log)], check=True)[0])
        rows["DuckDB json_valid"].append(timed([sys.executable, "-c", PARSE_DUCKDB, str(log)], check=True)[0])
    slow = d["stages"][0]
    print(f"log: {size / 2**30:.2f} GiB, {d['app']['tasks']:,} tasks; slowest stage {slow['stage_id']}: {slow['tasks']:,} tasks; "
          f"findings: {[f['kind'] for f in d['findings']]}")
    print(f"skewjoin peak RSS: {statistics.median(rss) / 2**20:,.0f} MiB ({statistics.median(rss) / size:.2f}x the log)")
    print("| reader | median s | MiB/s | vs skewjoin |")
    print("|---|---|---|---|")
    sk = statistics.median(rows["skewjoin diagnose"])
    for name, ts in rows.items():
        m = statistics.median(ts)
        print(f"| {name} | {m:.2f} | {size / 2**20 / m:,.0f} | {m / sk:.2f}x |")


if __name__ == "__main__":
    main()
