import contextlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def pytest_configure(config):
    # scripts/test runs every Spark test on Spark 3.5 and, on 4.x, only the ones marked
    # both_lines: each gives the reason its outcome can differ between the lines.
    config.addinivalue_line("markers", "both_lines(reason): also run on Spark 4.x, for the reason given")
    config.addinivalue_line("markers", "cluster: runs against the Spark standalone cluster of tests/py/cluster.py")


def pytest_collection_modifyitems(config, items):
    """A both_lines mark must say why the lines may differ: a mark with no reason is an error."""
    for item in items:
        for m in item.iter_markers("both_lines"):
            if not (m.args and str(m.args[0]).strip()):
                raise pytest.UsageError(f"{item.nodeid}: both_lines needs its reason, as both_lines(\"...\")")


_FILE_SECONDS = {}


def pytest_runtest_logreport(report):
    # Each test file's time (setup, call and teardown of its tests), printed at the end.
    path = report.nodeid.split("::")[0]
    _FILE_SECONDS[path] = _FILE_SECONDS.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if not _FILE_SECONDS:
        return
    terminalreporter.write_sep("=", "time per test file")
    for path, secs in sorted(_FILE_SECONDS.items(), key=lambda x: -x[1]):
        terminalreporter.write_line(f"{secs:8.1f} s  {path}")


