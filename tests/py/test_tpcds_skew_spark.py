"""A skewed TPC-DS on Spark (tests/py/tpcds_skew.py: NULL and placeholder customers, two hot
items in store_sales, at scale factor 0.1): queries in the TPC-DS style - a left join from the
fact, comma joins, chains of explicit joins in parentheses, filters - rewritten at a 1 KB
broadcast threshold and run on Spark with sort-merge joins. Each: the same rows as a multiset,
Spark's largest task at least 4x smaller, and the predicted largest task within 3% of the
measured one before and after (a join left as written before a rewritten one counted on each
branch's rows)."""

import pytest

import tpcds_skew
from conftest import ROOT, rewrite_json
from sparkrun import max_records, measured, multiset, sort_merge_joins
from test_tpcds import tpc  # noqa: F401  (fixture)

P = int(__import__("os").environ.get("SJ_P", "100"))
TABLES = ["store_sales", "customer", "item", "date_dim", "store_returns"]


@pytest.fixture(scope="module")
def skewed(tpc):
    return tpcds_skew.make(tpc / "tables", ROOT / "target" / "tpcds-skew-sf0.1")


@pytest.fixture(scope="module")
def sess(spark, skewed):
    with sort_merge_joins(spark, P) as s:
        for t in TABLES:
            s.read.parquet(str(skewed / f"{t}.parquet")).createOrReplaceTempView(t)
        yield s


def rewrite(skewed, sql, tmp_path):
    return rewrite_json(tmp_path, sql, "--tables", skewed, "--shuffle-partitions", P, "--broadcast-threshold", "1KB")


def predicted(r):
    """The query's predicted largest task (rows) before, after, and the bound after: the
    changed joins' and the largest task of every join left as written. A join left as written
    that runs in a rewritten join's branches (`in_branches`: it comes before it in the chain)
    runs on each branch's rows (Spark pushes the branch's condition on the key down to it):
    its `after` is counted on them; where it could not be, its tasks as written are a bound."""
    left = [u for u in r["unchanged_joins"] if u.get("before")]
    before = max([c["before"]["max_task_rows"] for c in r["changes"]] + [u["before"]["max_task_rows"] for u in left])
    after = max(
        [c["after"]["max_task_rows"] for c in r["changes"]]
        + [u["before"]["max_task_rows"] for u in left if not u.get("in_branches")]
        + [u["after"]["max_task_rows"] for u in left if u.get("in_branches") and u.get("after")]
    )
    uncounted = [u["before"]["max_task_rows"] for u in left if u.get("in_branches") and not u.get("after")]
    return before, after, max([after] + uncounted)


@pytest.mark.both_lines("TPC-DS's rewritten SQL and its joins' tasks as each line plans them")
@pytest.mark.parametrize("name", sorted(tpcds_skew.QUERIES))
def test_skewed_tpcds_query(sess, skewed, name, tmp_path):
    sql = tpcds_skew.QUERIES[name]
    r = rewrite(skewed, sql, tmp_path)
    assert r["changes"], r["unchanged_joins"]
    notes = [n for c in r["changes"] for n in c["notes"]]
    assert not any("estimate" in n for n in notes), notes
    rows0, tasks0 = measured(sess, sql)
    rows1, tasks1 = measured(sess, r["sql"])
    assert multiset(rows1) == multiset(rows0)
    before, after, bound = predicted(r)
    spark_before, spark_after = max_records(tasks0), max_records(tasks1)
    print(f"{name}: predicted {before} -> {after} (bound {bound}), Spark {spark_before} -> {spark_after}")
    assert abs(before - spark_before) <= 0.03 * spark_before, (before, spark_before, notes)
    assert spark_after * 4 <= spark_before, (spark_after, spark_before)
    # Every join in the branches is counted on the branches' rows: a prediction, not a bound.
    assert bound == after, (after, bound, r["unchanged_joins"])
    assert abs(after - spark_after) <= 0.03 * spark_after, (after, spark_after, notes)
