"""The skew benchmark (issue 51): the shapes where skew costs real time and Spark's AQE leaves
the hot key to one task, and two controls, at Spark's default sizes (200 shuffle partitions,
10 MB broadcast threshold, AQE on) over tables generated from a seed, large enough that the hot
task runs for seconds to tens of seconds on this 2-core machine.

  (a) full_outer       a full outer join with hot NULL keys on both sides and a hot '' on one
                       (AQE never splits a full outer join)
  (b) left_hot_right   a left join whose hot key is on the right side, matching many rows (AQE
                       does not split the side an outer join does not keep)
  (c) under_threshold  a hot partition under AQE's 256 MB skew threshold but ~35x the median
  (d) group_by_key     a join followed by a GROUP BY on the join key (AQE drops the split rather
                       than add a shuffle)
  (e) window           a window over a hot partition key
  (f) chain            a chain of 3 joins with hot keys in two of them (the dimensions, of 2M
                       and 4M rows, over the broadcast threshold)
  (g) aqe_splits       control: an inner join whose hot partition AQE splits itself (~500 MB,
                       over 256 MB)
  (h) uniform          control: uniform keys

For each shape: the decision at 2 and at 64 cores (`skewjoin rewrite --cores N`, with its
code), then `skewjoin verify --engine spark` with the cluster's parallelism (--cores 64: the
stages have a 64-core cluster's tasks): the rows compared, the median wall time here of 3 timed
runs, the task time summed, Spark's planning time, and the time replayed on 64 cores from the
tasks measured; then with --cores 200 (a warm-up and one timed run) for the time replayed on
200 cores; and, where the
2-core decision rewrites, verify at 2 cores (the rewrite must not be slower here than 1.1x the
original plus the noise).

Usage: .venv/bin/python bench/skew_bench.py gen [--rows 20000000] [--seed 7]
       .venv/bin/python bench/skew_bench.py run [--only a,c] [--runs 4] [--skip-200 | --only-200]
       .venv/bin/python bench/skew_bench.py table        (the Markdown table of the last run)
Data in target/skew-bench/ (about 2 GB); results in target/skew-bench.json. The binary:
$SKEWJOIN_BIN, else target/release/skewjoin.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "target" / "skew-bench"
OUT = ROOT / "target" / "skew-bench.json"
# Spark in local mode holds the whole shuffle of 20M rows: the driver's heap.
CONF = ["--conf", "spark.driver.memory=8g"]


def write(name, columns, files=64):
    """A table of `files` Parquet files (Spark's map tasks follow its files and 128 MB splits).
    A fact table has 64: a cluster's scan runs in many short tasks, and the hot task is what
    is left long (with 8 files a 64-core cluster waits on its 8 scan tasks as long as on it)."""
    t = pa.table(columns)
    d = DATA / name
    d.mkdir(parents=True, exist_ok=True)
    n = t.num_rows
    for i in range(files):
        a, b = i * n // files, (i + 1) * n // files
        pq.write_table(t.slice(a, b - a), d / f"part-{i}.parquet")


def strings(gen, codes, prefix, mask=None):
    """String keys `prefix<code>` as a dictionary-encoded column (Spark reads them as strings)."""
    distinct, idx = np.unique(codes, return_inverse=True)
    dictionary = pa.array([f"{prefix}{c}" if c >= 0 else "" for c in distinct])
    return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32), mask=mask), dictionary)


def hot(gen, n, values, shares, rest):
    """n int64 keys: each of `values` with its share, the rest uniform over 1..rest."""
    keys = gen.integers(1, rest + 1, n, dtype=np.int64)
    r = gen.random(n)
    lo = 0.0
    for v, s in zip(values, shares):
        keys[(r >= lo) & (r < lo + s)] = v
        lo += s
    return keys


def gen(rows, seed):
    g = np.random.default_rng(seed)
    DATA.mkdir(parents=True, exist_ok=True)
    # Amounts in cents and weights as integers: their sums are exact in any order, so that the
    # rewrite's rows compare equal to the original's (sums of doubles differ in their last bits).
    money = lambda n: pa.array(g.integers(0, 10_000, n))  # noqa: E731
    weight = lambda n: pa.array(g.integers(0, 1 << 30, n))  # noqa: E731
    # (a) NULL on both sides (20% and 30%), '' on the left (10%); the rest over 2M customers.
    r = g.random(rows)
    codes = np.where(r < 0.3, -1, g.integers(1, 2_000_001, rows))
    write("fo_left", {"cust": strings(g, codes, "c", mask=r < 0.2), "region": pa.array(g.integers(0, 50, rows)),
                      "amount": money(rows)})
    m = rows // 5
    write("fo_right", {"cust": strings(g, g.integers(1, 2_000_001, m), "c", mask=g.random(m) < 0.3),
                       "amount": money(m)}, files=4)
    # (b) session 0: 4 events on the left, 2.5M sessions rows on the right (10M joined rows).
    left = g.integers(1, 5_000_001, rows, dtype=np.int64)
    left[g.choice(rows, 4, replace=False)] = 0
    write("lh_left", {"session": pa.array(left), "kind": pa.array(g.integers(0, 20, rows))})
    m = rows // 4
    right = g.integers(1, 5_000_001, m, dtype=np.int64)
    right[: rows // 8] = 0
    g.shuffle(right)
    write("lh_right", {"session": pa.array(right), "dur": money(m)}, files=4)
    # (c) ad 7 has 15% of the clicks (about 60 MB of shuffle, under 256 MB).
    # The dimensions (here and below) are over Spark's 10 MB broadcast threshold as it
    # estimates them (their files' size for the columns read): keys in no order and a weight
    # of random integers, which no encoding shrinks.
    write("ut_left", {"ad": pa.array(hot(g, rows, [7], [0.15], 5_000_000)), "cost": money(rows)})
    ads = 5_000_000
    write("ut_right", {"ad": pa.array(g.permutation(np.arange(1, ads + 1, dtype=np.int64))),
                       "grp": pa.array(g.integers(0, 40, ads)), "w": weight(ads)}, files=2)
    # (d) item 3 has 40% of the sales (the query reads the key only).
    payload = pa.array([f"p{i:023d}" for i in range(100_000)])
    write("gk_left", {"item": pa.array(hot(g, rows, [3], [0.4], 4_000_000)),
                      "payload": pa.DictionaryArray.from_arrays(pa.array(g.integers(0, 100_000, rows).astype(np.int32)), payload)})
    items = 4_000_000
    write("gk_right", {"item": pa.array(g.permutation(np.arange(1, items + 1, dtype=np.int64))),
                       "cat": pa.array(g.integers(0, 30, items)), "w": weight(items)}, files=2)
    # (e) user 11 has 30% of the events.
    write("wd", {"user": pa.array(hot(g, rows, [11], [0.3], 2_000_000)), "region": pa.array(g.integers(0, 50, rows)),
                 "amount": money(rows)})
    # (f) the fact's a: 20% value 5; b: 15% value 9; c uniform; three dimensions of 4M, 4M, 2M.
    write("ch_fact", {"a": pa.array(hot(g, rows, [5], [0.2], 4_000_000)), "b": pa.array(hot(g, rows, [9], [0.15], 4_000_000)),
                      "c": pa.array(g.integers(1, 2_000_001, rows)), "amount": money(rows)})
    for name, n in (("ch_a", 4_000_000), ("ch_b", 4_000_000), ("ch_c", 2_000_000)):
        k = name[-1]
        write(name, {k: pa.array(g.permutation(np.arange(1, n + 1, dtype=np.int64))), f"{k}grp": pa.array(g.integers(0, 10, n)),
                     f"{k}w": weight(n)}, files=2)
    gen_aqe_splits(rows, seed)
    # (h) uniform keys.
    write("un_left", {"k": pa.array(g.integers(1, 5_000_001, rows, dtype=np.int64)), "amount": money(rows)})
    n = 5_000_000
    write("un_right", {"k": pa.array(np.arange(1, n + 1, dtype=np.int64)), "grp": pa.array(g.integers(0, 40, n))}, files=4)


def gen_aqe_splits(rows, seed):
    """(g) item 3 has 40% of the sales, each with a 40-character payload of random letters that
    the shuffle's LZ4 cannot shrink: its partition is about 500 MB, over AQE's 256 MB, and
    AQE splits it. Its own generator, so that it can be written alone."""
    g = np.random.default_rng(seed + 1)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", dtype=np.uint8)
    distinct = 200_000
    payload = pa.array([bytes(r).decode() for r in letters[g.integers(0, len(letters), (distinct, 40))]])
    write("sp_left", {"item": pa.array(hot(g, rows, [3], [0.4], 4_000_000)),
                      "payload": pa.DictionaryArray.from_arrays(pa.array(g.integers(0, distinct, rows).astype(np.int32)), payload)})


SHAPES = [
    ("a", "full_outer", ["fo_left", "fo_right"],
     "SELECT l.region, count(*) AS n, count(r.amount) AS matched, sum(l.amount) AS la, sum(r.amount) AS ra\n"
     "FROM fo_left l FULL OUTER JOIN fo_right r ON l.cust = r.cust\nGROUP BY l.region"),
    ("b", "left_hot_right", ["lh_left", "lh_right"],
     "SELECT e.kind, count(*) AS n, sum(s.dur) AS dur\nFROM lh_left e LEFT JOIN lh_right s ON e.session = s.session\nGROUP BY e.kind"),
    ("c", "under_threshold", ["ut_left", "ut_right"],
     "SELECT r.grp, count(*) AS n, sum(l.cost) AS cost, sum(r.w) AS w\nFROM ut_left l JOIN ut_right r ON l.ad = r.ad\nGROUP BY r.grp"),
    ("d", "group_by_key", ["gk_left", "gk_right"],
     "SELECT l.item, count(*) AS n, max(r.cat) AS cat, sum(r.w) AS w\nFROM gk_left l JOIN gk_right r ON l.item = r.item\nGROUP BY l.item\n"
     "ORDER BY n DESC, l.item LIMIT 20"),
    ("e", "window", ["wd"],
     "SELECT region, count(*) AS n, sum(user_total) AS totals\n"
     "FROM (SELECT region, amount, sum(amount) OVER (PARTITION BY user) AS user_total FROM wd) t\nGROUP BY region"),
    ("f", "chain", ["ch_fact", "ch_a", "ch_b", "ch_c"],
     "SELECT ca.agrp, cb.bgrp, count(*) AS n, count(cc.cgrp) AS with_c, sum(f.amount) AS amount,\n"
     "       sum(ca.aw + cb.bw) AS w, sum(cc.cw) AS cw\n"
     "FROM ch_fact f JOIN ch_a ca ON f.a = ca.a JOIN ch_b cb ON f.b = cb.b LEFT JOIN ch_c cc ON f.c = cc.c\n"
     "GROUP BY ca.agrp, cb.bgrp"),
    ("g", "aqe_splits", ["sp_left", "gk_right"],
     "SELECT r.cat, count(*) AS n, sum(length(l.payload)) AS bytes, sum(r.w) AS w\nFROM sp_left l JOIN gk_right r ON l.item = r.item\nGROUP BY r.cat"),
    ("h", "uniform", ["un_left", "un_right"],
     "SELECT r.grp, count(*) AS n, sum(l.amount) AS amount\nFROM un_left l JOIN un_right r ON l.k = r.k\nGROUP BY r.grp"),
]


def binary():
    return os.environ.get("SKEWJOIN_BIN") or str(ROOT / "target" / "release" / "skewjoin")


def tool(args, timeout=3600):
    t0 = time.time()
    p = subprocess.run([binary(), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    took = time.time() - t0
    try:
        out = json.loads(p.stdout)
    except json.JSONDecodeError:
        out = {"error": (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]}
    return p.returncode, out, took


def decision(sql_file, tables, cores):
    rc, out, _ = tool(["rewrite", sql_file, *tables, "--cores", cores, "--format", "json", "-q"])
    if "error" in out:
        return {"error": out["error"]}
    changes = [c["decision"]["code"] for c in out.get("changes", [])]
    left = [u.get("code") or u.get("reason", {}).get("code") for u in out.get("unchanged_joins", [])]
    windows = [(w.get("plan") or {}).get("verdict") or w.get("code") for w in out.get("windows", [])]
    rewritten = bool(changes) or any(w.get("status") == "rewritten" for w in out.get("windows", []))
    return {"rewritten": changes, "left": left, "windows": windows, "changed": rewritten,
            "sql_bytes": len(out.get("sql", ""))}


def verify(sql_file, tables, cores, runs):
    rc, out, took = tool(["verify", sql_file, *tables, "--cores", cores, "--engine", "spark",
                          "--python", sys.executable, "--runs", runs, "--format", "json", "-q", *CONF])
    if "error" in out:
        return {"error": out["error"], "seconds": took}
    b, a, t = out["measured_before"], out["measured_after"], out.get("timing") or {}
    stage = lambda r: max((s["max_task_records"] for s in r["stages"]), default=0)  # noqa: E731
    return {"identical": out["identical"], "slower": out["slower"], "noise_ms": out.get("noise_ms"),
            "wall_ms": [b["wall_ms"], a["wall_ms"]], "task_ms": [b["total_task_ms"], a["total_task_ms"]],
            "planning_ms": [b.get("planning_ms"), a.get("planning_ms")],
            "largest_task_records": [stage(b), stage(a)],
            "replayed_ms": [t.get("before", {}).get("cluster_ms"), t.get("after", {}).get("cluster_ms")],
            "replayed_here_ms": [t.get("before", {}).get("replayed_here_ms"), t.get("after", {}).get("replayed_here_ms")],
            "rows": out["rows_original"], "seconds": took}


def run(only, runs, skip_200, only_200=False):
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    for letter, name, tables, sql in SHAPES:
        if only and letter not in only:
            continue
        q = DATA / f"{name}.sql"
        q.write_text(sql + "\n")
        targs = [x for t in tables for x in ("--table", f"{t}={DATA / t}")]
        r = results.get(letter, {}) if only_200 else {}
        r.update({"shape": name, "sql": sql})
        r["decided_2"] = decision(q, targs, 2)
        r["decided_64"] = decision(q, targs, 64)
        print(f"({letter}) {name}: 2 cores {r['decided_2']}, 64 cores {r['decided_64']}", flush=True)
        if not only_200:
            r["at_64"] = verify(q, targs, 64, runs)
            print(f"    at 64: {r['at_64']}", flush=True)
        if not skip_200:
            # A warm-up first: one cold run's tasks are slower than the 64-core runs' warm ones.
            r["at_200"] = verify(q, targs, 200, 2)
            print(f"    at 200: {r['at_200']}", flush=True)
        if r["decided_2"].get("changed") and not only_200:
            r["at_2"] = verify(q, targs, 2, runs)
            print(f"    at 2: {r['at_2']}", flush=True)
        results[letter] = r
        OUT.write_text(json.dumps(results, indent=1))


def secs(ms):
    return "-" if ms is None else f"{ms / 1000:.1f} s"


def table():
    res = json.loads(OUT.read_text())
    print("| shape | decision, 2 cores | decision, 64 cores | rows | largest task, records | here, median of 3 (64-core tasks) "
          "| replayed at 64 cores | replayed at 200 | task time summed | SQL bytes | Spark planning | decided for 2 cores, here |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for letter, name, _, _ in SHAPES:
        r = res.get(letter)
        if not r:
            continue
        codes = lambda d: ", ".join(d.get("rewritten", []) + d.get("left", []) + [w for w in d.get("windows", []) if w]) or "-"  # noqa: E731
        v, w, two = r.get("at_64", {}), r.get("at_200", {}), r.get("at_2")
        pair = lambda x: f"{secs(x[0])} -> {secs(x[1])}" if x and None not in x else "-"  # noqa: E731
        ratio = lambda x: f" ({x[0] / max(x[1], 1):.2f}x)" if x and None not in x else ""  # noqa: E731
        records = v.get("largest_task_records")
        print(f"| ({letter}) {name} | {codes(r['decided_2'])} | {codes(r['decided_64'])} | "
              f"{'identical' if v.get('identical') else 'DIFFERENT'} | "
              f"{f'{records[0]:,} -> {records[1]:,}' if records else '-'} | {pair(v.get('wall_ms'))} | "
              f"{pair(v.get('replayed_ms'))}{ratio(v.get('replayed_ms'))} | {pair(w.get('replayed_ms'))}{ratio(w.get('replayed_ms'))} | "
              f"{pair(v.get('task_ms'))} | {r['decided_64'].get('sql_bytes', '-')} | "
              f"{' -> '.join(f'{x} ms' for x in v.get('planning_ms') or []) or '-'} | "
              f"{pair(two.get('wall_ms')) + (' identical' if two.get('identical') else ' DIFFERENT') if two else 'as written'} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["gen", "run", "table"])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", default="")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--skip-200", action="store_true")
    ap.add_argument("--only-200", action="store_true", help="keep the last run's 64- and 2-core figures")
    a = ap.parse_args()
    if a.what == "gen":
        t0 = time.time()
        gen(a.rows, a.seed)
        print(f"generated {a.rows:,} fact rows in {time.time() - t0:.0f} s into {DATA}")
    elif a.what == "run":
        run([x.strip() for x in a.only.split(",") if x.strip()], a.runs, a.skip_200, a.only_200)
    else:
        table()


if __name__ == "__main__":
    main()
