"""Random warehouse queries (whquery.py: stars, snowflakes, a hub joined to two facts, ORs with a
shared equality, hot keys on the side an outer join does not keep, grouped subqueries), each
rewritten and checked: 200 on Polars (`skewjoin verify --engine polars`, seeds 0-199) and 40 on
Spark (3.5, and 4.x in its own run; original and rewrite run by the test's session, rows compared
as multisets, seeds 5000-5039). A failure prints the seed, the query, its tables and the command that writes the
case again (`python tests/py/whquery.py SEED`)."""
import pytest

import randquery as rq
import whquery as wq
from conftest import binary

SEEDS = range(200)
SPARK_SEEDS = range(5000, 5040)

_outcomes = {}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every case, run up front two at a time: {seed: (case, tables, Outcome)}."""
    b = binary()
    folder = tmp_path_factory.mktemp("whquery")
    groups = wq.Group(folder)
    cases = [(wq.query(s, groups(s)), groups(s)) for s in SEEDS]
    _outcomes.update(rq.check_all_polars(b, cases, folder))
    return _outcomes


@pytest.mark.parametrize("seed", SEEDS)
def test_warehouse_query_polars(outcomes, seed):
    case, tabs, o = outcomes[seed]
    assert o.kind != "failed", f"{rq.describe(case, tabs)}\nrewrite: {o.changes or 'nothing rewritten'}\n{o.message}"


def test_warehouse_summary(outcomes, capsys):
    """The counts, printed: most cases run on Polars, and many are rewritten."""
    got = [o for _, _, o in outcomes.values()]
    line = rq.summary(got, "polars").replace("random queries", "random warehouse queries")
    with capsys.disabled():
        print(f"\n{line}")
    assert sum(o.kind == "refused" for o in got) <= 0.1 * len(got), line
    assert sum(o.kind == "rewritten" for o in got) >= 0.2 * len(got), line


@pytest.fixture(scope="module")
def spark_cases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("whquery-spark")
    groups = wq.Group(folder)
    return folder, {s: (wq.query(s, groups(s)), groups(s)) for s in SPARK_SEEDS}


@pytest.mark.parametrize("seed", rq.params(SPARK_SEEDS, {}, both_every=4, why="the rewritten warehouse SQL as Spark 4.x reads it"))
def test_warehouse_query_spark(spark, spark_cases, seed):
    from sparkrun import multiset
    folder, cases = spark_cases
    case, tabs = cases[seed]
    rc, rw, err = rq.rewrite(binary(), case, tabs, folder)
    assert rc == 0 and rw is not None, f"{rq.describe(case, tabs)}\n{err}"
    if not rq.rewritten(rw):
        return
    for t in case.tables:
        spark.read.parquet(tabs[t].path).createOrReplaceTempView(t)
    before = multiset(spark.sql(case.sql).collect())
    after = multiset(spark.sql(rw["sql"]).collect())
    assert after == before, f"{rq.describe(case, tabs)}\nrewrite: {rq.changes_line(rw)}\nrows {sum(before.values())} vs {sum(after.values())}"
