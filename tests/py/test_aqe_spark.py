"""The planner against Spark with adaptive query execution on, its sizes scaled down to the test
data (advisory partition 16 KB, skew threshold 64 KB, minimum coalesced partition 1 KB; one map
task per file): in each scenario the largest join task predicted before and after is within 5%
of the one Spark runs, the decision (rewrite, or leave to AQE) comes with its typed code, and a
rewrite returns the original's rows.

Each scenario's predicted and measured tasks go to target/aqe-scenarios-<spark version>.json for
the notes (BENCHMARKS.md)."""
import json
import random
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import ROOT, run
from sparkrun import max_records, measured, multiset, same_rows_in_spark
from test_plan_spark import keys_with as keys

pytestmark = pytest.mark.both_lines("AQE's coalescing, skew splits and run-time broadcasts as each line runs them")

P = 32
# Sizes scaled to the data (Spark's defaults are 64 MB, 256 MB and 1 MB), and one map task per
# file: a file counts 64 MB when splits are packed, more than a split may hold.
CONF = {
    "spark.sql.shuffle.partitions": str(P),
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": "16k",
    "spark.sql.adaptive.coalescePartitions.minPartitionSize": "1k",
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "64k",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.files.maxPartitionBytes": "16m",
    "spark.sql.files.openCostInBytes": "64m",
}
RESULTS = []


@pytest.fixture(scope="module")
def aqe_spark(spark):
    keys = list(CONF) + ["spark.sql.adaptive.autoBroadcastJoinThreshold"]
    for k, v in CONF.items():
        spark.conf.set(k, v)
    try:
        yield spark
    finally:
        for k in keys:
            spark.conf.unset(k)
        spark.conf.set("spark.sql.shuffle.partitions", "8")
        out = ROOT / "target" / f"aqe-scenarios-{spark.version}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(RESULTS, indent=1))


def write_files(d, name, cols, files):
    """The rows in `files` files of equal size, in order."""
    t = pa.table(cols)
    d = d / name
    d.mkdir()
    n = t.num_rows
    for i in range(files):
        a, b = i * n // files, (i + 1) * n // files
        pq.write_table(t.slice(a, b - a), d / f"part-{i:03d}.parquet")
    return str(d)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("aqe")
    rng = random.Random(11)
    n = 200_000
    sets = {}
    facts = {"k": keys(rng, n, [("hot", 0.3)], 20_000), "v": list(range(n))}
    sets["facts8"] = write_files(d, "facts8", facts, 8)
    sets["facts2"] = write_files(d, "facts2", facts, 2)
    nulls = {"k": keys(rng, n, [(None, 0.3)], 20_000), "v": list(range(n))}
    sets["nulls2"] = write_files(d, "nulls2", nulls, 2)
    dim = {"k": [f"k{i:05d}" for i in range(20_000)] + ["hot"], "name": [f"name {i}" for i in range(20_001)]}
    sets["dim"] = write_files(d, "dim", dim, 2)
    # The hot key on the right of a left join: many rows of it in the right side.
    rk = {"k": keys(rng, n, [("k00007", 0.3)], 20_000), "w": list(range(n))}
    sets["right_hot2"] = write_files(d, "right_hot2", rk, 2)
    # Hot on both sides, many to many.
    sets["both_l"] = write_files(d, "both_l", {"k": keys(rng, 60_000, [("hot", 0.3)], 5_000), "v": list(range(60_000))}, 4)
    sets["both_r"] = write_files(d, "both_r", {"k": keys(rng, 6_000, [("hot", 0.05)], 5_000), "w": list(range(6_000))}, 2)
    # A mild skew: the hot partition over 5x the median but under the skew threshold.
    sets["mild"] = write_files(d, "mild", {"k": keys(rng, 20_000, [("hot", 0.2)], 2_000), "v": list(range(20_000))}, 2)
    sets["mild_dim"] = write_files(d, "mild_dim", {"k": [f"k{i:05d}" for i in range(2_000)] + ["hot"], "x": list(range(2_001))}, 1)
    return sets


def plan(left, right, how, *extra):
    conf = sum((["--conf", f"{k}={v}"] for k, v in CONF.items()), [])
    p = run("plan", "--left", left, "--right", right, "--on", "k", "--how", how, "--left-name", "lt", "--right-name", "rt",
            "--format", "json", "-q", "--cores", 2, *conf, *extra)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


JOIN = {"inner": "JOIN", "left": "LEFT JOIN", "full": "FULL JOIN"}

# (name, left, right, how, extra flags, the decision's code expected)
SCENARIOS = [
    # 8 map outputs: AQE splits the hot partition 8 ways by itself.
    ("hot-8-files", "facts8", "dim", "inner", ["--min-gain", "0.2"], None),
    # The same key from 2 files: AQE cannot split it finer than 2; the rewrite wins.
    ("hot-2-files", "facts2", "dim", "inner", ["--min-gain", "off"], "rewrite"),
    ("nulls-left-join", "nulls2", "dim", "left", ["--min-gain", "off"], "rewrite"),
    # AQE never splits the right side of a left join.
    ("hot-right-of-left-join", "dim", "right_hot2", "left", ["--min-gain", "off"], "rewrite"),
    # Nor either side of a full outer join.
    ("full-outer", "facts2", "dim", "full", ["--min-gain", "off"], "rewrite"),
    ("hot-both-sides", "both_l", "both_r", "inner", ["--min-gain", "off"], "rewrite"),
    # Over 5x the median partition but under the skew threshold: AQE leaves it whole. The
    # one-row slice of the hot key fits under 1 KB: it is broadcast, the rest coalesced.
    ("under-skew-threshold", "mild", "mild_dim", "inner", ["--min-gain", "off", "--broadcast-threshold", "1KB"], "rewrite"),
]


