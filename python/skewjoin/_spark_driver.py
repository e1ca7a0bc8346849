"""skewjoin's one pyspark driver: what skewjoin asks of the user's Spark (local mode through
pyspark, a --master, or a Spark Connect server with --remote) goes through this file.

Run as a script (the binary carries this file and runs it with the user's Python) it serves one
session: the first line on stdin says how to start it and what for (`"for": "counting"` or
`"verify"`); every later line is one request, and every answer is one JSON line on the protocol
stream (the process's stdout when it started; stdout itself is sent to stderr, so that nothing
Spark prints can corrupt an answer).

Counting (`keys`, `plan`, `rewrite` with `--engine spark`): a table too big for one machine, or
known only by its catalog name, is counted where it lives and hashed by Spark itself.
  open     a table by path (Parquet) or catalog name: its fields, rows, size and files
  filter   a view of a table's rows that meet the query's conditions (one row per group)
  profile  a key's rows, NULL rows, distinct values, most frequent values, rows per partition
  scan     the rows of each shuffle partition and of each candidate value
  scan_by_map  the same per map task (each partition of Spark's scan of the table)
Values go back in a form that loses nothing: integers as numbers, dates as days and timestamps
as microseconds since 1970, floats and decimals as Spark's strings, binaries as hex.

Verifying (`verify --engine spark`, `fix --verify`):
  verify   both queries on the session, their rows compared as multisets, every stage's tasks
           read from Spark's REST API (or the Connect server's UI)

Imported, it is the Python API's too: `skewjoin.spark.verify` runs `compare` on the caller's
own session, with a query as SQL text or a DataFrame.
"""
import datetime
import decimal
import json
import math
import os
import random
import re
import sys
import time
import urllib.request
from collections import Counter

TOKEN = re.compile(r";\s*token=[^;\s]*", re.IGNORECASE)


def one_line(e):
    msg = TOKEN.sub(";token=...", str(e).strip() or type(e).__name__)
    # Spark's own messages: the first line says it; the rest is a plan or a stack. Through
    # Py4J the first line only names the call, and the JVM's exception follows.
    lines = [l.strip().lstrip(": ") for l in msg.splitlines() if l.strip()]
    first = lines[0]
    if first.startswith("An error occurred while calling") and len(lines) > 1:
        first = lines[1]
        for marker in ("Exception: ", "Error: "):
            if marker in first:
                first = first.split(marker, 1)[1]
                break
    return first[:1000]


# What a Spark Connect client meets when its server stops: a shut-down server's own error, or the
# channel's once it is gone.
SERVER_GONE = re.compile(r"stopped SparkContext|UNAVAILABLE|failed to connect to all addresses|Connection refused|Socket closed")


# Spark's and Python's own words for a mistake in what the user gave: a query or name Spark
# cannot resolve, SQL it cannot parse, a Python without pyspark, a path that is not there.
USER_FAULTS = {"AnalysisException", "ParseException", "ImportError", "ModuleNotFoundError", "FileNotFoundError"}


def fault(e):
    """Whose fault an exception is: `usage` for the user's, `server` for the engine's."""
    names = {c.__name__ for c in type(e).__mro__}
    return "usage" if names & USER_FAULTS else "server"


def said(remote, e):
    """A request's error in one line; over Spark Connect, a server that stopped is named."""
    msg = one_line(e)
    if remote and SERVER_GONE.search(str(e)):
        return f"the Spark Connect server {remote} stopped answering ({msg})"
    return msg


def bounded_retries(spark):
    """A Spark Connect server that stops answering is given up after about 45 s of retries (8,
    backing off to 10 s), not pyspark's 10 minutes: --spark-timeout bounds a slow job, this a
    server gone."""
    try:
        from pyspark.sql.connect.client.retries import DefaultPolicy
        spark.client.set_retry_policies([DefaultPolicy(max_retries=8, max_backoff=10000)])
    except Exception:  # noqa: BLE001 - an older client keeps its own policy
        pass


# A verifying session's UI keeps every task of both queries (their times are read from it), on
# a free port; its timestamps are UTC whatever the machine's zone, so that rows compare alike.
VERIFY_CONF = {"spark.ui.enabled": "true", "spark.ui.port": "0", "spark.ui.showConsoleProgress": "false",
               "spark.ui.retainedTasks": "10000000"}
UTC = {"spark.sql.session.timeZone": "UTC"}


def start_session(start):
    """The session `start` names: a Spark Connect server (`remote`), else pyspark's own with
    `master`, each with the settings in `conf`."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise ImportError(f"pyspark cannot be imported by {sys.executable} ({e}): pip install pyspark, or pass --python") from e
    verifying = start.get("for") == "verify"
    conf = {**(UTC if verifying else {}), **(start.get("conf") or {})}
    if start.get("remote"):
        spark = SparkSession.builder.remote(start["remote"]).getOrCreate()
        bounded_retries(spark)
        for k, v in conf.items():
            spark.conf.set(k, v)
        return spark
    # A local session even where pyspark's Connect client left its switches in the environment
    # (--remote, not SPARK_REMOTE, chooses Spark Connect).
    for k in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE"):
        os.environ.pop(k, None)
    b = SparkSession.builder.master(start.get("master") or "local[*]").appName(f"skewjoin {start.get('for', 'counting')}")
    for k, v in {**(VERIFY_CONF if verifying else {}), **conf}.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def hello(spark, remote):
    """The first answer: the session's Spark version, application and master."""
    try:
        app = spark.conf.get("spark.app.id")
    except Exception:  # noqa: BLE001 - not every server exposes it
        app = None
    master = remote or spark.conf.get("spark.master", None)
    return {"version": spark.version, "app_id": app, "master": master}


# ---- counting -------------------------------------------------------------------------------

