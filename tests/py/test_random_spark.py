"""Random join queries (randquery.py) on real Spark: 50 cases, seeds 100000-100049 (two groups of
random skewed tables), 20 more with AQE on (seeds 100050-100069), and 30 window and aggregate cases (seeds 1000-1029, the first window
cases of test_random_polars.py), each rewritten by `skewjoin rewrite`; where anything was rewritten, the
original and the rewrite run on the shared local Spark session and must return the same rows
(as a multiset, floating-point values to 9 significant digits, as in test_rewrite_spark.py) and
the same column names. A rewrite that exits with anything but 0 fails too. A failure prints the
seed, the query, the tables and the difference, and the command that writes the case again.

The queries are drawn as for test_random_polars.py, but smaller (a join of at most 20,000 rows,
so that collecting both results stays quick) and with more ON conditions in parentheses, which
Polars cannot run today. scripts/test runs this file on Spark 4.x as well, with every other
seed (25 joins, 15 windows): the differences between the versions are in how they read SQL,
and half the cases keep the suite's time."""
import pytest

import randquery as rq
from conftest import binary
from sparkrun import sort_merge_joins
from test_rewrite_spark import multiset

SEEDS = range(100_000, 100_050)
# Every 5th random query also on Spark 4.x, where the rewritten SQL is read anew.
ON_BOTH = "the rewritten SQL as Spark 4.x reads it (string escapes, ANSI mode)"
MAX_ROWS = 20_000
PARENS = 0.15

# Cases that fail today because of a skewjoin bug (a rewrite that changes the rows or the
# columns): xfail(strict), so that the fix shows (and the entry must then go).
KNOWN_BUGS = {}

_outcomes = []


@pytest.fixture(scope="module")
def spark_random(spark):
    """The shared session with skewjoin's partitions (8); AQE and broadcasts off, as in the
    other Spark suites, so that the joins run as sort-merge joins on 8 partitions."""
    with sort_merge_joins(spark, 8) as s:
        yield s


@pytest.fixture(scope="module")
def groups(tmp_path_factory):
    return rq.Group(tmp_path_factory.mktemp("randquery-spark"))


_registered = {}


def register(spark, tabs):
    """The group's tables as temporary views (again only when the group changed)."""
    key = tuple(sorted(t.path for t in tabs.values()))
    if _registered.get("key") != key:
        for t in tabs.values():
            spark.read.parquet(t.path).createOrReplaceTempView(t.name)
        _registered["key"] = key


@pytest.mark.parametrize("seed", rq.params(SEEDS, KNOWN_BUGS, both_every=5, why=ON_BOTH))
def test_random_query_spark(spark_random, groups, seed, tmp_path):
    spark = spark_random
    tabs, bound = groups(seed)
    case = rq.query(seed, tabs, bound, max_rows=MAX_ROWS, parens=PARENS)
    what = rq.describe(case, tabs)
    rc, rw, err = rq.rewrite(binary(), case, tabs, tmp_path)
    if rc != 0 or rw is None or "panicked" in err:
        _outcomes.append(rq.Outcome("failed", err))
        pytest.fail(f"{what}\nskewjoin rewrite exited {rc}: {err.strip()[:2000]}")
    compare(spark, case, tabs, rw, what)


def compare(spark, case, tabs, rw, what):
    """Run the original and the rewrite (when something was rewritten): same rows, same columns."""
    if not rq.rewritten(rw):
        _outcomes.append(rq.Outcome("unchanged", ""))
        return
    register(spark, tabs)
    df0 = spark.sql(case.sql)
    rows0 = df0.collect()
    try:
        df1 = spark.sql(rw["sql"])
        rows1 = df1.collect()
    except Exception as e:  # the rewrite must run wherever the original runs
        _outcomes.append(rq.Outcome("failed", str(e), len(rows0)))
        pytest.fail(f"{what}\nrewrite: {rq.changes_line(rw)}\nthe rewrite fails on Spark: {str(e).splitlines()[0]}\n{rw['sql']}")
    m0, m1 = multiset(rows0), multiset(rows1)
    ok = m0 == m1 and df0.columns == df1.columns
    _outcomes.append(rq.Outcome("rewritten" if ok else "failed", "", len(rows0)))
    if not ok:
        lost, extra = m0 - m1, m1 - m0
        pytest.fail(f"{what}\nrewrite: {rq.changes_line(rw)}\nrows {len(rows0)} vs {len(rows1)}; columns {df0.columns} vs {df1.columns}\n"
                    f"only in the original ({sum(lost.values())}): {list(lost)[:3]}\nonly in the rewrite ({sum(extra.values())}): {list(extra)[:3]}")


