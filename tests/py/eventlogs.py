"""Real Spark event logs, written by real Spark (local[2]), for `skewjoin diagnose`.

Run as its own process (a test that already holds a SparkSession calls it through subprocess):

    python tests/py/eventlogs.py OUT_DIR [SCENARIO ...]   (fix_jobs: FIX_JOBS below)

Each scenario below runs as its own Spark application, one after another in this one Python
process, with its event log in OUT_DIR/<scenario>/. The only line on stdout is one JSON object
{"<scenario>": "<absolute path of its event log file, or of its rolling folder>", ...};
everything else (Spark's own logging included) goes to stderr.

Every application: master local[2], spark.ui.enabled false, spark.sql.adaptive.enabled false,
spark.sql.autoBroadcastJoinThreshold -1 (so joins are SortMergeJoin), app name = scenario name.
Compression and rolling are set explicitly (off, unless the scenario is about them): Spark 3.5
has both off by default, Spark 4 both on (its default log is eventlog_v2_<appId>/
events_1_<appId>.zstd).

Scenarios and what each is meant to show:

- hot_null_join: a LEFT JOIN of `events` (~300k rows, title_id ~40% NULL, the rest uniform over
  ~3000 keys) to `titles` (one row per key), 16 shuffle partitions. NULL keys all hash to one
  reduce partition, so one task of the join stage reads ~44% of its shuffle records (~36% of
  the bytes: NULL rows are shorter): a hot key (NULL). Both tables are Parquet read with
  spark.read.parquet(path), so the plan's FileScan nodes name the files
  (OUT_DIR/data/events_300000.parquet, titles_3000.parquet). The log has 3 jobs: two 1-task
  jobs reading the Parquet footers (schema), then the query (6 stages in all).
- tiny_files: 1100 tiny Parquet files, with spark.sql.files.maxPartitionBytes and
  spark.sql.files.openCostInBytes small so that each file is its own task (>= 1000 tasks in the
  scan stage), then a small aggregate: many tiny tasks, scheduling overhead dominates.
- spill: 1M rows repartitioned and sorted within partitions, with
  spark.shuffle.spill.numElementsForceSpillThreshold low, so that (nearly) every task of the
  reduce stage reports Memory Bytes Spilled and Disk Bytes Spilled > 0.
- even_volume: an even, shuffle-heavy stage: 1M rows with a wide (96-char hex) string column,
  repartitioned 16 ways by a uniform key, then a tiny aggregate. Shuffle write far above the
  output; tasks even in bytes and records (no skew: slow because of volume, not a hot key).
  In local mode the first task on each core of a stage is slower (JIT, codegen), so with
  sub-second tasks max/median duration is ~3 even here: shuffle read, not duration, tells a
  hot key from noise (the same holds for hot_null_join's durations).
- python_udf: a Python UDF (pyspark.sql.functions.udf, not a pandas UDF; Arrow off, as Spark
  4.1+ could otherwise run it as ArrowEvalPython) over ~200k rows, no shuffle; the physical plan
  shows BatchEvalPython.
- dataframe_join: an inner join written with the DataFrame API (no SQL text in the log) of
  `play_events` (title_id 30% the placeholder 'unknown', which no title has) filtered on a
  number and a string (views >= 100, kind = 'play') to `titles`: the filters are in the plan;
  collected, so the stages' call site is the Python line of the join.
- chain_join: three joins (users, titles, countries) with filters, the SQL text set as the job
  description over catalog tables; the titles join (40% NULL title_id) is the hot stage.
- rdd_only: an RDD job (no SQL, no DataFrame): partitionBy over pairs whose key is 60% one
  value, 8 partitions: a hot task and no SQL plan.
- failed_stage: a stage whose task fails (assert_true), then a job that succeeds.
- killed_app: the hot NULL join, then the driver's JVM killed (SIGKILL) in a child process:
  the log stays <appId>.inprogress, with no application end.
- streaming: a structured streaming aggregation (rate source, noop sink) run for a few
  micro-batches, then stopped.
- zstd, lz4, snappy, lzf: the hot_null_join job (on smaller data) with spark.eventLog.compress
  true and spark.eventLog.compression.codec set to that codec: compressed event logs (Spark
  names the file <appId>.<codec>).
- rolling: the hot_null_join job with spark.eventLog.rolling.enabled true and
  spark.eventLog.rolling.maxFileSize at its minimum (10m): the log is a folder
  eventlog_v2_<appId>/ with events_<n>_<appId> files (and appstatus_<appId>); the path given
  is the folder. This log is far under 10 MiB, so the folder holds one events_1_<appId>.

Run time: ~75-105 s for all of them on 2 cores with Spark 3.5 (tiny_files is half of it).
"""
import json
import os
import pathlib
import random
import shutil
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