def q(name):
    return "`" + name.replace("`", "``") + "`"


class Counting:
    """The counting requests, on a session started for counting."""

    def __init__(self, spark, remote):
        self.spark = spark
        self.remote = remote
        # The kept groups of a key take AQE's coalesced partitions (Spark 4's default), so that
        # the small jobs over them do not run one task per shuffle partition. The counting
        # queries run adaptively whatever the job's setting (which the predictions follow,
        # not these queries): their GROUP BYs then run as many tasks as their bytes need.
        self.spark.conf.set("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", "true")
        self.spark.conf.set("spark.sql.adaptive.enabled", "true")
        self.spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "true")
        self.parallelism = self.default_parallelism()
        self.views = {}
        # Views read by path as plain Parquet: their files' rows are in their footers.
        self.plain_parquet = set()
        self.grouped = {}
        self.n = 0

    def default_parallelism(self):
        try:
            return int(self.spark.sparkContext.defaultParallelism)
        except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
            try:
                return int(self.spark.conf.get("spark.default.parallelism"))
            except Exception:  # noqa: BLE001
                return None

    def view(self, df):
        self.n += 1
        name = f"__skewjoin_t{self.n}"
        df.createOrReplaceTempView(name)
        self.views[name] = df
        return name

    def open(self, r):
        reach = Reach(self)
        fmt = r.get("format") or "parquet"
        try:
            if r.get("name"):
                df = self.spark.table(r["name"])
            else:
                # Before Spark reads anything: even the schema is read by a job.
                reach.check(r["path"])
                df = self.spark.read.format(fmt).load(r["path"])
            name = self.view(df)
            if not r.get("name") and fmt == "parquet":
                self.plain_parquet.add(name)
            rows = self.spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0]
        except Exception as e:  # noqa: BLE001 - the first jobs that read the files
            raise reach.unreadable(r.get("path") or r.get("name"), e) from None
        fields = [{"name": f.name, "type": f.dataType.simpleString()} for f in df.schema.fields]
        try:
            files = list(df.inputFiles())
        except Exception:  # noqa: BLE001 - a view or a source without files
            files = []
        size, exact = self.size_in_bytes(df, name)
        return {"view": name, "fields": fields, "rows": rows, "files": files, "size_bytes": size, "size_exact": exact}

    def size_in_bytes(self, df, name):
        """Spark's own estimate of the relation's size (what it compares to the broadcast
        threshold): exact through the JVM in local mode, else as EXPLAIN COST prints it."""
        try:
            return int(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes().toString()), True
        except Exception:  # noqa: BLE001 - Spark Connect has no JVM handle
            pass
        try:
            text = self.spark.sql(f"EXPLAIN COST SELECT * FROM {name}").collect()[0][0]
            m = re.search(r"sizeInBytes=([0-9.E+]+)\s*(B|KiB|MiB|GiB|TiB|PiB|EiB)?", text)
            if m:
                unit = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50, "EiB": 1 << 60}[m.group(2) or "B"]
                return int(float(m.group(1)) * unit), False
        except Exception:  # noqa: BLE001
            pass
        return None, False

    def filter(self, r):
        base = r["of"]
        where = f" WHERE {r['where']}" if r.get("where") else ""
        keys = ", ".join(q(k) for k in r["keys"])
        if r.get("group_by"):
            seen = []
            for g in r["group_by"]:
                if g.lower() not in [s.lower() for s in seen]:
                    seen.append(g)
            groups = ", ".join(q(g) for g in seen)
            sql = f"SELECT {keys} FROM (SELECT DISTINCT {groups} FROM {base}{where})"
        else:
            sql = f"SELECT {keys} FROM {base}{where}"
        name = self.view(self.spark.sql(sql))
        rows = self.spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0]
        return {"view": name, "rows": rows}

    def groups(self, view, keys):
        """The key's groups with their rows, kept for the requests that follow."""
        k = (view, tuple(keys))
        if k not in self.grouped:
            cols = ", ".join(q(c) for c in keys)
            g = self.spark.sql(f"SELECT {cols}, count(*) AS __c FROM {view} GROUP BY {cols}")
            # Kept in as many partitions as the cluster has cores: the jobs that read it then
            # run one task per core, not one per shuffle partition.
            if self.parallelism:
                g = g.coalesce(self.parallelism)
            self.grouped[k] = g.persist()
        return self.grouped[k]

    def encoded(self, df, keys):
        """Each key column as an expression whose value round-trips exactly."""
        types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        out = []
        for k in keys:
            t = types.get(k, "string")
            c = q(k)
            if t in ("tinyint", "smallint", "int", "bigint"):
                out.append(f"CAST({c} AS BIGINT)")
            elif t in ("float", "double"):
                out.append(f"CAST({c} AS STRING)")
            elif t == "date":
                out.append(f"unix_date({c})")
            elif t == "timestamp":
                out.append(f"unix_micros({c})")
            elif t == "timestamp_ntz":
                out.append(f"timestampdiff(MICROSECOND, {NTZ_EPOCH}, {c})")
            elif t == "binary":
                out.append(f"hex({c})")
            else:
                out.append(c)
        return out

    def profile(self, r):
        view, keys = r["view"], r["keys"]
        if r.get("sample"):
            drawn = Sample(self, view, keys, r["sample"], int(r.get("seed") or 0)).draw()
            if drawn is not None:
                return drawn.profile(int(r["top"]))
        g = self.groups(view, keys)
        return self.profile_of(g, keys, int(r["top"]))

    def profile_of(self, g, keys, top_n):
        """The profile of a key's groups `g` (its columns and __c): distinct keys, rows, NULL
        rows and the most frequent keys (all with top_n 0), in a fixed order."""
        gv = self.view(g)
        any_null = " OR ".join(f"{q(c)} IS NULL" for c in keys)
        # Distinct keys as the embedded engine counts them: a column's values but NULL; a
        # composite key's every combination.
        all_null = f"{q(keys[0])} IS NULL" if len(keys) == 1 else "false"
        tot = self.spark.sql(
            f"SELECT coalesce(sum(CASE WHEN {all_null} THEN 0 ELSE 1 END), 0), coalesce(sum(__c), 0), coalesce(sum(CASE WHEN {any_null} THEN __c ELSE 0 END), 0) FROM {gv}"
        ).collect()[0]
        rows = self.spark.sql(self.top_sql(g, gv, keys, top_n)).collect()
        top = [{"key": [plain(row[f"__k{i}"]) for i in range(len(keys))], "rows": row["__c"]} for row in rows]
        return {"distinct": tot[0], "rows": tot[1], "null_rows": tot[2], "top": top}

    def top_sql(self, g, gv, keys, top_n, extra=""):
        """The most frequent keys of the groups in view `gv`, each encoded as __k0.. (and the
        key's own columns with `extra`): ties in a fixed order, NULL-keyed first (as the
        embedded engine), then by value."""
        enc = ", ".join(f"{e} AS __k{i}" for i, e in enumerate(self.encoded(g, keys)))
        any_null = " OR ".join(f"{q(c)} IS NULL" for c in keys)
        limit = f" LIMIT {top_n}" if top_n > 0 else ""
        order = ", ".join(f"__k{i}" for i in range(len(keys)))
        return f"SELECT {enc}, __c{extra} FROM {gv} ORDER BY __c DESC, ({any_null}) DESC, {order}{limit}"

    def scan(self, r):
        view, keys, parts = r["view"], r["keys"], int(r["partitions"])
        g = self.groups(view, keys)
        gv = self.view(g)
        cols = ", ".join(q(c) for c in keys)
        any_null = " OR ".join(f"{q(c)} IS NULL" for c in keys)
        part_rows = [0] * parts
        null_rows = [0] * parts
        for row in self.spark.sql(
            f"SELECT pmod(hash({cols}), {parts}) AS p, ({any_null}) AS n, sum(__c) AS c FROM {gv} GROUP BY 1, 2"
        ).collect():
            (null_rows if row["n"] else part_rows)[row["p"]] += row["c"]
        key_rows = [0] * len(r["candidates"])
        if r["candidates"]:
            key_rows = self.candidate_rows(g, gv, keys, r["candidates"], key_rows)
        return {"partition_rows": part_rows, "null_partition_rows": null_rows, "key_rows": key_rows}

    def scan_by_map(self, r):
        """`scan` per map task: the rows of each partition of Spark's scan of the view (the
        tasks of the map stage of a job that reads it), sent as [map, partition, NULL?, rows]
        and the candidates' as [map, candidate, rows]."""
        view, keys, parts = r["view"], r["keys"], int(r["partitions"])
        cols = ", ".join(q(c) for c in keys)
        any_null = " OR ".join(f"{q(c)} IS NULL" for c in keys)
        # The task's index is taken right above the scan, before anything could move a row.
        tagged = f"(SELECT spark_partition_id() AS __m, * FROM {view})"
        rows = self.spark.sql(
            f"SELECT __m, pmod(hash({cols}), {parts}) AS p, ({any_null}) AS n, count(*) AS c FROM {tagged} GROUP BY 1, 2, 3").collect()
        out = [[row["__m"], row["p"], 1 if row["n"] else 0, row["c"]] for row in rows]
        key_rows = []
        if r["candidates"]:
            wanted = self.candidates(keys, r["candidates"], {f.name: f.dataType.simpleString() for f in self.views[view].schema.fields})
            on = " AND ".join(f"g.{q(k)} = w.{q(k)}" for k in keys)
            key_rows = [[row[0], row[1], row[2]] for row in self.spark.sql(
                f"SELECT g.__m, w.__i, count(*) FROM {tagged} g JOIN {wanted} w ON {on} GROUP BY 1, 2").collect()]
        maps = max([m for m, *_ in out], default=-1) + 1
        try:
            maps = max(maps, int(self.views[view]._jdf.queryExecution().toRdd().getNumPartitions()))
        except Exception:  # noqa: BLE001 - Spark Connect: the tasks that read rows
            pass
        return {"maps": maps, "rows": out, "key_rows": key_rows}

    def candidates(self, keys, candidates, types):
        """The candidate values as a view: __i, then each key column in its type."""
        from pyspark.sql.types import LongType, StringType, StructField, StructType

        schema = StructType([StructField("__i", LongType(), False)] + [StructField(f"__v{j}", StringType(), True) for j in range(len(keys))])
        data = [[i] + [None if v is None else str(v) for v in cand] for i, cand in enumerate(candidates)]
        cands = self.view(self.spark.createDataFrame(data, schema))
        decoded = ", ".join(f"{decode(f'__v{j}', types[k])} AS {q(k)}" for j, k in enumerate(keys))
        return self.view(self.spark.sql(f"SELECT __i, {decoded} FROM {cands}"))

    def candidate_rows(self, g, gv, keys, candidates, key_rows):
        wanted = self.candidates(keys, candidates, {f.name: f.dataType.simpleString() for f in g.schema.fields})
        on = " AND ".join(f"g.{q(k)} = w.{q(k)}" for k in keys)
        for row in self.spark.sql(f"SELECT w.__i, g.__c FROM {gv} g JOIN {wanted} w ON {on}").collect():
            key_rows[row[0]] += row[1]
        return key_rows


