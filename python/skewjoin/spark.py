"""skewjoin from a live SparkSession (local, on a cluster, or over Spark Connect).

    from skewjoin import spark as sj
    advice = sj.advise(events.join(titles, "title_id", "left"))   # a DataFrame, or SQL text
    print(advice)                        # each join's hot keys, fix, tasks before and after
    check = sj.verify(sql, advice.rewrite.sql)                    # both on this session
    joined = sj.skew_join(events, titles, "title_id", "left")     # the join, hot keys moved

`skew_join` (python/skewjoin/_skew_join.py) is `DataFrame.join` with the fix built in: the same
rows, the hot keys out of the shuffle, and `skew_join_plan` gives the plan and the code it ran.

`advise` reads the query's physical plan from Spark's formatted EXPLAIN (the one text that
classic sessions and Spark Connect both give), finds each equi-join whose two sides are scans
of files (a path or a catalog table's location, perhaps through filters, projections, sorts and
exchanges), and plans it with `skewjoin plan` under the session's own settings (shuffle
partitions, broadcast threshold, AQE and its sizes, the Spark version). For SQL text it also
rewrites the query, its tables found in the session's catalog. A join it cannot plan (a side
that is itself a join or an aggregate, a key that is an expression, files it cannot reach) is
listed with the reason.
"""

from __future__ import annotations

import contextlib
import html as _html
import io
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import _api
from ._results import PlanReport, RewriteReport
from ._run import SkewjoinError

# The settings the predictions read (src/settings.rs), taken from the session when it has them.
SETTINGS = [
    "spark.sql.shuffle.partitions",
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.adaptive.enabled",
    "spark.sql.adaptive.coalescePartitions.enabled",
    "spark.sql.adaptive.coalescePartitions.parallelismFirst",
    "spark.sql.adaptive.coalescePartitions.minPartitionSize",
    "spark.sql.adaptive.coalescePartitions.initialPartitionNum",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes",
    "spark.sql.adaptive.skewJoin.enabled",
    "spark.sql.adaptive.skewJoin.skewedPartitionFactor",
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes",
    "spark.sql.adaptive.autoBroadcastJoinThreshold",
    "spark.sql.files.maxPartitionBytes",
    "spark.sql.files.openCostInBytes",
    "spark.sql.files.minPartitionNum",
    "spark.default.parallelism",
    "spark.executor.instances",
    "spark.executor.cores",
    "spark.master",
]

JOINS = {"SortMergeJoin", "ShuffledHashJoin", "BroadcastHashJoin"}
HOW = {"Inner": "inner", "LeftOuter": "left", "RightOuter": "right", "FullOuter": "full", "LeftSemi": "semi", "LeftAnti": "anti"}
# Operators between a join and its scan that keep the scan's rows and names as they are (a
# Filter drops rows: its condition is named in the join's notes).
PASS = {"Sort", "Exchange", "Filter", "Project", "ColumnarToRow", "InputAdapter", "WholeStageCodegen", "BroadcastExchange",
        "AQEShuffleRead", "ShuffleQueryStage", "BroadcastQueryStage", "CustomShuffleReader", "RowToColumnar"}


@dataclass
class Node:
    """One operator of a formatted EXPLAIN: its name, the rest of its tree line, its fields
    (`Output`, `Location`, `Left keys`, ...) and its children's ids."""

    id: int
    name: str
    args: str = ""
    fields: Dict[str, str] = field(default_factory=dict)
    children: List[int] = field(default_factory=list)


