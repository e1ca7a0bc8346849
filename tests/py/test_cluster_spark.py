"""Every command on a real Spark standalone cluster (tests/py/cluster.py: a master, two 1-core
workers, a History Server, on 4.x a Spark Connect server; all on 127.0.0.1, started once per
pytest run), checked against the embedded engine on the same tables; `--sample` drawn on Spark;
and the faults a cluster has: a worker killed mid-count, a master or Connect server gone, an
executor lost during verify, a table the executors cannot read.

Each skewjoin run here is a Spark application of its own on the cluster (its event log in the
cluster's folder, through `cluster.env()`), so the suite keeps to the few runs that show
something a local session cannot."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
import pytest

from conftest import ROOT, binary, failure, free_port

SPARK4 = int(pyspark.__version__.split(".")[0]) >= 4
SAMPLES = ROOT / "samples"
EVENTS, TITLES = str(SAMPLES / "events.parquet"), str(SAMPLES / "titles.parquet")
# The planner's settings of the older suites: AQE off, every movable hot key moved.
LEGACY = ["--conf", "spark.sql.adaptive.enabled=false", "--min-gain", "off"]
PLAN = ["plan", "--left", EVENTS, "--right", TITLES, "--on", "title_id", "--how", "left", "--broadcast-threshold", "256KB"]
REWRITE = ["rewrite", str(SAMPLES / "query.sql"), "--table", f"events={EVENTS}", "--table", f"titles={TITLES}",
           "--broadcast-threshold", "256KB"]
NO_CONNECT = "pyspark 3.5 from pip ships no Spark Connect server: the Connect runs are on 4.x (.venv-spark4)"

pytestmark = pytest.mark.cluster


def sj(cluster, *args, timeout=600):
    """skewjoin, in the cluster's environment (its applications log into the History Server's
    folder)."""
    return subprocess.run([binary(), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=cluster.env())


def ok(p):
    assert p.returncode == 0, (p.returncode, p.stderr[-3000:])
    return p


def on_master(cluster):
    return ["--engine", "spark", "--python", sys.executable, "--master", cluster.master_url]


def on_connect(cluster):
    return ["--engine", "spark", "--python", sys.executable, "--remote", cluster.connect_url]


def as_json(p, spark=None):
    """The JSON report, its `spark` summary checked (the application ran on `spark`) and taken
    out, and its `column_chunks` (this process's reads, which differ by engine) dropped."""
    j = json.loads(ok(p).stdout)
    if spark is not None:
        summary = j.pop("spark")
        assert summary["version"] == pyspark.__version__ and summary["master"] == spark, summary
    j.pop("column_chunks", None)
    return j


def app_logs(cluster, since):
    """The event logs the cluster's applications wrote after `since` (a time.time())."""
    return [p for p in cluster.eventlog_dir.iterdir() if p.stat().st_mtime >= since and not p.name.startswith(".")]


def events(path):
    """The events of one event log (the cluster's are plain files, on both Spark lines)."""
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """Tables for the cluster, written from a seed: `files`, 40 files of 60,000 rows (a key
    `k` with values 1, 2, 3 at 20%, 10% and 5% of the rows, 0.5% NULL, the rest spread over
    200,000 values; a payload `v`), the table Spark samples by whole files; `long`, the same
    shape in 16 files of 600,000 rows, long enough to count that a worker can be lost mid-way;
    `dim`, one row for 1, 2, 3 and every 20th value of the rest."""
    d = tmp_path_factory.mktemp("cluster-tables")
    rng = np.random.default_rng(53)

    def write(folder, files, rows):
        folder.mkdir()
        for i in range(files):
            u = rng.random(rows)
            k = np.where(u < 0.2, 1, np.where(u < 0.3, 2, np.where(u < 0.35, 3, rng.integers(10, 200_010, rows))))
            mask = rng.random(rows) < 0.005
            pq.write_table(pa.table({"k": pa.array(k, mask=mask), "v": rng.random(rows)}), folder / f"part-{i:05d}.parquet")
        return str(folder)

    dim = d / "dim.parquet"
    keys = np.concatenate([[1, 2, 3], np.arange(10, 200_010, 20)])
    pq.write_table(pa.table({"k": keys, "name": [f"name {k}" for k in keys]}), dim)
    return {"files": write(d / "files", 40, 60_000), "long": write(d / "long", 16, 600_000), "dim": str(dim)}


# ---- every command on the cluster, against the embedded engine ----

def test_plan_and_rewrite_on_the_master_as_embedded(cluster):
    """plan and rewrite with --master spark://: the same counts, hot keys, plan and SQL as the
    embedded engine on the same files. plan is the issue's case, at Spark's defaults (AQE on):
    counted on the cluster, Spark's own map tasks (the partitions of its scan) and the files'
    shuffle bytes give the embedded engine's largest task, 112,075 rows, and every other
    figure. (keys on the master is the worker-kill test's.)"""
    args = ["plan", "--left", EVENTS, "--right", TITLES, "--on", "title_id", "--how", "left", "--format", "json", "-q"]
    want = as_json(sj(cluster, *args))
    got = as_json(sj(cluster, *args, *on_master(cluster)), cluster.master_url)
    assert got["before"] == want["before"] and want["before"]["max_task_rows"] == 112_075, (got["before"], want["before"])
    assert got == want and want["hot_keys"]
    want = as_json(sj(cluster, *REWRITE, *LEGACY, "--format", "json", "-q"))
    got = as_json(sj(cluster, *REWRITE, *LEGACY, "--format", "json", "-q", *on_master(cluster)), cluster.master_url)
    assert got == want and "UNION ALL" in want["sql"], got


@pytest.mark.both_lines("the Connect server ships with pyspark 4.x only")
def test_keys_plan_and_rewrite_over_connect_as_embedded(cluster, tables):
    if cluster.connect_url is None:
        pytest.skip(NO_CONNECT)
    for args in (["keys", tables["files"], "-c", "k", "--top", "10"], PLAN, [*REWRITE, *LEGACY]):
        want = as_json(sj(cluster, *args, "--format", "json", "-q"))
        got = as_json(sj(cluster, *args, "--format", "json", "-q", *on_connect(cluster)), cluster.connect_url)
        assert got == want, args


CLUSTER_JOB = """
import sys
sys.path.insert(0, {here!r})
import pathlib, eventlogs
from pyspark.sql import SparkSession
ep, tp = eventlogs.write_join_tables(pathlib.Path({data!r}), 300_000, 3000, 0.4, seed=1)
s = (SparkSession.builder.master({master!r}).appName("hot_null_join_on_the_cluster")
     .config("spark.sql.adaptive.enabled", "false").config("spark.sql.autoBroadcastJoinThreshold", "-1")
     .config("spark.sql.shuffle.partitions", "16").config("spark.cores.max", "2").config("spark.executor.cores", "1")
     # Both executors registered before the job: its tasks run on both workers.
     .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
     .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s").getOrCreate())
print(eventlogs.join_job(s, ep, tp), file=sys.stderr)
print(s.sparkContext.applicationId)
s.stop()
"""


@pytest.fixture(scope="module")
def cluster_job(cluster, tmp_path_factory):
    """The hot NULL left join of tests/py/eventlogs.py run on the cluster (two executors, one on
    each worker): (its application id, its event log)."""
    code = CLUSTER_JOB.format(here=str(ROOT / "tests" / "py"), data=str(tmp_path_factory.mktemp("job-data")),
                              master=cluster.master_url)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=cluster.env())
    assert p.returncode == 0, p.stderr[-3000:]
    app = p.stdout.strip().splitlines()[-1]
    log = next(cluster.eventlog_dir.glob(f"{app}*"))
    return app, str(log)


