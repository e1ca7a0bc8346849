"""`skewjoin.spark` on a live SparkSession (Spark 3.5 and 4.x in local mode; Spark Connect on
4.x): `advise` on a DataFrame join, on a join of temporary views and on SQL text gives the same
plan as `skewjoin plan` on those files under the same settings; `verify` runs both queries on
the session and compares their rows.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, binary, run
from test_spark_engine import EVENTS, SPARK4, TITLES

sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("SKEWJOIN_BIN", binary())

from skewjoin import spark as sj  # noqa: E402

pytestmark = pytest.mark.both_lines("advise reads each line's EXPLAIN text and settings; Spark Connect is 4.x's")

SQL = (ROOT / "samples" / "query.sql").read_text()
LINE = "4.x" if SPARK4 else "3.5"


def cli_plan(how, conf):
    """`skewjoin plan` on the sample files with the settings as the session holds them."""
    args = ["plan", "--left", EVENTS, "--right", TITLES, "--on", "title_id", "--how", how, "--spark-version", LINE,
            "--min-gain", "off", "--format", "json", "-q"]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    p = run(*args, check=True)
    return json.loads(p.stdout)


@pytest.fixture
def session(spark):
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "256KB")
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    # Spark's default: at the suite's 8 partitions no sample key is hot.
    spark.conf.set("spark.sql.shuffle.partitions", "200")
    yield spark
    spark.conf.set("spark.sql.shuffle.partitions", "8")
    spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.unset("spark.sql.adaptive.enabled")


def settings_of(data):
    return {s["key"]: s["value"] for s in data["settings"]}


def test_advise_a_dataframe_join_as_plan_on_its_files(session):
    e, t = session.read.parquet(EVENTS), session.read.parquet(TITLES)
    a = sj.advise(e.join(t, "title_id", "left"), min_gain="off")
    assert [j.how for j in a.joins] == ["left"] and a.joins[0].plan is not None, a.text
    j = a.joins[0]
    assert (j.left, j.right, j.on) == (EVENTS, TITLES, [("title_id", "title_id")])
    want = cli_plan("left", {"spark.sql.shuffle.partitions": "200", "spark.sql.autoBroadcastJoinThreshold": "256KB",
                             "spark.sql.adaptive.enabled": "true", "spark.master": "local[2]"})
    got = j.plan.data
    mine = lambda p: {k: v for k, v in p.items() if k not in ("settings", "cluster")}  # noqa: E731
    assert mine(got) == mine(want)
    # The cluster's size is the live session's, named as such; the CLI read local[2] itself.
    assert (got["cluster"]["cores"], got["cluster"]["source"]) == (2, "session"), got["cluster"]
    assert "default parallelism 2" in got["cluster"]["detail"]
    assert (want["cluster"]["cores"], want["cluster"]["source"]) == (2, "settings")
    assert settings_of(got)["spark.sql.shuffle.partitions"] == "200"
    assert settings_of(got)["spark.sql.autoBroadcastJoinThreshold"] == "256KB"
    # The right side's only filter is Spark's own IS NOT NULL on the key: no note.
    assert j.notes == []
    assert j.plan.before.max_task_rows == want["before"]["max_task_rows"] > 60_000


def test_advise_sql_over_temporary_views_plans_and_rewrites(session):
    session.read.parquet(EVENTS).createOrReplaceTempView("events")
    session.read.parquet(TITLES).createOrReplaceTempView("titles")
    a = sj.advise(SQL, spark=session, min_gain="off")
    assert len(a.joins) == 1 and a.joins[0].plan is not None, a.text
    # samples/query.sql filters events by day: the counts are of the whole table, and it says so.
    assert any("Spark filters the left side" in n and "day" in n for n in a.joins[0].notes), a.joins[0].notes
    assert a.rewrite is not None and a.rewrite.changed
    conf = sj.session_conf(session)
    args = ["rewrite", str(ROOT / "samples" / "query.sql"), "--table", f"events={EVENTS}", "--table", f"titles={TITLES}",
            "--spark-version", LINE, "--min-gain", "off", "--format", "json", "-q"]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    # The session's size given as advise gives it (--cores, --cores-from): the same rewrite.
    size = sj.session_size(session)
    assert size["cores"] == 2 and size["cores_from"].startswith("the session: local[2]"), size
    args += ["--cores", str(size["cores"]), "--cores-from", size["cores_from"]]
    assert a.rewrite.data == json.loads(run(*args, check=True).stdout)
    assert (a.rewrite.data["cluster"]["cores"], a.rewrite.data["cluster"]["source"]) == (2, "session")
    check = sj.verify(SQL, a.rewrite.sql, spark=session)
    assert check.identical and check.before.rows == check.after.rows > 0, str(check)
    assert check.before.max_task_records is not None and check.after.max_task_records is not None
    wrong = sj.verify(SQL, SQL + " LIMIT 5", spark=session, runs=2)
    assert not wrong.identical and wrong.only_in_original
    # Two runs: the first warms up, the second is timed.
    for r in (wrong.before, wrong.after):
        assert r.warmup_ms is not None and r.runs_ms == [r.wall_ms], r


def test_advise_names_what_it_cannot_plan(session):
    e, t = session.read.parquet(EVENTS), session.read.parquet(TITLES)
    grouped = e.groupBy("title_id").count()
    a = sj.advise(grouped.join(t, "title_id"), min_gain="off")
    assert len(a.joins) == 1 and a.joins[0].plan is None
    assert "HashAggregate" in a.joins[0].reason, a.joins[0].reason
    computed = e.join(t, e.user_id == t.title_id.substr(1, 3))
    b = sj.advise(computed, min_gain="off")
    assert b.joins and b.joins[0].plan is None and "computed" in b.joins[0].reason, b.text


ADVISE_OVER_CONNECT = """
import json, sys
sys.path.insert(0, {python!r})
from pyspark.sql import SparkSession
from skewjoin import spark as sj
s = SparkSession.builder.remote({url!r}).getOrCreate()
s.conf.set("spark.sql.autoBroadcastJoinThreshold", "256KB")
s.conf.set("spark.sql.shuffle.partitions", "16")
e, t = s.read.parquet({events!r}), s.read.parquet({titles!r})
a = sj.advise(e.join(t, "title_id", "left"), min_gain="off")
e.createOrReplaceTempView("events"); t.createOrReplaceTempView("titles")
b = sj.advise({sql!r}, min_gain="off")
c = sj.verify({sql!r}, b.rewrite.sql)
# Counted on the session's own Spark: what advise does with files it cannot reach from here.
o = sj.on_spark(s)
d = sj.advise(e.join(t, "title_id", "left"), min_gain="off", **o)
dj = d.joins[0].plan.data if d.joins[0].plan else {{"reason": d.joins[0].reason}}
print(json.dumps({{"on_spark": o, "on_spark_plan": dj,
                  "df": a.joins[0].plan.data, "on": a.joins[0].on, "conf": sj.session_conf(s),
                  "sql": b.joins[0].plan.data, "changed": b.rewrite.changed, "identical": c.identical,
                  "rows": [c.before.rows, c.after.rows]}}))
