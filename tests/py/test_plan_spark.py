"""`skewjoin plan` against real Spark: on skewed data sets, the largest shuffle task the plan
predicts for the original join is the one Spark runs (sort-merge join, AQE off), the emitted
SQL returns exactly the original's rows, and its largest task is the one predicted after."""
import json
import random

import pyarrow as pa
import pytest

from conftest import failure, run, write_parquet
from sparkrun import max_records, measured, multiset, sort_merge_joins

P = 32  # shuffle partitions for these tests: small data, many tasks still


def keys_with(rng, n, hot, distinct, prefix="k"):
    """n keys: each (value, share) of `hot` takes its share, the rest spread over `distinct` values."""
    out = []
    for v, share in hot:
        out += [v] * int(n * share)
    while len(out) < n:
        out.append(f"{prefix}{rng.randrange(distinct):05d}")
    rng.shuffle(out)
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("plan")
    rng = random.Random(7)
    sets = {}

    # 1. NULLs on the kept side of a left join, a placeholder, and a real hot title.
    n = 40_000
    k = keys_with(rng, n, [(None, 0.30), ("unknown", 0.20), ("k00007", 0.20)], 3000)
    sets["events"] = write_parquet(d / "events.parquet", {
        "event_id": list(range(n)), "title_id": k, "hours": [rng.random() for _ in range(n)]})
    sets["titles"] = write_parquet(d / "titles.parquet", {
        "title_id": [f"k{i:05d}" for i in range(3000)] + [None] * 20,
        "name": [f"title {i} " + "x" * 40 for i in range(3020)]})

    # 2. The same hot key on both sides, many to many: salting.
    lk = keys_with(rng, 20_000, [("hot", 0.4)], 2000)
    rk = keys_with(rng, 4_000, [("hot", 0.005)], 2000)
    sets["mm_left"] = write_parquet(d / "mm_left.parquet", {"k": lk, "a": list(range(len(lk)))})
    sets["mm_right"] = write_parquet(d / "mm_right.parquet", {"k": rk, "b": [f"b{i}" for i in range(len(rk))]})

    # 3. A composite key (region, account) with a hot pair and NULLs in either part.
    n = 30_000
    region = [rng.choice(["EU", "US", "APAC"]) for _ in range(n)]
    acct = [rng.randrange(2000) for _ in range(n)]
    for i in range(0, 6000):
        region[i], acct[i] = "EU", 0
    for i in range(6000, 12000):
        region[i] = None
    for i in range(12000, 13000):
        acct[i] = None
    sets["orders"] = write_parquet(d / "orders.parquet", {"region": region, "account": pa.array(acct, pa.int64()), "amount": [i % 97 for i in range(n)]})
    sets["accounts"] = write_parquet(d / "accounts.parquet", {
        "region": [r for r in ["EU", "US", "APAC"] for _ in range(2000)],
        "account": pa.array([a for _ in range(3) for a in range(2000)], pa.int64()),
        "owner": [f"owner {i}" for i in range(6000)]})

    # 4. Both sides hot and both with NULLs, for full and right joins; a junk account.
    lk = keys_with(rng, 20_000, [(None, 0.25), ("qa_test_user_01", 0.2), ("k00001", 0.2)], 1500)
    rk = keys_with(rng, 12_000, [(None, 0.25), ("k00002", 0.25)], 1500)
    sets["fl"] = write_parquet(d / "fl.parquet", {"k": lk, "x": list(range(len(lk)))})
    sets["fr"] = write_parquet(d / "fr.parquet", {"k": rk, "y": list(range(len(rk)))})
    return sets


def plan(left, right, on, how, *extra):
    p = run("plan", "--left", left, "--right", right, *sum((["--on", o] for o in on), []), "--how", how,
            "--left-name", "lt", "--right-name", "rt", "--shuffle-partitions", P, "--format", "json", "-q", *extra)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


JOIN_SQL = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN",
            "semi": "LEFT SEMI JOIN", "anti": "LEFT ANTI JOIN"}


def original(how, on):
    cond = " AND ".join(f"l.`{a}` = r.`{b}`" for a, b in (o.split("=") if "=" in o else (o, o) for o in on))
    return f"SELECT * FROM lt l {JOIN_SQL[how]} rt r ON {cond}"


CASES = [
    # (left, right, on, how, extra options)
    ("events", "titles", ["title_id"], "left", ["--broadcast-threshold", "4KB"]),
    ("events", "titles", ["title_id"], "inner", ["--broadcast-threshold", "4KB"]),
    ("events", "titles", ["title_id"], "full", ["--broadcast-threshold", "4KB"]),
    ("events", "titles", ["title_id"], "anti", ["--broadcast-threshold", "4KB"]),
    ("events", "titles", ["title_id"], "semi", ["--broadcast-threshold", "4KB"]),
    ("titles", "events", ["title_id"], "right", ["--broadcast-threshold", "4KB"]),
    ("mm_left", "mm_right", ["k"], "inner", ["--broadcast-threshold", "100"]),
    ("mm_left", "mm_right", ["k"], "left", ["--broadcast-threshold", "100"]),
    ("mm_right", "mm_left", ["k"], "left", ["--broadcast-threshold", "100"]),
    ("mm_left", "mm_right", ["k"], "full", ["--broadcast-threshold", "100"]),
    ("orders", "accounts", ["region", "account"], "left", ["--broadcast-threshold", "4KB"]),
    ("orders", "accounts", ["region", "account"], "inner", ["--broadcast-threshold", "4KB"]),
    ("fl", "fr", ["k"], "full", ["--broadcast-threshold", "1KB"]),
    ("fl", "fr", ["k"], "right", ["--broadcast-threshold", "1KB"]),
    ("fl", "fr", ["k"], "left", ["--broadcast-threshold", "1KB"]),
]


