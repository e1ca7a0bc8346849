"""Benchmark `skewjoin keys` against DuckDB and Polars on the same 40M-row file.

    .venv/bin/python bench/keys_bench.py [--rows 40000000] [--runs 5] [--sample 0.03,0.01]
                                         [--scale 10] [--few 10] [--bin target/release/skewjoin]

Writes bench/data/events_<rows>.parquet once (a Zipf-like dictionary string key `title_id` with
31% NULL, a ~20M-distinct int64 key `user_id`, plus event_id and hours), then, alternating tool
by tool in each round, times the exact top-20 of each key and skewjoin's --sample at each fraction, and prints a
Markdown table: median wall seconds, peak RSS, the ratio to the faster peer. Every tool's top 20
is checked against the others', and every sampled share against the exact one and its stated
error. Peers are timed in-process (query only, after import), skewjoin as a whole process.

With --few N (default 10, 0 to skip) both keys are timed again on the same rows written in N
row groups (the layout of one big file, where --sample reads whole pages).

With --scale K (default 10, 0 to skip) the string key is timed again on a K times larger table:
K hard links of the file in bench/data/scale<K>/ (no extra disk), read as one table by every
tool. A sample's cost is a fixed part (process start and exit, footers, first buffers: about 4 ms here)
plus its share of the row groups, so its speed-up over the exact count grows with the table.
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

PEER = r'''
import sys, time, json
tool, path, col = sys.argv[1:4]
if tool == "duckdb":
    import duckdb
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    t = time.perf_counter()
    rows = con.sql(f"SELECT {col}, count(*) AS c FROM read_parquet('{path}') GROUP BY 1 ORDER BY c DESC, 1 LIMIT 20").fetchall()
    dt = time.perf_counter() - t
else:
    import polars as pl
    t = time.perf_counter()
    df = pl.scan_parquet(path).group_by(col).len().sort(["len", col], descending=[True, False], nulls_last=False).head(20).collect()
    dt = time.perf_counter() - t
    rows = list(zip(df[col].to_list(), df["len"].to_list()))
print(json.dumps({"seconds": dt, "top": [[k, c] for k, c in rows]}))
'''


def generate(path, rows):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(1)
    titles = 100_000
    dictionary = pa.array([f"tt{i:07d}" for i in range(titles)])
    w = 1.0 / np.arange(1, titles + 1) ** 1.1
    w /= w.sum()
    chunk = 4_000_000
    schema = pa.schema([("event_id", pa.int64()), ("user_id", pa.int64()), ("title_id", pa.string()), ("hours", pa.float64())])
    tmp = str(path) + ".tmp"
    with pq.ParquetWriter(tmp, schema, compression="snappy") as wr:
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            idx = rng.choice(titles, size=n, p=w).astype(np.int32)
            mask = rng.random(n) < 0.31
            title = pa.DictionaryArray.from_arrays(pa.array(idx, mask=mask), dictionary).cast(pa.string())
            user = rng.integers(0, 25_000_000, size=n, dtype=np.int64)
            t = pa.table({"event_id": pa.array(np.arange(start, start + n, dtype=np.int64)), "user_id": pa.array(user),
                          "title_id": title, "hours": pa.array(np.round(rng.gamma(1.5, 0.6, size=n), 3))}, schema=schema)
            wr.write_table(t, row_group_size=128 * 1024)
    os.replace(tmp, path)




def measure(cmd):
    """Run cmd, return (stdout, wall seconds, peak RSS MB)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if status != 0:
        raise RuntimeError(f"{cmd} failed: {err.decode()[-500:]}")
    return out.decode(), wall, ru.ru_maxrss / 1024


