"""The TPC-DS queries that `rewrite` changes (scale factor 0.1, every join shuffled at a 1 KB
broadcast threshold, the NULL foreign keys of the fact tables hot) give the same rows on Spark
as the originals, compared as multisets (floats and decimals to 6 decimal places: a UNION ALL
changes the order of a sum)."""
import glob
import os
from collections import Counter
from decimal import Decimal

import pytest

from test_tpcds import rewrites, tpc  # noqa: F401  (fixture)


def norm(r):
    return tuple(round(float(x), 6) if isinstance(x, (float, Decimal)) else x for x in r)


@pytest.fixture(scope="module")
def changed(tpc):
    return {q: r["sql"] for q, r in rewrites(tpc, "1KB").items() if r["changes"]}


@pytest.mark.both_lines("the 99 queries' rewritten SQL as each line parses it")
def test_rewritten_tpcds_queries_give_the_same_rows(spark, tpc, changed):
    for p in glob.glob(str(tpc / "tables" / "*.parquet")):
        spark.read.parquet(p).createOrReplaceTempView(os.path.basename(p)[: -len(".parquet")])
    assert len(changed) >= 4, sorted(changed)
    for q, sql in sorted(changed.items()):
        original = spark.sql((tpc / "queries" / f"{q}.sql").read_text()).collect()
        rewritten = spark.sql(sql).collect()
        assert Counter(map(norm, rewritten)) == Counter(map(norm, original)), q
