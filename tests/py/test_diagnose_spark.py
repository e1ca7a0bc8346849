"""`skewjoin diagnose` on event logs written by real Spark: tests/py/eventlogs.py runs each
scenario as its own Spark application (in its own process, since this one already holds a
Spark session), then every log is diagnosed. The hot-key case also runs the `skewjoin plan`
command the diagnosis hands over, on the tables the physical plan names."""
import json
import pathlib
import shlex
import subprocess
import sys

import pytest

from conftest import binary, event_logs, failure, run


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    return event_logs(tmp_path_factory)


def diag(path):
    # These applications run stages of seconds on small data: the rule that flags only stages
    # of 10 s or more (tested on synthetic logs) is set to 0 here.
    p = run("diagnose", path, "--format", "json", "--min-stage-seconds", "0")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def kinds(d):
    return [f["kind"] for f in d["findings"]]


def why(d):
    return [(c["kind"], c["confirmed"], c["numbers"]) for c in d["checks"]]


def test_hot_null_join_names_the_join_and_the_next_command(logs):
    d = diag(logs["hot_null_join"])
    assert "hot_key" in kinds(d), why(d)
    f = next(f for f in d["findings"] if f["kind"] == "hot_key")
    j = f["join"]
    assert j["join_type"] == "LeftOuter" and j["operator"] == "SortMergeJoin"
    assert j["left_table"].endswith(".parquet") and "events" in j["left_table"] and "titles" in j["right_table"]
    plan_cmd = next(c for c in f["next_commands"] if c.startswith("skewjoin plan"))
    assert "--how left" in plan_cmd and "--on title_id" in plan_cmd and "--shuffle-partitions 16" in plan_cmd
    # The hand-over works: the command runs and finds the NULL keys of the preserved side.
    args = shlex.split(plan_cmd)[1:] + ["--format", "json", "-q"]
    p = subprocess.run([binary(), *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    assert any(h["class"] == "null" for h in plan["hot_keys"]), plan["hot_keys"]
    # The stage's largest task is the one that read the NULL keys: 40% of the rows.
    s = next(s for s in d["stages"] if s["stage_id"] == f["stage_id"])
    assert s["task_summary"]["shuffle_read_records"]["max"] >= 5 * s["task_summary"]["shuffle_read_records"]["median"]


@pytest.mark.parametrize("scenario,kind", [
    ("tiny_files", "tiny_tasks"),
    ("spill", "memory_pressure"),
    ("even_volume", "shuffle_volume"),
    ("python_udf", "slow_code"),
])
def test_causes(logs, scenario, kind):
    d = diag(logs[scenario])
    assert kind in kinds(d), why(d)
    assert "hot_key" not in kinds(d), why(d)
    if kind == "slow_code":
        assert "EvalPython" in next(f for f in d["findings"] if f["kind"] == kind)["evidence"]


@pytest.mark.parametrize("codec", ["zstd", "lz4", "snappy", "lzf", "rolling"])
def test_compressed_and_rolling_logs(logs, codec):
    d = diag(logs[codec])
    assert d["app"]["codec"] == ("none" if codec == "rolling" else codec) or codec == "rolling"
    if codec == "rolling":
        assert d["app"]["files"] >= 1
    assert "hot_key" in kinds(d), why(d)
    assert not d["warnings"] or all("cut short" not in w for w in d["warnings"]), d["warnings"]


def test_truncated_real_log(logs, tmp_path):
    src = logs["hot_null_join"]
    data = open(src, "rb").read()
    cut = tmp_path / "cut"
    cut.write_bytes(data[: len(data) * 6 // 10])
    d = diag(cut)
    assert any("cut short" in w for w in d["warnings"]), d["warnings"]
    # Compressed and cut: the stream error is a warning too, not a failure.
    zs = open(logs["zstd"], "rb").read()
    cutz = tmp_path / "cut.zstd"
    cutz.write_bytes(zs[: len(zs) * 6 // 10])
    p = run("diagnose", cutz)
    assert p.returncode == 0 and "warning" in p.stdout, p.stderr


def test_rolling_folder_of_several_files_reads_as_one_log(logs, tmp_path):
    src = open(logs["hot_null_join"], "rb").read().splitlines(keepends=True)
    folder = tmp_path / "eventlog_v2_app-1"
    folder.mkdir()
    third = len(src) // 3
    for i, part in enumerate([src[:third], src[third:2 * third], src[2 * third:]], start=1):
        (folder / f"events_{i}_app-1").write_bytes(b"".join(part))
    (folder / "appstatus_app-1").write_bytes(b"")
    whole, rolled = diag(logs["hot_null_join"]), diag(folder)
    assert rolled["app"]["files"] == 3 and not rolled["warnings"], rolled["warnings"]
    assert rolled["stages"] == whole["stages"] and rolled["findings"] == whole["findings"]


# --- The Spark History Server as input ---------------------------------------------------------

def _retried_app(folder):
    """A synthetic application retried once: attempt 1 a short GC-heavy job, attempt 2 the
    worked hot-key job, both under one application id, named the way YARN names attempts."""
    import synthlogs
    app = "application_1767225600000_0042"
    for attempt, make in (("1", synthlogs.short_gc), ("2", synthlogs.worked_hot_key)):
        src = folder.parent / f"src_{attempt}"
        make(src)
        out = []
        for line in src.read_text().splitlines():
            e = json.loads(line)
            if e["Event"] == "SparkListenerApplicationStart":
                e["App ID"], e["App Attempt ID"] = app, attempt
                line = json.dumps(e, separators=(",", ":"))
            out.append(line)
        (folder / f"{app}_{attempt}").write_text("\n".join(out) + "\n")
    return app


@pytest.fixture(scope="module")
def history(logs, tmp_path_factory):
    """Spark's own History Server (pyspark's sbin/start-history-server.sh) on 127.0.0.1 over a
    folder of real logs (one plain, one zstd, one rolling folder) and a retried synthetic
    application; stopped at the end. Yields (url, {name: app id}, the log folder)."""
    import shutil
    from conftest import history_server

    base = tmp_path_factory.mktemp("history")
    folder = base / "logs"
    folder.mkdir()
    apps = {}
    for name in ("hot_null_join", "zstd", "rolling"):
        src = pathlib.Path(logs[name])
        (shutil.copytree if src.is_dir() else shutil.copy)(src, folder / src.name)
        apps[name] = _app_id(src)
    apps["retried"] = _retried_app(folder)
    with history_server(base, folder, len(apps)) as url:
        yield url, apps, folder


def _app_id(log):
    """The application id in a log's start event (a rolling folder's first events file)."""
    import zstandard
    p = pathlib.Path(log)
    if p.is_dir():
        p = sorted(p.glob("events_1_*"))[0]
    raw = p.read_bytes()
    if raw[:4] == b"\x28\xb5\x2f\xfd":
        raw = zstandard.ZstdDecompressor().stream_reader(raw).read()
    for line in raw.decode().splitlines():
        e = json.loads(line)
        if e["Event"] == "SparkListenerApplicationStart":
            return e["App ID"]
    raise AssertionError(f"no application start in {log}")


def same_diagnosis(a, b):
    for k in ("findings", "stages", "checks"):
        assert a[k] == b[k], k
    assert {k: v for k, v in a["app"].items() if k != "files"} == {k: v for k, v in b["app"].items() if k != "files"}


def test_history_server_lists_its_applications(history):
    url, apps, _ = history
    p = run("diagnose", url, "--format", "json")
    assert p.returncode == 0, p.stderr
    listed = {a["id"]: a for a in json.loads(p.stdout)["applications"]}
    assert set(listed) == set(apps.values())
    retried = listed[apps["retried"]]
    assert (retried["attempt"], retried["attempts"]) == ("2", 2)
    # The last attempt is the worked hot-key job: its slowest stage is the 2 h 51 min join.
    assert retried["slowest_stage"]["stage_id"] == 2 and retried["slowest_stage"]["duration_ms"] > 10_000_000
    assert all(a["slowest_stage"] for a in listed.values()), listed
    text = run("diagnose", url).stdout
    assert f"next: skewjoin diagnose {url} --app" in text and "2 of 2" in text


@pytest.mark.parametrize("name", ["hot_null_join", "zstd", "rolling"])
def test_history_server_application_diagnosed_as_its_log(history, logs, name):
    url, apps, _ = history
    want = diag(logs[name])
    for args in ([url, "--app", apps[name]], [f"{url}/history/{apps[name]}/jobs/"]):
        p = run("diagnose", *args, "--format", "json", "--min-stage-seconds", "0")
        assert p.returncode == 0, p.stderr
        same_diagnosis(json.loads(p.stdout), want)


def test_history_server_attempts(history, tmp_path):
    url, apps, folder = history
    app = apps["retried"]
    last = json.loads(run("diagnose", url, "--app", app, "--format", "json").stdout)
    assert "hot_key" in kinds(last) and last["app"]["tasks"] == 808
    first = json.loads(run("diagnose", url, "--app", app, "--attempt", "1", "--format", "json").stdout)
    same_diagnosis(first, json.loads(run("diagnose", folder / f"{app}_1", "--format", "json").stdout))
    f = failure(run("diagnose", f"{url}/api/v1/applications/{app}/9", "--format", "json"))
    # The attempts there are, for the user to pick from.
    assert f["code"] == "usage" and f["message"].endswith("has no attempt 9 (it has attempts 2, 1)"), f
    # A baseline named by its id on the same server (the URL's attempt 2 is not given to it).
    d = json.loads(run("diagnose", f"{url}/history/{app}/2/jobs/", "--baseline", apps["hot_null_join"], "--format", "json").stdout)
    assert d["baseline"]["id"] == apps["hot_null_join"] and d["app"]["tasks"] == 808


def test_history_server_bad_input(history):
    url, apps, _ = history
    from conftest import free_port
    down = f"http://127.0.0.1:{free_port()}"
    # Each failure's code, and the application, server or flags it names.
    for args, code, names in [([url, "--app", "app-does-not-exist"], "not_found", ["app-does-not-exist"]),
                              ([down], "store", [down]),
                              ([down.replace("http://", "http://ann:pw-9f3k2@"), "--app", "x"], "store", ["127.0.0.1"]),
                              ([url + "/history/x", "--attempt", "1", "--app", ""], "usage", ["--app", "--attempt"]),
                              (["/no/such/log", "--app", "x"], "usage", ["--app", "http://HOST:18080"]),
                              ([url, "--html", "x.html"], "usage", ["--html", "--app"])]:
        p = run("diagnose", *args, "--format", "json")
        f = failure(p)
        assert f["code"] == code and all(n in f["message"] for n in names), (args, f)
        assert "pw-9f3k2" not in p.stderr


# ---- skewjoin fix: from the log to the verified rewrite ----

def fix(*args, check=True):
    p = run("fix", *args, "--min-stage-seconds", "0", "--format", "json", "-q")
    if check:
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)
    return p


def test_fix_rewrites_the_hot_join_and_spark_verifies_it(logs):
    """The log's join, rebuilt over the files its scans read, rewritten under the job's
    settings (16 partitions, AQE off, no broadcast: from the log), predicted as the log
    measured it, and both queries run on Spark with those settings."""
    f = fix(logs["hot_null_join"], "--min-gain", "off", "--verify", "--engine", "spark", "--python", sys.executable)
    q, st, v = f["query"], f["stage"], f["verification"]
    assert q["source"] == "rebuilt_from_plan" and "LEFT JOIN" in q["sql"]
    assert [t["table"] for t in q["tables"]] == [f["diagnosis"]["findings"][0]["join"]["left_table"], f["diagnosis"]["findings"][0]["join"]["right_table"]]
    assert abs(st["before_gap"]) <= 0.05, st
    assert st["rewritten"] and st["predicted_after"]["max_task_rows"] * 5 < st["predicted_before"]["max_task_rows"]
    settings = {s["key"]: s["value"] for s in f["rewrite"]["settings"]}
    assert settings["spark.sql.shuffle.partitions"] == "16" and settings["spark.sql.adaptive.enabled"] == "false"
    # The cluster's size is the log's: local[2]'s one executor of 2 cores, while the stage ran.
    size = f["rewrite"]["cluster"]
    assert (size["cores"], size["source"]) == (2, "event_log") and "while stage" in size["detail"], size
    assert v["identical"] and v["rows_original"] == v["rows_rewritten"] == 300_000
    before = max(s["max_task_records"] for s in v["measured_before"]["stages"])
    after = max(s["max_task_records"] for s in v["measured_after"]["stages"])
    assert before == st["measured_max_task_records"] and after * 5 < before, (before, after)


def test_fix_through_the_history_server_and_written_to_a_file(history, tmp_path):
    url, apps, _ = history
    out = tmp_path / "fixed.sql"
    f = fix(url, "--app", apps["hot_null_join"], "--min-gain", "off", "-o", str(out))
    assert f["stage"]["rewritten"] and abs(f["stage"]["before_gap"]) <= 0.05
    assert out.read_text().startswith("-- skewjoin: ") and "__sj1" in out.read_text()
    # By default the rewrite is made only when predicted faster: on these few rows it is not,
    # and the reason is given.
    d = fix(url, "--app", apps["hot_null_join"])
    assert not d["stage"]["rewritten"] and d["rewrite"]["unchanged_joins"][0]["reason"]


def test_fix_names_a_table_deleted_since_the_run(logs, tmp_path):
    src = pathlib.Path(logs["hot_null_join"])
    data = json.loads(run("diagnose", str(src), "--format", "json", "--min-stage-seconds", "0").stdout)
    table = next(f for f in data["findings"] if f["kind"] == "hot_key")["join"]["left_table"]
    moved = tmp_path / "gone" / pathlib.Path(table).name
    log = tmp_path / src.name
    log.write_text(src.read_text().replace(table, str(moved)))
    p = fix(str(log), check=False)
    assert p.returncode == 2 and str(moved) in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert "1. Locate" in p.stdout or "Locate" in p.stdout, "the diagnosis comes first"


def test_fix_says_a_table_changed_since_the_run(logs, tmp_path):
    """The log records the files and bytes each scan read: the events table rewritten with
    half its rows since the run is `changed` (the titles are not), and the stage predicted on
    today's files is off the log's measure by more than 5%, which the stage's note says."""
    import pyarrow.parquet as pq
    src = pathlib.Path(logs["hot_null_join"])
    table = fix(str(src))["diagnosis"]["findings"][0]["join"]["left_table"]
    events = pq.read_table(table)
    moved = tmp_path / "events_now.parquet"
    pq.write_table(events.slice(0, events.num_rows // 2), moved)
    log = tmp_path / src.name
    log.write_text(src.read_text().replace(table, str(moved)))
    f = fix(str(log), "--min-gain", "off")
    checks = [(t["files_read"], t["bytes_read"] == pathlib.Path(table).stat().st_size, t["files_now"], t["bytes_now"], t["changed"]) for t in f["tables"]]
    assert checks[0] == (1, True, 1, moved.stat().st_size, True), f["tables"]
    assert not f["tables"][1]["changed"] and f["tables"][1]["files_read"] == f["tables"][1]["files_now"] == 1
    assert f["stage"]["before_gap"] < -0.05 and f["stage"]["notes"], f["stage"]


def test_fix_says_an_rdd_job_has_no_query_to_rewrite(logs):
    """An RDD job's hot stage: the diagnosis finds it, and fix says there is no SQL plan, so no
    query to rewrite (exit code 0)."""
    f = fix(logs["rdd_only"])
    hot = [x for x in f["diagnosis"]["findings"] if x["kind"] == "hot_key"]
    assert hot and "join" not in hot[0], f["diagnosis"]["findings"]
    assert f["no_query"] and f["query"] is None and f["rewrite"] is None
    assert str(hot[0]["stage_id"]) in f["no_query"]


def test_fix_goes_through_every_kind_of_log(logs):
    for name, path in logs.items():
        p = fix(path, check=False)
        assert p.returncode == 0 and "panicked" not in p.stderr, (name, p.stderr)
        f = json.loads(p.stdout)
        assert f["query"] or f["no_query"], name


def test_fix_takes_the_sql_text_the_log_holds(logs):
    """A job that set its SQL as the job description (as spark-sql, the Thrift server and
    notebooks do): fix rewrites that text, its catalog tables read from the files the plan's
    scans name, its WHERE applied to the counts; Polars runs both queries."""
    from eventlogs import SQL_TEXT_QUERY
    f = fix(logs["sql_text_join"], "--min-gain", "off", "--verify")
    q, st, v = f["query"], f["stage"], f["verification"]
    assert q["source"] == "sql_text" and q["sql"].strip() == SQL_TEXT_QUERY
    assert [t["name"] for t in q["tables"]] == ["sj.events", "sj.titles"]
    assert all(t["table"].endswith(".parquet") for t in q["tables"])
    assert abs(st["before_gap"]) <= 0.05 and st["rewritten"], st
    assert v["identical"] and v["rows_original"] == 300_000


def test_fix_with_aqe_on_predicts_the_coalesced_stage(logs):
    """AQE on (the log's settings): Spark coalesced 64 partitions into about 33 tasks and kept
    the NULL partition whole; the prediction models both."""
    f = fix(logs["aqe_null_join"], "--min-gain", "off", "--verify")
    st = f["stage"]
    assert abs(st["before_gap"]) <= 0.05 and st["rewritten"], st
    assert f["rewrite"]["changes"][0]["aqe"]["before"]["coalesced_into"] is not None
    assert f["verification"]["identical"]


def test_fix_html_opens_in_a_browser(logs, tmp_path):
    """One page: the diagnosis (its charts), the query, the stage predicted against the log, the
    rewritten SQL and the verification, rendered by headless Chromium."""
    from browser import open_in_browser, require_chromium
    require_chromium()
    html = tmp_path / "fix.html"
    f = fix(logs["hot_null_join"], "--min-gain", "off", "--verify", "--html", str(html))
    dom, img = open_in_browser(tmp_path, html, "fix")
    fixed = dom.split("<h2>Fix</h2>")[-1]
    assert "<h2>Fix</h2>" in dom and "<h2>Verify</h2>" in fixed, dom[-2000:]
    assert "LEFT JOIN" in fixed and "__sj1" in fixed
    assert f"{f['stage']['measured_max_task_records']:,}" in fixed and "+0.0%" in fixed
    assert "identical as multisets" in fixed
    assert "<script" not in dom and dom.count("<svg") >= 2


def stage_join(f):
    """The rewrite's change for the stage fix checked (the join on the stage's key columns)."""
    keys = [k.split("#")[0] for k in f["diagnosis"]["findings"][0]["join"]["left_keys"]]
    return next(c for c in f["rewrite"]["changes"] if all(k in " ".join(c["keys"]) for k in keys))


def test_fix_keeps_the_filters_of_a_dataframe_job_from_its_plan(logs):
    """A join written with the DataFrame API, no SQL text in the log: the rebuilt query keeps
    the filters the plan applies to the plays (views >= 100, kind = 'play'), so the stage is
    predicted as the log measured it; the placeholder 'unknown' (no title has it) is moved off
    the shuffle, and Polars finds the same rows."""
    f = fix(logs["dataframe_join"], "--min-gain", "off", "--verify")
    q, st, v = f["query"], f["stage"], f["verification"]
    side = f["diagnosis"]["findings"][0]["join"]["left_side"]
    assert q["source"] == "rebuilt_from_plan" and side["filters"], side
    assert "(`views` >= 100)" in q["sql"] and "(`kind` = 'play')" in q["sql"], q["sql"]
    assert abs(st["before_gap"]) <= 0.05 and st["rewritten"], st
    assert st["predicted_after"]["max_task_rows"] * 3 < st["predicted_before"]["max_task_rows"], st
    assert "unknown" in [h["value"] for h in stage_join(f)["hot_keys"]]
    assert v["identical"] and v["rows_original"] == v["rows_rewritten"] > 0
    # Both tables are the files the job read: one each, of the same bytes.
    assert [(t["files_read"], t["changed"]) for t in f["tables"]] == [(1, False), (1, False)], f["tables"]


def test_fix_rewrites_a_chain_of_joins_from_its_sql_text(logs):
    """Three joins with filters and an aggregate, the SQL text in the log: the stage is the
    titles join (40% NULL title_id), found among the chain's joins and predicted as the log
    measured it; Spark runs both queries with the job's settings."""
    from eventlogs import CHAIN_QUERY
    f = fix(logs["chain_join"], "--min-gain", "off", "--verify", "--engine", "spark", "--python", sys.executable)
    q, st, v = f["query"], f["stage"], f["verification"]
    assert q["source"] == "sql_text" and q["sql"].strip() == CHAIN_QUERY
    assert [t["name"] for t in q["tables"]] == ["sjc.chain_events", "sjc.users", "sjc.titles", "sjc.countries"]
    assert f["diagnosis"]["findings"][0]["join"]["left_keys"][0].startswith("title_id#")
    assert abs(st["before_gap"]) <= 0.05 and st["rewritten"], st
    assert st["predicted_before"] == stage_join(f)["before"]
    assert v["identical"]
    before = max(s["max_task_records"] for s in v["measured_before"]["stages"])
    after = max(s["max_task_records"] for s in v["measured_after"]["stages"])
    assert before == st["measured_max_task_records"] and after * 2 < before, (before, after)


def test_fix_reads_a_delta_table_the_plan_names(logs, tmp_path):
    """A scan whose location is a Delta table's folder, as Spark prints a Delta scan
    (`PreparedDeltaFileIndex(1 paths)[file:/folder]`): the hot NULL join's log with its events
    put in a Delta table of the same rows (delta-rs; a first version overwritten, so its file is
    no longer the table's). fix reads the table's active files, predicts the stage as the log
    measured it, and Polars finds the same rows. (A job run on Spark over Delta needs the
    delta-spark jars, which only Maven serves; this machine reaches no Maven registry.)"""
    import deltalake
    import pyarrow.parquet as pq
    src = pathlib.Path(logs["hot_null_join"])
    table = fix(str(src))["diagnosis"]["findings"][0]["join"]["left_table"]
    rows = pq.read_table(table)
    delta = tmp_path / "events_delta"
    deltalake.write_deltalake(str(delta), rows.slice(0, 1000))
    deltalake.write_deltalake(str(delta), rows, mode="overwrite")
    text = src.read_text().replace(table, str(delta))
    text = text.replace(f"InMemoryFileIndex(1 paths)[file:{delta}]", f"PreparedDeltaFileIndex(1 paths)[file:{delta}]")
    log = tmp_path / src.name
    log.write_text(text)
    f = fix(str(log), "--min-gain", "off", "--verify")
    q, st, v = f["query"], f["stage"], f["verification"]
    assert q["source"] == "rebuilt_from_plan" and q["tables"][0]["table"] == str(delta), q
    assert abs(st["before_gap"]) <= 0.05 and st["rewritten"], st
    assert f["tables"][0]["files_now"] == 1, f["tables"]
    assert v["identical"] and v["rows_original"] == v["rows_rewritten"] == 300_000
