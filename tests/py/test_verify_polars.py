"""`skewjoin verify --engine polars`: every rewrite case of the Spark suite (test_rewrite_spark.py)
also passes verify on the embedded Polars engine (no Spark), a broken rewrite is caught, a sample
says what it read, and what Polars cannot run is one line with exit 2. The binary must be built
with the `polars` feature (scripts/test does)."""
import json
import subprocess

import pytest

from conftest import LEGACY, binary, verify_run
from test_plan_spark import P, data  # noqa: F401  (fixture)
from test_rewrite_spark import CASES, more, paths  # noqa: F401  (fixture)


def verify(tmp_path, sql, tables, *extra, rewritten=None):
    return verify_run(tmp_path, sql, tables, *LEGACY, "--engine", "polars", "--shuffle-partitions", P, *extra, rewritten=rewritten)


@pytest.fixture(scope="module", autouse=True)
def polars_built():
    p = subprocess.run([binary(), "verify", "--engine", "polars", "--table", "x=/nonexistent"], input="SELECT 1", capture_output=True, text=True)
    if "without the polars engine" in p.stderr:
        pytest.fail("this skewjoin has no polars engine: build it with --features polars")


# Queries Polars SQL reads differently from Spark, which the polars engine refuses (one line,
# exit 2, the reason) rather than compare under the wrong semantics. `verify --engine spark`
# runs them.
POLARS_REFUSES = {
    "chain-exists-own-table": "EXISTS (subquery) has no Polars SQL form",
    "exists": "EXISTS (subquery) has no Polars SQL form",
    "not-exists": "EXISTS (subquery) has no Polars SQL form",
    "exists-cte": "EXISTS (subquery) has no Polars SQL form",
    "not-exists-chain": "EXISTS (subquery) has no Polars SQL form",
    "exists-composite": "EXISTS (subquery) has no Polars SQL form",
}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_every_rewrite_case_verifies_on_polars(data, more, case, tmp_path):
    cid, tables, sql, extra, _ = case
    p = verify(tmp_path, sql, paths(data, more, tables), *extra)
    if cid in POLARS_REFUSES:
        assert p.returncode == 2 and POLARS_REFUSES[cid] in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
        return
    assert p.returncode in (0, 1), p.stderr
    v = json.loads(p.stdout)
    why = (f"rows {v['rows_original']} vs {v['rows_rewritten']}; columns {v['measured_before']['columns']} vs {v['measured_after']['columns']}; "
           f"only in original {v['only_in_original'][:2]}; only in rewrite {v['only_in_rewritten'][:2]}")
    assert v["engine"] == "polars" and v["identical"] and v["columns_match"], why
    assert v["rows_original"] == v["rows_rewritten"] > 0
    assert v["predicted_before"] and v["predicted_after"]


def test_broken_rewrite_is_caught(data, tmp_path):
    """A rest-of-the-keys branch with a bare NOT IN: NULL for a NULL key, so those rows vanish."""
    sql = "SELECT e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id"
    broken = ("SELECT e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id WHERE e.title_id NOT IN ('unknown') "
              "UNION ALL SELECT e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id WHERE e.title_id IN ('unknown')")
    tables = [f"{n}={data[n]}" for n in ["events", "titles"]]
    p = verify(tmp_path, sql, tables, "--broadcast-threshold", "4KB", rewritten=broken)
    assert p.returncode == 1, p.stderr + p.stdout
    v = json.loads(p.stdout)
    assert not v["identical"] and v["rows_rewritten"] < v["rows_original"]
    assert v["only_in_original"] and not v["only_in_rewritten"]
    # The text report says so, with the first differing rows.
    args = [binary(), "verify", *LEGACY, str(tmp_path / "q.sql"), "-q", "--engine", "polars", "--rewritten", str(tmp_path / "rewritten.sql"),
            "--broadcast-threshold", "4KB", "--table", tables[0], "--table", tables[1]]
    p = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert p.returncode == 1 and "DIFFERENT" in p.stdout and "only in the original: (" in p.stdout, p.stdout