# The same generator with AQE on, its sizes scaled to the tables (a few KB), so that Spark
# coalesces partitions, splits skewed ones and switches joins to broadcast at run time while the
# rewrite's rows are compared: seeds 100050-100069 (every other on 4.x). skewjoin plans them with
# the same settings (its AQE model) and rewrites every movable hot key (`--min-gain off`).
AQE_SEEDS = range(100_050, 100_070)
AQE = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": "2k",
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "4k",
    "spark.sql.adaptive.coalescePartitions.minPartitionSize": "512",
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "1k",
}


@pytest.fixture
def spark_aqe(spark):
    """The shared session with AQE on and the sizes of `AQE`, 8 partitions, no broadcast by the
    planner's size estimate (AQE may still switch a join to broadcast at run time); each setting
    back as it was after the test."""
    wanted = {"spark.sql.shuffle.partitions": "8", "spark.sql.autoBroadcastJoinThreshold": "-1", **AQE}
    was = {k: spark.conf.get(k, None) for k in wanted}
    for k, v in wanted.items():
        spark.conf.set(k, v)
    try:
        yield spark
    finally:
        for k, v in was.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


@pytest.mark.parametrize("seed", rq.params(AQE_SEEDS, {}, both_every=4, why="AQE's plans of the rewritten SQL on Spark 4.x"))
def test_random_query_spark_aqe(spark_aqe, groups, seed, tmp_path):
    """A random join query rewritten under AQE's settings: the same rows on Spark with AQE on."""
    tabs, bound = groups(seed)
    case = rq.query(seed, tabs, bound, max_rows=MAX_ROWS, parens=PARENS)
    what = rq.describe(case, tabs) + "\nsettings: " + " ".join(f"{k}={v}" for k, v in AQE.items())
    rc, rw, err = rq.rewrite(binary(), case, tabs, tmp_path, {**AQE, "spark.sql.autoBroadcastJoinThreshold": "-1"})
    if rc != 0 or rw is None or "panicked" in err:
        _outcomes.append(rq.Outcome("failed", err))
        pytest.fail(f"{what}\nskewjoin rewrite exited {rc}: {err.strip()[:2000]}")
    compare(spark_aqe, case, tabs, rw, what)


WINDOW_SEEDS = range(1000, 1030)


@pytest.mark.parametrize("seed", rq.params(WINDOW_SEEDS, {}, both_every=5, why=ON_BOTH))
def test_random_window_spark(spark_random, groups, seed, tmp_path):
    """Windows and aggregates over one input (randquery.window_query), as the joins above."""
    tabs, bound = groups(seed)
    case = rq.window_query(seed, tabs, bound)
    what = rq.describe(case, tabs)
    rc, rw, err = rq.rewrite(binary(), case, tabs, tmp_path)
    if rc != 0 or rw is None or "panicked" in err:
        _outcomes.append(rq.Outcome("failed", err))
        pytest.fail(f"{what}\nskewjoin rewrite exited {rc}: {err.strip()[:2000]}")
    compare(spark_random, case, tabs, rw, what)


@pytest.mark.both_lines("the summary of the cases that ran on this line")
def test_random_summary_spark(capsys):
    """The counts of the cases above, printed (run after them: pytest keeps the file's order);
    the generator must mostly write queries the tool rewrites, or these cases test little."""
    if not _outcomes:
        pytest.skip("no case ran")
    line = rq.summary(_outcomes, "spark", len(KNOWN_BUGS))
    with capsys.disabled():
        print(f"\n{line}")
    kinds = [o.kind for o in _outcomes]
    assert set(kinds) <= {"rewritten", "unchanged", "failed"}, line
    assert kinds.count("rewritten") >= 0.25 * len(kinds), line
