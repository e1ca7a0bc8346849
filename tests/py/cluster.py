"""A Spark standalone cluster on the loopback interface, started from the installed pyspark's
own launchers: a master and two workers (`bin/spark-class org.apache.spark.deploy.master.Master`
and `...deploy.worker.Worker`: pip's pyspark ships no start-master script), each worker with
1 core and 2 GB; event logging into one folder, read by a History Server
(`sbin/start-history-server.sh`); and, where the pyspark ships it (4.x: `sbin/
start-connect-server.sh`; 3.5 from pip has no Connect server jar), a Spark Connect server whose
driver runs its executors on the same workers.

Every application that reads `Cluster.conf_dir` (SPARK_CONF_DIR: `Cluster.env()` sets it) logs
its events into `Cluster.eventlog_dir`, which the History Server reads. The tests use it through
the session-scoped `cluster` fixture in conftest.py; a user starts the same cluster with

    .venv/bin/python tests/py/cluster.py [DIR]      (Ctrl-C stops it)

Every process is started in its own process group and stopped by it (SIGTERM, then SIGKILL).
Readiness is waited for with timeouts; a failure to start raises `ClusterError` with one line
that says which part did not come up, and `logs()` holds the tail of every log (the fixture
prints them)."""
import json
import os
import pathlib
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

HOST = "127.0.0.1"
WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "2g"
# The daemons themselves need little: the executors and drivers hold the data.
DAEMON_MEMORY = "256m"


class ClusterError(RuntimeError):
    """A part of the cluster did not start or answer: the message says which, in one line."""


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def spark_home():
    import pyspark
    return pathlib.Path(pyspark.__file__).parent


