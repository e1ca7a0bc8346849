"""skewjoin's counts and Spark partitions against real Spark, on Parquet that Spark itself wrote:
for every key type, `skewjoin keys` must give, value by value, the count Spark's GROUP BY gives
and the hash Spark's `hash()` gives (so the same `pmod(hash, N)` shuffle partition)."""
import datetime as dt
import json
from decimal import Decimal

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from conftest import CORPUS, run

UTC = dt.timezone.utc
STRINGS = ["", " ", "a", "ab", "abc", "abcd", "abcde", "unknown", "é", "日本語", "🙂x", "x'); DROP TABLE t; --", "tab\there", None]


def rows_for(values):
    """Value i repeated i+1 times, so that every value has its own count."""
    out = []
    for i, v in enumerate(values):
        out += [v] * (i + 1)
    return out


CASES = [
    ("b", T.BooleanType(), [True, False, None]),
    ("i8", T.ByteType(), [0, 1, -1, 127, -128, None]),
    ("i16", T.ShortType(), [0, -1, 32767, 1234, None]),
    ("i32", T.IntegerType(), [0, 1, -1, 42, 2147483647, -2147483648, None]),
    ("i64", T.LongType(), [0, -1, 1 << 40, 9223372036854775807, -9223372036854775808, None]),
    ("f32", T.FloatType(), [0.0, -0.0, 1.5, float("nan"), float("-inf"), None]),
    ("f64", T.DoubleType(), [0.0, -0.0, 0.1, float("nan"), 1e300, None]),
    ("s", T.StringType(), STRINGS),
    ("bin", T.BinaryType(), [bytearray(b""), bytearray(b"\x01"), bytearray(b"\xff\xfe\xfd"), bytearray(16), None]),
    ("d", T.DateType(), [dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1, 1, 1), None]),
    ("ts", T.TimestampType(), [dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 1, 12, 34, 56, 789012, tzinfo=UTC), dt.datetime(1960, 6, 1, 0, 0, 0, 1, tzinfo=UTC), None]),
    ("ntz", T.TimestampNTZType(), [dt.datetime(2024, 1, 1, 1, 2, 3), dt.datetime(1970, 1, 1), None]),
    ("dec", T.DecimalType(10, 2), [Decimal("123.45"), Decimal("-0.01"), Decimal("0.00"), None]),
    ("dec18", T.DecimalType(18, 3), [Decimal("999999999999999.999"), Decimal("-1.000"), None]),
    ("wide", T.DecimalType(38, 10), [Decimal("1234567890123456789012345678.0123456789"), Decimal("-1.5"), Decimal("0"), None]),
]


@pytest.fixture(scope="module")
def spark_table(spark, tmp_path_factory):
    """One Parquet table written by Spark with a column of every type (columns of unequal
    length are padded with NULL)."""
    n = max(len(rows_for(v)) for _, _, v in CASES)
    schema = T.StructType([T.StructField(name, t) for name, t, _ in CASES])
    cols = [rows_for(v) + [None] * (n - len(rows_for(v))) for _, _, v in CASES]
    df = spark.createDataFrame(list(zip(*cols)), schema)
    path = str(tmp_path_factory.mktemp("spark") / "types")
    df.coalesce(2).write.parquet(path)
    return path


def spark_truth(spark, path, cols, fmt="parquet"):
    df = spark.read.format(fmt).load(path)
    g = df.groupBy(*cols).agg(F.count(F.lit(1)).alias("n"), F.first(F.hash(*cols)).alias("h"),
                              F.first(F.expr(f"pmod(hash({', '.join(cols)}), 200)")).alias("p"))
    return sorted((r["h"], r["p"], r["n"]) for r in g.select("h", "p", "n").collect())


def ours(path, col):
    p = run("keys", path, "--column", col, "--top", "0", "--format", "json", "--quiet", check=True)
    c = json.loads(p.stdout)["columns"][0]
    return c, sorted((e["spark_hash"], e["spark_partition"], e["count"]) for e in c["top"])


@pytest.mark.parametrize("col", [c[0] for c in CASES])
def test_counts_and_partitions_match_spark(spark, spark_table, col):
    c, got = ours(spark_table, col)
    want = spark_truth(spark, spark_table, [col])
    assert got == want
    assert c["distinct"] == len([1 for v in CASES if v[0] == col for x in v[2] if x is not None]) - (
        1 if col in ("f32", "f64") else 0)  # -0.0 and 0.0 are one value in Spark


@pytest.mark.both_lines("Spark's Murmur3 hash of a chained composite key, on each line")
def test_composite_key_chains_hashes_like_spark(spark, spark_table):
    _, got = ours(spark_table, "s,i32")
    assert got == spark_truth(spark, spark_table, ["s", "i32"])
    _, got = ours(spark_table, "dec,ts,bin")
    assert got == spark_truth(spark, spark_table, ["dec", "ts", "bin"])


def test_hive_partition_column_matches_spark(spark, tmp_path):
    df = spark.createDataFrame([(i, f"2026-01-0{1 + i % 3}" if i % 5 else None, "EU" if i % 2 else "US") for i in range(60)],
                               "id int, day string, region string").withColumn("day", F.col("day").cast("date"))
    path = str(tmp_path / "hive")
    df.write.partitionBy("day", "region").parquet(path)
    c, got = ours(path, "day")
    assert c["types"] == ["date"]
    assert got == spark_truth(spark, path, ["day"])
    _, got = ours(path, "region,id")
    assert got == spark_truth(spark, path, ["region", "id"])


def test_int96_timestamps_as_spark_reads_them(spark, tmp_path):
    path = str(tmp_path / "int96")
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    try:
        spark.createDataFrame([(dt.datetime(2024, 1, 1, 0, 0, 0, 123456, tzinfo=UTC),), (dt.datetime(1900, 1, 1, tzinfo=UTC),), (None,)] * 3,
                              "t timestamp").write.parquet(path)
    finally:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
    _, got = ours(path, "t")
    assert got == spark_truth(spark, path, ["t"])
    corpus = str(CORPUS / "data" / "int96_from_spark.parquet")
    _, got = ours(corpus, "a")
    assert got == spark_truth(spark, corpus, ["a"])
