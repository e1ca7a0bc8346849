"""skewjoin verify's Spark engine: runs the original query and the rewrite on one Spark session
(the user's pyspark; local mode unless told otherwise), compares the rows as multisets and reads
every stage's tasks from Spark's REST API. Reads a JSON spec on stdin; writes one JSON line on
stdout (everything else goes to stderr).

The binary carries this file (`verify --engine spark` runs it with the user's Python); the
Python package imports it too (`skewjoin.spark.verify` runs `run` and `run_remote` on the
caller's session, with a query as SQL text or a DataFrame)."""
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


MAX_PAIRED = 10_000

# Spark's and Python's own words for a mistake in what the user gave: a query or name Spark
# cannot resolve, SQL it cannot parse, a Python without pyspark.
USER_FAULTS = {"AnalysisException", "ParseException", "ImportError", "ModuleNotFoundError", "FileNotFoundError"}


def fault(e):
    """Whose fault an exception is: `usage` for the user's, `server` for the engine's."""
    names = {c.__name__ for c in type(e).__mro__}
    return "usage" if names & USER_FAULTS else "server"


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


def one_line(e):
    s = str(e).strip()
    return s.splitlines()[0][:300] if s else type(e).__name__


def connect_ui(spark, spec):
    """The server's UI: --spark-ui, else the Connect host at spark.ui.port (4040)."""
    if spec.get("spark_ui"):
        return spec["spark_ui"].rstrip("/")
    host = spec["remote"][len("sc://"):].split("/")[0].split(";")[0].rsplit(":", 1)[0]
    try:
        port = spark.conf.get("spark.ui.port")
    except Exception:  # noqa: BLE001
        port = "4040"
    return f"http://{host}:{port or 4040}"


def bounded_retries(spark):
    """A Spark Connect server that stops answering is given up after about 45 s of retries, not
    pyspark's 10 minutes."""
    try:
        from pyspark.sql.connect.client.retries import DefaultPolicy
        spark.client.set_retry_policies([DefaultPolicy(max_retries=8, max_backoff=10000)])
    except Exception:  # noqa: BLE001 - an older client keeps its own policy
        pass


def session(spec, SparkSession):
    """Local mode or a --master through pyspark, or a Spark Connect server with --remote."""
    if spec.get("remote"):
        spark = SparkSession.builder.remote(spec["remote"]).getOrCreate()
        bounded_retries(spark)
        for k, v in {"spark.sql.session.timeZone": "UTC", **spec["conf"]}.items():
            spark.conf.set(k, v)
        return spark
    import os
    for k in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE"):
        os.environ.pop(k, None)
    b = SparkSession.builder.master(spec["master"]).appName("skewjoin-verify")
    conf = {"spark.ui.enabled": "true", "spark.ui.port": "0", "spark.ui.showConsoleProgress": "false",
            "spark.ui.retainedTasks": "10000000", "spark.sql.session.timeZone": "UTC"}
    conf.update(spec["conf"])
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


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


def main():
    spec = json.load(sys.stdin)
    out = sys.stdout
    sys.stdout = sys.stderr
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        out.write(json.dumps({"error": f"pyspark cannot be imported by {sys.executable} ({e}): pip install pyspark, or pass --python", "kind": "usage"}) + "\n")
        return
    try:
        spark = session(spec, SparkSession)
    except Exception as e:  # noqa: BLE001 - a server that fails, a setting it refuses
        out.write(json.dumps({"error": f"Spark: {one_line(e)}"}) + "\n")
        return
    try:
        for name, path in spec["tables"].items():
            table_frame(spark, path).createOrReplaceTempView(name)
        digits = spec["digits"]
        notes = []
        if spec.get("remote"):
            ui = connect_ui(spark, spec)
            notes = set()

            def once(sql, label):
                stats, counts, note = run_remote(spark, sql, label, digits, ui)
                notes.add(note)
                return stats, counts
            master = spec["remote"]
        else:
            def once(sql, label):
                return run(spark, sql, label, digits)
            master = spark.sparkContext.master
        (before, c0), (after, c1) = runs(once, spec["original"], spec["rewritten"], spec.get("runs", 1))
        pair_off(c0, c1, spec["digits"])
        notes = sorted(n for n in notes if n) if spec.get("remote") else []
        notes += retry_notes(before, after)
        only0 = list((c0 - c1).elements())[:5]
        only1 = list((c1 - c0).elements())[:5]
        out.write(json.dumps({
            "spark_version": spark.version, "master": master, "notes": notes,
            "identical": c0 == c1, "before": before, "after": after,
            "only_in_original": [repr(r) for r in only0], "only_in_rewritten": [repr(r) for r in only1],
        }, default=str) + "\n")
    except Exception as e:  # a query Spark refuses: one line for the user
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        out.write(json.dumps({"error": f"Spark: {msg}", "kind": fault(e)}) + "\n")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