def fix(cluster, *args):
    p = sj(cluster, "fix", *args, "--min-stage-seconds", "0", "--min-gain", "off", "--format", "json", "-q")
    return json.loads(ok(p).stdout)


def test_fix_a_job_that_ran_on_the_cluster(cluster, cluster_job):
    """fix on the log of a job with two executors on two workers: the stage predicted as the log
    measured it, the rewrite's rows the same in process and on the cluster, where its largest
    task is a fifth of the log's; and the same fix from the History Server."""
    app, log = cluster_job
    added = [e for e in events(log) if e["Event"] == "SparkListenerExecutorAdded"]
    workers = {e["Executor Info"]["Log Urls"]["stderr"].split("/logPage")[0] for e in added}
    assert len(added) == 2 and len(workers) == 2, added
    f = fix(cluster, log, "--verify")
    st = f["stage"]
    assert f["query"]["source"] == "rebuilt_from_plan" and abs(st["before_gap"]) <= 0.05 and st["rewritten"], st
    assert f["verification"]["identical"]
    # The cluster's size, read from the log: two 1-core executors (item 6 of issue 53), which
    # verify on the cluster replays the measured tasks on.
    size = f["rewrite"]["cluster"]
    assert (size["cores"], size["source"]) == (2, "event_log") and "2 executors" in size["detail"], size
    on = fix(cluster, log, "--verify", *on_master(cluster))
    v = on["verification"]
    assert v["timing"]["cluster"] == size and v["timing"]["here_cores"] is None, v["timing"]
    before = max(s["max_task_records"] for s in v["measured_before"]["stages"])
    after = max(s["max_task_records"] for s in v["measured_after"]["stages"])
    assert v["identical"] and v["master"] == cluster.master_url, v
    assert before == st["measured_max_task_records"] and after * 5 < before, (before, after, st)
    served = fix(cluster, cluster.history_url, "--app", app)
    assert served["query"] == f["query"] and served["stage"] == st