# File systems that a cluster's hosts mount at the same place: a path on one is read as is.
SHARED_FS = ("nfs", "nfs4", "cifs", "smb3", "ceph", "glusterfs", "lustre", "gpfs", "beegfs", "9p", "virtiofs")


class Reach:
    """Whether the executors of a cluster (a master that is not local) can read a table given
    by a path on this machine. Executors on other hosts cannot, unless the path is on a shared
    file system: that is said before any job is sent, from the hosts the executors registered
    with (no job asks them). Executors on this host with a view of their own (a container, a
    mount namespace, another user) are found by the first job that reads the files (the one
    that reads a footer for the schema, before any count): its failure is said in one line
    naming the file."""

    def __init__(self, engine):
        self.e = engine

    def cluster(self):
        """The master, when the executors are other processes than this driver's."""
        if self.e.remote:
            return None
        master = self.e.spark.sparkContext.master
        return None if master.startswith("local") else master

    def check(self, path):
        scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", path)
        if self.cluster() is None or (scheme and scheme.group(1).lower() != "file"):
            return
        local = re.sub(r"^file:(//)?", "", path)
        if shared_fs(local):
            return
        away = sorted(h for h in self.executor_hosts() if not is_this_host(h))
        if away:
            raise RuntimeError(
                f"{path} is a path on this machine, but the cluster's executors run on {', '.join(away)}, where it is not: "
                "give a path they all read (HDFS, an object store such as s3://, a shared file system) or the table's catalog name")

    def executor_hosts(self, wait=30):
        """The hosts of the executors registered so far, waiting up to `wait` s for the first."""
        tracker = self.e.spark.sparkContext._jsc.sc().statusTracker()
        deadline = time.time() + wait
        while True:
            # The driver is among them, and it is on this machine.
            hosts = {i.host() for i in tracker.getExecutorInfos()}
            if len(list(tracker.getExecutorInfos())) > 1 or time.time() > deadline:
                return hosts
            time.sleep(0.5)

    def unreadable(self, what, e):
        """The error of the first job over a table: when a cluster's executor could not find a
        file the driver listed, one line that says so: the user's to fix (a path that is not
        the workers')."""
        text = str(e)
        missing = re.search(r"(File (?:file:)?\S+ does not exist)", text)
        where = re.search(r"\(([^()\s]+) executor (\w+)\)", text)
        if self.cluster() is None or not missing:
            return e
        on = f" (executor {where.group(2)} on {where.group(1)})" if where else ""
        return FileNotFoundError(
            f"the cluster's executors cannot read {what}: {missing.group(1)} for them{on}, though this machine lists it: "
            "give a path every worker reads (HDFS, an object store, a shared file system) or the table's catalog name")


