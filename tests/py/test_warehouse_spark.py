"""Warehouse query shapes against real Spark, AQE and broadcasts off: each is
planned as Spark plans it, its predicted largest task is Spark's measured one, and the rewrite
returns the original's rows.

- A snowflake chain: the NULLs that a left join makes (facts that match no dimension row) all
  reach the next join with a NULL key, in one task.
- Equal keys from two tables: a hub table joined last to two tables already equal on its key.
- An equality that every branch of an OR shares: Spark pulls it out and joins on it."""
import random

import pytest

from conftest import rewrite_json, write_parquet
from sparkrun import max_records, measured, multiset
from test_plan_spark import P, sj_spark  # noqa: F401  (fixtures)

T0 = ["--broadcast-threshold", "100"]


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    d = tmp_path_factory.mktemp("warehouse")
    rng = random.Random(39)
    n = 60_000
    # facts: d_id 15% NULL, the rest over 2,000 ids of which dim1 has 1,800 (10% unmatched).
    d_id = [None if i % 20 < 3 else rng.randrange(2000) for i in range(n)]
    out = {
        "facts": write_parquet(d / "facts.parquet", {"fid": list(range(n)), "d_id": d_id, "amt": [rng.random() for _ in range(n)]}),
        "dim1": write_parquet(d / "dim1.parquet", {"id": list(range(1800)), "e_id": [rng.randrange(500) for _ in range(1800)]}),
        "dim2": write_parquet(d / "dim2.parquet", {"id": list(range(500)), "name": [f"e{i}" for i in range(500)]}),
    }
    # A hub `item` joined to sales and returns on one id; 30% of sales and 10 returns on item 7.
    sales_item = [7 if rng.random() < 0.3 else rng.randrange(3000) for _ in range(20_000)]
    ret_item = [7] * 10 + [rng.randrange(3000) for _ in range(290)]
    out["sales"] = write_parquet(d / "sales.parquet", {"s_id": list(range(20_000)), "s_item": sales_item, "qty": [rng.randrange(9) for _ in range(20_000)]})
    out["returns"] = write_parquet(d / "returns.parquet", {"r_id": list(range(300)), "r_item": ret_item})
    out["item"] = write_parquet(d / "item.parquet", {"i_id": list(range(3000)), "brand": [f"b{i % 40}" for i in range(3000)]})
    return out


def tables(wh, names_):
    return [a for n in names_ for a in ("--table", f"{n}={wh[n]}")]


def register(spark, wh, names_):
    for n in names_:
        spark.read.parquet(wh[n]).createOrReplaceTempView(n)


def rewrite(sql, names_, wh, tmp_path, *extra):
    return rewrite_json(tmp_path, sql, "--shuffle-partitions", P, *T0, *tables(wh, names_), *extra)


SNOWFLAKE = "SELECT f.fid, d.e_id, e.name FROM facts f LEFT JOIN dim1 d ON f.d_id = d.id LEFT JOIN dim2 e ON d.e_id = e.id"


def test_nulls_an_outer_join_makes_reach_the_next_join(sj_spark, wh, tmp_path):
    """The second join's left rows with a NULL d.e_id are the facts with a NULL d_id and those
    that match no dim1 row, in one task: counted through the first join, whose NULLs skip it."""
    spark = sj_spark
    names_ = ["facts", "dim1", "dim2"]
    register(spark, wh, names_)
    r = rewrite(SNOWFLAKE, names_, wh, tmp_path)
    second = [c for c in r["changes"] if "e.id" in " ".join(c["keys"])]
    assert second, r["unchanged_joins"]
    c = second[0]
    assert c["hot_keys"][0]["value"] is None, c["hot_keys"]
    rows0, tasks0 = measured(spark, SNOWFLAKE)
    rows1, tasks1 = measured(spark, r["sql"])
    assert multiset(rows1) == multiset(rows0)
    # The second join's stage is the last one to read a shuffle of both sides.
    spark_max = max_records(tasks0)
    predicted = max(x["before"]["max_task_rows"] for x in r["changes"])
    assert abs(predicted - spark_max) <= 0.03 * spark_max, (predicted, spark_max, c["notes"])
    assert c["before"]["max_task_rows"] == predicted
    assert max_records(tasks1) * 4 <= spark_max, (max_records(tasks1), spark_max)