def parse_explain(text: str) -> Dict[int, Node]:
    """The operators of Spark's `explain(mode="formatted")` text, by id."""
    nodes: Dict[int, Node] = {}
    tree, _, details = text.partition("\n\n")
    stack: List[Tuple[int, int]] = []  # (depth, id)
    for line in tree.splitlines():
        if line.startswith("=="):
            continue
        depth = len(line) - len(line.lstrip(" :|+-"))
        m = re.match(r"^(?:\* )?(\S+)\s*(.*?)\s*\((\d+)\)\s*$", line[depth:])
        if not m:
            continue
        node = Node(int(m.group(3)), m.group(1), m.group(2))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            nodes[stack[-1][1]].children.append(node.id)
        nodes.setdefault(node.id, node)
        stack.append((depth, node.id))
    for block in re.split(r"\n(?=\(\d+\) )", "\n" + details):
        m = re.match(r"\s*\((\d+)\) ", block)
        if not m or int(m.group(1)) not in nodes:
            continue
        fields = nodes[int(m.group(1))].fields
        for line in block.splitlines()[1:]:
            key, sep, value = line.partition(":")
            if sep:
                fields[re.sub(r"\s*\[\d+\]$", "", key.strip())] = value.strip()
    return nodes


@dataclass
class Scan:
    """A side's scan: where its files are, the attributes it gives, and what Spark filters."""

    paths: List[str]
    output: List[str]
    filters: List[str]
    truncated: bool = False


def _attrs(listing: str) -> List[str]:
    """`[a#1, b#2L]` as its entries, at the top level of brackets and parentheses."""
    inner = listing.strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    out, depth, cur = [], 0, ""
    for ch in inner:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _bare(attr: str) -> str:
    """`title_id#2` (or `event_id#0L`) without its expression id."""
    return re.sub(r"#\d+L?$", "", attr)


def _location(value: str) -> Tuple[List[str], bool]:
    """The paths of a scan's `Location: InMemoryFileIndex [file:/a, ...]`, and whether Spark cut
    the list short."""
    m = re.search(r"\[(.*)\]\s*$", value)
    if not m:
        return [], False
    paths, truncated = [], False
    for p in _attrs("[" + m.group(1) + "]"):
        if p.startswith("...") or "entries" in p:
            truncated = True
            continue
        paths.append(_local(p))
    return paths, truncated


def _local(path: str) -> str:
    """A path Spark wrote as the tool reads it: `file:/x` is `/x`, `s3a://` is `s3://`."""
    if path.startswith("file:"):
        return re.sub(r"^file:(//)?", "", path)
    if path.startswith("s3a://") or path.startswith("s3n://"):
        return "s3://" + path[6:]
    return path


def _side(nodes: Dict[int, Node], nid: int, key_attrs: List[str]) -> Tuple[Optional[Scan], List[str], Optional[str]]:
    """Follows one side of a join down to its scan: the scan, the key columns as the scan names
    them, and a reason when the side is not a scan of files."""
    names = {a: a for a in key_attrs}
    filters: List[str] = []
    node = nodes[nid]
    while True:
        if node.name == "Scan" or node.name.startswith("Scan") or node.name == "FileScan":
            break
        if node.name not in PASS:
            return None, [], f"its {_bare(key_attrs[0]) if key_attrs else 'side'} side is a {node.name}, not a table scan"
        if node.name == "Project":
            for e in _attrs(node.fields.get("Output", "")):
                m = re.match(r"^(\S+#\d+L?) AS (\S+#\d+L?)$", e)
                if m:
                    for k, v in names.items():
                        if v == m.group(2):
                            names[k] = m.group(1)
        if node.name == "Filter":
            cond = node.fields.get("Condition", "")
            # Spark's own IS NOT NULL on the keys drops no row the join would keep.
            if re.sub(r"isnotnull\([^()]*\)|AND|[()\s]", "", cond):
                filters.append(cond)
        if len(node.children) != 1:
            return None, [], f"a {node.name} with {len(node.children)} inputs stands between the join and its table"
        node = nodes[node.children[0]]
    output = _attrs(node.fields.get("Output", ""))
    loc = node.fields.get("Location")
    if not loc:
        return None, [], f"its scan ({node.name} {node.args}) reads no files skewjoin can open"
    paths, truncated = _location(loc)
    for f in ("PartitionFilters",):
        v = node.fields.get(f, "[]")
        if v not in ("[]", ""):
            filters.append(f"{f}: {v}")
    cols = []
    for k in key_attrs:
        if names[k] not in output:
            return None, [], f"the key {k} is computed, not a column of the table"
        cols.append(_bare(names[k]))
    return Scan(paths, output, filters, truncated), cols, None