"""


def test_advise_over_spark_connect(connect):
    code = ADVISE_OVER_CONNECT.format(python=str(ROOT / "python"), url=connect, events=EVENTS, titles=TITLES, sql=SQL)
    env = dict(os.environ, SKEWJOIN_BIN=binary())
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["conf"]["spark.sql.shuffle.partitions"] == "16"
    want = cli_plan("left", got["conf"])
    for name in ("df", "sql"):
        assert {k: v for k, v in got[name].items() if k not in ("settings", "notes")} == \
            {k: v for k, v in want.items() if k not in ("settings", "notes")}, name
    assert got["on"] == [["title_id", "title_id"]]
    assert got["on_spark"] == {"engine": "spark", "remote": connect, "python": sys.executable}
    counted = got["on_spark_plan"]
    assert "reason" not in counted, counted
    assert counted["spark"]["master"] == connect
    assert [(h["value"], h["rows"]) for h in counted["hot_keys"]] == [(h["value"], h["rows"]) for h in want["hot_keys"]]
    assert got["changed"] and got["identical"] and got["rows"][0] == got["rows"][1] > 0


def test_advise_counts_on_the_sessions_spark_when_asked(session):
    """What advise does with files it cannot reach from here: the session's master, counted by
    the Spark engine through this Python's pyspark; the same hot keys as counted here."""
    e, t = session.read.parquet(EVENTS), session.read.parquet(TITLES)
    on = sj.on_spark(session)
    assert on == {"engine": "spark", "master": "local[2]", "python": sys.executable}
    a = sj.advise(e.join(t, "title_id", "left"), min_gain="off", **on)
    here = sj.advise(e.join(t, "title_id", "left"), min_gain="off")
    counted = a.joins[0].plan
    assert counted is not None, a.joins[0].reason
    assert counted.data["spark"]["master"] == "local[2]"
    assert [(h.value, h.rows) for h in counted.hot_keys] == [(h.value, h.rows) for h in here.joins[0].plan.hot_keys]
    assert sj.reachable(EVENTS) and sj.reachable("s3://bucket/t") and not sj.reachable("/no/such/table")