def norm_key(k):
    return "<NULL>" if k is None else str(k)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=40_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sample", default="0.03,0.01", help="sample fractions or row counts, comma-separated")
    ap.add_argument("--bin", default=str(ROOT / "target" / "release" / "skewjoin"))
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--few", type=int, default=10, help="also time the same rows written in this many row groups (0 to skip)")
    a = ap.parse_args()
    # One tool per sample fraction: "skewjoin-sample:<fraction>".
    a.samplers = samplers = [f"skewjoin-sample:{x.strip()}" for x in a.sample.split(",") if x.strip()]
    data = ROOT / "bench" / "data"
    data.mkdir(parents=True, exist_ok=True)
    path = data / f"events_{a.rows}.parquet"
    if not path.exists():
        t = time.perf_counter()
        generate(path, a.rows)
        print(f"generated {path} ({path.stat().st_size / 2**20:.0f} MB) in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    size_mb = path.stat().st_size / 2**20

    results = {}  # (key, tool) -> list of (seconds, rss)
    tops = {}
    distinct = {}  # (key, skewjoin tool) -> (distinct, exact?)
    sample_checks = []
    sampled_info = {}  # sampler -> the sample of its first round (rows, row groups read)
    py = sys.executable
    for r in range(a.runs):
        for col in ["title_id", "user_id"]:
            for tool in ["skewjoin", "duckdb", "polars", *samplers, "skewjoin-exact-distinct"]:
                if (tool in samplers or tool == "skewjoin-exact-distinct") and col != "title_id":
                    continue
                if tool.startswith("skewjoin"):
                    cmd = [a.bin, "keys", str(path), "--column", col, "--top", "20", "--format", "json", "--quiet"]
                    if tool in samplers:
                        cmd += ["--sample", tool.split(":", 1)[1], "--seed", str(r + 1)]
                    if tool == "skewjoin-exact-distinct":
                        cmd += ["--exact-distinct"]
                    out, wall, rss = measure(cmd)
                    c = json.loads(out)["columns"][0]
                    top = [[e["value"], e["count"]] for e in c["top"]]
                    secs = wall
                    if tool in samplers:
                        sample_checks.append(c)
                        sampled_info.setdefault(tool, c["sample"])
                    distinct[(col, tool)] = (c["distinct"], c["distinct_exact"])
                else:
                    out, wall, rss = measure([py, "-c", PEER, tool, str(path), col])
                    j = json.loads(out.strip().splitlines()[-1])
                    top, secs = j["top"], j["seconds"]
                results.setdefault((col, tool), []).append((secs, rss))
                if tool not in samplers:
                    tops[(col, tool)] = sorted((norm_key(k), c) for k, c in top)
            print(f"round {r + 1}/{a.runs} {col} done", file=sys.stderr)

    # Same answer from every tool (ties at the 20th place may differ in which key is shown).
    for col in ["title_id", "user_id"]:
        ts = ["skewjoin", "duckdb", "polars"] + (["skewjoin-exact-distinct"] if col == "title_id" else [])
        counts = {t: sorted(c for _, c in tops[(col, t)]) for t in ts}
        assert all(counts[t] == counts["duckdb"] for t in ts), f"{col}: top-20 counts differ {counts}"
    exact = {norm_key(k): c for k, c in tops[("title_id", "skewjoin")]}
    total = a.rows
    misses = 0
    worst = 0.0
    for c in sample_checks:
        for e in c["top"][:10]:
            k = norm_key(e["value"])
            if k in exact:
                true_share = exact[k] / total
                dev = abs(e["share"] - true_share)
                worst = max(worst, dev / e["share_error"])
                if dev > e["share_error"]:
                    misses += 1
    checked = sum(min(10, len(c["top"])) for c in sample_checks)

    scaled = scale_rounds(a, path, exact) if a.scale > 1 else None
    few = few_rounds(a, path, exact) if a.few > 0 else None

    def med(col, tool):
        xs = results[(col, tool)]
        return statistics.median(s for s, _ in xs), max(m for _, m in xs)

    lines = [f"File: {a.rows:,} rows, {size_mb:.0f} MB ({path.name}); {os.cpu_count()} cores; median of {a.runs} alternating runs.",
             "",
             "| key | tool | seconds | peak RSS MB | skewjoin speed-up |",
             "|---|---|---:|---:|---:|"]
    for col in ["title_id", "user_id"]:
        sj, sjm = med(col, "skewjoin")
        peers = {t: med(col, t) for t in ["duckdb", "polars"]}
        best = min(v[0] for v in peers.values())
        label = "title_id (string, dictionary, 31% NULL)" if col == "title_id" else "user_id (int64, ~20M distinct)"
        # The ratio in each round (the peers' times vary from round to round).
        per = [min(results[(col, "duckdb")][r][0], results[(col, "polars")][r][0]) / results[(col, "skewjoin")][r][0] for r in range(a.runs)]
        lines.append(f"| {label} | skewjoin exact | {sj:.3f} | {sjm:.0f} | {best / sj:.1f}x vs faster peer (rounds {min(per):.1f}-{max(per):.1f}x) |")
        for t, (s, m) in peers.items():
            lines.append(f"| | {t} | {s:.3f} | {m:.0f} | |")
        if col == "title_id":
            es, em = med(col, "skewjoin-exact-distinct")
            lines.append(f"| | skewjoin --exact-distinct | {es:.3f} | {em:.0f} | {best / es:.1f}x vs faster peer |")
            for t in samplers:
                lines.append(sample_row(t, results[(col, "skewjoin")], results[(col, t)], sampled_info[t]))
    lines.append("")
    for col in ["title_id", "user_id"]:
        d, ex = distinct[(col, "skewjoin")]
        line = f"Distinct {col}: {d:,} ({'exact' if ex else 'estimate'})"
        if (col, "skewjoin-exact-distinct") in distinct:
            de, _ = distinct[(col, "skewjoin-exact-distinct")]
            line += f", exact {de:,} (estimate off by {100 * (d - de) / de:+.2f}%)"
        lines.append(line + ".")
    lines.append(f"Sample check: {checked - misses} of {checked} sampled top-10 shares within their stated 95% error "
                 f"(worst deviation {worst:.2f}x the stated error).")
    if scaled:
        lines += ["", *scaled]
    if few:
        lines += ["", *few]
    print("\n".join(lines))


def scale_rounds(a, path, exact_top):
    """Time title_id on a.scale hard links of the file read as one table; return table lines."""
    d = path.parent / f"scale{a.scale}"
    d.mkdir(exist_ok=True)
    for i in range(a.scale):
        link = d / f"part{i}.parquet"
        if not link.exists():
            try:
                os.link(path, link)
            except OSError as e:
                print(f"--scale skipped: cannot hard-link {path} ({e})", file=sys.stderr)
                return None
    rows = a.rows * a.scale
    glob = str(d / "*.parquet")
    res = {}
    checks = []
    infos = {}
    py = sys.executable
    samplers = a.samplers
    for r in range(a.runs):
        for tool in ["skewjoin", *samplers, "duckdb", "polars"]:
            if tool.startswith("skewjoin"):
                cmd = [a.bin, "keys", str(d), "--column", "title_id", "--top", "20", "--format", "json", "--quiet"]
                if tool in samplers:
                    cmd += ["--sample", tool.split(":", 1)[1], "--seed", str(r + 1)]
                out, wall, rss = measure(cmd)
                c = json.loads(out)["columns"][0]
                assert c["rows"] == rows, (c["rows"], rows)
                if tool in samplers:
                    checks.append(c)
                    infos.setdefault(tool, c["sample"])
                else:
                    got = sorted(e["count"] for e in c["top"])
                    want = sorted(n * a.scale for n in exact_top.values())
                    assert got == want, f"scaled exact top differs: {got} {want}"
                secs = wall
            else:
                out, wall, rss = measure([py, "-c", PEER, tool, glob, "title_id"])
                j = json.loads(out.strip().splitlines()[-1])
                got = sorted(c for _, c in j["top"])
                assert got == sorted(n * a.scale for n in exact_top.values()), f"{tool} scaled top differs"
                secs = j["seconds"]
            res.setdefault(tool, []).append((secs, rss))
        print(f"scale round {r + 1}/{a.runs} done", file=sys.stderr)
    checked, misses = share_misses(checks, exact_top, a.rows)
    m = {t: (statistics.median(s for s, _ in xs), max(x for _, x in xs)) for t, xs in res.items()}
    sj = m["skewjoin"][0]
    best = min(m["duckdb"][0], m["polars"][0])
    sample_lines = [sample_row(t, res["skewjoin"], res[t], infos[t]) for t in a.samplers]
    return [f"Scaled: title_id over {a.scale} hard links of the file read as one table ({rows:,} rows, {a.scale * len_rg(path):,} row groups); median of {a.runs} alternating runs.",
            "",
            "| key | tool | seconds | peak RSS MB | skewjoin speed-up |",
            "|---|---|---:|---:|---:|",
            f"| title_id x{a.scale} | skewjoin exact | {sj:.3f} | {m['skewjoin'][1]:.0f} | {best / sj:.1f}x vs faster peer |",
            f"| | duckdb | {m['duckdb'][0]:.3f} | {m['duckdb'][1]:.0f} | |",
            f"| | polars | {m['polars'][0]:.3f} | {m['polars'][1]:.0f} | |",
            *sample_lines,
            "",
            f"Scaled sample check: {checked - misses} of {checked} sampled top-10 shares within their stated 95% error."]


REWRITE = r'''
import os, sys
import pyarrow.parquet as pq
src, dst, per = sys.argv[1], sys.argv[2], int(sys.argv[3])
f = pq.ParquetFile(src)
with pq.ParquetWriter(dst + ".tmp", f.schema_arrow, compression="snappy") as wr:
    for b in f.iter_batches(batch_size=per):
        wr.write_batch(b, row_group_size=per)
os.replace(dst + ".tmp", dst)
'''


def few_rounds(a, path, exact_top):
    """Time both keys on the same rows written by pyarrow in a.few large row groups (the layout
    of one big file: too few row groups to sample whole, so --sample reads whole pages); return
    table lines."""
    few = path.parent / f"{path.stem}_rg{a.few}.parquet"
    if not few.exists():
        # In a child process: a child's peak RSS as wait4 reports it starts from the parent's
        # at the fork, and the rewrite holds a row group of 4M rows.
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", REWRITE, str(path), str(few), str(-(-a.rows // a.few))], check=True)
        print(f"wrote {few} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    res, checks, infos, tops = {}, [], {}, {}
    py = sys.executable
    for r in range(a.runs):
        for col in ["title_id", "user_id"]:
            for tool in ["skewjoin", *a.samplers, "duckdb", "polars"]:
                if tool.startswith("skewjoin"):
                    cmd = [a.bin, "keys", str(few), "--column", col, "--top", "20", "--format", "json", "--quiet"]
                    if tool in a.samplers:
                        cmd += ["--sample", tool.split(":", 1)[1], "--seed", str(r + 1)]
                    out, secs, rss = measure(cmd)
                    c = json.loads(out)["columns"][0]
                    if tool in a.samplers:
                        if col == "title_id":
                            checks.append(c)
                        infos.setdefault((col, tool), c["sample"])
                    else:
                        tops[(col, tool)] = sorted(e["count"] for e in c["top"])
                else:
                    out, _, rss = measure([py, "-c", PEER, tool, str(few), col])
                    j = json.loads(out.strip().splitlines()[-1])
                    tops[(col, tool)] = sorted(c for _, c in j["top"])
                    secs = j["seconds"]
                res.setdefault((col, tool), []).append((secs, rss))
        print(f"few-row-group round {r + 1}/{a.runs} done", file=sys.stderr)
    for col in ["title_id", "user_id"]:
        assert tops[(col, "skewjoin")] == tops[(col, "duckdb")] == tops[(col, "polars")], f"{col}: few-row-group top-20 counts differ"
    checked, misses = share_misses(checks, exact_top, a.rows)
    lines = [f"Few large row groups: the same rows written by pyarrow in {a.few} row groups ({few.name}, {few.stat().st_size / 2**20:.0f} MB); median of {a.runs} alternating runs.",
             "",
             "| key | tool | seconds | peak RSS MB | skewjoin speed-up |",
             "|---|---|---:|---:|---:|"]
    for col in ["title_id", "user_id"]:
        m = {t: (statistics.median(s for s, _ in xs), max(x for _, x in xs)) for (c, t), xs in res.items() if c == col}
        sj = m["skewjoin"][0]
        best = min(m["duckdb"][0], m["polars"][0])
        lines.append(f"| {col} | skewjoin exact | {sj:.3f} | {m['skewjoin'][1]:.0f} | {best / sj:.1f}x vs faster peer |")
        lines += [f"| | {t} | {m[t][0]:.3f} | {m[t][1]:.0f} | |" for t in ["duckdb", "polars"]]
        lines += [sample_row(t, res[(col, "skewjoin")], res[(col, t)], infos[(col, t)]) for t in a.samplers]
    lines += ["", f"Few-row-group sample check (title_id): {checked - misses} of {checked} sampled top-10 shares within their stated 95% error."]
    return lines


def share_misses(checks, exact_top, rows):
    """(checked, misses): the sampled top-10 shares of `checks` whose value is in `exact_top`
    (exact counts of a table of `rows` rows), and how many are outside their stated error."""
    checked = misses = 0
    for c in checks:
        for e in c["top"][:10]:
            k = norm_key(e["value"])
            if k in exact_top:
                checked += 1
                misses += abs(e["share"] - exact_top[k] / rows) > e["share_error"]
    return checked, misses


def sample_row(tool, exact, sampled, info):
    """The table row of one sample fraction: `exact` and `sampled` are the rounds' (seconds,
    rss), `info` the sample's JSON (rows and row groups read)."""
    secs = statistics.median(s for s, _ in sampled)
    rss = max(m for _, m in sampled)
    ratio = statistics.median(s for s, _ in exact) / secs
    per = [e / x for (e, _), (x, _) in zip(exact, sampled)]
    what = (f"{info['pages_read']} of {info['pages_total']} pages" if info.get("pages_read") is not None
            else f"{info['row_groups_read']} of {info['row_groups_total']} row groups")
    return (f"| | skewjoin --sample {tool.split(':', 1)[1]} ({what}, "
            f"{100 * info['fraction']:.1f}%) | {secs:.3f} | {rss:.0f} | {ratio:.1f}x vs exact (rounds {min(per):.1f}-{max(per):.1f}x) |")


def len_rg(path):
    import pyarrow.parquet as pq
    return pq.ParquetFile(path).metadata.num_row_groups


if __name__ == "__main__":
    main()