def shared_fs(path):
    """Whether `path` is on a network file system (its mount's type, from /proc/mounts)."""
    try:
        mounts = [line.split()[1:3] for line in open("/proc/mounts")]
    except OSError:
        return False
    best = max((m for m in mounts if path == m[0] or path.startswith(m[0].rstrip("/") + "/")), key=lambda m: len(m[0]), default=None)
    return bool(best) and (best[1] in SHARED_FS or best[1].startswith("fuse."))


def is_this_host(host):
    """Whether `host` is this machine: one of its addresses can be bound here."""
    import socket
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    for family, _, _, _, addr in infos:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.bind((addr[0], 0))
                return True
        except OSError:
            continue
    return False


# Whole files are drawn when the table has at least ENOUGH_FILES of roughly even size (none over
# 4 times the median), and at least MIN_FILES of them: the embedded engine's rule for row groups.
ENOUGH_FILES = 32
MIN_FILES = 4


def as_file_path(uri):
    """A file's URI as Spark's `_metadata.file_path` gives it: an empty authority dropped
    (`file:///t/a%20b.parquet` -> `file:/t/a%20b.parquet`), the rest as is (Spark 3.5 and 4.x)."""
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*):///", r"\1:/", uri)


class Sample:
    """A sample of a view's rows for a key's profile, drawn on Spark.

    Whole files when the table has enough of even size: a filter on `_metadata.file_path`
    prunes the others when Spark lists the files, so they are never read (a block sample, as
    the embedded engine's whole row groups). Otherwise rows drawn at random (Spark's
    `sample()`): every file is read, and the sample saves the aggregation and its shuffle. The
    answer holds, per unit read (a file, or the one pool of random rows), its rows, NULL rows
    and the counts of the top keys: the 95% intervals are computed from them as the embedded
    engine's are."""

    def __init__(self, engine, view, keys, spec, seed):
        self.e, self.view, self.keys, self.spec, self.seed = engine, view, keys, spec, seed
        self.df = engine.views[view]
        self.kept = []
        self.footers = False

    def files(self):
        """[(path, rows)] of the view's files, sorted; None when it is not a file source."""
        from pyspark.sql import functions as F
        footers = self.footer_rows()
        if footers is not None:
            return footers
        try:
            got = self.df.groupBy(F.col("_metadata.file_path").alias("f")).count().collect()
        except Exception:  # noqa: BLE001 - a view over a query, or a source without files
            return None
        return sorted((r["f"], r["count"]) for r in got)

    def footer_rows(self):
        """[(path, rows)] from the files' Parquet footers, read by this driver through Hadoop's
        file system (local, HDFS, s3a: whatever Spark read them with), one footer per file: the
        files' rows, counted through `_metadata.file_path`, scan every row (on 100M rows in 400
        files, 32 s of the sample's 38 in Spark: BENCHMARKS.md). Only for plain Parquet read by
        path (a table format's files can hold rows it deleted) in a classic session (a Connect
        client has no JVM); else None, and the rows are counted."""
        if self.e.remote or self.view not in self.e.plain_parquet:
            return None
        try:
            jvm = self.e.spark._jvm
            conf = self.e.spark.sparkContext._jsc.hadoopConfiguration()
            out = []
            for f in self.df.inputFiles():
                path = jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(f))
                reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
                    jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(path, conf))
                try:
                    out.append((as_file_path(f), int(reader.getRecordCount())))
                finally:
                    reader.close()
        except Exception:  # noqa: BLE001 - a file Spark reads that parquet-mr here cannot: counted instead
            return None
        self.footers = True
        return sorted(out)

    def target(self, total):
        if self.spec.get("rows") is not None:
            return int(self.spec["rows"])
        return math.ceil(total * float(self.spec["fraction"]))

    def draw(self):
        """The sample, or None when it would hold the whole table (counted exactly)."""
        files = self.files()
        total = sum(c for _, c in files) if files is not None else self.df.count()
        target = self.target(total)
        if total == 0 or target >= total:
            return None
        files = [f for f in files or [] if f[1] > 0]
        if len(files) >= ENOUGH_FILES and even([c for _, c in files]):
            order = list(files)
            random.Random(self.seed).shuffle(order)
            chosen, rows = [], 0
            for f in order:
                if rows >= target and len(chosen) >= MIN_FILES:
                    break
                chosen.append(f)
                rows += f[1]
            self.method, self.units_total, self.total = "whole files", len(files), total
            self.chosen = chosen
        else:
            self.method, self.units_total, self.total = "rows drawn at random (Spark's sample(): every file is read)", None, total
            self.fraction = target / total
        return self

    def per_file(self):
        """The sampled rows' keys grouped by file and key: __f, the key's columns, __c."""
        from pyspark.sql import functions as F
        cols = [F.col(q(k)) for k in self.keys]
        if self.method == "whole files":
            f = F.col("_metadata.file_path")
            rows = self.df.where(f.isin([p for p, _ in self.chosen])).select(f.alias("__f"), *cols)
        else:
            rows = self.df.select(F.lit("").alias("__f"), *cols).sample(False, self.fraction, self.seed)
        return rows.groupBy("__f", *cols).agg(F.count(F.lit(1)).alias("__c"))

    def keep(self, df):
        # As many partitions as the cluster has cores: the small jobs over the sample's counts
        # then run one task per core, not one per shuffle partition.
        if self.e.parallelism:
            df = df.coalesce(self.e.parallelism)
        df = df.persist()
        self.kept.append(df)
        return df

    def profile(self, top_n):
        try:
            return self.counted(top_n)
        finally:
            for df in self.kept:
                df.unpersist()

    def counted(self, top_n):
        keys = ", ".join(q(k) for k in self.keys)
        fv = self.e.view(self.keep(self.per_file()))
        g = self.keep(self.e.spark.sql(f"SELECT {keys}, sum(__c) AS __c FROM {fv} GROUP BY {keys}"))
        out = self.e.profile_of(g, self.keys, top_n)
        units = self.units(fv, g, top_n, out["top"])
        rows_read = out["rows"]
        read = len(units) if self.method == "whole files" else None
        out.update(rows=self.total, sample={
            "method": self.method, "rows_read": rows_read, "fraction": rows_read / self.total,
            "units_read": read, "units_total": self.units_total, "units": units})
        return out

    def units(self, fv, g, top_n, top):
        """Per unit read: its rows, NULL rows and the rows of each of `top`, in order."""
        gv = self.e.view(g)
        tk = self.e.view(self.e.spark.sql(self.e.top_sql(g, gv, self.keys, top_n)))
        enc = ", ".join(f"{e} AS __k{i}" for i, e in enumerate(self.e.encoded(g, self.keys)))
        on = " AND ".join(f"u.__k{i} <=> t.__k{i}" for i in range(len(self.keys)))
        kcols = ", ".join(f"t.__k{i}" for i in range(len(self.keys)))
        per = self.e.spark.sql(
            f"SELECT u.__f, {kcols}, u.__c FROM (SELECT __f, {enc}, __c FROM {fv}) u JOIN {tk} t ON {on}").collect()
        index = {tuple(k["key"]): i for i, k in enumerate(top)}
        any_null = " OR ".join(f"{q(c)} IS NULL" for c in self.keys)
        agg = self.e.spark.sql(
            f"SELECT __f, sum(__c) AS n, sum(CASE WHEN {any_null} THEN __c ELSE 0 END) AS z FROM {fv} GROUP BY __f").collect()
        files = dict(self.chosen) if self.method == "whole files" else {"": self.total}
        units = {r["__f"]: {"rows": r["n"], "table_rows": files.get(r["__f"], r["n"]), "nulls": r["z"],
                            "counts": [0] * len(top)} for r in agg}
        # A drawn file that holds no row of the key (all filtered away) is a unit of 0 rows.
        if self.method == "whole files":
            for p, c in self.chosen:
                units.setdefault(p, {"rows": 0, "table_rows": c, "nulls": 0, "counts": [0] * len(top)})
        for r in per:
            i = index.get(tuple(plain(r[f"__k{j}"]) for j in range(len(self.keys))))
            if i is not None:
                units[r["__f"]]["counts"][i] += r["__c"]
        if self.footers:
            # The drawn files read whole: their rows are their footers' (else a path's form
            # here is not Spark's, and the sample would be short).
            short = [p for p, c in self.chosen if units[p]["rows"] != c]
            if short:
                raise RuntimeError(f"the sample read {units[short[0]]['rows']:,} rows of {short[0]}, whose footer holds "
                                   f"{files[short[0]]:,}: an internal fault, please report it")
        return [units[k] for k in sorted(units)]