ADVISE = """
import json, sys
sys.path.insert(0, {python!r})
from pyspark.sql import SparkSession
from skewjoin import spark as sj
s = SparkSession.builder.master({master!r}).appName("advise").getOrCreate()
s.conf.set("spark.sql.autoBroadcastJoinThreshold", "256KB")
e, t = s.read.parquet({events!r}), s.read.parquet({titles!r})
a = sj.advise(e.join(t, "title_id", "left"), min_gain="off")
print(json.dumps({{"plan": a.joins[0].plan.data, "conf": sj.session_conf(s), "master": s.sparkContext.master}}))
s.stop()
"""


def test_advise_from_a_session_on_the_master(cluster):
    """skewjoin.spark.advise(df) in a session connected to the master: the plan `skewjoin plan`
    gives on the files with the session's settings."""
    code = ADVISE.format(python=str(ROOT / "python"), master=cluster.master_url, events=EVENTS, titles=TITLES)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env=cluster.env(SKEWJOIN_BIN=binary()))
    got = json.loads(ok(p).stdout.strip().splitlines()[-1])
    assert got["master"] == cluster.master_url
    args = ["plan", "--left", EVENTS, "--right", TITLES, "--on", "title_id", "--how", "left",
            "--spark-version", "4.x" if SPARK4 else "3.5", "--min-gain", "off", "--format", "json", "-q"]
    for k, v in got["conf"].items():
        args += ["--conf", f"{k}={v}"]
    # The cluster's size is the session's: two 1-core workers' executors, read live.
    size = got["plan"]["cluster"]
    assert (size["cores"], size["source"]) == (2, "session") and "2 executors" in size["detail"], size
    want = as_json(sj(cluster, *args, "--cores", "2"))
    plan = {k: v for k, v in got["plan"].items() if k not in ("settings", "column_chunks", "cluster")}
    assert plan == {k: v for k, v in want.items() if k not in ("settings", "cluster")} and plan["hot_keys"]


# ---- --sample on Spark ----

