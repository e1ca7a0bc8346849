"""`--engine spark`: keys, plan and rewrite counted by Spark jobs give what the embedded engine
gives (the same counts, hot keys, strategies and SQL), on Spark 3.5 in local mode through
pyspark, and on Spark 4.x through a real Spark Connect server that these tests start from
pyspark's own `sbin` scripts on the loopback interface (and stop). Tables registered in the
server's catalog are used by name. Each bad input is one line and exit code 2."""
import datetime as dt
import json
import pathlib
import sys
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
import pytest

from conftest import ROOT, failure, free_port, run

SPARK4 = int(pyspark.__version__.split(".")[0]) >= 4
SAMPLES = ROOT / "samples"
EVENTS, TITLES = str(SAMPLES / "events.parquet"), str(SAMPLES / "titles.parquet")
PLAN = ["plan", "--left", EVENTS, "--right", TITLES, "--on", "title_id", "--how", "left", "--broadcast-threshold", "256KB", "-q", "--format", "json"]
REWRITE = ["rewrite", str(SAMPLES / "query.sql"), "--table", f"events={EVENTS}", "--table", f"titles={TITLES}", "--broadcast-threshold", "256KB", "-q"]
UTC = dt.timezone.utc


def rows_for(values):
    """Value i repeated i+1 times: every value has its own count."""
    out = []
    for i, v in enumerate(values):
        out += [v] * (i + 1)
    return out


TYPES = [
    ("b", pa.bool_(), [True, False, None]),
    ("i8", pa.int8(), [0, 1, -1, 127, -128, None]),
    ("i32", pa.int32(), [0, 1, -1, 42, 2147483647, None]),
    ("i64", pa.int64(), [0, -1, 1 << 40, 9223372036854775807, None]),
    ("f32", pa.float32(), [0.0, -0.0, 1.5, float("nan"), float("-inf"), None]),
    ("f64", pa.float64(), [0.0, -0.0, 0.1, float("nan"), 1e300, None]),
    ("s", pa.string(), ["", " ", "a", "unknown", "é", "日本語", "x'); DROP TABLE t; --", "tab\there", "back\\slash", None]),
    ("bin", pa.binary(), [b"", b"\x01", b"\xff\xfe\xfd", None]),
    ("d", pa.date32(), [dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1960, 6, 1), None]),
    ("ts", pa.timestamp("us", tz="UTC"), [dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 1, 12, 34, 56, 789012, tzinfo=UTC), None]),
    ("ntz", pa.timestamp("us"), [dt.datetime(2024, 1, 1, 1, 2, 3), dt.datetime(1970, 1, 1), None]),
    ("dec", pa.decimal128(10, 2), [Decimal("123.45"), Decimal("-0.01"), Decimal("0.00"), None]),
    # Spark's string of a decimal(38,18) zero is 0E-18 (with ANSI off): read as plain notation.
    ("tiny", pa.decimal128(38, 18), [Decimal("0"), Decimal("0.0000001"), Decimal("-1"), None]),
    ("wide", pa.decimal128(38, 10), [Decimal("1234567890123456789012345678.0123456789"), Decimal("-1.5"), None]),
]


@pytest.fixture(scope="module")
def types_table(tmp_path_factory):
    """A Parquet file with a column of every key type, each value with its own count."""
    n = max(len(rows_for(v)) for _, _, v in TYPES)
    cols = {name: pa.array(rows_for(v) + [None] * (n - len(rows_for(v))), t) for name, t, v in TYPES}
    path = tmp_path_factory.mktemp("types") / "types.parquet"
    pq.write_table(pa.table(cols), path)
    return str(path)


def spark_args(remote=None):
    args = ["--engine", "spark", "--python", sys.executable]
    return args + (["--remote", remote] if remote else ["--master", "local[2]"])


def without_spark(out):
    j = json.loads(out)
    summary = j.pop("spark")
    assert summary["requests"] > 0 and summary["version"] == pyspark.__version__
    return j


def without_local_reads(j):
    """The report less `column_chunks`: it counts the column chunks this process decoded, and
    with `--engine spark` Spark reads the columns a query's filters need, so those differ by design.
    Neither side decodes a chunk twice."""
    assert j.pop("column_chunks")["decoded_again"] == 0
    return j