def even(sizes):
    """Clusters of roughly even size: none more than 4 times the median."""
    s = sorted(sizes)
    return bool(s) and s[-1] <= 4 * s[len(s) // 2]


# Wall-clock timestamps travel as microseconds from this one, whatever the session's time zone.
NTZ_EPOCH = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"


def plain(v):
    """A decimal in plain notation (Spark's string of one may be 0E-18)."""
    import decimal

    return format(v, "f") if isinstance(v, decimal.Decimal) else v


def decode(col, t):
    """A candidate's value (sent as a string) back in the key's type."""
    if t == "date":
        return f"date_from_unix_date(CAST({col} AS INT))"
    if t == "timestamp":
        return f"timestamp_micros(CAST({col} AS BIGINT))"
    if t == "timestamp_ntz":
        return f"timestampadd(MICROSECOND, CAST({col} AS BIGINT), {NTZ_EPOCH})"
    if t == "binary":
        return f"unhex({col})"
    return f"CAST({col} AS {t.upper()})"


# ---- verifying ------------------------------------------------------------------------------

def norm(v, digits):
    if v is None:
        return None
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v) or v == 0:
            return v
        return float(f"{v:.{digits}g}")
    if isinstance(v, decimal.Decimal):
        return str(v.normalize()) if v == v else "NaN"
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, (list, tuple)):
        return json.dumps([norm(x, digits) for x in v], default=str)
    if isinstance(v, dict):
        return json.dumps({str(k): norm(x, digits) for k, x in v.items()}, default=str, sort_keys=True)
    if hasattr(v, "asDict"):
        return json.dumps({k: norm(x, digits) for k, x in v.asDict().items()}, default=str, sort_keys=True)
    return v


