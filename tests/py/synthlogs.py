"""Synthetic Spark event logs built to given figures, for `skewjoin diagnose`.

Each function writes one uncompressed event log (JSON lines) in the format Spark 3.5 writes,
with the field names and nesting copied from logs real Spark 3.5 wrote (tests/py/eventlogs.py):
SparkListenerLogStart, ResourceProfileAdded, BlockManagerAdded, EnvironmentUpdate (Spark
Properties, spark.sql.shuffle.partitions among them), ApplicationStart, ExecutorAdded (Executor
Info with Total Cores), then per job JobStart (Stage Infos, Stage IDs, Properties), per stage
StageSubmitted, TaskStart/TaskEnd per task (Task Info, Task Metrics, internal.metrics.*
Accumulables), StageCompleted (Submission Time, Completion Time, Accumulables), JobEnd, and
ApplicationEnd. No SQL execution events (they describe plans; these logs are about timings).

Conventions, the same in every log:
- timestamps are ms since the epoch, the first one 1767225600000 (2026-01-01T00:00:00Z);
- sizes are binary: MiB = 2**20 bytes, GiB = 2**30 (what Spark's UI prints as "12.4 GiB");
- a task's duration is Finish Time - Launch Time; its scheduler delay is what Spark's UI
  computes: duration - Executor Run Time - Executor Deserialize Time - Result Serialization Time
  - getting-result time (Getting Result Time is a timestamp, 0 here: no result was fetched
  remotely, so the getting-result time is 0);
- tasks are launched in index order on the earliest free slot (executor x core), so waves follow
  from the slot count; a slot takes its next task a few ms after the last one finished;
- values come from a seeded random.Random: the same call writes the same bytes.

Functions (path = where to write the log):
- worked_hot_key(path): the worked example (4 stages, one job, 2 h 58 min; stage 2, the join,
  2 h 51 min: 200 tasks, median 41 s, one task of 2 h 48 min reading 12.4 GiB of shuffle against
  a median of 135 MiB, the only task that spills). 10 executors x 4 cores = 40 slots, so the
  hot task starts in the stage's 5th wave, ~3 min in: that is the 2 h 51 - 2 h 48.
- worked_tiny_tasks(path): one stage of 4,000 tasks of ~900 ms run time and ~2.4 s scheduler
  delay each, on 40 executors x 4 cores = 160 slots (25 waves); no shuffle.
- too_few_partitions(path): a shuffle stage of 8 tasks (spark.sql.shuffle.partitions 8) each
  reading ~700 MiB of shuffle, 7 of 8 spilling, durations even, on 80 slots.
- memory_pressure(path): a reduce stage of 200 tasks, even durations, each reading ~100 MiB, 85%
  of them spilling (modest sizes), JVM GC Time ~25% of run time.
- planning_gap(path): two short jobs with 20 minutes between them in which no task runs and no
  job or query is open: the driver's own time (driver_time), not planning.
- planning_in_query(path): a SQL query whose first job starts 12 minutes after the query did
  (planning), then 2 minutes of tasks.
- short_gc(path): a 15 s job whose one stage lasts 2.4 s with GC 16% of its run time, no spill.
- input_growth(baseline_path, current_path): the same 2-stage job twice (same stage names); in
  the current run (a day later) the input stage reads 3x the input bytes/records (3x the tasks
  on the same 100 slots) and takes ~3x longer; tasks even.
- truncated(path, src): a copy of src cut in the middle of a line ~60% through.
- not_a_log(path): a small CSV file.

`python tests/py/synthlogs.py OUT_DIR` writes them all and prints {name: path} as JSON.
"""
import heapq
import json
import os
import random
import sys

BASE_TS = 1767225600000
MiB = 2 ** 20
GiB = 2 ** 30
SEC = 1000
MIN = 60 * SEC
SPARK_VERSION = "3.5.1"

# (internal accumulator name, getter from a task's metric dict) in the order Spark lists them.
_INTERNAL = [
    ("internal.metrics.executorDeserializeTime", "deser"),
    ("internal.metrics.executorDeserializeCpuTime", "deser_cpu"),
    ("internal.metrics.executorRunTime", "run"),
    ("internal.metrics.executorCpuTime", "cpu"),
    ("internal.metrics.resultSize", "result_size"),
    ("internal.metrics.jvmGCTime", "gc"),
    ("internal.metrics.resultSerializationTime", "ser"),
    ("internal.metrics.memoryBytesSpilled", "mem_spill"),
    ("internal.metrics.diskBytesSpilled", "disk_spill"),
    ("internal.metrics.peakExecutionMemory", "peak_mem"),
    ("internal.metrics.shuffle.read.remoteBlocksFetched", "sr_remote_blocks"),
    ("internal.metrics.shuffle.read.localBlocksFetched", "sr_local_blocks"),
    ("internal.metrics.shuffle.read.remoteBytesRead", "sr_remote_bytes"),
    ("internal.metrics.shuffle.read.remoteBytesReadToDisk", "sr_remote_to_disk"),
    ("internal.metrics.shuffle.read.localBytesRead", "sr_local_bytes"),
    ("internal.metrics.shuffle.read.fetchWaitTime", "sr_fetch_wait"),
    ("internal.metrics.shuffle.read.recordsRead", "sr_records"),
    ("internal.metrics.shuffle.read.remoteReqsDuration", "sr_reqs_duration"),
    ("internal.metrics.shuffle.write.bytesWritten", "sw_bytes"),
    ("internal.metrics.shuffle.write.recordsWritten", "sw_records"),
    ("internal.metrics.shuffle.write.writeTime", "sw_time"),
    ("internal.metrics.input.bytesRead", "in_bytes"),
    ("internal.metrics.input.recordsRead", "in_records"),
    ("internal.metrics.output.bytesWritten", "out_bytes"),
    ("internal.metrics.output.recordsWritten", "out_records"),
]
_ALWAYS = {"deser", "deser_cpu", "run", "cpu", "result_size", "gc", "ser", "peak_mem"}
_SHUFFLE_READ = {k for _, k in _INTERNAL if k.startswith("sr_")}
_SHUFFLE_WRITE = {"sw_bytes", "sw_records", "sw_time"}

