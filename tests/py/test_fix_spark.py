"""`skewjoin fix` on event logs that Spark 4.x wrote (scripts/test runs this file on 4.x; the
3.5 logs are test_diagnose_spark.py's): the hot NULL join with AQE off and on, a job whose
SQL text is in the log, a DataFrame join with filters, and a chain of three joins. For each, the predicted stage as written is within 5% of what the log
measured, and the rewrite gives the same rows with a smaller largest task."""
import json
import pathlib
import shutil
import sys

import pyspark
import pytest

from conftest import event_logs, history_server, run
from eventlogs import FIX_JOBS

SPARK4 = int(pyspark.__version__.split(".")[0]) >= 4
pytestmark = [
    pytest.mark.skipif(not SPARK4, reason="Spark 3.5's logs are test_diagnose_spark.py's (scripts/test runs this on 4.x)"),
    pytest.mark.both_lines("the logs, plans and History Server of Spark 4.x"),
]


# Each job, where fix takes its query from, and by how much the largest task must shrink.
FIXES = [("hot_null_join", "rebuilt_from_plan", 5), ("sql_text_join", "sql_text", 5), ("aqe_null_join", "rebuilt_from_plan", 5),
         ("dataframe_join", "rebuilt_from_plan", 3), ("chain_join", "sql_text", 2)]
JOBS = [name for name, _, _ in FIXES]
assert JOBS == FIX_JOBS, "scripts/test writes eventlogs.FIX_JOBS for this file"


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    return event_logs(tmp_path_factory, JOBS)


def fix(*args):
    p = run("fix", *args, "--min-stage-seconds", "0", "--min-gain", "off", "--format", "json", "-q")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("name,source,gain", FIXES, ids=JOBS)
def test_fix_on_spark4_logs(logs, name, source, gain):
    f = fix(logs[name], "--verify")
    st = f["stage"]
    assert f["diagnosis"]["app"]["spark_version"].startswith("4.")
    assert f["query"]["source"] == source
    assert abs(st["before_gap"]) <= 0.05, st
    assert st["rewritten"] and st["predicted_after"]["max_task_rows"] * gain < st["predicted_before"]["max_task_rows"], st
    v = f["verification"]
    assert v["identical"] and v["rows_original"] == v["rows_rewritten"] > 0


def test_fix_verified_on_spark4(logs):
    f = fix(logs["hot_null_join"], "--verify", "--engine", "spark", "--python", sys.executable)
    v = f["verification"]
    before = max(s["max_task_records"] for s in v["measured_before"]["stages"])
    after = max(s["max_task_records"] for s in v["measured_after"]["stages"])
    assert v["identical"] and before == f["stage"]["measured_max_task_records"] and after * 5 < before, (before, after)


@pytest.fixture(scope="module")
def history(logs, tmp_path_factory):
    """Spark 4.x's own History Server (pyspark's sbin/start-history-server.sh) on 127.0.0.1
    over the three logs; stopped at the end. Yields (url, {name: app id})."""
    base = tmp_path_factory.mktemp("history4")
    folder = base / "logs"
    folder.mkdir()
    apps = {}
    for name, path in logs.items():
        src = pathlib.Path(path)
        shutil.copy(src, folder / src.name)
        apps[name] = src.name
    with history_server(base, folder, len(apps)) as url:
        yield url, apps


@pytest.mark.parametrize("name", ["hot_null_join", "sql_text_join", "aqe_null_join"])
def test_fix_through_spark4s_history_server(history, logs, name):
    """The application from the History Server gives what its log file gives."""
    url, apps = history
    served = fix(url, "--app", apps[name])
    local = fix(logs[name])
    assert served["query"] == local["query"] and served["stage"] == local["stage"]
    # The same rewrite under the same settings, each said to come from where it was read.
    same = lambda r: ({k: v for k, v in r.items() if k not in ("settings", "cluster")},  # noqa: E731
                      [(x["key"], x["value"]) for x in r["settings"]],
                      (r["cluster"]["cores"], r["cluster"]["source"]))
    assert same(served["rewrite"]) == same(local["rewrite"])
    assert any(x.get("from") == url for x in served["rewrite"]["settings"])
    assert served["rewrite"]["cluster"]["source"] == "event_log" and url in served["rewrite"]["cluster"]["detail"]


def test_fix_counts_catalog_tables_on_spark_connect(logs, connect, tmp_path):
    """A job whose files this machine cannot read: the SQL-text job's log, its tables renamed
    sjx.events and sjx.titles (the server's sj.* are the samples) and their files moved out of
    reach. Read here, that is a one-line error naming the file; with --count-on-spark a Spark
    Connect server counts the tables by the catalog names the plan gives them (created there
    over the job's files), the stage is predicted as the log measured it, and the server runs
    both queries."""
    import subprocess
    src = pathlib.Path(logs["sql_text_join"])
    text = src.read_text().replace("sj.events", "sjx.events").replace("sj.titles", "sjx.titles")
    tables = [(t["name"], t["table"]) for t in fix(str(src))["query"]["tables"]]
    create = "".join(f"s.sql(\"CREATE TABLE {n.replace('sj.', 'sjx.')} USING parquet LOCATION '{path}'\")\n" for n, path in tables)
    code = ("from pyspark.sql import SparkSession\n"
            f"s = SparkSession.builder.remote({connect!r}).getOrCreate()\n"
            "s.sql('CREATE DATABASE IF NOT EXISTS sjx')\n" + create + "s.stop()\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=300)
    for _, path in tables:
        text = text.replace(path, f"/unreachable{path}")
    log = tmp_path / src.name
    log.write_text(text)
    p = run("fix", str(log), "--min-stage-seconds", "0", "--format", "json", "-q")
    assert p.returncode == 2 and "/unreachable" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    f = fix(str(log), "--count-on-spark", "--remote", connect, "--python", sys.executable, "--verify", "--engine", "spark")
    st, v = f["stage"], f["verification"]
    assert f["query"]["source"] == "sql_text" and [t["name"] for t in f["query"]["tables"]] == ["sjx.events", "sjx.titles"]
    assert f["tables"] == [], "no files here to set against the log's"
    assert abs(st["before_gap"]) <= 0.05 and st["rewritten"], st
    assert v["identical"] and v["rows_original"] == v["rows_rewritten"] == 300_000