MAX_PAIRED = 10_000

def pair_off(c0, c1, digits):
    """Takes out of both multisets the pairs of rows that the rounded comparison left apart but
    that differ only by one unit in the last digit kept of their floats: a sum on a rounding
    boundary (cents summed in another order) falls on either side of it."""
    s0, s1 = list((c0 - c1).elements()), list((c1 - c0).elements())
    if not s0 or len(s0) != len(s1) or len(s0) > MAX_PAIRED:
        return
    rest = lambda r: tuple("~" if isinstance(v, float) else v for v in r)  # noqa: E731
    # In one order whatever order Spark gave the rows in, each to its closest candidate: the
    # verdict does not depend on the run.
    s0.sort(key=repr)
    s1.sort(key=repr)
    by_rest = {}
    for r in s1:
        by_rest.setdefault(rest(r), []).append(r)
    for r0 in s0:
        candidates = by_rest.get(rest(r0), [])
        near = [(distance(r0, r1), i) for i, r1 in enumerate(candidates)
                if all(a == b or close(a, b, digits) for a, b in zip(r0, r1))]
        if near:
            r1 = candidates.pop(min(near)[1])
            c0[r0] -= 1
            c1[r1] -= 1
    for c in (c0, c1):
        for r in [r for r, n in c.items() if n <= 0]:
            del c[r]


def distance(r0, r1):
    """How far apart two rows' floats are, summed."""
    return sum(abs(a - b) for a, b in zip(r0, r1) if isinstance(a, float) and isinstance(b, float) and a != b)


def close(a, b, digits):
    """Two rounded floats one unit (and a half, for the rounding of the larger) apart in their
    last digit kept, or less."""
    if not (isinstance(a, float) and isinstance(b, float)) or math.isinf(a) or math.isinf(b):
        return False
    big = max(abs(a), abs(b))
    return big > 0 and abs(a - b) <= 1.5 * 10 ** (math.floor(math.log10(big)) + 1 - digits)


def getter(ui, app):
    """GET a path of the application's REST API (the Spark UI at `ui`)."""
    def get(path):
        with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}{path}", timeout=60) as r:
            return json.loads(r.read())
    return get


def when(s):
    # "2026-11-30T16:00:00.123GMT"
    t = datetime.datetime.strptime(s.replace("GMT", ""), "%Y-%m-%dT%H:%M:%S.%f")
    return t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000


def stages_of(sc, group):
    ids = set()
    for j in sc.statusTracker().getJobIdsForGroup(group):
        info = sc.statusTracker().getJobInfo(j)
        if info is not None:
            ids.update(info.stageIds)
    return stage_stats(getter(sc.uiWebUrl, sc.applicationId), ids)


def metric(value):
    """A SQL metric's value as the UI prints it ("1,234", or a total line): its first number."""
    for line in reversed(str(value).splitlines()):
        digits = ""
        for ch in line.replace(",", ""):
            if ch.isdigit():
                digits += ch
            elif digits:
                break
        if digits:
            return int(digits)
    return 0


def aqe_of(get, jobs):
    """What AQE did in the SQL executions that ran `jobs`, from their final plans' metrics: the
    partitions it split as skewed and into how many tasks, the reads it coalesced, and the joins
    of each kind it ran (a broadcast join where the plan had a sort-merge join is a switch)."""
    out = {"skewed_partitions": 0, "skewed_splits": 0, "coalesced_reads": 0, "coalesced_partitions": 0,
           "sort_merge_joins": 0, "skew_joins": 0, "broadcast_joins": 0, "shuffled_hash_joins": 0}
    try:
        execs = get("/sql?details=true&planDescription=false&length=100000")
    except Exception:  # noqa: BLE001 - an older Spark without the endpoint: nothing measured
        return None
    for e in execs:
        ran = set(e.get("successJobIds", [])) | set(e.get("failedJobIds", []))
        if not ran & jobs:
            continue
        for n in e.get("nodes", []):
            name = n.get("nodeName", "")
            m = {x.get("name"): x.get("value") for x in n.get("metrics", [])}
            if name == "AQEShuffleRead":
                out["skewed_partitions"] += metric(m.get("number of skewed partitions", 0))
                out["skewed_splits"] += metric(m.get("number of skewed partition splits", 0))
                c = metric(m.get("number of coalesced partitions", 0))
                out["coalesced_partitions"] += c
                out["coalesced_reads"] += 1 if c else 0
            elif name.startswith("SortMergeJoin"):
                out["sort_merge_joins"] += 1
                out["skew_joins"] += 1 if "skew=true" in name else 0
            elif name.startswith("BroadcastHashJoin"):
                out["broadcast_joins"] += 1
            elif name.startswith("ShuffledHashJoin"):
                out["shuffled_hash_joins"] += 1
    return out