def find_corpus():
    """The parquet-testing corpus: $SKEWJOIN_CORPUS, else ../shared/corpus/parquet-testing beside
    the repository, else beside the repository this one was cloned from (a CI clone in a
    temporary folder)."""
    if os.environ.get("SKEWJOIN_CORPUS"):
        return pathlib.Path(os.environ["SKEWJOIN_CORPUS"]).resolve()
    rel = pathlib.Path("..") / "shared" / "corpus" / "parquet-testing"
    here = (ROOT / rel).resolve()
    if here.exists():
        return here
    try:
        origin = subprocess.run(["git", "-C", str(ROOT), "config", "--get", "remote.origin.url"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        origin = ""
    origin = origin.removeprefix("file://")
    if origin and pathlib.Path(origin).is_dir():
        there = (pathlib.Path(origin) / rel).resolve()
        if there.exists():
            return there
    return here


CORPUS = find_corpus()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that used the cluster shows the tail of the cluster's logs."""
    outcome = yield
    report = outcome.get_result()
    c = item.funcargs.get("cluster") if hasattr(item, "funcargs") else None
    if report.failed and c is not None:
        report.sections.append(("Spark cluster logs", c.logs(1500)))


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """The Spark standalone cluster of tests/py/cluster.py, on 127.0.0.1: a master, two
    1-core 2 GB workers, a History Server over the event logs of every application started
    with `cluster.env()`, and on 4.x a Spark Connect server. Started once per pytest run (about
    30 s), stopped at its end; a part that does not come up fails the tests with one line."""
    from cluster import Cluster, ClusterError
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.start()
    except ClusterError as e:
        c.stop()
        print(e)
        pytest.fail(f"the Spark cluster did not start: {str(e).splitlines()[0]}")
    except BaseException:
        c.stop()
        raise
    yield c
    c.stop()


def binary():
    b = os.environ.get("SKEWJOIN_BIN") or str(ROOT / "target" / "debug" / "skewjoin")
    if not os.path.exists(b):
        pytest.fail(f"skewjoin binary not found at {b}: build it first (cargo build)")
    return b


# The suites written before AQE and the cost model were modelled check Spark's shuffle with AQE
# off and rewrite whenever a hot key can be moved: their plan, rewrite and verify runs say so.
# The AQE suites (test_aqe_spark.py) give their own settings and margin.
LEGACY = ["--conf", "spark.sql.adaptive.enabled=false", "--min-gain", "off"]


# What these suites check of verify is the rows and the tasks: one run of each query is enough
# (test_verify_spark.py checks the timed runs and their noise).
ONE_RUN = ["--runs", "1"]


def legacy(args):
    """`args` with LEGACY after a plan, rewrite or verify subcommand that names no margin, and a
    verify that names no runs with ONE_RUN."""
    args = [str(a) for a in args]
    if args and args[0] == "verify" and "--runs" not in args:
        args = [args[0], *ONE_RUN, *args[1:]]
    if args and args[0] in ("plan", "rewrite", "verify") and "--min-gain" not in args:
        return [args[0], *LEGACY, *args[1:]]
    return args


def run(*args, check=False):
    p = subprocess.run([binary(), *legacy(args)], capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"skewjoin {' '.join(map(str, args))} failed: {p.stderr}")
    return p


def rewrite_json(tmp_path, query, *args):
    """`skewjoin rewrite QUERY -q --format json ARGS`, held to exit 0: its JSON. `query` is a
    file, or SQL text (written to tmp_path/q.sql)."""
    if isinstance(query, str):
        (tmp_path / "q.sql").write_text(query)
        query = tmp_path / "q.sql"
    p = run("rewrite", query, "-q", "--format", "json", *args)
    assert p.returncode == 0, f"{query}: {p.stderr}"
    return json.loads(p.stdout)


def verify_run(tmp_path, sql, tables, *args, rewritten=None, timeout=600):
    """`skewjoin verify` of `sql` over `tables` ({name: path}, or NAME=PATH strings), with the
    rewrite's SQL given when `rewritten` is: the finished process."""
    (tmp_path / "q.sql").write_text(sql)
    pairs = tables.items() if isinstance(tables, dict) else (t.split("=", 1) for t in tables)
    argv = [binary(), "verify", *map(str, args), str(tmp_path / "q.sql"), "-q", "--format", "json"]
    argv += [a for name, path in pairs for a in ("--table", f"{name}={path}")]
    if rewritten is not None:
        (tmp_path / "rewritten.sql").write_text(rewritten)
        argv += ["--rewritten", str(tmp_path / "rewritten.sql")]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def write_parquet(path, cols, **options):
    """One Parquet file of `cols` (a pyarrow table, or columns by name), written with
    pyarrow's `options` (row_group_size, ...): its path, as a string."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(cols if isinstance(cols, pa.Table) else pa.table(cols), path, **options)
    return str(path)


def failure(p):
    """The failure of a run of the binary, held to its contract (exit 2, one line on stderr,
    no panic): `{"code", "kind", "message"}` from the JSON of a `--format json` run; a text
    run's line gives the message only."""
    assert p.returncode == 2, (p.returncode, p.stdout[:300], p.stderr)
    err = p.stderr
    assert err.count("\n") == 1 and "panicked" not in err, err
    if err.startswith("{"):
        return json.loads(err)["error"]
    assert err.startswith("skewjoin: error: "), err
    return {"message": err[len("skewjoin: error: "):].rstrip("\n")}


@pytest.fixture
def corpus():
    if not CORPUS.exists():
        pytest.fail(f"corpus not found at {CORPUS} (set SKEWJOIN_CORPUS to the parquet-testing folder)")
    return CORPUS


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for every Spark test (starting one takes ~10 s)."""
    from pyspark.sql import SparkSession
    s = (SparkSession.builder.master("local[2]").appName("skewjoin-tests")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.shuffle.partitions", "8")
         # The UI's REST API gives each task's shuffle-read records (see sparkrun.py).
         .config("spark.ui.enabled", "true")
         .config("spark.ui.port", "0")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.ui.retainedTasks", "1000000")
         .config("spark.driver.memory", "1g")
         # Dates before 1582 written and read as the proleptic Gregorian calendar (Spark 3's own).
         .config("spark.sql.parquet.datetimeRebaseModeInWrite", "CORRECTED")
         .config("spark.sql.parquet.datetimeRebaseModeInRead", "CORRECTED")
         .config("spark.sql.parquet.int96RebaseModeInWrite", "CORRECTED")
         .config("spark.sql.parquet.int96RebaseModeInRead", "CORRECTED")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


# The object-store tests: moto's S3 server on loopback, and skewjoin run against it.
SECRET = "sj-test-secret-Zq8w3Xv"


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, name, seconds=60):
    """Wait until the server `proc` (called `name` in errors) accepts connections on `port`."""
    import socket
    import time
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {proc.stderr.read().decode()[:500]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{name} did not listen on {port} in {seconds} s")


@pytest.fixture(scope="session")
def moto_s3():
    """moto's S3 server on 127.0.0.1 (started here, stopped at the end): (endpoint, boto3 client)."""
    from moto.server import ThreadedMotoServer
    import boto3
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key=SECRET)
    yield endpoint, client
    server.stop()


def upload(client, bucket, folder, prefix=""):
    for p in sorted(pathlib.Path(folder).rglob("*")):
        if p.is_file():
            client.upload_file(str(p), bucket, prefix + p.relative_to(folder).as_posix())


def sj(endpoint, *args, env=None, timeout=120):
    """skewjoin with the store's endpoint and keys in its environment (and no other AWS_*)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    e.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1",
             AWS_ENDPOINT_URL=endpoint, HOME=str(ROOT / "target"))
    e.update(env or {})
    return subprocess.run([binary(), *legacy(args)], capture_output=True, text=True, timeout=timeout, env=e)


# ---- Spark 4.x: a Spark Connect server started from pyspark's sbin scripts ----

def wait_for_port(port, proc_log, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"the Spark Connect server did not listen on {port} within {timeout} s:\n{proc_log()}")


@pytest.fixture(scope="session")
def connect(tmp_path_factory):
    """A Spark Connect server on 127.0.0.1 (pyspark's own start/stop-connect-server.sh), its
    URL, and a client session that registered the samples as sj.events and sj.titles. One per
    pytest run (Spark 4.x only), shared by the suites that use it."""
    import pyspark

    if int(pyspark.__version__.split(".")[0]) < 4:
        pytest.skip("Spark Connect servers ship with pyspark 4.x (scripts/test runs this on .venv-spark4)")
    home = pathlib.Path(pyspark.__file__).parent
    events, titles = str(ROOT / "samples" / "events.parquet"), str(ROOT / "samples" / "titles.parquet")
    work = tmp_path_factory.mktemp("connect")
    port = free_port()
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOG_DIR=str(work / "logs"), SPARK_PID_DIR=str(work),
               SPARK_IDENT_STRING=f"skewjoin{port}", PYSPARK_PYTHON=sys.executable)
    confs = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        # verify reads the tasks of the queries it runs from the server's UI.
        "spark.ui.enabled": "true",
        "spark.ui.port": str(free_port()),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.warehouse.dir": str(work / "warehouse"),
        "spark.driver.memory": "1g",
    }
    args = [str(home / "sbin" / "start-connect-server.sh"), "--master", "local[2]"]
    for k, v in confs.items():
        args += ["--conf", f"{k}={v}"]
    subprocess.run(args, env=env, check=True, cwd=work, capture_output=True, timeout=120)

    def log():
        return "\n".join(p.read_text()[-3000:] for p in (work / "logs").glob("*.out"))

    try:
        wait_for_port(port, log)
        url = f"sc://127.0.0.1:{port}"
        # A client in its own process: this one may hold the other suites' local session, and
        # pyspark allows no remote session beside a regular one.
        save = ("from pyspark.sql import SparkSession\n"
                f"s = SparkSession.builder.remote({url!r}).getOrCreate()\n"
                "s.sql('CREATE DATABASE IF NOT EXISTS sj')\n"
                f"s.read.parquet({events!r}).write.saveAsTable('sj.events')\n"
                f"s.read.parquet({titles!r}).write.saveAsTable('sj.titles')\n"
                "s.stop()\n")
        subprocess.run([sys.executable, "-c", save], check=True, capture_output=True, timeout=300)
        yield url
    finally:
        subprocess.run([str(home / "sbin" / "stop-connect-server.sh")], env=env, cwd=work, capture_output=True, timeout=120)


@contextlib.contextmanager
def history_server(base, folder, apps):
    """Spark's own History Server (pyspark's sbin/start-history-server.sh, of the running
    pyspark) on 127.0.0.1 over the logs in `folder`, its files under `base`; yields its URL once
    it lists `apps` applications, and stops it at the end."""
    import urllib.request
    import pyspark

    port = free_port()
    home = pathlib.Path(pyspark.__file__).parent
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(base), SPARK_PID_DIR=str(base),
               SPARK_IDENT_STRING=f"skewjoin{port}",
               SPARK_HISTORY_OPTS=f"-Dspark.history.fs.logDirectory=file:{folder} -Dspark.history.ui.port={port} "
                                  "-Dspark.history.fs.update.interval=1s -Dspark.ui.host=127.0.0.1")
    env["PATH"] = f"{pathlib.Path(sys.executable).parent}:{env['PATH']}"
    subprocess.run(["bash", str(home / "sbin" / "start-history-server.sh")], env=env, check=True, capture_output=True, timeout=60)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                listed = json.load(urllib.request.urlopen(f"{url}/api/v1/applications", timeout=5))
                if len(listed) == apps:
                    break
            except OSError:
                pass
            assert time.time() < deadline, "the History Server did not list the logs within 90 s"
            time.sleep(1)
        yield url
    finally:
        subprocess.run(["bash", str(home / "sbin" / "stop-history-server.sh")], env=env, capture_output=True, timeout=60)



def event_logs(tmp_path_factory, names=()):
    """{job: path} of tests/py/eventlogs.py's Spark applications (all of them, or `names`):
    the logs scripts/test wrote beside the build (SKEWJOIN_EVENTLOGS names their JSON), when
    they hold every job asked for and each log is there; otherwise written now."""
    ready = os.environ.get("SKEWJOIN_EVENTLOGS")
    if ready and pathlib.Path(ready).exists():
        logs = json.loads(pathlib.Path(ready).read_text())
        wanted = names or logs.keys()
        if all(n in logs and pathlib.Path(logs[n]).exists() for n in wanted):
            return {n: logs[n] for n in wanted}
    d = tmp_path_factory.mktemp("eventlogs")
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "py" / "eventlogs.py"), str(d), *names],
                       capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])