CODECS = ["zstd", "lz4", "snappy", "lzf"]
# The jobs test_fix_spark.py fixes on Spark 4.x (scripts/test asks for them by this name).
FIX_JOBS = ["hot_null_join", "sql_text_join", "aqe_null_join", "dataframe_join", "chain_join"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- data (pyarrow)

def write_join_tables(data_dir, n_events, n_keys, null_frac, seed):
    """events(title_id string ~null_frac NULL, rest uniform over n_keys; views int) and
    titles(title_id, name), one row per key. Returns (events_path, titles_path)."""
    rnd = random.Random(seed)
    data_dir.mkdir(parents=True, exist_ok=True)
    keys = [f"tt{k:07d}" for k in range(n_keys)]
    title_id = [None if rnd.random() < null_frac else keys[rnd.randrange(n_keys)]
                for _ in range(n_events)]
    views = [rnd.randrange(1000) for _ in range(n_events)]
    events = pa.table({"title_id": pa.array(title_id, pa.string()),
                       "views": pa.array(views, pa.int32())})
    titles = pa.table({"title_id": pa.array(keys, pa.string()),
                       "name": pa.array([f"Title number {k}" for k in range(n_keys)], pa.string())})
    ep = data_dir / f"events_{n_events}.parquet"
    tp = data_dir / f"titles_{n_keys}.parquet"
    if not ep.exists():
        pq.write_table(events, ep, row_group_size=max(1, n_events // 2))
    if not tp.exists():
        pq.write_table(titles, tp)
    return str(ep), str(tp)


def write_play_events(data_dir, n_events, n_keys, seed):
    """play_events(title_id: 30% 'unknown', the rest uniform over the n_keys titles; views int;
    kind 'play' or 'trailer')."""
    rnd = random.Random(seed)
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"play_events_{n_events}.parquet"
    if not path.exists():
        title_id = ["unknown" if rnd.random() < 0.3 else f"tt{rnd.randrange(n_keys):07d}" for _ in range(n_events)]
        t = pa.table({"title_id": pa.array(title_id, pa.string()),
                      "views": pa.array([rnd.randrange(1000) for _ in range(n_events)], pa.int32()),
                      "kind": pa.array([rnd.choice(["play", "play", "trailer"]) for _ in range(n_events)], pa.string())})
        pq.write_table(t, path)
    return str(path)


def write_chain_tables(data_dir, n_events, seed):
    """chain_events(event_id, user_id uniform over 20,000 users, title_id 40% NULL else uniform
    over 3,000 titles, country uniform over 50, views), users(user_id, plan: 1 in 5 'trial'),
    countries(country, region). Returns their paths (titles are write_join_tables')."""
    rnd = random.Random(seed)
    d = data_dir / "chain"
    d.mkdir(parents=True, exist_ok=True)
    paths = {n: d / f"{n}.parquet" for n in ("chain_events", "users", "countries")}
    if not paths["chain_events"].exists():
        countries = [f"C{i:02d}" for i in range(50)]
        events = pa.table({
            "event_id": pa.array(range(n_events), pa.int64()),
            "user_id": pa.array([f"u{rnd.randrange(20_000):05d}" for _ in range(n_events)], pa.string()),
            "title_id": pa.array([None if rnd.random() < 0.4 else f"tt{rnd.randrange(3000):07d}" for _ in range(n_events)], pa.string()),
            "country": pa.array([rnd.choice(countries) for _ in range(n_events)], pa.string()),
            "views": pa.array([rnd.randrange(1000) for _ in range(n_events)], pa.int32())})
        pq.write_table(events, paths["chain_events"])
        pq.write_table(pa.table({"user_id": [f"u{i:05d}" for i in range(20_000)],
                                 "plan": ["trial" if i % 5 == 0 else "paid" for i in range(20_000)]}), paths["users"])
        pq.write_table(pa.table({"country": countries, "region": [f"R{i % 6}" for i in range(50)]}), paths["countries"])
    return {n: str(p) for n, p in paths.items()}


def write_tiny_files(dir_, n_files, rows_per_file, seed):
    rnd = random.Random(seed)
    dir_.mkdir(parents=True, exist_ok=True)
    for i in range(n_files):
        t = pa.table({"k": pa.array([rnd.randrange(10) for _ in range(rows_per_file)], pa.int32()),
                      "v": pa.array([rnd.randrange(10_000) for _ in range(rows_per_file)],
                                    pa.int64())})
        pq.write_table(t, dir_ / f"part-{i:05d}.parquet")
    return str(dir_)


# ---------------------------------------------------------------------------- Spark

def session(name, out_dir, extra=None, compress=False, rolling=False):
    from pyspark.sql import SparkSession
    log_dir = out_dir / name
    shutil.rmtree(log_dir, ignore_errors=True)  # a log left by an earlier run of this script
    log_dir.mkdir(parents=True)
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.autoBroadcastJoinThreshold": "-1",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "1g",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": log_dir.resolve().as_uri(),
        "spark.eventLog.compress": "true" if compress else "false",
        "spark.eventLog.rolling.enabled": "true" if rolling else "false",
    }
    conf.update(extra or {})
    b = SparkSession.builder.master("local[2]").appName(name)
    for k, v in conf.items():
        b = b.config(k, str(v))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def the_log(out_dir, name, rolling=False):
    """The one event log Spark wrote under OUT_DIR/<name>: a file, or the rolling folder."""
    d = out_dir / name
    entries = [p for p in d.iterdir() if not p.name.startswith(".")]
    if rolling:
        dirs = [p for p in entries if p.is_dir() and p.name.startswith("eventlog_v2_")]
        if len(dirs) != 1:
            raise RuntimeError(f"{name}: expected one eventlog_v2_* folder in {d}, got {entries}")
        events = [p for p in dirs[0].iterdir() if p.name.startswith("events_")]
        if not events or any(p.stat().st_size == 0 for p in events):
            raise RuntimeError(f"{name}: no (non-empty) events_* files in {dirs[0]}")
        return str(dirs[0].resolve())
    # A killed application's log stays in progress.
    files = [p for p in entries if p.is_file() and (name == "killed_app" or not p.name.endswith(".inprogress"))]
    if len(files) != 1:
        raise RuntimeError(f"{name}: expected one finished event log in {d}, got {entries}")
    if files[0].stat().st_size == 0:
        raise RuntimeError(f"{name}: event log {files[0]} is empty")
    return str(files[0].resolve())


def join_job(spark, events_path, titles_path):
    spark.read.parquet(events_path).createOrReplaceTempView("events")
    spark.read.parquet(titles_path).createOrReplaceTempView("titles")
    return spark.sql(
        "SELECT count(*) AS n, count(t.name) AS matched, sum(e.views) AS views "
        "FROM events e LEFT JOIN titles t ON e.title_id = t.title_id").collect()


def hot_null_join(out, name, data, n_events=300_000, compress=None, rolling=False):
    ep, tp = write_join_tables(data, n_events, 3000, 0.4, seed=1)
    extra = {"spark.sql.shuffle.partitions": "16"}
    if compress:
        extra["spark.eventLog.compression.codec"] = compress
    if rolling:
        extra["spark.eventLog.rolling.maxFileSize"] = "10m"
    spark = session(name, out, extra, compress=bool(compress), rolling=rolling)
    try:
        log(name, join_job(spark, ep, tp))
    finally:
        spark.stop()


SQL_TEXT_QUERY = ("SELECT e.title_id, e.views, t.name FROM sj.events e "
                  "LEFT JOIN sj.titles t ON e.title_id = t.title_id WHERE e.views >= 0")


def sql_text_join(out, name, data):
    """The hot NULL join over catalog tables (over the files of hot_null_join), its SQL
    text set as the job description (as spark-sql, the Thrift server and notebooks do): the
    SQL execution's description in the log is the query."""
    ep, tp = write_join_tables(data, 300_000, 3000, 0.4, seed=1)
    spark = session(name, out, {"spark.sql.shuffle.partitions": "16", "spark.sql.warehouse.dir": str(out / "warehouse")})
    try:
        # Catalog tables over the files written above (no job: the join is the log's work).
        spark.sql("CREATE DATABASE IF NOT EXISTS sj")
        spark.sql(f"CREATE TABLE sj.events USING parquet LOCATION '{ep}'")
        spark.sql(f"CREATE TABLE sj.titles USING parquet LOCATION '{tp}'")
        spark.sparkContext.setJobDescription(SQL_TEXT_QUERY)
        log(name, len(spark.sql(SQL_TEXT_QUERY).collect()))
    finally:
        spark.stop()


def aqe_null_join(out, name, data):
    """hot_null_join with adaptive execution on (Spark's default), its sizes scaled to the data
    (64 KB advisory partitions, sized not spread over the cores): AQE coalesces the 64 shuffle
    partitions into about 40 tasks; the NULL partition is far under the skew threshold, so it
    is not split and stays the largest task."""
    ep, tp = write_join_tables(data, 300_000, 3000, 0.4, seed=1)
    spark = session(name, out, {"spark.sql.shuffle.partitions": "64", "spark.sql.adaptive.enabled": "true",
                                "spark.sql.adaptive.advisoryPartitionSizeInBytes": "64KB",
                                "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
                                "spark.sql.adaptive.coalescePartitions.minPartitionSize": "16KB"})
    try:
        log(name, join_job(spark, ep, tp))
    finally:
        spark.stop()


def dataframe_join(out, name, data):
    """The DataFrame API: no SQL text in the log, the filters only in its plan. The action is
    `collect`, which records its Python line as the stages' call site (`collect at
    eventlogs.py:N`, the line of the join); a `count` would record py4j's frame."""
    from pyspark.sql import functions as F
    ep = write_play_events(data, 300_000, 3000, seed=3)
    _, tp = write_join_tables(data, 300_000, 3000, 0.4, seed=1)
    spark = session(name, out, {"spark.sql.shuffle.partitions": "16"})
    try:
        plays = spark.read.parquet(ep).where((F.col("views") >= 100) & (F.col("kind") == "play"))
        titles = spark.read.parquet(tp)
        log(name, len(plays.join(titles, "title_id").groupBy("name").count().collect()))
    finally:
        spark.stop()


CHAIN_QUERY = ("SELECT c.region, u.plan, count(*) AS n, count(t.name) AS named, sum(e.views) AS views "
               "FROM sjc.chain_events e "
               "JOIN sjc.users u ON e.user_id = u.user_id "
               "LEFT JOIN sjc.titles t ON e.title_id = t.title_id "
               "LEFT JOIN sjc.countries c ON e.country = c.country "
               "WHERE e.views >= 100 AND u.plan <> 'trial' "
               "GROUP BY c.region, u.plan")


def chain_join(out, name, data):
    """Three joins with filters over catalog tables, the SQL text as the job description."""
    paths = write_chain_tables(data, 300_000, seed=4)
    _, paths["titles"] = write_join_tables(data, 300_000, 3000, 0.4, seed=1)
    spark = session(name, out, {"spark.sql.shuffle.partitions": "16", "spark.sql.warehouse.dir": str(out / "warehouse")})
    try:
        spark.sql("CREATE DATABASE IF NOT EXISTS sjc")
        for table, path in paths.items():
            spark.sql(f"CREATE TABLE sjc.{table} USING parquet LOCATION '{path}'")
        spark.sparkContext.setJobDescription(CHAIN_QUERY)
        log(name, len(spark.sql(CHAIN_QUERY).collect()))
    finally:
        spark.stop()


def rdd_only(out, name):
    spark = session(name, out)
    try:
        pairs = spark.sparkContext.parallelize(range(600_000), 4).map(lambda i: ("hot" if i % 5 < 3 else f"k{i % 5000}", i))
        # partitionBy: no combining, so every pair of the hot key reaches one task (pyspark
        # ships pickled batches: the skew shows in bytes more than in records).
        log(name, pairs.partitionBy(8).values().sum())
    finally:
        spark.stop()


def failed_stage(out, name):
    spark = session(name, out, {"spark.sql.shuffle.partitions": "4"})
    try:
        try:
            spark.range(10_000, numPartitions=2).repartition(4).selectExpr("assert_true(id != 5000)").collect()
            raise RuntimeError("the failing job did not fail")
        except Exception as e:  # the stage's failure, as expected
            if "did not fail" in str(e):
                raise
            log(name, "failed as meant:", type(e).__name__)
        log(name, spark.range(1000).selectExpr("sum(id)").collect())
    finally:
        spark.stop()


KILLED = """
import os, signal, sys
sys.path.insert(0, {here!r})
import eventlogs, pathlib
out, data = pathlib.Path({out!r}), pathlib.Path({data!r})
ep, tp = eventlogs.write_join_tables(data, 60_000, 3000, 0.4, seed=1)
spark = eventlogs.session({name!r}, out, {{"spark.sql.shuffle.partitions": "16"}})
eventlogs.join_job(spark, ep, tp)
os.kill(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid(), signal.SIGKILL)
os._exit(0)
"""


def killed_app(out, name, data):
    """The driver killed mid-application, in a process of its own (its SparkContext dies)."""
    import subprocess
    code = KILLED.format(here=str(pathlib.Path(__file__).parent), out=str(out), data=str(data), name=name)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300, stdout=sys.stderr)


def streaming(out, name):
    spark = session(name, out, {"spark.sql.shuffle.partitions": "4"})
    try:
        q = (spark.readStream.format("rate").option("rowsPerSecond", 2000).load()
             .selectExpr("value % 10 AS k").groupBy("k").count()
             .writeStream.format("noop").outputMode("complete").trigger(processingTime="1 second").start())
        q.awaitTermination(6)
        q.stop()
        log(name, "batches:", len(q.recentProgress))
    finally:
        spark.stop()


def tiny_files(out, name, data):
    d = write_tiny_files(data / "tiny", 1100, 20, seed=2)
    spark = session(name, out, {
        # Each file (~1 KB) plus its open cost is above the split size: one file per task.
        "spark.sql.files.maxPartitionBytes": "4096",
        "spark.sql.files.openCostInBytes": "4096",
        "spark.sql.shuffle.partitions": "2",
    })
    try:
        df = spark.read.parquet(d)
        log(name, "partitions", df.rdd.getNumPartitions())
        log(name, df.groupBy("k").agg({"v": "sum"}).count())
    finally:
        spark.stop()


def spill(out, name):
    spark = session(name, out, {
        "spark.sql.shuffle.partitions": "8",
        # UnsafeExternalSorter (SortExec) spills every 20k records, whatever memory is free.
        "spark.shuffle.spill.numElementsForceSpillThreshold": "20000",
    })
    try:
        (spark.range(1_000_000, numPartitions=2)
         .selectExpr("id", "cast(rand(7) * 1e9 AS bigint) AS v", "repeat('x', 24) AS pad")
         .repartition(8, "id").sortWithinPartitions("v")
         .write.format("noop").mode("overwrite").save())
    finally:
        spark.stop()


def even_volume(out, name):
    spark = session(name, out, {"spark.sql.shuffle.partitions": "16"})
    try:
        # Hex digests compress little (unlike a repeated string): the shuffle is tens of MB.
        r = (spark.range(1_000_000, numPartitions=2)
             .selectExpr("id", "concat(md5(cast(id AS string)), md5(cast(id * 7 AS string)),"
                               " md5(cast(id * 13 AS string))) AS s")
             .repartition(16, "id")
             .selectExpr("max(length(s)) AS m", "count(*) AS n").collect())
        log(name, r)
    finally:
        spark.stop()


def python_udf(out, name):
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType
    # Spark 4.1+ may run a plain Python UDF through Arrow (ArrowEvalPython); keep it row-based.
    spark = session(name, out, {"spark.sql.shuffle.partitions": "2",
                                "spark.sql.execution.pythonUDF.arrow.enabled": "false"})
    try:
        # Nondeterministic so the filter is not pushed below it: one BatchEvalPython in the plan.
        score = F.udf(lambda x: (x * 2654435761) % 1000003, LongType(),
                      useArrow=False).asNondeterministic()
        r = (spark.range(200_000, numPartitions=2).withColumn("s", score("id"))
             .where("s % 1000 = 0").collect())
        log(name, len(r), "rows")
    finally:
        spark.stop()


def main(argv):
    if len(argv) < 2:
        log("usage: python tests/py/eventlogs.py OUT_DIR [SCENARIO ...]")
        return 2
    # Python workers run this interpreter (its venv), not whatever python3 is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    out = pathlib.Path(argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    data = out / "data"
    t0 = time.time()
    runs = [
        ("hot_null_join", lambda n: hot_null_join(out, n, data), False),
        ("sql_text_join", lambda n: sql_text_join(out, n, data), False),
        ("aqe_null_join", lambda n: aqe_null_join(out, n, data), False),
        ("tiny_files", lambda n: tiny_files(out, n, data), False),
        ("spill", lambda n: spill(out, n), False),
        ("even_volume", lambda n: even_volume(out, n), False),
        ("python_udf", lambda n: python_udf(out, n), False),
        ("dataframe_join", lambda n: dataframe_join(out, n, data), False),
        ("chain_join", lambda n: chain_join(out, n, data), False),
        ("rdd_only", lambda n: rdd_only(out, n), False),
        ("failed_stage", lambda n: failed_stage(out, n), False),
        ("killed_app", lambda n: killed_app(out, n, data), False),
        ("streaming", lambda n: streaming(out, n), False),
    ]
    for c in CODECS:
        runs.append((c, lambda n, c=c: hot_null_join(out, n, data, 60_000, compress=c), False))
    runs.append(("rolling", lambda n: hot_null_join(out, n, data, rolling=True), True))
    if len(argv) > 2:
        wanted = [n for a in argv[2:] for n in (FIX_JOBS if a == "fix_jobs" else [a])]
        runs = [r for r in runs if r[0] in wanted]
    paths = {}
    for name, run, rolling in runs:
        t = time.time()
        run(name)
        paths[name] = the_log(out, name, rolling)
        log(f"{name}: {time.time() - t:.1f} s -> {paths[name]}")
    log(f"all scenarios: {time.time() - t0:.1f} s")
    return paths


if __name__ == "__main__":
    # Keep stdout for the JSON line only: file descriptor 1 goes to stderr while Spark runs (the
    # JVM, a child process, inherits it), and the JSON is written to the saved descriptor.
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    result = main(sys.argv)
    sys.stdout.flush()
    if isinstance(result, int):
        sys.exit(result)
    os.write(saved, (json.dumps(result) + "\n").encode())
    os.close(saved)