def tagged_stages(get, tag):
    """The stages of the jobs a Spark Connect server ran under `tag` (its job tags hold ours)."""
    ids = set()
    for j in get("/jobs"):
        if any(tag in t for t in j.get("jobTags", [])):
            ids.update(j.get("stageIds", []))
    return stage_stats(get, ids)


def stage_stats(get, ids):
    out = []
    for sid in sorted(ids):
        attempts = []
        for _ in range(200):
            try:
                attempts = get(f"/stages/{sid}")
            except Exception:
                attempts = []
            if not attempts or all(a["status"] in ("COMPLETE", "SKIPPED", "FAILED") for a in attempts):
                break
            time.sleep(0.1)
        ran = [a for a in attempts if a["status"] in ("COMPLETE", "FAILED")]
        if not any(a["status"] == "COMPLETE" for a in ran):
            continue
        tl, failed = successful_tasks(get, sid, ran)
        recs, byts, durs = [], [], []
        for t in tl:
            m = t.get("taskMetrics", {}).get("shuffleReadMetrics", {})
            recs.append(m.get("recordsRead", 0))
            byts.append(m.get("localBytesRead", 0) + m.get("remoteBytesRead", 0))
            durs.append(t.get("duration", 0))
        read = sorted(r for r in recs if r > 0)
        d = sorted(durs)
        starts = [when(a["submissionTime"]) for a in ran if a.get("submissionTime")]
        ends = [when(a["completionTime"]) for a in ran if a.get("completionTime")]
        dur = int(max(ends) - min(starts)) if starts and ends else 0
        finish = [int(when(t["launchTime"])) + t.get("duration", 0) for t in tl if t.get("launchTime")]
        out.append({
            "stage_id": sid, "tasks": len(tl), "duration_ms": dur,
            "max_task_records": max(recs, default=0),
            "median_task_records": read[len(read) // 2] if read else 0,
            "max_task_bytes": max(byts, default=0),
            "max_task_ms": max(durs, default=0), "median_task_ms": d[len(d) // 2] if d else 0,
            "spill_bytes": sum(a.get("memoryBytesSpilled", 0) + a.get("diskBytesSpilled", 0) for a in ran),
            "task_ms": sum(durs),
            "task_records": recs,
            "failed_tasks": failed, "attempts": len(ran),
            # For the replay on the cluster's cores (src/replay.rs): when the stage was
            # submitted, its last task finished and it completed (epoch ms), each task's
            # duration.
            "submitted_ms": int(min(starts)) if starts else None, "completed_ms": int(max(ends)) if ends else None,
            "last_finish_ms": max(finish, default=None), "task_durations_ms": durs,
        })
    return out


def successful_tasks(get, sid, attempts):
    """Each partition's successful run, in partition order, over the stage's attempts (a stage
    whose map outputs were lost with an executor runs again, its next attempt only the
    partitions lost), the later attempt's where both ran it; and how many runs failed."""
    done, failed = {}, 0
    for a in sorted(attempts, key=lambda a: a["attemptId"]):
        for t in get(f"/stages/{sid}/{a['attemptId']}/taskList?length=10000000"):
            if t.get("status") == "SUCCESS":
                done[t.get("index", 0)] = t
            else:
                failed += 1
    return [done[i] for i in sorted(done)], failed


def retry_notes(before, after):
    """What the measured tasks went through: tasks that failed and ran again (an executor lost,
    say), whose figures are then of each partition's successful run."""
    notes = []
    for label, run in (("original", before), ("rewrite", after)):
        for st in run.get("stages", []):
            if st.get("failed_tasks") or st.get("attempts", 1) > 1:
                notes.append(f"{label}: stage {st['stage_id']}: {st['failed_tasks']} task runs failed and ran again "
                             f"({st['attempts']} attempts; an executor lost, say): its tasks are each partition's successful run")
    return notes


def run_remote(spark, sql, label, digits, ui):
    """One query over Spark Connect, its jobs tagged; their stages from the server's UI, when
    it answers (else none, and a note says why)."""
    tag = f"skewjoin-verify-{label}-{int(time.time() * 1000)}"
    spark.addTag(tag)
    t0 = time.time()
    try:
        df = spark.sql(sql) if isinstance(sql, str) else sql
        rows = df.collect()
    finally:
        spark.removeTag(tag)
    t1 = time.time()
    wall = int((t1 - t0) * 1000)
    counts = Counter(tuple(norm(v, digits) for v in r) for r in rows)
    stages, note = [], None
    try:
        app = spark.conf.get("spark.app.id")
        stages = tagged_stages(getter(ui, app), tag)
    except Exception as e:  # noqa: BLE001 - the UI is off, elsewhere, or not ours to reach
        note = f"tasks not measured: the Spark Connect server's UI at {ui} did not answer ({one_line(e)}); pass --spark-ui URL"
    return {"wall_ms": wall, "rows": len(rows), "columns": df.columns, "stages": stages,
            "start_ms": int(t0 * 1000), "end_ms": int(t1 * 1000)}, counts, note


def connect_ui(spark, remote, spark_ui=None):
    """The UI of the Connect server at `remote`: `spark_ui` (--spark-ui), else its host at
    spark.ui.port (4040)."""
    if spark_ui:
        return spark_ui.rstrip("/")
    host = remote[len("sc://"):].split("/")[0].split(";")[0].rsplit(":", 1)[0]
    try:
        port = spark.conf.get("spark.ui.port")
    except Exception:  # noqa: BLE001
        port = "4040"
    return f"http://{host}:{port or 4040}"


def run(spark, sql, label, digits):
    sc = spark.sparkContext
    group = f"skewjoin-verify-{label}"
    sc.setJobGroup(group, group)
    t0 = time.time()
    try:
        df = spark.sql(sql) if isinstance(sql, str) else sql
        rows = df.collect()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    t1 = time.time()
    wall = int((t1 - t0) * 1000)
    counts = Counter(tuple(norm(v, digits) for v in r) for r in rows)
    planning = planning_ms(df)
    jobs = set(sc.statusTracker().getJobIdsForGroup(group))
    stages = stages_of(sc, group)
    aqe = aqe_of(getter(sc.uiWebUrl, sc.applicationId), jobs)
    return {"wall_ms": wall, "rows": len(rows), "columns": df.columns, "stages": stages, "aqe": aqe,
            "start_ms": int(t0 * 1000), "end_ms": int(t1 * 1000), "planning_ms": planning}, counts


def planning_ms(df):
    """The time Spark took to analyse, optimise and plan the query (its QueryPlanningTracker's
    phases, through the classic session's JVM); None where the session has no JVM here."""
    try:
        phases = df._jdf.queryExecution().tracker().phases()
        total = 0
        for name in ("analysis", "optimization", "planning"):
            p = phases.get(name)
            if p.isDefined():
                total += p.get().durationMs()
        return int(total)
    except Exception:  # noqa: BLE001 - Spark Connect, or a Spark without the tracker
        return None


def runs(once, original, rewritten, n):
    """Each query in `n` rounds, alternating, the original first. The first round gives the rows;
    with more rounds it is the warm-up (JIT, caches), and the times are of the others: each
    query's median timed run, with every timed run's wall time and the warm-up's."""
    done = {"original": [], "rewritten": []}
    counts = {}
    for i in range(max(1, n)):
        for label, sql in (("original", original), ("rewritten", rewritten)):
            stats, c = once(sql, f"{label}-{i}")
            done[label].append(stats)
            counts.setdefault(label, c)
    out = []
    for label in ("original", "rewritten"):
        timed = done[label][1:] if n > 1 else done[label]
        median = sorted(timed, key=lambda s: s["wall_ms"])[len(timed) // 2]
        warmup = done[label][0]["wall_ms"] if n > 1 else None
        out.append(({**median, "runs_ms": [s["wall_ms"] for s in timed], "warmup_ms": warmup}, counts[label]))
    return out


def table_frame(spark, path):
    """The table at `path`: Parquet files, or a catalog table (`db.t`, no folder or scheme in it,
    and nothing of that name here)."""
    import os
    if "/" not in path and ":" not in path and not os.path.exists(path) and not path.endswith(".parquet"):
        return spark.table(path)
    return spark.read.parquet(path)


def compare(spark, original, rewritten, digits, n_runs, ui=None):
    """Both queries on `spark`, `n_runs` rounds (see `runs`), their rows compared as multisets
    to `digits` significant digits; over Spark Connect (`ui`: its server's UI) the tasks are
    read from that UI. Returns (before, after, rows only in each, notes)."""
    notes = set()
    if ui is not None:
        def once(sql, label):
            stats, counts, note = run_remote(spark, sql, label, digits, ui)
            notes.add(note)
            return stats, counts
    else:
        def once(sql, label):
            return run(spark, sql, label, digits)
    (before, c0), (after, c1) = runs(once, original, rewritten, n_runs)
    pair_off(c0, c1, digits)
    only0 = list((c0 - c1).elements())[:5]
    only1 = list((c1 - c0).elements())[:5]
    return before, after, c0 == c1, only0, only1, sorted(n for n in notes if n)


def verify(spark, remote, r):
    """The `verify` request: the tables as views, both queries compared."""
    for name, path in r["tables"].items():
        table_frame(spark, path).createOrReplaceTempView(name)
    ui = connect_ui(spark, remote, r.get("spark_ui")) if remote else None
    before, after, identical, only0, only1, notes = compare(
        spark, r["original"], r["rewritten"], r["digits"], r.get("runs", 1), ui)
    return {
        "spark_version": spark.version, "master": remote or spark.sparkContext.master,
        "notes": notes + retry_notes(before, after), "identical": identical,
        "before": before, "after": after,
        "only_in_original": [repr(x) for x in only0], "only_in_rewritten": [repr(x) for x in only1],
    }


def main():
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    def reply(obj):
        proto.write(json.dumps(obj, default=str) + "\n")
        proto.flush()

    start = json.loads(sys.stdin.readline())
    remote = start.get("remote")
    try:
        spark = start_session(start)
        counting = Counting(spark, remote) if start.get("for", "counting") == "counting" else None
        reply({"ok": True, **hello(spark, remote)})
    except Exception as e:  # noqa: BLE001
        reply({"ok": False, "error": one_line(e), "kind": fault(e)})
        return
    for line in sys.stdin:
        if not line.strip():
            continue
        r = json.loads(line)
        t0 = time.time()
        try:
            if r["op"] == "verify":
                out = verify(spark, remote, r)
            elif counting is not None:
                out = getattr(counting, r["op"])(r)
            else:
                raise RuntimeError(f"a session started for {start.get('for')} does not count ({r['op']}): an internal fault")
            reply({"ok": True, "ms": int((time.time() - t0) * 1000), **out})
        except Exception as e:  # noqa: BLE001
            reply({"ok": False, "error": said(remote, e), "kind": fault(e)})
    try:
        if counting is not None:
            for g in counting.grouped.values():
                g.unpersist()
        spark.stop()
    except Exception:  # noqa: BLE001
        pass


if __name__ == "__main__":
    main()