@pytest.fixture(scope="module")
def sj_spark(spark):
    with sort_merge_joins(spark, P) as s:
        yield s


@pytest.mark.parametrize("left,right,on,how,extra", CASES, ids=[f"{c[0]}-{c[1]}-{c[3]}" for c in CASES])
def test_plan_matches_spark(sj_spark, data, left, right, on, how, extra):
    spark = sj_spark
    spark.read.parquet(data[left]).createOrReplaceTempView("lt")
    spark.read.parquet(data[right]).createOrReplaceTempView("rt")
    p = plan(data[left], data[right], on, how, *extra)
    assert p["hot_keys"], "the data set is skewed: the plan must find hot keys"

    rows0, tasks0 = measured(spark, original(how, on))
    rows1, tasks1 = measured(spark, p["sql"])
    # The rewrite returns exactly the original's rows.
    assert multiset(rows1) == multiset(rows0), p["sql"]
    # The predicted largest task is Spark's, record for record.
    assert max_records(tasks0) == p["before"]["max_task_rows"]
    # After: the largest task is what the plan said (salted pieces are split by a hash, so a
    # few percent of slack), and much smaller than before.
    after = max_records(tasks1)
    assert abs(after - p["after"]["max_task_rows"]) <= 0.05 * p["after"]["max_task_rows"] + 20, (after, p["after"])
    assert after * 4 <= max_records(tasks0), (after, max_records(tasks0))


def test_drop_junk_removes_only_junk(sj_spark, data):
    spark = sj_spark
    spark.read.parquet(data["fl"]).createOrReplaceTempView("lt")
    spark.read.parquet(data["fr"]).createOrReplaceTempView("rt")
    p = plan(data["fl"], data["fr"], ["k"], "left", "--broadcast-threshold", "1KB", "--drop-junk")
    junk = [h for h in p["hot_keys"] if h["class"] == "junk"]
    assert junk and all(h["strategy"]["kind"] == "drop" for h in junk)
    assert p["results_change"] is True
    rows1, _ = measured(spark, p["sql"])
    expected, _ = measured(spark, "SELECT * FROM (SELECT * FROM lt WHERE k IS NULL OR k <> 'qa_test_user_01') l "
                                  "LEFT JOIN (SELECT * FROM rt WHERE k IS NULL OR k <> 'qa_test_user_01') r ON l.k = r.k")
    assert multiset(rows1) == multiset(expected)
    # Without the flag the junk is joined as demand, with a warning.
    p2 = plan(data["fl"], data["fr"], ["k"], "left", "--broadcast-threshold", "1KB")
    assert any("qa_test_user_01" in w for w in p2["warnings"])
    assert not p2["results_change"]


def test_hostile_key_values(sj_spark, tmp_path):
    """Hot values full of SQL syntax stay data: the emitted query returns the original's rows."""
    spark = sj_spark
    hostile = ["x'); DROP TABLE t; --", "a\\'b", "back\\slash", "new\nline", "日本語 ' \" `"]
    lk = [h for h in hostile for _ in range(3000)] + [f"k{i}" for i in range(5000)]
    rk = hostile + [f"k{i}" for i in range(5000)]
    lp = write_parquet(tmp_path / "hl.parquet", {"k": lk, "v": list(range(len(lk)))})
    rp = write_parquet(tmp_path / "hr.parquet", {"k": rk, "w": list(range(len(rk)))})
    spark.read.parquet(lp).createOrReplaceTempView("lt")
    spark.read.parquet(rp).createOrReplaceTempView("rt")
    p = plan(lp, rp, ["k"], "inner", "--broadcast-threshold", "4KB")
    assert len(p["hot_keys"]) == len(hostile)
    rows0, _ = measured(spark, original("inner", ["k"]))
    rows1, _ = measured(spark, p["sql"])
    assert multiset(rows1) == multiset(rows0)


def test_bad_input(data, tmp_path):
    # Unknown column.
    def plan(*args):
        return failure(run("plan", *args, "--format", "json"))
    f = plan("--left", data["events"], "--right", data["titles"], "--on", "nope")
    assert f["code"] == "no_column", f
    # Key types that differ between the sides.
    f = plan("--left", data["orders"], "--right", data["accounts"], "--on", "account=owner")
    assert (f["code"], f["kind"]) == ("key_types", "data"), f
    # A nested key.
    nested = write_parquet(tmp_path / "nested.parquet", {"k": [[1, 2], [3]], "v": [1, 2]})
    f = plan("--left", nested, "--right", data["titles"], "--on", "k=title_id")
    assert (f["code"], f["kind"]) == ("bad_column", "data"), f
