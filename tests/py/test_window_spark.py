"""Windows and aggregates over a hot partition, on real Spark. The data: 40,000 views where one
user holds 25% of the rows, NULL users 10% and the placeholder user -1 8% (and one country
40%, for a composite key). A window over the
whole partition is rewritten: the rows must be identical, the window stage's largest task at
least 4x smaller, and the predicted largest task before and after within 5% of Spark's. An
ordered window, a top-N ranking and two GROUP BYs (one with count(DISTINCT)) are not rewritten (the SQL comes back as given):
the ordered window's predicted task must match Spark's; for the top N and the GROUP BY, Spark's
largest task must be at least 4x under the rows the tool says Spark reduces before the shuffle,
and the records predicted for Spark's two map tasks (five files, --cores 2) within 5% of it."""
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import rewrite_json, run, write_parquet
from sparkrun import max_records, measured
from test_plan_spark import P, sj_spark  # noqa: F401  (fixtures)
from test_rewrite_spark import multiset


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    d = tmp_path_factory.mktemp("windows")
    rng = random.Random(21)
    n = 40_000
    users = [7] * 10_000 + [None] * 4_000 + [-1] * 3_200
    users += [rng.randrange(100, 1600) for _ in range(n - len(users))]
    rng.shuffle(users)
    # Five files, so that Spark's local[2] reads them in two map tasks (see --cores).
    cols = {
        "id": list(range(n)),
        "user_id": users,
        "plan": [rng.choice(["basic", "premium"]) for _ in range(n)],
        "day": [rng.randrange(30) for _ in range(n)],
        "hours": [round(rng.random() * 4, 3) for _ in range(n)],
        "title_id": [rng.randrange(1, 500) for _ in range(n)],
        "country": ["US" if rng.random() < 0.4 else f"C{rng.randrange(300):03d}" for _ in range(n)],
    }
    folder = d / "views"
    folder.mkdir()
    for i in range(5):
        write_parquet(folder / f"part-{i}.parquet", {c: v[i * n // 5:(i + 1) * n // 5] for c, v in cols.items()})
    return str(folder)


def rewrite(sql, views, tmp_path):
    return rewrite_json(tmp_path, sql, "--shuffle-partitions", P, "--cores", 2, "--table", f"views={views}")


def measured_broadcasting(spark, sql):
    """`measured`, with Spark broadcasting a small dimension by itself (10 MB threshold)."""
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "10MB")
    try:
        return measured(spark, sql)
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")


def within(predicted, measured_, share=0.05):
    return abs(predicted - measured_) <= share * max(measured_, 1)


REWRITTEN = {
    "sum-count-max": "SELECT v.*, sum(hours) OVER (PARTITION BY user_id) AS total, count(*) OVER (PARTITION BY user_id) AS n, "
                     "max(title_id) OVER (PARTITION BY user_id) AS top FROM views v WHERE title_id > 10",
    "share-of-total": "SELECT id, user_id, hours / sum(hours) OVER (PARTITION BY v.user_id) AS frac, avg(hours) OVER (PARTITION BY v.user_id) "
                      "FROM views v",
    "composite": "SELECT id, country, plan, count(*) OVER (PARTITION BY country, plan) AS n, min(day) OVER (PARTITION BY country, plan) AS first_day "
                 "FROM views",
    "cte-with-filters": "WITH recent AS (SELECT id, user_id, hours FROM views WHERE day >= 5) "
                        "SELECT id, sum(hours) OVER (PARTITION BY user_id) AS s FROM recent WHERE hours > 0.5 OR user_id IS NULL",
}


@pytest.mark.both_lines("the rewritten windows' SQL as each line runs it")
@pytest.mark.parametrize("name", list(REWRITTEN))
def test_whole_partition_window_rewritten_same_rows_smaller_task(sj_spark, views, tmp_path, name):
    sql = REWRITTEN[name]
    r = rewrite(sql, views, tmp_path)
    w = r["windows"][0]
    assert w["status"] == "rewritten", w
    assert w["plan"]["shape"]["kind"] == "whole_partition"
    hot = {json.dumps(h["value"]) for h in w["plan"]["hot"]}
    assert ({'["US", "basic"]', '["US", "premium"]'} if name == "composite" else {"7", "null", "-1"}) <= hot, hot
    sj_spark.read.parquet(views).createOrReplaceTempView("views")
    before_rows, before = measured(sj_spark, sql)
    after_rows, after = measured(sj_spark, r["sql"])
    assert multiset(before_rows) == multiset(after_rows)
    assert list(before_rows[0].__fields__) == list(after_rows[0].__fields__)
    mb, ma = max_records(before), max_records(after)
    assert mb >= 4 * ma, (mb, ma)
    p = w["plan"]
    assert within(p["before"]["max_task_rows"], mb), (p["before"], mb)
    assert within(p["after"]["max_task_rows"], ma), (p["after"], ma)


def test_window_over_a_join_counted_through_it(sj_spark, views, tmp_path):
    """A window over views joined to a dimension that holds 299 of the 499 titles, 49 of them
    twice, and a WHERE on both inputs: counted through the join (the rows it drops and repeats),
    so the prediction is exact; rewritten with the join in every branch. Spark broadcasts the
    dimension (as it would at 20 KB), so the window's shuffle is the only one."""
    ids = list(range(1, 300)) + list(range(1, 50))
    titles = write_parquet(tmp_path / "titles.parquet", {"title_id": ids, "genre": [f"g{i % 7}" for i in ids]})
    sql = ("SELECT v.id, v.user_id, t.genre, sum(v.hours) OVER (PARTITION BY v.user_id) AS total "
           "FROM views v JOIN titles t ON v.title_id = t.title_id WHERE v.day > 3 AND t.genre <> 'g3'")
    q = tmp_path / "q.sql"
    q.write_text(sql)
    p = run("rewrite", q, "-q", "--shuffle-partitions", P, "--format", "json", "--table", f"views={views}", "--table", f"titles={titles}")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    w = r["windows"][0]
    assert w["status"] == "rewritten", w
    assert not any("estimate" in n for n in w["notes"]), w["notes"]
    sj_spark.read.parquet(views).createOrReplaceTempView("views")
    sj_spark.read.parquet(titles).createOrReplaceTempView("titles")
    before_rows, before = measured_broadcasting(sj_spark, sql)
    after_rows, after = measured_broadcasting(sj_spark, r["sql"])
    assert multiset(before_rows) == multiset(after_rows)
    mb, ma = max_records(before), max_records(after)
    assert mb >= 4 * ma, (mb, ma)
    plan = w["plan"]
    assert within(plan["before"]["max_task_rows"], mb, 0.01) and within(plan["after"]["max_task_rows"], ma, 0.01), (plan["before"], plan["after"], mb, ma)
    # A GROUP BY over a join: Spark runs the broadcast join in views' map tasks, and
    # aggregates each task's rows per user before the shuffle.
    titles = write_parquet(tmp_path / "all_titles.parquet", {"title_id": list(range(1, 500)), "genre": [f"g{i % 7}" for i in range(1, 500)]})
    sj_spark.read.parquet(titles).createOrReplaceTempView("titles")
    sql = "SELECT v.user_id, count(*) AS n, max(t.genre) AS g FROM views v JOIN titles t ON v.title_id = t.title_id GROUP BY v.user_id"
    q.write_text(sql)
    p = run("rewrite", q, "-q", "--shuffle-partitions", P, "--cores", 2, "--format", "json", "--table", f"views={views}", "--table", f"titles={titles}")
    g = json.loads(p.stdout)["windows"][0]["plan"]
    assert g["verdict"] == "partial_aggregation" and g["map_tasks"] == 2
    _, tasks = measured_broadcasting(sj_spark, sql)
    assert within(g["records"]["max_task_rows"], max_records(tasks)), (g["records"], max_records(tasks))
    # Over the dimension that holds 299 of the titles (49 twice), with a WHERE on both inputs:
    # counted through the join, so a views row the join drops sends no record and one it
    # repeats counts twice in the hot user's rows; not counted on views before the join.
    partial = tmp_path / "titles.parquet"
    sj_spark.read.parquet(str(partial)).createOrReplaceTempView("titles")
    sql = ("SELECT v.user_id, count(*) AS n FROM views v JOIN titles t ON v.title_id = t.title_id "
           "WHERE v.day > 3 AND t.genre <> 'g3' GROUP BY v.user_id")
    q.write_text(sql)
    p = run("rewrite", q, "-q", "--shuffle-partitions", P, "--cores", 2, "--hot-factor", 3, "--format", "json", "--table", f"views={views}",
            "--table", f"titles={partial}")
    w = json.loads(p.stdout)["windows"][0]
    g = w["plan"]
    assert g["verdict"] == "partial_aggregation" and g["map_tasks"] == 2
    assert not any("estimate" in n for n in w["notes"]), w["notes"]
    rows, tasks = measured_broadcasting(sj_spark, sql)
    per_user = {r["user_id"]: r["n"] for r in rows}
    hot = {h["value"]: h["rows"] for h in g["hot"]}
    assert hot[7] == per_user[7], (hot, per_user[7])
    assert g["rows"] == sum(per_user.values()), (g["rows"], sum(per_user.values()))
    assert within(g["records"]["max_task_rows"], max_records(tasks)), (g["records"], max_records(tasks))
    # A top 3 per user over the same join: Spark limits each map task's rows per user after
    # the broadcast join, before the shuffle; predicted from the rows the join gives.
    sql = ("SELECT * FROM (SELECT v.id, v.user_id, t.genre, row_number() OVER (PARTITION BY v.user_id ORDER BY v.hours, v.id, t.genre) AS rn "
           "FROM views v JOIN titles t ON v.title_id = t.title_id WHERE v.day > 3 AND t.genre <> 'g3') x WHERE rn <= 3")
    q.write_text(sql)
    p = run("rewrite", q, "-q", "--shuffle-partitions", P, "--cores", 2, "--hot-factor", 3, "--format", "json", "--table", f"views={views}",
            "--table", f"titles={partial}")
    r = json.loads(p.stdout)
    assert r["sql"] == sql
    w = r["windows"][0]
    g = w["plan"]
    assert (g["shape"]["kind"], g["verdict"], g["map_tasks"]) == ("top_n", "group_limit", 2), g
    assert not any("estimate" in n for n in w["notes"]), w["notes"]
    assert {h["value"]: h["rows"] for h in g["hot"]}[7] == per_user[7], g["hot"]
    _, tasks = measured_broadcasting(sj_spark, sql)
    assert within(g["records"]["max_task_rows"], max_records(tasks)), (g["records"], max_records(tasks))


LEFT = {
    "running-sum": ("SELECT id, sum(hours) OVER (PARTITION BY user_id ORDER BY id) AS running FROM views", "ordered", "left_alone"),
    "lag": ("SELECT id, lag(hours) OVER (PARTITION BY user_id ORDER BY id) AS prev FROM views", "ordered", "left_alone"),
    "top-3": ("SELECT * FROM (SELECT id, user_id, row_number() OVER (PARTITION BY user_id ORDER BY hours, id) AS rn FROM views) x "
              "WHERE rn <= 3", "top_n", "group_limit"),
    "group-by-lists": ("SELECT user_id, sum(hours) AS s, collect_list(title_id) AS titles FROM views GROUP BY user_id",
                       "aggregate", "partial_aggregation"),
    "select-distinct": ("SELECT DISTINCT user_id FROM views", "aggregate", "partial_aggregation"),
    "group-by-distinct": ("SELECT user_id, count(DISTINCT title_id) AS titles, sum(hours) AS s FROM views GROUP BY user_id",
                          "distinct_aggregate", "partial_aggregation"),
    # Two and three DISTINCT columns: Spark copies each row per column (Expand), and once more
    # when another aggregate is not DISTINCT (sum(hours) here).
    "two-distinct": ("SELECT user_id, count(DISTINCT title_id) AS titles, count(DISTINCT day) AS days, sum(hours) AS s FROM views GROUP BY user_id",
                     "distinct_aggregate", "partial_aggregation"),
    "three-distinct": ("SELECT user_id, count(DISTINCT title_id) AS t, count(DISTINCT day) AS d, count(DISTINCT plan) AS p "
                       "FROM views GROUP BY user_id", "distinct_aggregate", "partial_aggregation"),
}


@pytest.mark.parametrize("name", list(LEFT))
def test_what_spark_handles_or_nothing_can_split_is_left_as_written(sj_spark, views, tmp_path, name):
    sql, shape, verdict = LEFT[name]
    r = rewrite(sql, views, tmp_path)
    assert r["sql"] == sql
    w = r["windows"][0]
    assert w["status"] == "left_as_written"
    p = w["plan"]
    assert (p["shape"]["kind"], p["verdict"]) == (shape, verdict)
    assert p["after"] is None and p["hot"][0]["value"] == 7
    # collect_list of a bigint: the hot user's list is 8 bytes a value.
    assert p["list_bytes"] == (8 * p["hot"][0]["rows"] if name == "group-by-lists" else None)
    sj_spark.read.parquet(views).createOrReplaceTempView("views")
    _, tasks = measured(sj_spark, sql)
    largest = max_records(tasks)
    if verdict == "left_alone":
        assert within(p["before"]["max_task_rows"], largest), (p["before"], largest)
    else:
        # Spark reduced the hot value per map task: its task reads far fewer records than rows,
        # as many as predicted.
        assert largest * 4 <= p["before"]["max_task_rows"], (largest, p["before"])
        assert p["map_tasks"] == 2, p
        predicted = p["records"]["max_task_rows"]
        orders = p["records_orders"]
        if name in ("two-distinct", "three-distinct"):
            # Spark numbers the columns in an order of its own: its task is within 5% of the
            # prediction for one of the orders, between the smallest and the largest.
            assert p["shape"]["groups"] == {"two": 2, "three": 3}[name.split("-")[0]], p["shape"]
            assert p["shape"]["regular"] == (name == "two-distinct"), p["shape"]
            assert orders["orders"] == {"two": 2, "three": 6}[name.split("-")[0]], orders
            assert 0.95 * orders["least_max_task_rows"] <= largest <= 1.05 * predicted, (orders, predicted, largest)
        else:
            assert orders is None and within(predicted, largest), (p["records"], largest)


@pytest.fixture(scope="module")
def nan_keys(tmp_path_factory):
    """A double key that is NaN in 40% of the rows (pyarrow's row-group statistics leave NaN
    out, so a pushed-down `k = NaN` skips those row groups), NULL in 10%; a dimension with NaN."""
    d = tmp_path_factory.mktemp("nan")
    rng = random.Random(3)
    n = 4000
    k = [float("nan")] * 1600 + [None] * 400 + [float(rng.randrange(300)) for _ in range(n - 2000)]
    rng.shuffle(k)
    pq.write_table(pa.table({"id": list(range(n)), "k": k, "x": [rng.random() for _ in range(n)]}), d / "l.parquet", row_group_size=500)
    rk = [float("nan")] + [float(i) for i in range(300)]
    pq.write_table(pa.table({"k": rk, "name": [f"n{i}" for i in range(len(rk))]}), d / "r.parquet")
    return str(d / "l.parquet"), str(d / "r.parquet")


@pytest.mark.parametrize("sql", [
    "SELECT id, k, sum(x) OVER (PARTITION BY k) AS s, count(*) OVER (PARTITION BY k) AS c FROM l",
    "SELECT l.id, l.k, r.name FROM l LEFT JOIN r ON l.k = r.k",
], ids=["window", "join"])
def test_a_hot_nan_key_keeps_its_rows(sj_spark, nan_keys, tmp_path, sql):
    """NaN is one value to Spark's shuffle and joins; the rewrite selects it with isnan(), never
    `= NaN`, which Parquet statistics can answer wrongly."""
    q = tmp_path / "q.sql"
    q.write_text(sql)
    p = run("rewrite", q, "-q", "--shuffle-partitions", P, "--hot-factor", 2, "--broadcast-threshold", 100, "--format", "json",
            "--table", f"l={nan_keys[0]}", "--table", f"r={nan_keys[1]}")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["changes"] or r["windows"][0]["status"] == "rewritten"
    assert "isnan(" in r["sql"] and "'NaN'" not in r["sql"], r["sql"]
    sj_spark.read.parquet(nan_keys[0]).createOrReplaceTempView("l")
    sj_spark.read.parquet(nan_keys[1]).createOrReplaceTempView("r")
    before, after = sj_spark.sql(sql).collect(), sj_spark.sql(r["sql"]).collect()
    assert len(after) == len(before) == 4000 and multiset(before) == multiset(after)


@pytest.mark.parametrize("sql,why", [
    ("SELECT id, user_id, sum(hours) OVER (PARTITION BY user_id) AS s FROM views WHERE rand() < 0.5", "nondeterministic_input"),
    ("SELECT id, user_id, sum(hours) OVER (PARTITION BY user_id) AS s, "
     "(SELECT max(c) FROM (SELECT count(*) OVER (PARTITION BY user_id) AS c FROM views v2) q) AS m FROM views", None),
], ids=["nondeterministic-where", "window-in-a-subquery"])
def test_review_cases(sj_spark, views, tmp_path, sql, why):
    """A WHERE each branch would draw again is not rewritten; a window inside a subquery of the
    select list is its own SELECT's, not replaced by the outer aggregate."""
    r = rewrite(sql, views, tmp_path)
    outer = [w for w in r["windows"] if "OVER (PARTITION BY user_id) AS s" in w["stage"] or w["stage"].startswith("sum(hours)")]
    if why:
        assert r["sql"] == sql and outer[0]["code"] == why, outer
        return
    assert outer and outer[0]["status"] == "rewritten", r["windows"]
    sj_spark.read.parquet(views).createOrReplaceTempView("views")
    before, after = sj_spark.sql(sql).collect(), sj_spark.sql(r["sql"]).collect()
    assert multiset(before) == multiset(after)
