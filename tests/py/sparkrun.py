"""Run SQL on the test Spark session and read what each task of it did, from Spark's own
REST API (the status store behind the UI): shuffle-read records and bytes per task."""
import itertools
import json
import math
import time
import urllib.request
from collections import Counter
from contextlib import contextmanager

_ids = itertools.count()


@contextmanager
def sort_merge_joins(spark, partitions):
    """The shared session with `partitions` shuffle partitions, AQE and broadcasts off, so that
    joins run as the sort-merge joins skewjoin predicts; the settings are undone after."""
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        yield spark
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "8")
        spark.conf.unset("spark.sql.adaptive.enabled")
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def _get(spark, path):
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}{path}"
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def measured(spark, sql, collect=True):
    """Collect `sql` and return (rows, tasks): tasks is a list of dicts, one per task of every
    stage the query ran, with `records` and `bytes` read from shuffles. With collect=False the
    rows go to Spark's `noop` sink (the same stages, none of the rows sent to Python) and rows
    is None: for results of millions of rows, compared with `same_rows_in_spark`."""
    return measured_frame(spark, spark.sql(sql), collect)


def measured_frame(spark, df, collect=True):
    """`measured` of a DataFrame (of this classic session)."""
    sc = spark.sparkContext
    group = f"skewjoin-test-{next(_ids)}"
    sc.setJobGroup(group, group)
    try:
        if collect:
            rows = df.collect()
        else:
            rows = None
            df.write.format("noop").mode("overwrite").save()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    jobs = sc.statusTracker().getJobIdsForGroup(group)
    stages = set()
    for j in jobs:
        info = sc.statusTracker().getJobInfo(j)
        if info is not None:
            stages.update(info.stageIds)
    tasks = []
    for sid in sorted(stages):
        # The status store is fed by an asynchronous listener: wait for the stage to settle.
        for _ in range(100):
            try:
                attempts = _get(spark, f"/stages/{sid}")
            except Exception:
                attempts = []
            if attempts and all(a["status"] in ("COMPLETE", "SKIPPED", "FAILED") for a in attempts):
                break
            if not attempts:
                # A stage that was skipped (its shuffle output reused) may never appear.
                break
            time.sleep(0.1)
        for a in attempts:
            if a["status"] != "COMPLETE":
                continue
            tl = _get(spark, f"/stages/{sid}/{a['attemptId']}/taskList?length=1000000")
            for t in tl:
                m = t.get("taskMetrics", {}).get("shuffleReadMetrics", {})
                tasks.append({"stage": sid, "records": m.get("recordsRead", 0),
                              "bytes": m.get("localBytesRead", 0) + m.get("remoteBytesRead", 0)})
    return rows, tasks


def max_records(tasks):
    return max((t["records"] for t in tasks), default=0)


def median_records(tasks):
    """Median over the tasks that read a shuffle."""
    r = sorted(t["records"] for t in tasks if t["records"] > 0)
    return r[len(r) // 2] if r else 0


def multiset(rows, digits=None):
    """The rows as a multiset: each row's values as a tuple, counted. With `digits`, floats are
    rounded to that many significant digits and NaN is one value (sums added in another order
    differ in their last bits; NaN equals nothing)."""
    if digits is None:
        return Counter(tuple(r) for r in rows)

    def norm(v):
        if isinstance(v, float):
            return "NaN" if math.isnan(v) else float(f"{v:.{digits}g}")
        return v
    return Counter(tuple(norm(v) for v in r) for r in rows)


def same_rows_in_spark(spark, sql_a, sql_b):
    """Whether the two queries give the same rows as multisets, compared by Spark itself: for
    results too large to collect. Each side's row count and two sums of a hash of every row
    (xxhash64 and Murmur3, 96 bits), its columns taken by position: a multiset fingerprint that
    a missing, extra or changed row moves unless two hashes collide at once. EXCEPT ALL both
    ways, exact, took 25 of this check's 33 s on 5.4M rows."""
    from pyspark.sql import functions as F

    def fingerprint(sql):
        df = spark.sql(sql)
        names = [f"c{i}" for i in range(len(df.columns))]
        df, cols = df.toDF(*names), [F.col(n) for n in names]
        wide = "decimal(38,0)"  # no overflow under ANSI mode: 5.4M hashes of 64 bits sum under 10^26
        return tuple(df.agg(F.count(F.lit(1)), F.sum(F.xxhash64(*cols).cast(wide)), F.sum(F.hash(*cols).cast(wide))).first())

    return fingerprint(sql_a) == fingerprint(sql_b)