def top_sets(keys_json):
    """Each column's counts, with the most frequent values as a set (ties may come in any order)."""
    out = {}
    for c in keys_json["columns"]:
        top = sorted((json.dumps(e["value"]), e["count"], e["spark_partition"], e["class"]) for e in c["top"])
        out[c["column"]] = (c["rows"], c["nulls"], c["distinct"], top)
    return out


def same_keys(table, extra):
    cols = [x for name, _, _ in TYPES for x in ("-c", name)] + ["-c", "s,d", "-c", "i8,f64"]
    want = run("keys", table, *cols, "--top", "0", "--format", "json", "-q", check=True)
    got = run("keys", table, *cols, "--top", "0", "--format", "json", "-q", *extra, check=True)
    assert top_sets(without_spark(got.stdout)) == top_sets(json.loads(want.stdout))


def same_plan(extra):
    want, got = run(*PLAN, check=True), run(*PLAN, *extra, check=True)
    assert without_local_reads(without_spark(got.stdout)) == without_local_reads(json.loads(want.stdout))


def same_rewrite(extra):
    want = run(*REWRITE, "--format", "json", check=True)
    got = run(*REWRITE, "--format", "json", *extra, check=True)
    assert without_local_reads(without_spark(got.stdout)) == without_local_reads(json.loads(want.stdout))


# ---- Spark 3.5, local mode through pyspark ----

@pytest.mark.skipif(SPARK4, reason="local mode on Spark 3.5; Spark 4.x is tested through Spark Connect")
def test_local_mode_counts_every_key_type_as_the_embedded_engine(types_table):
    same_keys(types_table, spark_args())


@pytest.mark.skipif(SPARK4, reason="local mode on Spark 3.5; Spark 4.x is tested through Spark Connect")
def test_local_mode_rewrites_as_the_embedded_engine():
    """The sample query: a left join under a WHERE that Spark applies (the rewrite's counts are
    of the passing rows), so the JSON holds the filter's counts and the plan's."""
    same_rewrite(spark_args())


# ---- Spark 4.x, a Spark Connect server started from pyspark's sbin scripts ----

@pytest.mark.both_lines("Spark Connect: 4.x's server and client")
def test_connect_counts_every_key_type_as_the_embedded_engine(connect, types_table):
    same_keys(types_table, spark_args(connect))


@pytest.mark.both_lines("Spark Connect: 4.x's server and client")
def test_connect_plans_and_rewrites_as_the_embedded_engine(connect):
    same_plan(spark_args(connect))
    same_rewrite(spark_args(connect))
    p = run(*PLAN[:-2], *spark_args(connect), check=True)
    line = p.stdout.strip().splitlines()[-1]
    assert line.startswith(f"counted by Spark {pyspark.__version__}") and f"Spark Connect {connect}" in line, line


@pytest.mark.both_lines("Spark Connect: 4.x's server and client")
def test_catalog_names_from_the_query_and_from_table(connect, tmp_path):
    """The query's own names resolved by the server's catalog (no --table), and --table NAME=db.t:
    the same changes, with the same numbers, as the files they were saved from."""
    sql = (SAMPLES / "query.sql").read_text()
    named = tmp_path / "q.sql"
    named.write_text(sql.replace("FROM events e", "FROM sj.events e").replace("JOIN titles t", "JOIN sj.titles t"))
    want = run(*REWRITE, check=True).stdout
    header = lambda out: [l.replace("sj.", "") for l in out.splitlines() if l.startswith("--   ")]
    by_query = run("rewrite", named, "--broadcast-threshold", "256KB", "-q", *spark_args(connect), check=True).stdout
    assert header(by_query) == header(want) and len(header(want)) >= 5
    assert "counted by Spark" in by_query
    by_flag = run("rewrite", SAMPLES / "query.sql", "--table", "events=sj.events", "--table", "titles=sj.titles",
                  "--broadcast-threshold", "256KB", "-q", *spark_args(connect), check=True).stdout
    assert header(by_flag) == header(want)
    keys = run("keys", "sj.events", "-c", "title_id", "--top", "3", "--format", "json", "-q", *spark_args(connect), check=True)
    assert [e["count"] for e in json.loads(keys.stdout)["columns"][0]["top"]] == [62131, 17811, 7960]