_EXECUTOR_METRICS = ["JVMHeapMemory", "JVMOffHeapMemory", "OnHeapExecutionMemory",
                     "OffHeapExecutionMemory", "OnHeapStorageMemory", "OffHeapStorageMemory",
                     "OnHeapUnifiedMemory", "OffHeapUnifiedMemory", "DirectPoolMemory",
                     "MappedPoolMemory", "ProcessTreeJVMVMemory", "ProcessTreeJVMRSSMemory",
                     "ProcessTreePythonVMemory", "ProcessTreePythonRSSMemory",
                     "ProcessTreeOtherVMemory", "ProcessTreeOtherRSSMemory", "MinorGCCount",
                     "MinorGCTime", "MajorGCCount", "MajorGCTime", "TotalGCTime"]


def task(duration_ms, rnd, sched_delay=None, deser=None, ser=None, gc=0, cpu_frac=0.85,
         in_bytes=0, in_records=0, out_bytes=0, out_records=0, sr_bytes=0, sr_records=0,
         sw_bytes=0, sw_records=0, mem_spill=0, disk_spill=0, peak_mem=None):
    """One task's figures. duration_ms = Finish Time - Launch Time; run time is what is left
    after the scheduler delay, deserialization and result serialization."""
    deser = rnd.randint(8, 40) if deser is None else deser
    ser = rnd.randint(0, 2) if ser is None else ser
    sched_delay = rnd.randint(5, 40) if sched_delay is None else sched_delay
    run = duration_ms - sched_delay - deser - ser
    assert run > 0, (duration_ms, sched_delay, deser, ser)
    return dict(duration=duration_ms, sched_delay=sched_delay, deser=deser, ser=ser, run=run,
                deser_cpu=deser * rnd.randint(300_000, 700_000),
                cpu=int(run * cpu_frac * 1_000_000), gc=gc,
                result_size=rnd.randint(4200, 5200), in_bytes=in_bytes, in_records=in_records,
                out_bytes=out_bytes, out_records=out_records, sr_bytes=sr_bytes,
                sr_records=sr_records, sw_bytes=sw_bytes, sw_records=sw_records,
                mem_spill=mem_spill, disk_spill=disk_spill,
                peak_mem=(peak_mem if peak_mem is not None
                          else min(max(sr_bytes, sw_bytes, 16 * MiB), 900 * MiB)))


class Stage:
    def __init__(self, name, tasks, parents=(), what="WholeStageCodegen (1)"):
        self.name, self.tasks, self.parents, self.what = name, tasks, list(parents), what
        self.id = None
        self.submitted = self.completed = None
        self.placed = []  # (task dict, task id, launch, finish, executor id, host)


