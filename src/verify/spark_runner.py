"""skewjoin verify's Spark engine: runs the original query and the rewrite on one Spark session
(the user's pyspark; local mode unless told otherwise), compares the rows as multisets and reads
every stage's tasks from Spark's REST API. Reads a JSON spec on stdin; writes one JSON line on
stdout (everything else goes to stderr)."""
import datetime
import decimal
import json
import math
import sys
import time
import urllib.request
from collections import Counter


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


def get(sc, path):
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}{path}"
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.loads(r.read())


def when(s):
    # "2026-11-30T16:00:00.123GMT"
    return datetime.datetime.strptime(s.replace("GMT", ""), "%Y-%m-%dT%H:%M:%S.%f").timestamp() * 1000


def stages_of(sc, group):
    ids = set()
    for j in sc.statusTracker().getJobIdsForGroup(group):
        info = sc.statusTracker().getJobInfo(j)
        if info is not None:
            ids.update(info.stageIds)
    out = []
    for sid in sorted(ids):
        attempts = []
        for _ in range(200):
            try:
                attempts = get(sc, f"/stages/{sid}")
            except Exception:
                attempts = []
            if not attempts or all(a["status"] in ("COMPLETE", "SKIPPED", "FAILED") for a in attempts):
                break
            time.sleep(0.1)
        for a in attempts:
            if a["status"] != "COMPLETE":
                continue
            tl = get(sc, f"/stages/{sid}/{a['attemptId']}/taskList?length=10000000")
            recs, byts, durs = [], [], []
            tl = sorted(tl, key=lambda t: t.get("index", 0))
            for t in tl:
                m = t.get("taskMetrics", {}).get("shuffleReadMetrics", {})
                recs.append(m.get("recordsRead", 0))
                byts.append(m.get("localBytesRead", 0) + m.get("remoteBytesRead", 0))
                durs.append(t.get("duration", 0))
            read = sorted(r for r in recs if r > 0)
            d = sorted(durs)
            dur = 0
            if a.get("submissionTime") and a.get("completionTime"):
                dur = int(when(a["completionTime"]) - when(a["submissionTime"]))
            out.append({
                "stage_id": sid, "tasks": len(tl), "duration_ms": dur,
                "max_task_records": max(recs, default=0),
                "median_task_records": read[len(read) // 2] if read else 0,
                "max_task_bytes": max(byts, default=0),
                "max_task_ms": max(durs, default=0), "median_task_ms": d[len(d) // 2] if d else 0,
                "spill_bytes": a.get("memoryBytesSpilled", 0) + a.get("diskBytesSpilled", 0),
                "task_records": recs,
            })
    return out


def run(spark, sql, label, digits):
    sc = spark.sparkContext
    group = f"skewjoin-verify-{label}"
    sc.setJobGroup(group, group)
    t0 = time.time()
    try:
        df = spark.sql(sql)
        rows = df.collect()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    wall = int((time.time() - t0) * 1000)
    counts = Counter(tuple(norm(v, digits) for v in r) for r in rows)
    return {"wall_ms": wall, "rows": len(rows), "columns": df.columns, "stages": stages_of(sc, group)}, counts


def main():
    spec = json.load(sys.stdin)
    out = sys.stdout
    sys.stdout = sys.stderr
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        out.write(json.dumps({"error": f"pyspark cannot be imported by {sys.executable} ({e}): pip install pyspark, or pass --python"}) + "\n")
        return
    b = SparkSession.builder.master(spec["master"]).appName("skewjoin-verify")
    conf = {"spark.ui.enabled": "true", "spark.ui.port": "0", "spark.ui.showConsoleProgress": "false",
            "spark.ui.retainedTasks": "10000000", "spark.sql.session.timeZone": "UTC"}
    conf.update(spec["conf"])
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for name, path in spec["tables"].items():
            spark.read.parquet(path).createOrReplaceTempView(name)
        digits = spec["digits"]
        before, c0 = run(spark, spec["original"], "original", digits)
        after, c1 = run(spark, spec["rewritten"], "rewritten", digits)
        only0 = list((c0 - c1).elements())[:5]
        only1 = list((c1 - c0).elements())[:5]
        out.write(json.dumps({
            "spark_version": spark.version, "master": spark.sparkContext.master,
            "identical": c0 == c1, "before": before, "after": after,
            "only_in_original": [repr(r) for r in only0], "only_in_rewritten": [repr(r) for r in only1],
        }, default=str) + "\n")
    except Exception as e:  # a query Spark refuses: one line for the user
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        out.write(json.dumps({"error": f"Spark: {msg}"}) + "\n")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