@pytest.mark.both_lines("Spark Connect: 4.x's server and client")
def test_spark_applies_conditions_the_embedded_engine_cannot(connect, tmp_path):
    """Conditions over expressions (length(), arithmetic) are left out of the embedded counts,
    which say so; Spark applies them, and its counts are DuckDB's over the same rows."""
    import duckdb
    q = tmp_path / "q.sql"
    q.write_text("SELECT t.genre, count(*) AS n FROM events e LEFT JOIN titles t ON e.title_id = t.title_id\n"
                 "WHERE length(e.user_id) > 12 AND e.hours * 2 > 1 GROUP BY t.genre")
    args = ["rewrite", q, "--table", f"events={EVENTS}", "--table", f"titles={TITLES}", "--broadcast-threshold", "256KB", "-q"]
    assert "the counts do not apply these conditions" in run(*args, check=True).stdout
    out = run(*args, *spark_args(connect), check=True).stdout
    where = f"FROM '{EVENTS}' WHERE length(user_id) > 12 AND hours * 2 > 1"
    rows = duckdb.sql(f"SELECT count(*) {where}").fetchall()[0][0]
    nulls = duckdb.sql(f"SELECT count(*) {where} AND title_id IS NULL").fetchall()[0][0]
    assert f"the counts are of its {rows:,} rows (of 200,000) where length(user_id) > 12 AND hours * 2 > 1" in out, out
    assert f"NULL [null]: {nulls:,} rows" in out and "do not apply" not in out, out


@pytest.mark.both_lines("Spark Connect: 4.x's server and client")
def test_verify_over_connect(connect):
    """verify --remote: both queries on the server, the same rows, and the join stage's tasks
    (read from the server's UI by the jobs' tags) as the planner predicted them."""
    p = run("verify", SAMPLES / "query.sql", "--table", f"events={EVENTS}", "--table", f"titles={TITLES}",
            "--broadcast-threshold", "256KB", "--engine", "spark", "--python", sys.executable, "--remote", connect,
            "--format", "json", "-q", check=True)
    v = json.loads(p.stdout)
    assert v["identical"] and v["master"] == connect and v["spark_version"] == pyspark.__version__, v
    for when in ("before", "after"):
        stage = max(v[f"measured_{when}"]["stages"], key=lambda s: s["max_task_records"])
        assert stage["max_task_records"] == v[f"predicted_{when}"]["max_task_rows"], (when, stage, v[f"predicted_{when}"])
    assert v["predicted_before"]["max_task_rows"] >= 20 * v["predicted_after"]["max_task_rows"]


def refused(p, code, *names):
    """A failure in one line (conftest.failure, from --format json) with its code, naming each
    of `names` (the table, column, server or flag at fault)."""
    f = failure(p)
    assert f["code"] == code and all(str(n) in f["message"] for n in names), f
    return f


J = ("--format", "json")


@pytest.mark.both_lines("Spark Connect: 4.x's server and client")
def test_table_formats_are_not_read_as_plain_files(connect, tmp_path):
    """A Delta table's folder holds the Parquet files of removed versions too: Spark reads it as
    delta (here without the Delta package: Spark's own error), never as plain Parquet; an
    Iceberg table is read by its catalog name."""
    delta, iceberg = tmp_path / "delta", tmp_path / "iceberg"
    (delta / "_delta_log").mkdir(parents=True)
    (iceberg / "metadata").mkdir(parents=True)
    (delta / "part-0.parquet").write_bytes(pathlib.Path(TITLES).read_bytes())
    (iceberg / "metadata" / "v1.metadata.json").write_text("{}")
    refused(run("keys", delta, "-c", "title_id", *J, *spark_args(connect)), "server", "DATA_SOURCE_NOT_FOUND", "delta")
    refused(run("keys", iceberg, "-c", "title_id", *J, *spark_args(connect)), "usage", iceberg, "Iceberg")