class App:
    """Collects events with their times; write() sorts them and writes JSON lines."""

    # Order of events that share a timestamp.
    _RANK = {"SparkListenerJobStart": 0, "SparkListenerStageSubmitted": 1,
             "SparkListenerTaskEnd": 2, "SparkListenerTaskStart": 3,
             "SparkListenerStageCompleted": 4, "SparkListenerJobEnd": 5}

    def __init__(self, name, executors, cores, props=None, start=BASE_TS, seed=0,
                 app_no=1, executor_memory="8g"):
        self.rnd = random.Random(seed)
        self.name = name
        self.start = start
        self.app_id = f"application_{start}_{app_no:04d}"
        self.cores = cores
        self.executors = [(str(i), f"10.0.{1 + (i - 1) // 200}.{10 + (i - 1) % 200}")
                          for i in range(1, executors + 1)]
        self.events = []  # (time, rank, seq, event)
        self.head = []
        self.next_stage = 0
        self.next_task = 0
        self.next_job = 0
        self.next_rdd = 0
        self.next_accum = 1
        self.last_time = start
        self.props = {
            "spark.app.id": self.app_id,
            "spark.app.name": name,
            "spark.app.startTime": str(start),
            "spark.master": "yarn",
            "spark.submit.deployMode": "cluster",
            "spark.driver.host": "10.0.0.5",
            "spark.driver.port": "39401",
            "spark.driver.memory": "8g",
            "spark.executor.instances": str(executors),
            "spark.executor.cores": str(cores),
            "spark.executor.memory": executor_memory,
            "spark.dynamicAllocation.enabled": "false",
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": "hdfs:///spark-history",
            "spark.scheduler.mode": "FIFO",
            "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
            "spark.sql.adaptive.enabled": "false",
            "spark.sql.shuffle.partitions": "200",
        }
        self.props.update(props or {})
        self._header()

    # ------------------------------------------------------------------ header
    def _header(self):
        s = self.start
        self.head += [
            {"Event": "SparkListenerLogStart", "Spark Version": SPARK_VERSION},
            {"Event": "SparkListenerResourceProfileAdded", "Resource Profile Id": 0,
             "Executor Resource Requests": {
                 "cores": {"Resource Name": "cores", "Amount": self.cores,
                           "Discovery Script": "", "Vendor": ""},
                 "memory": {"Resource Name": "memory", "Amount": 8192, "Discovery Script": "",
                            "Vendor": ""},
                 "offHeap": {"Resource Name": "offHeap", "Amount": 0, "Discovery Script": "",
                             "Vendor": ""}},
             "Task Resource Requests": {"cpus": {"Resource Name": "cpus", "Amount": 1.0}}},
            {"Event": "SparkListenerBlockManagerAdded",
             "Block Manager ID": {"Executor ID": "driver", "Host": "10.0.0.5", "Port": 40211},
             "Maximum Memory": 4_555_014_144, "Timestamp": s + 1200,
             "Maximum Onheap Memory": 4_555_014_144, "Maximum Offheap Memory": 0},
            {"Event": "SparkListenerEnvironmentUpdate",
             "JVM Information": {"Java Home": "/usr/lib/jvm/java-17-openjdk-amd64",
                                 "Java Version": "17.0.10 (Eclipse Adoptium)",
                                 "Scala Version": "version 2.12.18"},
             "Spark Properties": dict(sorted(self.props.items())),
             "Hadoop Properties": {}, "System Properties": {"java.version": "17.0.10"},
             "Metrics Properties": {}, "Classpath Entries": {}},
            {"Event": "SparkListenerApplicationStart", "App Name": self.name,
             "App ID": self.app_id, "Timestamp": s, "User": "etl",
             "App Attempt ID": "1"},
        ]
        t = s + 6000
        for eid, host in self.executors:
            t += self.rnd.randint(20, 300)
            self.head.append({
                "Event": "SparkListenerExecutorAdded", "Timestamp": t, "Executor ID": eid,
                "Executor Info": {"Host": host, "Total Cores": self.cores,
                                  "Log Urls": {}, "Attributes": {}, "Resources": {},
                                  "Resource Profile Id": 0}})
            self.head.append({
                "Event": "SparkListenerBlockManagerAdded",
                "Block Manager ID": {"Executor ID": eid, "Host": host, "Port": 35000 + int(eid)},
                "Maximum Memory": 4_555_014_144, "Timestamp": t + 40,
                "Maximum Onheap Memory": 4_555_014_144, "Maximum Offheap Memory": 0})
        self.ready = t + 1000  # every executor registered

    def _add(self, t, ev):
        self.events.append((t, self._RANK.get(ev["Event"], 9), len(self.events), ev))
        self.last_time = max(self.last_time, t)

    # ------------------------------------------------------------------ stage info
    def _rdds(self, st):
        n = len(st.tasks)
        ids = [self.next_rdd, self.next_rdd + 1]
        self.next_rdd += 2
        storage = {"Use Disk": False, "Use Memory": False, "Use Off Heap": False,
                   "Deserialized": False, "Replication": 1}
        first = "ShuffledRowRDD" if st.parents else "FileScanRDD"
        return [
            {"RDD ID": ids[1], "Name": "MapPartitionsRDD",
             "Scope": json.dumps({"id": str(ids[1]), "name": st.what}, separators=(",", ":")),
             "Callsite": st.name, "Parent IDs": [ids[0]], "Storage Level": storage,
             "Barrier": False, "DeterministicLevel": "DETERMINATE", "Number of Partitions": n,
             "Number of Cached Partitions": 0, "Memory Size": 0, "Disk Size": 0},
            {"RDD ID": ids[0], "Name": first,
             "Scope": json.dumps({"id": str(ids[0]),
                                  "name": "Exchange" if st.parents else "Scan parquet "},
                                 separators=(",", ":")),
             "Callsite": st.name, "Parent IDs": [], "Storage Level": storage,
             "Barrier": False, "DeterministicLevel": "DETERMINATE", "Number of Partitions": n,
             "Number of Cached Partitions": 0, "Memory Size": 0, "Disk Size": 0},
        ]

    def _stage_info(self, st, submitted=False, completed=False, accumulables=()):
        info = {"Stage ID": st.id, "Stage Attempt ID": 0, "Stage Name": st.name,
                "Number of Tasks": len(st.tasks), "RDD Info": st.rdd_info,
                "Parent IDs": [p.id for p in st.parents], "Details": st.details}
        if submitted:
            info["Submission Time"] = st.submitted
        if completed:
            info["Completion Time"] = st.completed
        info["Accumulables"] = list(accumulables)
        info["Resource Profile Id"] = 0
        info["Shuffle Push Enabled"] = False
        info["Shuffle Push Mergers Count"] = 0
        return info

    # ------------------------------------------------------------------ scheduling
    def _place(self, st, start, first_slot_free=None):
        """Launch st's tasks in index order on the earliest free slot; returns the time the
        last one finished."""
        rnd = self.rnd
        slots = []
        for c in range(self.cores):
            for i, (eid, host) in enumerate(self.executors):
                free = start + rnd.randint(5, 60)
                slots.append((free, c * len(self.executors) + i, eid, host))
        heapq.heapify(slots)
        end = start
        for t in st.tasks:
            free, k, eid, host = heapq.heappop(slots)
            launch = free
            finish = launch + t["duration"]
            tid = self.next_task
            self.next_task += 1
            st.placed.append((t, tid, launch, finish, eid, host))
            heapq.heappush(slots, (finish + rnd.randint(1, 6), k, eid, host))
            end = max(end, finish)
        return end

    def run_job(self, stages, at, name=None, sequential=True):
        """Run stages (in order, each after the last) as one job submitted at `at`.
        Returns the time the job ended."""
        job_id = self.next_job
        self.next_job += 1
        for st in stages:
            st.id = self.next_stage
            self.next_stage += 1
            st.rdd_info = self._rdds(st)
            st.details = (f"org.apache.spark.sql.Dataset.collect(Dataset.scala:3575)\n"
                          f"com.example.{self.name.title().replace('_', '')}.main"
                          f"({st.name.split(' at ')[-1]})")
        name = name or stages[-1].name
        props = {"callSite.short": name,
                 "spark.sql.shuffle.partitions": self.props["spark.sql.shuffle.partitions"],
                 "spark.app.id": self.app_id, "spark.app.name": self.name,
                 "spark.rdd.scope": json.dumps({"id": str(job_id), "name": "collect"},
                                               separators=(",", ":")),
                 "spark.rdd.scope.noOverride": "true"}
        self._add(at, {"Event": "SparkListenerJobStart", "Job ID": job_id, "Submission Time": at,
                       "Stage Infos": [self._stage_info(st) for st in stages],
                       "Stage IDs": [st.id for st in stages], "Properties": props})
        t = at + self.rnd.randint(40, 120)
        for st in stages:
            st.submitted = t
            self._add(t, {"Event": "SparkListenerStageSubmitted",
                          "Stage Info": self._stage_info(st, submitted=True),
                          "Properties": props})
            end = self._place(st, t + self.rnd.randint(20, 80))
            st.completed = end + self.rnd.randint(15, 60)
            self._emit_tasks(st, bool(st.parents))
            t = st.completed + self.rnd.randint(20, 90)
        end = stages[-1].completed + self.rnd.randint(2, 20)
        self._add(end, {"Event": "SparkListenerJobEnd", "Job ID": job_id, "Completion Time": end,
                        "Job Result": {"Result": "JobSucceeded"}})
        return end

    def _emit_tasks(self, st, reads_shuffle):
        rnd = self.rnd
        n_exec = len(self.executors)
        used = set(_ALWAYS)
        if any(t["sr_bytes"] for t, *_ in st.placed):
            used |= _SHUFFLE_READ
        if any(t["sw_bytes"] for t, *_ in st.placed):
            used |= _SHUFFLE_WRITE
        if any(t["mem_spill"] or t["disk_spill"] for t, *_ in st.placed):
            used |= {"mem_spill", "disk_spill"}
        if any(t["in_bytes"] for t, *_ in st.placed):
            used |= {"in_bytes", "in_records"}
        if any(t["out_bytes"] for t, *_ in st.placed):
            used |= {"out_bytes", "out_records"}
        names = [(n, k) for n, k in _INTERNAL if k in used]
        ids = {}
        for n, k in names:
            ids[k] = self.next_accum
            self.next_accum += 1
        totals = {k: 0 for _, k in names}
        shuffle_map = any(t["sw_bytes"] for t, *_ in st.placed)
        n_maps = sum(len(p.tasks) for p in st.parents)
        locality = "PROCESS_LOCAL" if reads_shuffle else "NODE_LOCAL"
        for index, (t, tid, launch, finish, eid, host) in enumerate(st.placed):
            info = {"Task ID": tid, "Index": index, "Attempt": 0, "Partition ID": index,
                    "Launch Time": launch, "Executor ID": eid, "Host": host,
                    "Locality": locality, "Speculative": False, "Getting Result Time": 0,
                    "Finish Time": 0, "Failed": False, "Killed": False, "Accumulables": []}
            self._add(launch, {"Event": "SparkListenerTaskStart", "Stage ID": st.id,
                               "Stage Attempt ID": 0, "Task Info": info})
            # Shuffle read split as a cluster sees it: 1/n of the blocks are on this executor.
            sr = t["sr_bytes"]
            local = sr // n_exec if sr else 0
            local_blocks = n_maps // n_exec if sr else 0
            remote_blocks = (n_maps - local_blocks) if sr else 0
            t["sr_local_bytes"], t["sr_remote_bytes"] = local, sr - local
            t["sr_local_blocks"], t["sr_remote_blocks"] = local_blocks, remote_blocks
            t["sr_remote_to_disk"] = 0
            t["sr_fetch_wait"] = rnd.randint(0, 40) if sr else 0
            t["sr_reqs_duration"] = rnd.randint(50, 400) if sr else 0
            t["sw_time"] = int(t["sw_bytes"] * rnd.uniform(2.0, 4.0)) if t["sw_bytes"] else 0
            t["_tid"], t["_index"], t["_launch"], t["_finish"] = tid, index, launch, finish
            t["_eid"], t["_host"] = eid, host
        # TaskEnd events in the order tasks finish: accumulator Values are running totals.
        for t, tid, launch, finish, eid, host in sorted(st.placed, key=lambda p: (p[3], p[1])):
            accs = []
            for n, k in names:
                totals[k] += t[k]
                accs.append({"ID": ids[k], "Name": n, "Update": t[k], "Value": totals[k],
                             "Internal": True, "Count Failed Values": True})
            info = {"Task ID": tid, "Index": t["_index"], "Attempt": 0,
                    "Partition ID": t["_index"], "Launch Time": launch, "Executor ID": eid,
                    "Host": host, "Locality": locality, "Speculative": False,
                    "Getting Result Time": 0, "Finish Time": finish, "Failed": False,
                    "Killed": False, "Accumulables": accs}
            metrics = {
                "Executor Deserialize Time": t["deser"],
                "Executor Deserialize CPU Time": t["deser_cpu"],
                "Executor Run Time": t["run"],
                "Executor CPU Time": t["cpu"],
                "Peak Execution Memory": t["peak_mem"],
                "Result Size": t["result_size"],
                "JVM GC Time": t["gc"],
                "Result Serialization Time": t["ser"],
                "Memory Bytes Spilled": t["mem_spill"],
                "Disk Bytes Spilled": t["disk_spill"],
                "Shuffle Read Metrics": {
                    "Remote Blocks Fetched": t["sr_remote_blocks"],
                    "Local Blocks Fetched": t["sr_local_blocks"],
                    "Fetch Wait Time": t["sr_fetch_wait"],
                    "Remote Bytes Read": t["sr_remote_bytes"],
                    "Remote Bytes Read To Disk": 0,
                    "Local Bytes Read": t["sr_local_bytes"],
                    "Total Records Read": t["sr_records"],
                    "Remote Requests Duration": t["sr_reqs_duration"],
                    "Push Based Shuffle": {
                        "Corrupt Merged Block Chunks": 0, "Merged Fetch Fallback Count": 0,
                        "Merged Remote Blocks Fetched": 0, "Merged Local Blocks Fetched": 0,
                        "Merged Remote Chunks Fetched": 0, "Merged Local Chunks Fetched": 0,
                        "Merged Remote Bytes Read": 0, "Merged Local Bytes Read": 0,
                        "Merged Remote Requests Duration": 0}},
                "Shuffle Write Metrics": {"Shuffle Bytes Written": t["sw_bytes"],
                                          "Shuffle Write Time": t["sw_time"],
                                          "Shuffle Records Written": t["sw_records"]},
                "Input Metrics": {"Bytes Read": t["in_bytes"], "Records Read": t["in_records"]},
                "Output Metrics": {"Bytes Written": t["out_bytes"],
                                   "Records Written": t["out_records"]},
                "Updated Blocks": [],
            }
            execm = {k: 0 for k in _EXECUTOR_METRICS}
            self._add(finish, {
                "Event": "SparkListenerTaskEnd", "Stage ID": st.id, "Stage Attempt ID": 0,
                "Task Type": "ShuffleMapTask" if shuffle_map else "ResultTask",
                "Task End Reason": {"Reason": "Success"}, "Task Info": info,
                "Task Executor Metrics": execm, "Task Metrics": metrics})
        stage_accs = [{"ID": ids[k], "Name": n, "Value": totals[k], "Internal": True,
                       "Count Failed Values": True} for n, k in names]
        self._add(st.completed, {
            "Event": "SparkListenerStageCompleted",
            "Stage Info": self._stage_info(st, submitted=True, completed=True,
                                           accumulables=stage_accs)})

    # ------------------------------------------------------------------ output
    def sql(self, start, end, description):
        """A SQL execution from `start` to `end` (its jobs are run separately, inside it)."""
        eid = getattr(self, "next_sql", 0)
        self.next_sql = eid + 1
        plan = {"nodeName": "Execute InsertIntoHadoopFsRelationCommand", "simpleString": "Execute InsertIntoHadoopFsRelationCommand",
                "children": [], "metadata": {}, "metrics": []}
        self._add(start, {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart",
                          "executionId": eid, "rootExecutionId": eid, "description": description,
                          "details": description, "physicalPlanDescription": "== Physical Plan ==",
                          "sparkPlanInfo": plan, "time": start, "modifiedConfigs": {}, "jobTags": []})
        self._add(end, {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd",
                        "executionId": eid, "time": end, "errorMessage": ""})

    def write(self, path, end=None):
        end = end if end is not None else self.last_time + 1500
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            for ev in self.head:
                f.write(json.dumps(ev, separators=(",", ":")) + "\n")
            for _, _, _, ev in sorted(self.events, key=lambda e: e[:3]):
                f.write(json.dumps(ev, separators=(",", ":")) + "\n")
            f.write(json.dumps({"Event": "SparkListenerApplicationEnd", "Timestamp": end},
                               separators=(",", ":")) + "\n")
        return path