@dataclass
class AdvisedJoin:
    """One join of the query: where it is in the plan, its tables and keys, and its plan (or
    the reason it has none)."""

    operator: str
    how: str
    left: Optional[str] = None
    right: Optional[str] = None
    on: List[Tuple[str, str]] = field(default_factory=list)
    plan: Optional[PlanReport] = None
    reason: Optional[str] = None
    notes: List[str] = field(default_factory=list)


class Advice:
    """What `advise` found: each join (`joins`), its plan, and for SQL the rewrite."""

    def __init__(self, joins: List[AdvisedJoin], rewrite: Optional[RewriteReport], conf: Dict[str, str], spark_version: str):
        self.joins = joins
        self.rewrite = rewrite
        self.conf = conf
        self.spark_version = spark_version

    @property
    def text(self) -> str:
        out = [f"skewjoin advise: {len(self.joins)} join(s) in the plan, Spark {self.spark_version}"]
        for j in self.joins:
            out.append("")
            out.append(f"== {j.operator}")
            out += [f"note: {n}" for n in j.notes]
            out.append(j.plan.text.rstrip() if j.plan else f"not planned: {j.reason}")
        if self.rewrite is not None:
            out += ["", "== the query, rewritten", self.rewrite.text.rstrip()]
        return "\n".join(out) + "\n"

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        planned = sum(1 for j in self.joins if j.plan)
        return f"<skewjoin.spark.Advice: {len(self.joins)} join(s), {planned} planned>"

    def _repr_html_(self) -> str:
        parts = []
        for j in self.joins:
            parts.append(f"<h3>{_html.escape(j.operator)}</h3>")
            parts += [f"<p>note: {_html.escape(n)}</p>" for n in j.notes]
            if j.plan:
                parts.append(j.plan._repr_html_())
            else:
                parts.append(f"<p>not planned: {_html.escape(j.reason or '')}</p>")
        if self.rewrite is not None:
            parts.append(f"<h3>the query, rewritten</h3><pre>{_html.escape(self.rewrite.text)}</pre>")
        return "\n".join(parts)


def session_conf(spark) -> Dict[str, str]:
    """The session's values of the settings the predictions read."""
    conf = {}
    for key in SETTINGS:
        try:
            value = spark.conf.get(key, None)
        except Exception:  # noqa: BLE001 - a key the session (or a Connect server) will not give
            value = None
        if value is not None and value != "":
            conf[key] = str(value)
    return conf


def session_size(spark) -> Dict[str, Any]:
    """The cluster the session runs on, as `--cores` and where it was read (`--cores-from`):
    its default parallelism and executors (a classic session), or the parallelism its Spark
    Connect server was given; nothing where the session does not say."""
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext here
        sc = None
    if sc is not None:
        try:
            # The JVM's block managers: the executors and, beside them on a cluster, the driver.
            managers = sc._jsc.sc().getExecutorMemoryStatus().size()
            executors = max(managers - (0 if sc.master.startswith("local") else 1), 1)
            return {"cores": int(sc.defaultParallelism),
                    "cores_from": f"the session: {sc.master}, default parallelism {sc.defaultParallelism}, {executors} executor{'s' if executors > 1 else ''}"}
        except Exception:  # noqa: BLE001 - a stopped context
            return {}
    try:
        n = spark.conf.get("spark.default.parallelism", None)
    except Exception:  # noqa: BLE001
        n = None
    return {"cores": int(n), "cores_from": "the Spark Connect server's spark.default.parallelism"} if n else {}


def spark_line(version: str) -> str:
    """`--spark-version` for a Spark version: 3.5 or 4.x."""
    return "3.5" if version.startswith("3.") else "4.x"