def test_sample_drawn_on_the_cluster(cluster, tables):
    """keys --sample 10% on the cluster: whole files drawn (4 of 40), the counts scaled to the
    table, each share with its 95% interval; the hot values' shares within their intervals of
    the exact shares the embedded engine counts."""
    exact = as_json(sj(cluster, "keys", tables["files"], "-c", "k", "--top", "4", "--format", "json", "-q"))
    p = sj(cluster, "keys", tables["files"], "-c", "k", "--top", "4", "--sample", "10%", "--format", "json", "-q",
           *on_master(cluster))
    c = as_json(p, cluster.master_url)["columns"][0]
    s = c["sample"]
    assert (s["method"], s["files_read"], s["files_total"]) == ("whole files", 4, 40), s
    assert s["rows_read"] == 240_000 and c["rows"] == 2_400_000 and not c["exact"], c
    truth = {json.dumps(e["value"]): e["share"] for e in exact["columns"][0]["top"]}
    for e in c["top"][:3]:
        assert e["share_error"] > 0 and abs(e["share"] - truth[json.dumps(e["value"])]) <= e["share_error"], e
        assert e["count"] == round(e["sample_count"] * 10), e


# ---- faults ----

def running_tasks(cluster, worker, app):
    """The tasks an executor of `app` on `worker` has started (its log's "Running task" lines)."""
    n = 0
    for log in (cluster.base / f"worker-{worker}" / app).glob("*/stderr"):
        n += log.read_text(errors="replace").count("Running task")
    return n


def newest_app(cluster, since):
    """The application the master started after `since`, once it has one."""
    from cluster import get_json
    for a in get_json(f"{cluster.master_ui}/json/").get("activeapps", []):
        if a["starttime"] / 1000 >= since - 1:
            return a["id"]
    return None


def wait_for(what, check, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"{what} within {seconds} s")


@pytest.fixture
def worker_back(cluster):
    """Worker 1 started again after a test that kills it, whatever the test's outcome."""
    yield
    if not cluster.workers[1].alive():
        cluster.start_worker(1)