@pytest.mark.parametrize("name,left,right,how,extra,code", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_aqe_predictions_match_spark(aqe_spark, data, name, left, right, how, extra, code):
    spark = aqe_spark
    spark.read.parquet(data[left]).createOrReplaceTempView("lt")
    spark.read.parquet(data[right]).createOrReplaceTempView("rt")
    p = plan(data[left], data[right], how, *extra)
    assert p["aqe"] is not None, "AQE is on in these settings"
    t0 = time.time()
    original = f"SELECT * FROM lt l {JOIN[how]} rt r ON l.k = r.k"
    # Hot on both sides gives millions of rows: Spark compares them, where collecting them into
    # Python took most of this file's time.
    big = name == "hot-both-sides"
    rows0, tasks0 = measured(spark, original, collect=not big)
    t1 = time.time()
    rows1, tasks1 = measured(spark, p["sql"], collect=not big)
    t2 = time.time()
    if big:
        assert same_rows_in_spark(spark, original, p["sql"])
    else:
        assert multiset(rows1) == multiset(rows0)
    before, after = max_records(tasks0), max_records(tasks1)
    # What the default margin decides, for the notes.
    default = plan(data[left], data[right], how, *[x for x in extra if x not in ("--min-gain", "off", "0.2")], "--min-gain", "0.2")
    RESULTS.append({"scenario": name, "spark": spark.version, "decision": p["decision"]["code"],
                    "default_decision": default["decision"]["code"], "seconds_before": round(t1 - t0, 2),
                    "seconds_after": round(t2 - t1, 2), "predicted_seconds": [(p.get("cost") or {}).get("before_seconds"), (p.get("cost") or {}).get("after_seconds")],
                    "before_predicted": p["before"]["max_task_rows"], "before_measured": before,
                    "after_predicted": p["after"]["max_task_rows"], "after_measured": after,
                    "aqe_before": p["aqe"]["before"]})
    if code:
        assert p["decision"]["code"] == code, p["decision"]
    assert abs(before - p["before"]["max_task_rows"]) <= 0.05 * before, (before, p["before"], p["aqe"]["before"])
    assert abs(after - p["after"]["max_task_rows"]) <= 0.05 * after, (after, p["after"], p["aqe"])


def test_the_fingerprint_of_a_large_result_tells_a_row_moved_added_or_changed(aqe_spark):
    """same_rows_in_spark, which compares the hot-both-sides results, is not blind: a row
    duplicated in place of another, one more row, or one value changed all differ."""
    base = "SELECT id AS k, id % 3 AS v FROM range(1000)"
    assert same_rows_in_spark(aqe_spark, base, f"SELECT * FROM ({base}) ORDER BY v DESC")
    for other in (f"SELECT k, v FROM ({base}) WHERE k <> 5 UNION ALL SELECT 4 AS k, 1 AS v",
                  f"{base} UNION ALL SELECT 0 AS k, 0 AS v",
                  f"SELECT k, CASE WHEN k = 7 THEN 2 ELSE v END AS v FROM ({base})",
                  f"SELECT v AS k, k AS v FROM ({base})"):
        assert not same_rows_in_spark(aqe_spark, base, other), other


def test_a_runtime_switch_to_broadcast_is_left_to_aqe(aqe_spark, data, tmp_path):
    """The dimension filtered to 100 rows looks like its whole file to Spark's planner (over the
    8 KB threshold), so it plans a sort-merge join; once the shuffles have run, AQE sees 100 rows
    (4 KB) and broadcasts them. The filter is on a column that is not the key, so Spark does not
    carry it to the facts. skewjoin predicts the switch and the tasks AQE then runs (the
    facts' map outputs read where they were written), and leaves the join to AQE."""
    spark = aqe_spark
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "8k")
    try:
        spark.read.parquet(data["facts2"]).createOrReplaceTempView("facts")
        spark.read.parquet(data["dim"]).createOrReplaceTempView("dim")
        sql = "SELECT f.k, f.v, d.name FROM facts f JOIN (SELECT * FROM dim WHERE name LIKE 'name 1__') d ON f.k = d.k"
        q = tmp_path / "q.sql"
        q.write_text(sql)
        conf = sum((["--conf", f"{k}={v}"] for k, v in {**CONF, "spark.sql.autoBroadcastJoinThreshold": "8k"}.items()), [])
        p = run("rewrite", q, "--table", f"facts={data['facts2']}", "--table", f"dim={data['dim']}", "--cores", 2,
                "--format", "json", "-q", "--min-gain", "0.2", *conf)
        assert p.returncode == 0, p.stderr
        r = json.loads(p.stdout)
        assert not r["changes"], r["changes"]
        (u,) = r["unchanged_joins"]
        assert u["code"] == "aqe_broadcasts_it", u["reason"]
        _, tasks = measured(spark, sql)
        before = max_records(tasks)
        RESULTS.append({"scenario": "runtime-broadcast", "spark": spark.version, "decision": "aqe_broadcasts_it",
                        "before_predicted": u["before"]["max_task_rows"], "before_measured": before})
        assert abs(before - u["before"]["max_task_rows"]) <= 0.05 * before, (before, u["before"])
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
