"""Print Spark's own hash(x) and pmod(hash(x), 200) for values of every key type, as JSON.

The output (tests/data/spark_hash_vectors.json) is the reference the Rust unit tests check
`src/hash.rs` against. Regenerate with:  .venv/bin/python tests/spark/hash_vectors.py > tests/data/spark_hash_vectors.json
"""
import datetime as dt
import json
import sys
from decimal import Decimal

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

spark = (SparkSession.builder.master("local[1]").appName("hash-vectors")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")

UTC = dt.timezone.utc
EPOCH = dt.date(1970, 1, 1)

strings = ["", "a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "hello world", "unknown",
           "é", "ñandú", "日本語", "日本語テキスト", "🙂", "a🙂", "\u00ff\u00fe", "x'); DROP TABLE t; --",
           "tab\tnew\nline", "NULL", "test_user_1", " "]
binaries = [b"", b"\x01", b"\xff", b"\xff\xfe", b"\xff\xfe\xfd", b"\x00\x11\x22\x33", b"\x00\x11\x22\x33\x80", bytes(16)]

cases = [
    ("boolean", T.BooleanType(), [True, False]),
    ("tinyint", T.ByteType(), [0, 1, -1, 127, -128]),
    ("smallint", T.ShortType(), [0, -1, 32767, -32768, 1234]),
    ("int", T.IntegerType(), [0, 1, -1, 42, 123456, 2147483647, -2147483648]),
    ("bigint", T.LongType(), [0, 1, -1, 1 << 40, 9223372036854775807, -9223372036854775808, 20000000]),
    ("float", T.FloatType(), [0.0, -0.0, 1.5, -2.25, float("nan"), float("inf"), 3.4e38]),
    ("double", T.DoubleType(), [0.0, -0.0, 1.5, 0.1, float("nan"), float("-inf"), 1e300, -123.456]),
    ("string", T.StringType(), strings),
    ("binary", T.BinaryType(), [bytearray(b) for b in binaries]),
    ("date", T.DateType(), [dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1900, 1, 1), dt.date(1, 1, 1), dt.date(9999, 12, 31)]),
    ("timestamp", T.TimestampType(), [dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 1, 12, 34, 56, 789012, tzinfo=UTC), dt.datetime(1960, 6, 1, 0, 0, 0, 1, tzinfo=UTC)]),
    ("timestamp_ntz", T.TimestampNTZType(), [dt.datetime(2024, 1, 1, 12, 34, 56, 789012), dt.datetime(1970, 1, 1)]),
    ("decimal(10,2)", T.DecimalType(10, 2), [Decimal("123.45"), Decimal("-0.01"), Decimal("0.00"), Decimal("99999999.99")]),
    ("decimal(18,0)", T.DecimalType(18, 0), [Decimal("999999999999999999"), Decimal("-1")]),
    ("decimal(20,0)", T.DecimalType(20, 0), [Decimal("18446744073709551615"), Decimal("0"), Decimal("-1"), Decimal("128")]),
    ("decimal(38,10)", T.DecimalType(38, 10), [Decimal("1234567890123456789012345678.0123456789"), Decimal("-1.5"), Decimal("0")]),
]


def encode(tname, v):
    """The value as the Rust test reads it back."""
    if tname in ("float", "double"):
        return repr(v)
    if tname == "binary":
        return bytes(v).hex()
    if tname == "date":
        return (v - EPOCH).days
    if tname in ("timestamp", "timestamp_ntz"):
        base = dt.datetime(1970, 1, 1, tzinfo=UTC) if v.tzinfo else dt.datetime(1970, 1, 1)
        d = v - base
        return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    if tname.startswith("decimal"):
        scale = int(tname.split(",")[1].rstrip(")"))
        sign, digits, exp = v.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * 10 ** (exp + scale)
        return str(-unscaled if sign else unscaled)
    return v


out = []
for tname, stype, values in cases:
    df = spark.createDataFrame([(v,) for v in values], T.StructType([T.StructField("x", stype)]))
    rows = df.select(F.hash("x").alias("h"), F.expr("pmod(hash(x), 200)").alias("p")).collect()
    for v, r in zip(values, rows):
        out.append({"type": tname, "value": encode(tname, v), "hash": r["h"], "pmod200": r["p"]})

# Composite keys: the hash of (a, b) chains a's hash into b's seed; NULL leaves it unchanged.
comp = spark.createDataFrame(
    [("EU", 0), ("abc", 123456), (None, 7), ("日本", None), (None, None)],
    "a string, b int")
for r in comp.select("a", "b", F.hash("a", "b").alias("h"), F.expr("pmod(hash(a, b), 200)").alias("p")).collect():
    out.append({"type": "string,int", "value": [r["a"], r["b"]], "hash": r["h"], "pmod200": r["p"]})

json.dump({"spark_version": spark.version, "vectors": out}, sys.stdout, indent=1, ensure_ascii=False)
print()
spark.stop()