# ---------------------------------------------------------------------------- helpers

def _interp(points, p):
    """Piecewise-linear quantile function through (p, value) points."""
    for (p0, v0), (p1, v1) in zip(points, points[1:]):
        if p <= p1:
            return v0 + (v1 - v0) * (p - p0) / (p1 - p0)
    return points[-1][1]


def _spread(total, n, rnd, jitter=0.03):
    """n integers summing to total, each within ~jitter of total/n."""
    w = [1 + rnd.uniform(-jitter, jitter) for _ in range(n)]
    s = sum(w)
    out = [int(total * x / s) for x in w]
    out[-1] += total - sum(out)
    return out


def _even(n, mean_ms, rnd, jitter=0.06):
    return [int(mean_ms * (1 + rnd.uniform(-jitter, jitter))) for _ in range(n)]


def _scan_stage(app, name, n, dur_ms, in_bytes_each, sw_total, rnd, rec=100):
    sws = _spread(sw_total, n, rnd) if sw_total else [0] * n
    tasks = []
    for d, sw in zip(_even(n, dur_ms, rnd), sws):
        ib = int(in_bytes_each * rnd.uniform(0.97, 1.03))
        tasks.append(task(d, rnd, gc=int(d * 0.02), in_bytes=ib, in_records=ib // rec,
                          sw_bytes=sw, sw_records=sw // rec))
    return Stage(name, tasks, what="WholeStageCodegen (1)")


# ---------------------------------------------------------------------------- the logs

def worked_hot_key(path):
    """The worked example: job 2 h 58 min, stage 2 (the join) 2 h 51 min, one task of 2 h 48 min
    reading 12.4 GiB of shuffle against a median of 135 MiB."""
    rnd = random.Random(1001)
    app = App("nightly_title_hours", executors=10, cores=4, seed=1, executor_memory="8g")
    call = "save at NightlyTitleHours.scala:57"
    rec = 96  # bytes per shuffled row

    # Stage 2 (join on title_id, aggregate): 199 ordinary tasks + the hot one.
    n = 200
    dur_q = [(0, 22.0), (0.25, 34.0), (0.5, 41.0), (0.75, 56.0), (1.0, 78.0)]
    read_q = [(0, 60.0), (0.25, 110.0), (0.5, 135.0), (0.75, 160.0), (1.0, 215.0)]
    gc_q = [(0, 0.4), (0.25, 0.9), (0.5, 1.2), (0.75, 1.6), (1.0, 2.4)]
    ranks = list(range(n - 1))
    durs = [int(_interp(dur_q, r / (n - 2)) * SEC) for r in ranks]
    reads = [int(_interp(read_q, r / (n - 2)) * MiB) for r in ranks]
    gcs = [int(_interp(gc_q, r / (n - 2)) * SEC) for r in ranks]
    # The median of all 200 is the mean of sorted[99] and sorted[100]: make both exact.
    for r in (99, 100):
        durs[r], reads[r] = 41 * SEC, 135 * MiB
    hot_read = int(12.4 * GiB)
    hot = task(2 * 3600 * SEC + 48 * MIN + 25 * SEC, rnd, gc=4 * MIN, cpu_frac=0.55,
               sr_bytes=hot_read, sr_records=hot_read // rec, sw_bytes=9 * MiB,
               sw_records=9 * MiB // 40, mem_spill=int(58 * GiB), disk_spill=24 * GiB,
               peak_mem=int(1.05 * GiB))
    order = list(range(n - 1))
    rnd.shuffle(order)
    normal = []
    for r in order:
        sw = int(reads[r] * 0.034)
        normal.append(task(durs[r], rnd, gc=gcs[r], sr_bytes=reads[r],
                           sr_records=reads[r] // rec, sw_bytes=sw, sw_records=sw // 40))
    sr_total = hot_read + sum(reads)
    sw2_total = hot["sw_bytes"] + sum(t["sw_bytes"] for t in normal)

    # Stage 0 (scan viewing_events: 400 tasks, 4 min on 40 slots) and stage 1 (scan
    # title_catalog: 8 tasks, 20 s) write exactly what stage 2 reads.
    sw1_total = int(1.2 * GiB)
    s0 = _scan_stage(app, call, 400, 23_300, 118 * MiB, sr_total - sw1_total, rnd, rec)
    s1 = _scan_stage(app, call, 8, 19_000, 170 * MiB, sw1_total, rnd, rec)
    s1.what = "WholeStageCodegen (3)"

    # Put the hot task where it starts ~2 min 50 s into the stage (5th wave on 40 slots), so
    # the stage lasts 2 h 51 min. Try each position on a copy of the scheduler's rng.
    best = None
    for pos in range(n):
        trial = normal[:pos] + [hot] + normal[pos:]
        state = app.rnd.getstate()
        st = Stage(call, trial)
        end = app._place(st, 0)
        app.rnd.setstate(state)
        app.next_task -= n
        hot_launch = next(l for (t, _, l, *_r) in st.placed if t is hot)
        score = abs(hot_launch - 170 * SEC)
        if best is None or score < best[0]:
            best = (score, pos)
    tasks2 = normal[:best[1]] + [hot] + normal[best[1]:]
    s2 = Stage(call, tasks2, parents=[s0, s1], what="WholeStageCodegen (6)")

    # Stage 3 (write output: 200 tasks, 3 min on 40 slots) reads stage 2's 0.9 GiB.
    s3_reads = _spread(sw2_total, 200, rnd, 0.08)
    s3 = Stage(call, [task(d, rnd, gc=int(d * 0.015), sr_bytes=r, sr_records=r // 40,
                           out_bytes=int(r * 0.7), out_records=r // 40)
                      for d, r in zip(_even(200, 35_000, rnd), s3_reads)],
               parents=[s2], what="WholeStageCodegen (7)")
    end = app.run_job([s0, s1, s2, s3], app.ready + 4 * SEC, name=call)
    return app.write(path, end + 2 * SEC)


def worked_tiny_tasks(path):
    """4,000 tasks of ~900 ms run time and ~2.4 s scheduler delay each on 160 slots."""
    rnd = random.Random(1002)
    app = App("nightly_copy", executors=40, cores=4, seed=2,
              props={"spark.sql.shuffle.partitions": "200"})
    call = "parquet at NightlyCopy.scala:31"
    tasks = []
    for _ in range(4000):
        run = int(rnd.gauss(900, 60))
        delay = int(rnd.gauss(2400, 150))
        deser, ser = rnd.randint(15, 45), rnd.randint(0, 3)
        ib = int(16 * MiB * rnd.uniform(0.9, 1.1))
        tasks.append(task(run + delay + deser + ser, rnd, sched_delay=delay, deser=deser,
                          ser=ser, gc=rnd.randint(0, 30), cpu_frac=0.7, in_bytes=ib,
                          in_records=ib // 120, out_bytes=int(ib * 0.95),
                          out_records=ib // 120))
    st = Stage(call, tasks, what="WriteFiles")
    end = app.run_job([st], app.ready + 3 * SEC, name=call)
    return app.write(path, end + 2 * SEC)


def too_few_partitions(path):
    """8 shuffle-reading tasks of ~700 MiB each (spark.sql.shuffle.partitions 8), 7 spill."""
    rnd = random.Random(1003)
    app = App("daily_rollup", executors=20, cores=4, seed=3,
              props={"spark.sql.shuffle.partitions": "8"})
    call = "save at DailyRollup.scala:44"
    reads = _spread(8 * 700 * MiB, 8, rnd, 0.03)
    s0 = _scan_stage(app, call, 80, 31_000, 96 * MiB, sum(reads), rnd, 110)
    spill_none = rnd.randrange(8)
    tasks = []
    for i, (d, r) in enumerate(zip(_even(8, 9 * MIN, rnd, 0.03), reads)):
        spills = i != spill_none
        tasks.append(task(d, rnd, gc=int(d * 0.06), sr_bytes=r, sr_records=r // 110,
                          sw_bytes=0, out_bytes=int(r * 0.05), out_records=r // 2200,
                          mem_spill=int(r * 2.3) if spills else 0,
                          disk_spill=int(r * 0.85) if spills else 0,
                          peak_mem=int(1.9 * GiB)))
    s1 = Stage(call, tasks, parents=[s0], what="WholeStageCodegen (2)")
    end = app.run_job([s0, s1], app.ready + 5 * SEC, name=call)
    return app.write(path, end + 2 * SEC)


def memory_pressure(path):
    """200 even tasks each reading ~100 MiB, 85% spilling modestly, GC ~25% of run time."""
    rnd = random.Random(1004)
    app = App("sessionize", executors=50, cores=4, seed=4, executor_memory="2g",
              props={"spark.sql.shuffle.partitions": "200", "spark.executor.memory": "2g"})
    call = "save at Sessionize.scala:73"
    reads = _spread(200 * 100 * MiB, 200, rnd, 0.05)
    s0 = _scan_stage(app, call, 200, 28_000, 90 * MiB, sum(reads), rnd, 80)
    spillers = set(rnd.sample(range(200), 170))
    tasks = []
    for i, (d, r) in enumerate(zip(_even(200, 80 * SEC, rnd, 0.06), reads)):
        sp = i in spillers
        t = task(d, rnd, sr_bytes=r, sr_records=r // 80, sw_bytes=0,
                 out_bytes=int(r * 0.3), out_records=r // 240,
                 mem_spill=int(r * rnd.uniform(2.2, 2.8)) if sp else 0,
                 disk_spill=int(r * rnd.uniform(0.7, 0.9)) if sp else 0,
                 peak_mem=int(310 * MiB * rnd.uniform(0.95, 1.0)), cpu_frac=0.6)
        t["gc"] = int(t["run"] * rnd.uniform(0.23, 0.27))
        tasks.append(t)
    s1 = Stage(call, tasks, parents=[s0], what="WholeStageCodegen (2)")
    end = app.run_job([s0, s1], app.ready + 5 * SEC, name=call)
    return app.write(path, end + 2 * SEC)


def planning_in_query(path):
    """One SQL query (an INSERT) that starts 1 s after the executors are up and whose first
    job is submitted 12 minutes later: Spark planning (listing many files); then 2 minutes of
    tasks."""
    rnd = random.Random(1006)
    app = App("partitioned_insert", executors=10, cores=4, seed=6)
    call = "save at PartitionedInsert.scala:40"
    q0 = app.ready + 1 * SEC
    a = _scan_stage(app, call, 40, 50_000, 64 * MiB, 0, rnd)
    end = app.run_job([a], q0 + 12 * MIN, name=call)
    app.sql(q0, end + 300, "INSERT INTO sales_by_day SELECT ...")
    return app.write(path)


def short_gc(path):
    """A 15 s example job whose one stage lasts 2.4 s, no spill, GC 16% of its run time (about
    1.5 s of GC over 40 tasks)."""
    rnd = random.Random(1007)
    app = App("spark_pi", executors=10, cores=4, seed=7)
    call = "reduce at SparkPi.scala:38"
    tasks = []
    for d in _even(40, 2_200, rnd):
        t = task(d, rnd)
        t["gc"] = int(t["run"] * 0.16)
        tasks.append(t)
    end = app.run_job([Stage(call, tasks)], app.ready + 9 * SEC, name=call)
    return app.write(path, end + 2 * SEC)


def planning_gap(path):
    """Two short jobs with 20 minutes between them in which no task runs and no job or SQL
    query is open: the driver's own time (its code between the jobs), not planning."""
    rnd = random.Random(1005)
    app = App("catalog_refresh", executors=10, cores=4, seed=5)
    call0 = "count at CatalogRefresh.scala:22"
    call1 = "save at CatalogRefresh.scala:61"
    a = _scan_stage(app, call0, 40, 18_000, 64 * MiB, 0, rnd)
    end0 = app.run_job([a], app.ready + 3 * SEC, name=call0)
    b0 = _scan_stage(app, call1, 40, 21_000, 64 * MiB, 40 * 12 * MiB, rnd)
    reads = _spread(40 * 12 * MiB, 200, rnd, 0.05)
    b1 = Stage(call1, [task(d, rnd, sr_bytes=r, sr_records=r // 100, out_bytes=r // 2,
                            out_records=r // 100)
                       for d, r in zip(_even(200, 1_800, rnd), reads)],
               parents=[b0], what="WholeStageCodegen (2)")
    app.run_job([b0, b1], end0 + 20 * MIN, name=call1)
    return app.write(path)


def input_growth(baseline_path, current_path):
    """The same job twice; the current run's input stage reads 3x the input (3x the tasks on
    the same 100 slots, so ~3x the time); tasks even."""
    out = []
    for path, factor, start, seed in ((baseline_path, 1, BASE_TS, 6),
                                      (current_path, 3, BASE_TS + 24 * 3600 * SEC, 7)):
        rnd = random.Random(1006 + factor)
        app = App("daily_views", executors=25, cores=4, seed=seed, start=start,
                  app_no=6 + factor)
        call = "save at DailyViews.scala:38"
        n0 = 100 * factor
        s0 = _scan_stage(app, call, n0, 40_000, 128 * MiB, n0 * 6 * MiB, rnd, 100)
        reads = _spread(n0 * 6 * MiB, 200, rnd, 0.05)
        s1 = Stage(call, [task(d, rnd, sr_bytes=r, sr_records=r // 100, out_bytes=r // 4,
                               out_records=r // 400)
                          for d, r in zip(_even(200, 1_500 * (1 + factor) // 2, rnd), reads)],
                   parents=[s0], what="WholeStageCodegen (2)")
        end = app.run_job([s0, s1], app.ready + 4 * SEC, name=call)
        out.append(app.write(path, end + 2 * SEC))
    return tuple(out)


def truncated(path, src):
    """A copy of the log at src cut in the middle of a line about 60% through the file."""
    with open(src, "rb") as f:
        data = f.read()
    at = int(len(data) * 0.6)
    start = data.rfind(b"\n", 0, at) + 1
    stop = data.find(b"\n", at)
    stop = len(data) if stop < 0 else stop
    cut = start + max(1, (stop - start) // 2)
    with open(path, "wb") as f:
        f.write(data[:cut])
    return path


def not_a_log(path):
    """A small CSV file: not an event log."""
    with open(path, "w") as f:
        f.write("title_id,name,views\n")
        for i in range(20):
            f.write(f"tt{i:07d},Title number {i},{(i * 7919) % 1000}\n")
    return path


def main(argv):
    if len(argv) != 2:
        print("usage: python tests/py/synthlogs.py OUT_DIR", file=sys.stderr)
        return 2
    d = os.path.abspath(argv[1])
    os.makedirs(d, exist_ok=True)
    p = {}
    for fn in (worked_hot_key, worked_tiny_tasks, too_few_partitions, memory_pressure,
               planning_gap, planning_in_query, short_gc):
        p[fn.__name__] = fn(os.path.join(d, fn.__name__ + ".json"))
    p["input_growth_baseline"], p["input_growth_current"] = input_growth(
        os.path.join(d, "input_growth_baseline.json"), os.path.join(d, "input_growth_current.json"))
    p["truncated"] = truncated(os.path.join(d, "truncated.json"), p["worked_hot_key"])
    p["not_a_log"] = not_a_log(os.path.join(d, "not_a_log.csv"))
    print(json.dumps(p))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