def get_json(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def wait_until(what, check, seconds, logs):
    """Call `check` until it returns a true value (returned), for at most `seconds`."""
    deadline = time.time() + seconds
    last = None
    while time.time() < deadline:
        try:
            got = check()
            if got:
                return got
        except (OSError, ValueError) as e:
            last = e
        time.sleep(0.5)
    raise ClusterError(f"{what} within {seconds} s{f' (last: {last})' if last else ''}\nlogs:\n{logs()}")


class Daemon:
    """One JVM started by `bin/spark-class`, in its own process group, its output in `log`."""

    def __init__(self, name, args, env, log, cwd):
        self.name, self.log = name, log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                                         stdin=subprocess.DEVNULL, start_new_session=True)

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, wait=20):
        """Stop the process group (a worker's executors with it)."""
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)
        # Children left in the group (an executor that outlived its worker).
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def children(self, marker):
        """The pids of this process's children whose command line holds `marker`."""
        out = []
        for p in pathlib.Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                stat = (p / "stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                if ppid == self.proc.pid and marker in (p / "cmdline").read_bytes().decode(errors="replace"):
                    out.append(int(p.name))
            except (OSError, ValueError, IndexError):
                continue
        return out


class Cluster:
    """The running cluster: `master_url` (spark://), `master_ui`, `history_url`, `connect_url`
    (None without a Connect server), `eventlog_dir`, `conf_dir`, `private` (a folder the
    executors cannot see, or None), and `env()` for the processes that should use it."""

    def __init__(self, base, connect=True):
        self.base = pathlib.Path(base).resolve()
        self.home = spark_home()
        self.version = __import__("pyspark").__version__
        self.logs_dir = self.base / "logs"
        self.eventlog_dir = self.base / "eventlogs"
        self.conf_dir = self.base / "conf"
        for d in (self.logs_dir, self.eventlog_dir, self.conf_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.master = None
        self.workers = [None] * WORKERS
        self.history_url = self.connect_url = None
        self._history_env = self._connect_env = None
        self.want_connect = connect and (self.home / "sbin" / "start-connect-server.sh").exists()
        # A folder the workers do not see (an empty tmpfs over it in their mount namespace),
        # where the driver, on this machine, does: a table there is one the executors cannot
        # read. None where this user may not make a mount namespace.
        self.private = self.base / "private" if can_hide() else None
        if self.private:
            self.private.mkdir(exist_ok=True)
        self.master_port, self.master_ui_port = free_port(), free_port()
        self.master_url = f"spark://{HOST}:{self.master_port}"
        self.master_ui = f"http://{HOST}:{self.master_ui_port}"
        self.write_conf()

    # ---- configuration

    def write_conf(self):
        """spark-defaults.conf of every application started with `env()`: event logs into the
        History Server's folder, the driver on loopback."""
        conf = {
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": self.eventlog_dir.as_uri(),
            # One plain file per application on both lines (4.x compresses and rolls by default).
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false",
            "spark.history.fs.logDirectory": self.eventlog_dir.as_uri(),
            "spark.driver.host": HOST,
            "spark.driver.bindAddress": HOST,
            "spark.driver.memory": "1g",
            "spark.executor.memory": "1g",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
        }
        text = "".join(f"{k} {v}\n" for k, v in conf.items())
        (self.conf_dir / "spark-defaults.conf").write_text(text)
        # Spark's own log4j2 defaults print INFO to stderr; executors' logs stay in the workers'
        # folders, where the fault tests read which tasks ran.

    def env(self, **extra):
        """The environment of a process that uses the cluster: its SPARK_CONF_DIR, loopback,
        this Python for the executors' Python workers."""
        e = dict(os.environ, SPARK_HOME=str(self.home), SPARK_CONF_DIR=str(self.conf_dir), SPARK_LOCAL_IP=HOST,
                 PYSPARK_PYTHON=sys.executable, SPARK_LOG_DIR=str(self.logs_dir), SPARK_PID_DIR=str(self.base))
        for k in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE", "PYSPARK_SUBMIT_ARGS",
                  "SPARK_DAEMON_MEMORY"):
            e.pop(k, None)
        e["PATH"] = f"{pathlib.Path(sys.executable).parent}:{e.get('PATH', '')}"
        e.update(extra)
        return e

    def daemon_env(self, **extra):
        """`env()` for the master, the workers and the History Server: small heaps (the
        executors and drivers hold the data; a Connect server is a driver, and is not given it)."""
        return self.env(SPARK_DAEMON_MEMORY=DAEMON_MEMORY, **extra)

    def spark_class(self, cls, *args):
        return [str(self.home / "bin" / "spark-class"), cls, *args]

    # ---- starting

    def start(self):
        if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
            raise ClusterError("no java on PATH and no JAVA_HOME: the cluster needs Java 17")
        t0 = time.time()
        # The History Server starts while the master and workers do.
        self.start_history(wait=False)
        self.start_master()
        for i in range(WORKERS):
            self.start_worker(i, wait=False)
        self.wait_workers(WORKERS)
        self.wait_history()
        if self.want_connect:
            self.start_connect()
        self.started_s = time.time() - t0
        return self

    def start_master(self):
        args = self.spark_class("org.apache.spark.deploy.master.Master", "--host", HOST, "--port",
                                str(self.master_port), "--webui-port", str(self.master_ui_port))
        self.master = Daemon("master", args, self.daemon_env(), self.logs_dir / "master.out", self.base)
        wait_until(f"the master at {self.master_url} did not report ALIVE",
                   lambda: self.need_alive(self.master) and get_json(f"{self.master_ui}/json/").get("status") == "ALIVE",
                   90, self.logs)

    def start_worker(self, i, wait=True):
        """Worker `i` (again, after it was stopped): 1 core, 2 GB, its own work folder."""
        work = self.base / f"worker-{i}"
        work.mkdir(exist_ok=True)
        args = self.spark_class("org.apache.spark.deploy.worker.Worker", "--host", HOST, "--port", str(free_port()),
                                "--webui-port", str(free_port()), "--cores", str(WORKER_CORES), "--memory",
                                WORKER_MEMORY, "--work-dir", str(work), self.master_url)
        if self.private:
            hide = f"mount -t tmpfs -o size=1m none {shlex.quote(str(self.private))} && exec \"$@\""
            args = ["unshare", "-m", "--propagation", "private", "sh", "-c", hide, "sh", *args]
        self.workers[i] = Daemon(f"worker-{i}", args, self.daemon_env(), self.logs_dir / f"worker-{i}.out", work)
        if wait:
            self.wait_workers(WORKERS)

    def alive_workers(self):
        return [w for w in get_json(f"{self.master_ui}/json/").get("workers", []) if w.get("state") == "ALIVE"]

    def wait_workers(self, n, seconds=90):
        def ready():
            for d in self.workers:
                if d is not None:
                    self.need_alive(d)
            return len(self.alive_workers()) >= n
        wait_until(f"{n} workers did not register ALIVE with the master", ready, seconds, self.logs)

    def need_alive(self, daemon):
        if not daemon.alive():
            raise ClusterError(f"the {daemon.name} exited with code {daemon.proc.returncode}\nlogs:\n{self.logs()}")
        return True

    def start_history(self, wait=True):
        port = free_port()
        self._history_env = self.daemon_env(
            SPARK_IDENT_STRING=f"skewjoin-history-{port}",
            SPARK_HISTORY_OPTS=f"-Dspark.history.fs.logDirectory={self.eventlog_dir.as_uri()} -Dspark.history.ui.port={port} "
                               f"-Dspark.history.fs.update.interval=1s -Dspark.ui.host={HOST}")
        script = self.home / "sbin" / "start-history-server.sh"
        subprocess.run(["bash", str(script)], env=self._history_env, check=True, capture_output=True, timeout=60,
                       cwd=self.base)
        self.history_url = f"http://{HOST}:{port}"
        if wait:
            self.wait_history()

    def wait_history(self):
        wait_until(f"the History Server at {self.history_url} did not answer",
                   lambda: isinstance(get_json(f"{self.history_url}/api/v1/applications"), list), 90, self.logs)

    def start_connect(self):
        """pyspark 4.x's sbin/start-connect-server.sh on the master. Its executors come and go
        with its work (dynamic allocation), so that it holds none of the two cores while other
        applications run."""
        port, ui = free_port(), free_port()
        self._connect_env = self.env(SPARK_IDENT_STRING=f"skewjoin-connect-{port}")
        confs = {
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(port),
            "spark.ui.enabled": "true",
            "spark.ui.port": str(ui),
            "spark.sql.warehouse.dir": str(self.base / "warehouse"),
            "spark.dynamicAllocation.enabled": "true",
            "spark.dynamicAllocation.shuffleTracking.enabled": "true",
            "spark.dynamicAllocation.shuffleTracking.timeout": "5s",
            "spark.dynamicAllocation.executorIdleTimeout": "3s",
            "spark.dynamicAllocation.cachedExecutorIdleTimeout": "5s",
            "spark.dynamicAllocation.minExecutors": "0",
            "spark.executor.cores": "1",
        }
        args = [str(self.home / "sbin" / "start-connect-server.sh"), "--master", self.master_url]
        for k, v in confs.items():
            args += ["--conf", f"{k}={v}"]
        subprocess.run(args, env=self._connect_env, check=True, capture_output=True, timeout=120, cwd=self.base)
        self.connect_url = f"sc://{HOST}:{port}"
        self.connect_ui = f"http://{HOST}:{ui}"

        ident = self._connect_env["SPARK_IDENT_STRING"]

        def listening():
            # spark-daemon.sh's pid file: a server that exited is said at once, with its error.
            for pid_file in self.base.glob(f"spark-{ident}-*.pid"):
                if not pathlib.Path(f"/proc/{pid_file.read_text().strip()}").exists():
                    logs = sorted(self.logs_dir.glob(f"spark-{ident}-*.out"))
                    raise ClusterError(f"the Spark Connect server exited: {last_error(logs)}\nlogs:\n{self.logs()}")
            with socket.socket() as s:
                return s.connect_ex((HOST, port)) == 0
        wait_until(f"the Spark Connect server did not listen on {HOST}:{port}", listening, 180, self.logs)

    # ---- faults

    def kill_worker(self, i):
        """Worker `i` and its executors killed at once (SIGKILL), as a machine lost."""
        self.workers[i].stop(signal.SIGKILL)

    def executor_pids(self, i):
        return self.workers[i].children("CoarseGrainedExecutorBackend")

    def executor_logs(self, i):
        """The stderr of every executor worker `i` ran (work/<app>/<executor>/stderr)."""
        return sorted((self.base / f"worker-{i}").glob("app-*/*/stderr"))

    # ---- stopping

    def stop_connect(self):
        if self._connect_env is not None:
            run_quietly([str(self.home / "sbin" / "stop-connect-server.sh")], self._connect_env, self.base)
            self._connect_env = None

    def stop(self):
        """Everything, in the reverse order; each step whatever the others did."""
        self.stop_connect()
        if self._history_env is not None:
            run_quietly(["bash", str(self.home / "sbin" / "stop-history-server.sh")], self._history_env, self.base)
        for d in [*self.workers, self.master]:
            if d is not None:
                d.stop()
        # A daemon the stop scripts missed: their pid files name them.
        for pid_file in self.base.glob("*.pid"):
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
            except (OSError, ValueError):
                pass

    def logs(self, tail=3000):
        """The tail of every log of the cluster's daemons."""
        parts = []
        for p in sorted(self.logs_dir.glob("*")):
            if p.is_file():
                text = p.read_text(errors="replace")
                parts.append(f"==> {p.name} <==\n{text[-tail:]}")
        return "\n".join(parts) or "(no logs)"

    def describe(self):
        return {"spark": self.version, "master": self.master_url, "master_ui": self.master_ui,
                "history": self.history_url, "connect": self.connect_url, "eventlogs": str(self.eventlog_dir),
                "conf_dir": str(self.conf_dir)}


def last_error(logs):
    """The last line of these logs that names an exception or error (else their last line)."""
    lines = [line.strip() for p in logs for line in p.read_text(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if "Exception" in line or "Error" in line]
    return (errors or lines or ["no log"])[-1][:300]


def can_hide():
    """Whether a process here may have a mount namespace of its own (root, or a user namespace)."""
    try:
        return subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def run_quietly(args, env, cwd):
    try:
        subprocess.run(args, env=env, cwd=cwd, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        pass


def main(argv):
    base = pathlib.Path(argv[1] if len(argv) > 1 else "target/spark-cluster")
    c = Cluster(base)
    try:
        c.start()
        print(json.dumps(c.describe(), indent=2))
        print(f"started in {c.started_s:.0f} s; export SPARK_CONF_DIR={c.conf_dir} to log into the History Server's folder; Ctrl-C stops it",
              flush=True)
        # Blocked only now: a child started with the signals blocked would inherit the mask.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    except ClusterError as e:
        print(str(e).splitlines()[0], file=sys.stderr)
        print(c.logs(), file=sys.stderr)
        return 1
    finally:
        c.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