@pytest.mark.both_lines("Spark Connect: 4.x's server and client")
def test_connect_errors_are_one_line(connect):
    refused(run("keys", "sj.nope", "-c", "k", *J, *spark_args(connect)), "usage", "sj.nope", "TABLE_OR_VIEW_NOT_FOUND")
    refused(run("keys", "sj.events", "-c", "nope", *J, *spark_args(connect)), "no_column", "nope", "title_id")
    port = free_port()
    refused(run("keys", "sj.events", "-c", "title_id", *J, *spark_args(f"sc://127.0.0.1:{port}")), "server", f"127.0.0.1:{port}")
    refused(run("verify", SAMPLES / "query.sql", "--table", f"events={EVENTS}", "--table", f"titles={TITLES}", "--engine", "spark",
                *J, "--python", sys.executable, "--remote", f"sc://127.0.0.1:{port}"), "server", f"127.0.0.1:{port}")


def test_sample_of_a_catalog_table_over_connect(connect):
    """--sample on Spark: sj.events is one file, too few to draw whole: rows drawn at random by
    Spark (every file read), the counts scaled, the NULL share within its interval of the exact
    one."""
    exact = json.loads(run("keys", EVENTS, "-c", "title_id", "--top", "3", "--format", "json", "-q", check=True).stdout)
    p = run("keys", "sj.events", "-c", "title_id", "--top", "3", "--sample", "10%", "--format", "json", "-q", *spark_args(connect), check=True)
    c = without_spark(p.stdout)["columns"][0]
    assert c["sample"]["method"].startswith("rows drawn at random") and "files_read" not in c["sample"], c["sample"]
    assert 15_000 < c["sample"]["rows_read"] < 25_000 and c["rows"] == 200_000 and not c["exact"], c
    null, truth = c["top"][0], exact["columns"][0]["top"][0]
    assert null["value"] is None is truth["value"] and abs(null["share"] - truth["share"]) <= null["share_error"], (null, truth)


@pytest.mark.skipif(SPARK4, reason="local mode on Spark 3.5; Spark 4.x is tested through Spark Connect")
def test_sample_of_whole_files_reads_their_rows_from_the_footers(tmp_path):
    """--sample on Spark over 40 plain Parquet files whose names need escaping (a space, '+',
    '%41'): each file's rows from its footer (no scan of every file), 4 files drawn and read
    whole, their rows exactly the footers', the counts scaled to the table, the hot value's
    share within its interval of the exact share."""
    import numpy as np
    d = tmp_path / "t"
    d.mkdir()
    rng = np.random.default_rng(3)
    for i in range(40):
        k = np.where(rng.random(5_000) < 0.3, 1, rng.integers(10, 50_000, 5_000))
        pq.write_table(pa.table({"k": k}), d / f"part {i:02d} +%41.parquet")
    c = json.loads(run("keys", str(d), "-c", "k", "--top", "2", "--sample", "10%", "--seed", "5", "--format", "json", "-q",
                       *spark_args(), check=True).stdout)["columns"][0]
    s = c["sample"]
    assert (s["method"], s["files_read"], s["files_total"], s["rows_read"], c["rows"]) == ("whole files", 4, 40, 20_000, 200_000), s
    hot = c["top"][0]
    assert hot["value"] == 1 and abs(hot["share"] - 0.3) <= hot["share_error"], hot


def test_errors_before_spark_starts(tmp_path):
    no_pyspark = tmp_path / "python"
    hide = "import sys; sys.modules['pyspark'] = None; sys.argv = sys.argv[1:]; exec(open(sys.argv[0]).read())"
    no_pyspark.write_text(f"#!/bin/sh\nexec {sys.executable} -c \"{hide}\" \"$@\"\n")
    no_pyspark.chmod(0o755)
    refused(run("keys", EVENTS, "-c", "title_id", *J, "--engine", "spark", "--python", no_pyspark), "usage", "pyspark")
    refused(run("keys", EVENTS, "-c", "title_id", *J, "--engine", "spark", "--python", tmp_path / "nothing"), "usage", tmp_path / "nothing")
    # The flag to add is named: wording the user acts on.
    refused(run("keys", EVENTS, "-c", "title_id", *J, "--remote", "sc://127.0.0.1:1"), "usage", "add --engine spark")
    p = run("keys", EVENTS, "-c", "title_id", *J, "--engine", "spark", "--python", sys.executable, "--spark-timeout", "1")
    refused(p, "server", "--spark-timeout")