def explain(df) -> str:
    """The DataFrame's formatted physical plan (classic sessions and Spark Connect print it)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        df.explain(mode="formatted")
    return buf.getvalue()


def find_joins(text: str) -> List[Tuple[Node, Any]]:
    """Each equi-join of the plan, with its two sides followed to their scans."""
    nodes = parse_explain(text)
    found = []
    for n in sorted(nodes.values(), key=lambda n: n.id):
        if n.name not in JOINS:
            continue
        lk, rk = _attrs(n.fields.get("Left keys", "")), _attrs(n.fields.get("Right keys", ""))
        how = HOW.get(n.fields.get("Join type", ""))
        sides = [_side(nodes, c, keys) for c, keys in zip(n.children, (lk, rk))] if len(n.children) == 2 else []
        found.append((n, how, sides, n.fields.get("Join condition", "None")))
    return found


def advise(query, spark=None, **options: Any) -> Advice:
    """Plans each join of `query` (a DataFrame, or SQL text run on `spark`) under the session's
    settings; rewrites SQL text. `options` are `skewjoin plan`'s (`min_gain`, `sample`, ...)."""
    if isinstance(query, str):
        spark = spark or _active()
        df = spark.sql(query)
    else:
        df = query
        spark = spark or df.sparkSession
    conf = session_conf(spark)
    version = spark.version
    settings = {"conf": conf, "spark_version": spark_line(version), **session_size(spark), **options}
    fallback = {} if "engine" in options else on_spark(spark)
    joins = []
    for node, how, sides, condition in find_joins(explain(df)):
        joins.append(_plan_join(node, how, sides, condition, settings, fallback))
    rewritten = None
    if isinstance(query, str):
        tables = catalog_tables(spark, query)
        if fallback and not all(reachable(p) for p in tables.values()):
            settings.update(fallback)
            tables = {}  # the catalog's own names, read by that Spark
        rewritten = _api.rewrite(query, tables=tables, **settings)
    return Advice(joins, rewritten, conf, version)


def _plan_join(node: Node, how: Optional[str], sides, condition: str, settings: Dict[str, Any], fallback: Dict[str, Any]) -> AdvisedJoin:
    j = AdvisedJoin(operator=f"{node.name} {node.args} ({node.id})".replace("  ", " "), how=how or "?")
    if how is None:
        j.reason = f"join type {node.fields.get('Join type')} is not one skewjoin plans"
        return j
    if len(sides) != 2:
        j.reason = "the join has not two inputs"
        return j
    reasons = [r for _, _, r in sides if r]
    if reasons:
        j.reason = "; ".join(reasons)
        return j
    (ls, lcols, _), (rs, rcols, _) = sides
    if not ls.paths or not rs.paths or ls.truncated or rs.truncated:
        j.reason = "Spark lists only some of a side's files: plan it with skewjoin plan on the table's folder"
        return j
    if condition not in ("None", ""):
        j.notes.append(f"the join also has a condition ({condition}): the plan counts the equality keys only")
    for side, scan in (("left", ls), ("right", rs)):
        for f in scan.filters:
            j.notes.append(f"Spark filters the {side} side before the join ({f}): the counts are of the whole table")
    j.left, j.right = _one(ls.paths), _one(rs.paths)
    j.on = list(zip(lcols, rcols))
    if fallback and not all(reachable(p) for p in (j.left, j.right)):
        j.notes.append("the files are not reachable from here: counted on the session's Spark")
        settings = {**settings, **fallback}
    try:
        j.plan = _api.plan(j.left, j.right, on=[f"{a}={b}" for a, b in j.on], how=how, **settings)
    except SkewjoinError as e:
        j.reason = e.message
    return j


def reachable(path: str) -> bool:
    """Whether this process can read `path`: an object store's URL (with this machine's
    credentials), or a path that exists here."""
    if re.match(r"^(s3|gs|az|abfss|azure)://", path):
        return True
    return os.path.exists(path)


def on_spark(spark) -> Dict[str, Any]:
    """The options that count on the session's own Spark: its Spark Connect server, or its
    master through this Python's pyspark."""
    import sys

    # The counting runs in a pyspark of its own: this Python's, which has pyspark.
    if _connect_host(spark) is not None:
        builder = getattr(spark.client, "_builder", None)
        endpoint = getattr(builder, "endpoint", None) or f"{spark.client.host}:15002"
        return {"engine": "spark", "remote": f"sc://{endpoint}", "python": sys.executable}
    master = spark.conf.get("spark.master", None) or "local[*]"
    return {"engine": "spark", "master": master, "python": sys.executable}