SHAPES = [
    # The hub joined last: its keys on the joins before are s.s_item and r.r_item, equal there.
    ("equal-keys-of-two-tables", ["sales", "returns", "item"],
     "SELECT s.s_id, r.r_id, i.brand FROM sales s, returns r, item i "
     "WHERE s.s_item = r.r_item AND i.i_id = s.s_item AND i.i_id = r.r_item"),
    # The same as explicit joins, the hub's ON naming both.
    ("equal-keys-explicit", ["sales", "returns", "item"],
     "SELECT s.s_id, r.r_id, i.brand FROM sales s JOIN returns r ON s.s_item = r.r_item "
     "JOIN item i ON i.i_id = r.r_item AND s.s_item = i.i_id WHERE s.qty < 7"),
    # The equality shared by every branch of an OR is the join's key.
    ("equality-under-or", ["sales", "item"],
     "SELECT s.s_id, i.brand FROM sales s, item i WHERE (s.s_item = i.i_id AND s.qty > 5) "
     "OR (i.i_id = s.s_item AND i.brand = 'b7') OR (s.s_item = i.i_id AND s.qty = 0 AND i.brand > 'b2')"),
    ("equality-under-or-explicit", ["sales", "item"],
     "SELECT s.s_id, i.brand FROM sales s JOIN item i ON (s.s_item = i.i_id AND s.qty > 5) OR (s.s_item = i.i_id AND i.brand = 'b7')"),
    # The hot item's sales on the side a LEFT JOIN does not keep, with a condition on that side
    # in ON: its item row is broadcast to them (an inner join), and kept with NULLs apart
    # when none of them passes the condition.
    ("non-preserved-with-on-condition", ["item", "sales"],
     "SELECT i.i_id, i.brand, s.s_id FROM item i LEFT JOIN sales s ON i.i_id = s.s_item AND s.qty > 2"),
    # A condition on the kept side in ON: a kept row that fails it matches nothing (item 7's
    # brand is b7: all its sales are then left out, and it is kept once with NULLs).
    ("non-preserved-kept-side-condition", ["item", "sales"],
     "SELECT i.i_id, i.brand, s.s_id FROM item i LEFT JOIN sales s ON i.i_id = s.s_item AND i.brand <> 'b7' AND i.brand <> 'b9'"),
    # A cast Spark removes (to the column's own type) leaves the column as the key.
    ("key-in-a-cast-spark-removes", ["sales", "item"],
     "SELECT s.s_id, i.brand FROM sales s JOIN item i ON CAST(s.s_item AS BIGINT) = i.i_id"),
    ("right-join-on-condition", ["sales", "item"],
     "SELECT i.i_id, s.s_id, s.qty FROM sales s RIGHT JOIN item i ON s.s_item = i.i_id AND s.qty <> 4"),
]


@pytest.mark.both_lines("the warehouse shapes each line plans as equi-joins")
@pytest.mark.parametrize("names_,sql", [c[1:] for c in SHAPES], ids=[c[0] for c in SHAPES])
def test_shapes_spark_plans_as_equi_joins_are_planned(sj_spark, wh, names_, sql, tmp_path):
    """Every join is planned (none left as written), the hot item's join is rewritten, the
    predicted largest task is Spark's within 3%, and the rows are the original's."""
    spark = sj_spark
    register(spark, wh, names_)
    r = rewrite(sql, names_, wh, tmp_path)
    assert not r["unchanged_joins"], r["unchanged_joins"]
    last = r["changes"][-1]
    assert last["hot_keys"][0]["value"] in (7, [7, 7]), last["hot_keys"]
    rows0, tasks0 = measured(spark, sql)
    rows1, tasks1 = measured(spark, r["sql"])
    assert multiset(rows1) == multiset(rows0)
    spark_max = max_records(tasks0)
    predicted = max(x["before"]["max_task_rows"] for x in r["changes"])
    assert abs(predicted - spark_max) <= 0.03 * spark_max, (predicted, spark_max, [x["notes"] for x in r["changes"]])
    assert max_records(tasks1) * 4 <= spark_max, (max_records(tasks1), spark_max)


@pytest.mark.parametrize("sql,converted", [
    # A WHERE condition on the NULL-filled side: Spark runs the join as an inner one, and infers
    # its keys are not NULL (the facts' NULL d_id rows are filtered out before the shuffle).
    ("SELECT f.fid, d.e_id FROM facts f LEFT JOIN dim1 d ON f.d_id = d.id WHERE d.e_id <> 3", 1),
    # The same on the second join of a chain: it runs as an inner join; the first becomes one
    # only after Spark inferred its filters, so the facts' NULL d_id rows still shuffle into
    # one task of it, as a left join's do.
    ("SELECT f.fid, d.e_id, e.name FROM facts f LEFT JOIN dim1 d ON f.d_id = d.id LEFT JOIN dim2 e ON d.e_id = e.id WHERE e.name <> 'e3'", 0),
    # A later inner join on d.e_id: the first join shuffles as a left join too.
    ("SELECT f.fid, d.e_id, e.name FROM facts f LEFT JOIN dim1 d ON f.d_id = d.id JOIN dim2 e ON d.e_id = e.id", 0),
], ids=["where-on-the-null-side", "where-on-a-later-null-side", "later-inner-join"])
def test_outer_joins_are_predicted_as_spark_runs_them(sj_spark, wh, sql, converted, tmp_path):
    """Spark's EliminateOuterJoin: each join's largest task is predicted as Spark runs it, a
    rewritten join it turns inner says so (`converted`: how many), and the rewrite's rows are
    the original's."""
    spark = sj_spark
    names_ = ["facts", "dim1", "dim2"]
    register(spark, wh, names_)
    r = rewrite(sql, names_, wh, tmp_path)
    joins = r["changes"] + r["unchanged_joins"]
    notes = [n for c in r["changes"] for n in c["notes"] if "EliminateOuterJoin" in n]
    inner = [c for c in r["changes"] if c["how"] == "inner"]
    assert len(notes) == len(inner) == converted or not r["changes"], (notes, [c["how"] for c in r["changes"]])
    predicted = max(u["before"]["max_task_rows"] for u in joins if u.get("before"))
    rows0, tasks = measured(spark, sql)
    spark_max = max_records(tasks)
    assert abs(predicted - spark_max) <= 0.03 * spark_max, (predicted, spark_max, joins)
    rows1, _ = measured(spark, r["sql"])
    assert multiset(rows1) == multiset(rows0)