def test_broken_salt_is_caught(data, more, tmp_path):
    """A salted branch whose copies of the other side miss one salt loses the rows sent to it."""
    sql = "SELECT * FROM mm_left a JOIN mm_right b ON a.k = b.k"
    tables = paths(data, more, ["mm_left", "mm_right"])
    p = verify(tmp_path, sql, tables, "--broadcast-threshold", "100")
    assert p.returncode == 0, p.stderr
    rw = subprocess.run([binary(), "rewrite", *LEGACY, str(tmp_path / "q.sql"), "-q", "--shuffle-partitions", str(P), "--broadcast-threshold", "100",
                         "--format", "json", *sum((["--table", t] for t in tables), [])], capture_output=True, text=True)
    good = json.loads(rw.stdout)["sql"]
    assert "explode(" in good
    # Drop salt 0 from every array of copies.
    broken = good.replace("explode(CASE WHEN", "explode(CASE WHEN", 1)
    import re
    broken = re.sub(r"(explode\(CASE .*?END\))", lambda m: m.group(1).replace("array(0, ", "array("), broken, flags=re.S)
    assert broken != good
    p = verify(tmp_path, sql, tables, "--broadcast-threshold", "100", rewritten=broken)
    assert p.returncode == 1, p.stderr + p.stdout
    v = json.loads(p.stdout)
    assert v["rows_rewritten"] < v["rows_original"]


def test_sample_reads_every_kth_row(data, tmp_path):
    sql = "SELECT * FROM events e LEFT JOIN titles t ON e.title_id = t.title_id"
    tables = [f"{n}={data[n]}" for n in ["events", "titles"]]
    p = verify(tmp_path, sql, tables, "--broadcast-threshold", "4KB", "--sample", "0.25")
    assert p.returncode == 0, p.stderr
    v = json.loads(p.stdout)
    assert v["identical"]
    assert any(i.startswith("events: every 4th row") for i in v["inputs"]), v["inputs"]
    full = verify(tmp_path, sql, tables, "--broadcast-threshold", "4KB")
    assert json.loads(full.stdout)["rows_original"] > v["rows_original"] > 0


def test_what_polars_cannot_run_is_one_line(data, tmp_path):
    tables = [f"{n}={data[n]}" for n in ["events", "titles"]]
    sql = "SELECT * FROM events e JOIN titles t ON e.title_id = t.title_id"
    for rewritten, why in [("SELECT nope FROM events", "polars:"),
                           ("SELECT explode(title_id) FROM events", "not an array literal"),
                           ("SELECT 1; SELECT 2", "one query")]:
        p = verify(tmp_path, sql, tables, rewritten=rewritten)
        assert p.returncode == 2 and why in p.stderr and len(p.stderr.strip().splitlines()) == 1, (rewritten, p.stderr)


@pytest.mark.parametrize("sql,duck", [
    # A condition on the kept side of an outer join, and on the left of a semi and an anti join.
    ("SELECT * FROM events e LEFT JOIN titles t ON e.title_id = t.title_id AND e.hours > 0.5 AND t.name LIKE 'title 1%'",
     "SELECT * FROM events e LEFT JOIN titles t ON e.title_id = t.title_id AND e.hours > 0.5 AND t.name LIKE 'title 1%'"),
    ("SELECT * FROM events e LEFT SEMI JOIN titles t ON e.title_id = t.title_id AND e.hours > 0.5",
     "SELECT * FROM events e SEMI JOIN titles t ON e.title_id = t.title_id AND e.hours > 0.5"),
    ("SELECT * FROM events e LEFT ANTI JOIN titles t ON e.title_id = t.title_id AND e.hours > 0.5",
     "SELECT * FROM events e ANTI JOIN titles t ON e.title_id = t.title_id AND e.hours > 0.5"),
    ("SELECT * FROM events e FULL JOIN titles t ON e.title_id = t.title_id AND t.name <> 'title 3'",
     "SELECT * FROM events e FULL JOIN titles t ON e.title_id = t.title_id AND t.name <> 'title 3'"),
    # USING, with the merged key used bare.
    ("SELECT title_id, e.event_id, name FROM titles t RIGHT JOIN events e USING (title_id) WHERE title_id IS NOT NULL",
     "SELECT e.title_id, e.event_id, t.name FROM titles t RIGHT JOIN events e ON t.title_id = e.title_id WHERE e.title_id IS NOT NULL"),
])
def test_polars_reads_the_original_as_duckdb_does(data, tmp_path, sql, duck):
    """The rendering for Polars keeps the query's meaning: the original's row count on Polars is
    DuckDB's for the same query (DuckDB reads ON conditions of outer joins as Spark does)."""
    import duckdb
    con = duckdb.connect()
    for n in ["events", "titles"]:
        con.execute(f"CREATE VIEW {n} AS SELECT * FROM read_parquet('{data[n]}')")
    expected = con.execute(f"SELECT count(*) FROM ({duck})").fetchone()[0]
    p = verify(tmp_path, sql, [f"{n}={data[n]}" for n in ["events", "titles"]], "--broadcast-threshold", "4KB")
    assert p.returncode == 0, p.stderr + p.stdout
    v = json.loads(p.stdout)
    assert v["identical"] and v["rows_original"] == expected > 0, (v["rows_original"], expected)