def _one(paths: List[str]) -> str:
    # Several roots (a table over listed files): the tool takes a glob or a folder, so their
    # common folder stands for them when they share one.
    if len(paths) == 1:
        return paths[0]
    return os.path.commonpath(paths)


def catalog_tables(spark, sql: str) -> Dict[str, str]:
    """The tables and views the SQL names, as the files each reads (its plan a lone scan)."""
    out = {}
    for t in spark.catalog.listTables():
        name = t.name
        if not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", sql, flags=re.IGNORECASE):
            continue
        try:
            nodes = parse_explain(explain(spark.table(name)))
        except Exception:  # noqa: BLE001 - a view that cannot be planned alone
            continue
        scans = [n for n in nodes.values() if n.fields.get("Location")]
        others = [n for n in nodes.values() if not n.fields.get("Location") and n.name not in PASS | {"AdaptiveSparkPlan"}]
        if len(scans) == 1 and not others:
            paths, truncated = _location(scans[0].fields["Location"])
            if paths and not truncated:
                out[name] = _one(paths)
    return out


def _active():
    from pyspark.sql import SparkSession

    s = SparkSession.getActiveSession()
    if s is None:
        raise SkewjoinError("no active SparkSession: pass spark=", 2)
    return s


@dataclass
class SparkRun:
    """One query's run on the session: its wall time (of the median timed run), rows, and with
    the UI its stages; with several runs, every timed run's wall time and the warm-up's."""

    wall_ms: int
    rows: int
    max_task_records: Optional[int]
    stages: list
    runs_ms: list
    warmup_ms: Optional[int]


@dataclass
class SparkCheck:
    """`verify` on a live session: the same rows (as multisets), and both runs."""

    identical: bool
    before: SparkRun
    after: SparkRun
    only_in_original: list
    only_in_rewritten: list
    notes: list

    def __bool__(self) -> bool:
        return self.identical

    def __str__(self) -> str:
        def line(label, r):
            task = f", largest task {r.max_task_records:,} records" if r.max_task_records is not None else ""
            return f"  {label}: {r.rows:,} rows in {r.wall_ms:,} ms{task}"

        head = "same rows" if self.identical else f"DIFFERENT rows: {len(self.only_in_original)} only in the original, {len(self.only_in_rewritten)} only in the rewrite (up to 5 each)"
        return "\n".join([f"skewjoin.spark.verify: {head}", line("original ", self.before), line("rewritten", self.after), *self.notes]) + "\n"


def verify(original, rewritten, spark=None, digits: int = 12, runs: int = 1) -> SparkCheck:
    """Runs both queries (SQL text or DataFrames) on the session and compares their rows as
    multisets (floats to `digits` significant digits), with each run's largest shuffle task
    read from the session's UI when it has one. With `runs` > 1 each query runs that many
    times, alternating, the original first: the first gives the rows and warms up, the others
    are timed (the CLI's `verify --runs`)."""
    from . import _spark_driver as driver

    if spark is None:
        spark = original.sparkSession if not isinstance(original, str) else _active()
    remote = _connect_host(spark)
    ui = driver.connect_ui(spark, f"sc://{remote}") if remote is not None else None
    before, after, identical, only0, only1, notes = driver.compare(spark, original, rewritten, digits, runs, ui)
    return SparkCheck(identical, _spark_run(before), _spark_run(after), only0, only1, notes)


def _spark_run(r: dict) -> SparkRun:
    stages = r.get("stages", [])
    top = max((s["max_task_records"] for s in stages), default=None)
    return SparkRun(r["wall_ms"], r["rows"], top, stages, r.get("runs_ms", [r["wall_ms"]]), r.get("warmup_ms"))


def _connect_host(spark) -> Optional[str]:
    """The Spark Connect server's host, or None for a classic session."""
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        return None
    return spark.client.host


# The drop-in join (python/skewjoin/_skew_join.py), here beside advise and verify.
from ._skew_join import JoinReport, SkewJoin, skew_join, skew_join_plan  # noqa: E402,F401