def test_keys_on_the_master_with_a_worker_killed_mid_count(cluster, tables, worker_back):
    """keys --master spark:// on the long table, worker 1 and its executor killed while it
    counts: Spark runs the lost tasks on worker 0, and the counts are still the exact ones, the
    embedded engine's."""
    want = as_json(sj(cluster, "keys", tables["long"], "-c", "k", "--top", "5", "--format", "json", "-q"))
    since = time.time()
    proc = subprocess.Popen([binary(), "keys", tables["long"], "-c", "k", "--top", "5", "--format", "json", "-q",
                             *on_master(cluster)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cluster.env(), start_new_session=True)
    try:
        app = wait_for("the count's application on the master", lambda: newest_app(cluster, since), 120)
        # The open's row count is the first job; the count's own tasks follow it.
        wait_for("tasks on worker 1", lambda: running_tasks(cluster, 1, app) >= 3, 180)
        assert proc.poll() is None, "the count ended before the worker was killed"
        cluster.kill_worker(1)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    got = json.loads(out)
    assert got.pop("spark")["master"] == cluster.master_url
    got.pop("column_chunks", None)
    assert got == want
    log = next(cluster.eventlog_dir.glob(f"{app}*"))
    lost = [e for e in events(log) if e["Event"] == "SparkListenerExecutorRemoved"]
    assert lost, "the log shows no executor removed"


JOIN_SQL = "SELECT d.name, count(*) AS n, sum(t.v) AS v FROM t JOIN dim d ON t.k = d.k GROUP BY d.name"


def test_verify_on_the_master_with_an_executor_lost(cluster, tables, worker_back):
    """verify --engine spark --master: both queries on the cluster, worker 1's executor killed
    while the original runs (the worker starts another; the lost tasks run again). The rows
    are compared, verify says which stages ran tasks again, and the join stage's tasks, read
    from the application's REST API as each partition's successful run, are the planner's."""
    q = pathlib.Path(tables["dim"]).parent / "join.sql"
    q.write_text(JOIN_SQL)
    since = time.time()
    proc = subprocess.Popen([binary(), "verify", *LEGACY, "--runs", "1", q, "--table", f"t={tables['files']}",
                             "--table", f"dim={tables['dim']}", "--broadcast-threshold", "1KB", "--format", "json", "-q",
                             *on_master(cluster)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cluster.env(), start_new_session=True)
    try:
        app = wait_for("verify's application", lambda: newest_app(cluster, since), 120)
        # Past the schema's one-task jobs: the original query's scan is running there.
        wait_for("tasks on worker 1", lambda: running_tasks(cluster, 1, app) >= 3, 300)
        assert proc.poll() is None, "verify ended before the executor was killed"
        pids = cluster.executor_pids(1)
        assert pids, "no executor on worker 1"
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    v = json.loads(out)
    assert v["identical"] and v["master"] == cluster.master_url and v["rows_original"] == v["rows_rewritten"] > 9_000, v
    assert any("failed and ran again" in n for n in v["notes"]), v["notes"]
    for when in ("before", "after"):
        stage = max(v[f"measured_{when}"]["stages"], key=lambda s: s["max_task_records"])
        assert stage["max_task_records"] == v[f"predicted_{when}"]["max_task_rows"], (when, stage)
    assert v["predicted_before"]["max_task_rows"] >= 5 * v["predicted_after"]["max_task_rows"]


def test_a_master_that_is_not_there(cluster, tmp_path):
    """No master on the port: one line within seconds, for counting and for verify."""
    gone = f"spark://127.0.0.1:{free_port()}"
    t0 = time.time()
    args = ["--engine", "spark", "--python", sys.executable, "--master", gone]
    counted = failure(sj(cluster, "keys", EVENTS, "-c", "title_id", *args, "--format", "json"))
    verified = failure(sj(cluster, "verify", SAMPLES / "query.sql", "--table", f"events={EVENTS}", "--table",
                          f"titles={TITLES}", *args, "--format", "json"))
    for f in (counted, verified):
        assert (f["code"], f["kind"]) == ("server", "server") and gone in f["message"], f
    assert time.time() - t0 < 30


def test_a_table_the_executors_cannot_read(cluster, tables):
    """A table in a folder this machine reads and the workers do not (their mount namespace has
    an empty one there): one line naming the file, from the first job (the one that reads a
    footer for the schema), before any count."""
    if cluster.private is None:
        pytest.skip("this user may not make a mount namespace (unshare -m): the workers see every folder here")
    hidden = cluster.private / "events.parquet"
    hidden.write_bytes(pathlib.Path(EVENTS).read_bytes())
    since = time.time()
    f = failure(sj(cluster, "keys", hidden, "-c", "title_id", "--format", "json", *on_master(cluster)))
    assert (f["code"], f["kind"]) == ("usage", "usage") and str(hidden) in f["message"] and "executor" in f["message"], f
    logged = app_logs(cluster, since)
    jobs = [e for log in logged for e in events(log) if e["Event"] == "SparkListenerJobStart"]
    assert len(logged) == 1 and len(jobs) == 1, (logged, len(jobs))


def connect_jobs_running(cluster):
    """Whether the Connect server's application runs a job now (its UI's REST API)."""
    from cluster import get_json
    try:
        app = get_json(f"{cluster.connect_ui}/api/v1/applications")[0]["id"]
        return bool(get_json(f"{cluster.connect_ui}/api/v1/applications/{app}/jobs?status=running"))
    except (OSError, ValueError, IndexError, KeyError):
        return False


@pytest.mark.both_lines("the Connect server ships with pyspark 4.x only")
def test_a_connect_server_that_stops(cluster, tables):
    """The Connect server stopped while --remote counts: one line, well within the timeout (the
    client gives the server up after about 45 s of retries). The last test here: it stops the
    cluster's Connect server."""
    if cluster.connect_url is None:
        pytest.skip(NO_CONNECT)
    t0 = time.time()
    proc = subprocess.Popen([binary(), "keys", tables["long"], "-c", "k", "--top", "5", "-q", "--format", "json", *on_connect(cluster)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cluster.env(),
                            start_new_session=True)
    try:
        wait_for("a job of the count on the Connect server", lambda: connect_jobs_running(cluster), 120)
        assert proc.poll() is None, "the count ended before the server stopped"
        cluster.stop_connect()
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    f = json.loads(err)["error"]
    assert (f["code"], f["kind"]) == ("server", "server") and cluster.connect_url in f["message"], f
    print("the user saw:", f["message"], f"after {time.time() - t0:.0f} s")
    assert time.time() - t0 < 150
