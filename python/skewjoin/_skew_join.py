"""`skew_join(left, right, on, how)`: `left.join(right, on, how)` with its hot keys out of the
shuffle, as a DataFrame with the same rows, on a classic session or over Spark Connect.

The steps:
1. The plain join is planned by Spark (`left.join(right, on, how)`), and its formatted EXPLAIN
   gives the join's keys (for an `on` that is a Column) and each side's scan, as `advise` reads
   them.
2. The keys are counted: by the binary on the files the scans read, when both sides are whole
   scans of files reachable from here; otherwise on the session's own Spark, by one
   aggregation per side (`_session_counts`), handed to the binary as `plan --counts`.
3. The binary plans the join under the session's settings (shuffle partitions, broadcast
   threshold, AQE, its cores) and writes the fix as PySpark (`--emit pyspark`): a function of
   two DataFrames made of filters, unions, broadcast hints and a salt hashed from the rows'
   other columns.
4. That code runs over the two DataFrames. What the report shows is what ran: paste it into
   the job to keep the fix without the tool. Where no fix pays, the plain join comes back.

`skew_join` returns the DataFrame alone (a drop-in for `left.join`); `skew_join_plan` returns
it with the report, as `(df, report)`. The report is a value of its own, not an attribute of the
DataFrame: Spark Connect's DataFrames take no new attributes, and a registry keyed by the
DataFrame would be hidden state.
"""

from __future__ import annotations

import os
import re
import tempfile
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from . import _api
from ._results import PlanReport
from ._run import SkewjoinError

# Spark's spellings of a join type, as skewjoin names it (None: a cross join, no keys).
HOWS = {
    "inner": "inner", "cross": None,
    "outer": "full", "full": "full", "fullouter": "full", "full_outer": "full",
    "left": "left", "leftouter": "left", "left_outer": "left",
    "right": "right", "rightouter": "right", "right_outer": "right",
    "semi": "semi", "leftsemi": "semi", "left_semi": "semi",
    "anti": "anti", "leftanti": "anti", "left_anti": "anti",
}


@dataclass
class JoinReport:
    """What `skew_join` did: the join (`how`, and each key as a (left, right) column pair),
    whether it was rewritten and why, where the keys were counted (`"files"`: here, from the
    files the scans read; `"spark"`: on the session's Spark; None: not counted), the plan, and
    the PySpark that built the DataFrame."""

    how: str
    on: List[Tuple[str, str]]
    rewritten: bool
    reason: str
    counted: Optional[str] = None
    plan: Optional[PlanReport] = None
    code: Optional[str] = None
    notes: List[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        head = f"skew_join: {self.how} join on {', '.join(a if a == b else f'{a} = {b}' for a, b in self.on) or 'no keys'}: "
        head += ("rewritten" if self.rewritten else "the plain join") + f" ({self.reason})"
        out = [head] + [f"note: {n}" for n in self.notes]
        if self.plan is not None:
            out += ["", self.plan.text.rstrip()]
        return "\n".join(out) + "\n"

    def __str__(self) -> str:
        return self.text


class SkewJoin(NamedTuple):
    """`skew_join_plan`'s result: the DataFrame and what was done."""

    df: Any
    report: JoinReport


def skew_join(left, right, on=None, how: Optional[str] = None, **options: Any):
    """`left.join(right, on, how)`, the same rows, with the hot keys out of the shuffle. `on`
    and `how` are `DataFrame.join`'s: a column name, a list of names, or a Column condition of
    key equalities; inner, left, right, full (outer), left_semi, left_anti and their other
    spellings. `options` are `skewjoin plan`'s (`min_gain="off"`, `hot_factor=3`, ...)."""
    return skew_join_plan(left, right, on, how, **options).df


def skew_join_plan(left, right, on=None, how: Optional[str] = None, **options: Any) -> SkewJoin:
    """`skew_join`, and the report: `df, report = skew_join_plan(left, right, "k", "left")`."""
    from .spark import explain, find_joins

    name = _how(how)
    pairs, using = _using_pairs(on, left, right)
    try:
        plain = left.join(right, on, how) if how is not None else left.join(right, on)
    except Exception as e:  # noqa: BLE001 - Spark's analysis error, as one line
        raise SkewjoinError(f"skew_join: Spark cannot join them: {_one_line(e)}", 2) from None
    if name is None or on is None:
        return SkewJoin(plain, JoinReport(name or "cross", [], False, "a cross join has no keys to shuffle on"))
    try:
        joins = find_joins(explain(plain))
    except Exception as e:  # noqa: BLE001 - Spark's analysis error, as one line
        raise SkewjoinError(f"skew_join: Spark cannot plan the join: {_one_line(e)}", 2) from None
    if not joins:
        return SkewJoin(plain, JoinReport(name, pairs, False, "Spark plans no equi-join for this condition"))
    node, _, sides, condition = max(joins, key=lambda j: j[0].id)
    if not using:
        pairs = _condition_pairs(node, left, right)
        if pairs is None:
            return SkewJoin(plain, JoinReport(name, [], False, "a key of the condition is an expression, not a column of each side"))
    report = JoinReport(name, pairs, False, "")
    if condition not in ("None", ""):
        report.reason = f"the condition has more than key equalities ({condition}): left to Spark"
        return SkewJoin(plain, report)
    plan = _plan(left, right, name, pairs, using, sides, report, options)
    report.plan = plan
    report.code = plan.code.text if plan.code else None
    report.reason = _decision(plan)
    if plan.code is None or not plan.code.rewrites:
        return SkewJoin(plain, report)
    report.rewritten = True
    return SkewJoin(_run_code(plan.code.text, left, right), report)


def _decision(plan: PlanReport) -> str:
    """The plan's decision: its code, with the predicted times where it has them."""
    d = plan.decision
    if d is None:
        return "nothing hot to move" if not plan.hot_keys else "no decision"
    if d.before_seconds is None or d.after_seconds is None:
        return d.code
    return f"{d.code}: predicted {d.after_seconds:.2f} s rewritten against {d.before_seconds:.2f} s as written"


def _how(how: Optional[str]) -> Optional[str]:
    if how is None:
        return "inner"
    key = str(how).lower()
    if key not in HOWS:
        raise SkewjoinError(f"skew_join: unknown join type {how!r}: use one of {', '.join(sorted(HOWS))}", 2)
    return HOWS[key]


def _using_pairs(on, left, right) -> Tuple[List[Tuple[str, str]], bool]:
    """The keys of an `on` of column names, checked on both sides; a Column condition's come
    from Spark's plan (`_condition_pairs`)."""
    if on is None:
        return [], False
    names = [on] if isinstance(on, str) else list(on) if isinstance(on, (list, tuple)) else None
    if names is None or not all(isinstance(n, str) for n in names):
        return [], False
    for side, df in (("left", left), ("right", right)):
        have = {c.lower() for c in df.columns}
        missing = [n for n in names if n.lower() not in have]
        if missing:
            raise SkewjoinError(f"skew_join: no column {missing[0]!r} in the {side} DataFrame (its columns: {', '.join(df.columns)})", 2)
    return [(n, n) for n in names], True


def _condition_pairs(node, left, right) -> Optional[List[Tuple[str, str]]]:
    """The key pairs of the join Spark planned, each a column of its side."""
    from .spark import _attrs, _bare

    lk = [_bare(a) for a in _attrs(node.fields.get("Left keys", ""))]
    rk = [_bare(a) for a in _attrs(node.fields.get("Right keys", ""))]
    if not lk or len(lk) != len(rk):
        return None
    if not all(k in left.columns for k in lk) or not all(k in right.columns for k in rk):
        return None
    return list(zip(lk, rk))


def _plan(left, right, how, pairs, using, sides, report, options) -> PlanReport:
    """The join planned by the binary, with the fix as PySpark over `left` and `right`."""
    from .spark import reachable, session_conf, spark_line

    spark = left.sparkSession
    settings = {"conf": session_conf(spark), "spark_version": spark_line(spark.version)}
    cores = _cores(spark)
    if cores:
        settings["cores"] = cores
    on = [a for a, _ in pairs] if using else list(pairs)
    common = {"how": how, "emit": "pyspark", "left_name": "left", "right_name": "right", **settings, **options}
    files = _files(sides, (left, right))
    if files is not None and all(reachable(p) for p in files):
        plan = _api.plan(files[0], files[1], on=on, **common)
        if all(_has_columns(df, side.columns) for df, side in ((left, plan.left), (right, plan.right))):
            report.counted = "files"
            return plan
        report.notes.append("a side has fewer columns than its files: counted on the session's Spark")
    elif files is not None:
        report.notes.append("the files are not reachable from here: counted on the session's Spark")
    else:
        report.notes.append("a side is not a whole scan of files: counted on the session's Spark")
    report.counted = "spark"
    counts = _session_counts(left, right, pairs, int(settings["conf"].get("spark.sql.shuffle.partitions", "200")), options.get("top", 20))
    with tempfile.TemporaryDirectory(prefix="skewjoin-") as tmp:
        path = os.path.join(tmp, "counts.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(counts, f)
        return _api.plan(counts=path, on=on, **common)


def _files(sides, dfs) -> Optional[Tuple[str, str]]:
    """Each side's files, where both sides are whole scans (no filter, all files listed)."""
    from .spark import _one

    out = []
    for scan, _, reason in sides:
        if reason or scan is None or not scan.paths or scan.truncated or scan.filters:
            return None
        out.append(_one(scan.paths))
    return (out[0], out[1]) if len(out) == 2 else None


def _has_columns(df, columns: List[str]) -> bool:
    have = {c.lower() for c in df.columns}
    return all(c.lower() in have for c in columns)


def _cores(spark) -> Optional[int]:
    """The session's parallelism (classic sessions; Spark Connect's comes from its settings)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        return None


def _run_code(code: str, left, right):
    """The plan's PySpark over the two DataFrames: the DataFrame its last line binds."""
    scope = {"left": left, "right": right}
    exec(compile(code, "<skewjoin --emit pyspark>", "exec"), scope)  # noqa: S102 - the binary's own code, literals escaped
    return scope["joined"]


def _one_line(e: Exception) -> str:
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    return re.sub(r"\s+", " ", lines[0] if lines else type(e).__name__)[:300]


def _session_counts(left, right, pairs, partitions: int, top: int) -> Dict[str, Any]:
    """What `plan --counts` reads (src/plan/counted.rs), counted on the session's Spark: each
    side's most frequent keys, its rows per shuffle partition (Spark's own hash), and the rows
    of every side's frequent keys; Spark's size estimate of each side."""
    keys = ([a for a, _ in pairs], [b for _, b in pairs])
    groups = [_groups(df, k) for df, k in zip((left, right), keys)]
    try:
        tops = [_top(g, df, k, top) for g, df, k in zip(groups, (left, right), keys)]
        candidates: List[list] = []
        for key in tops[0] + tops[1]:
            if key not in candidates:
                candidates.append(key)
        sides = {}
        for name, df, k, g in zip(("left", "right"), (left, right), keys, groups):
            sides[name] = _side_counts(name, df, k, g, partitions, candidates)
    finally:
        for g in groups:
            g.unpersist()
    return {"partitions": partitions, "candidates": candidates, **sides}


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _groups(df, keys):
    """The side's rows per key value (kept: the counts below all read it)."""
    from pyspark.sql import functions as F

    return df.groupBy(*[F.col(_q(k)) for k in keys]).agg(F.count(F.lit(1)).alias("__skewjoin_c")).persist()


def _encoded(df, keys) -> list:
    """Each key as an expression whose value goes to the binary without loss (the driver's, _spark_driver.py)."""
    from pyspark.sql import functions as F

    types = {f.name.lower(): f.dataType.simpleString() for f in df.schema.fields}
    out = []
    for k in keys:
        t, c = types.get(k.lower(), "string"), _q(k)
        if t in ("tinyint", "smallint", "int", "bigint"):
            e = f"CAST({c} AS BIGINT)"
        elif t in ("float", "double") or t.startswith("decimal"):
            e = f"CAST({c} AS STRING)"
        elif t == "date":
            e = f"unix_date({c})"
        elif t == "timestamp":
            e = f"unix_micros({c})"
        elif t == "timestamp_ntz":
            e = f"timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', {c})"
        elif t == "binary":
            e = f"hex({c})"
        else:
            e = c
        out.append(F.expr(e))
    return out


def _any_null(keys):
    from functools import reduce
    from pyspark.sql import functions as F

    return reduce(lambda a, b: a | b, [F.col(_q(k)).isNull() for k in keys])


def _top(g, df, keys, top: int) -> list:
    from pyspark.sql import functions as F

    enc = [e.alias(f"__k{i}") for i, e in enumerate(_encoded(df, keys))]
    rows = g.filter(~_any_null(keys)).orderBy(F.desc("__skewjoin_c")).limit(int(top)).select(*enc).collect()
    return [[r[f"__k{i}"] for i in range(len(keys))] for r in rows]


def _side_counts(name, df, keys, g, partitions: int, candidates: list) -> Dict[str, Any]:
    from functools import reduce
    from pyspark.sql import functions as F

    part_rows, null_rows = [0] * partitions, [0] * partitions
    p = F.pmod(F.hash(*[F.col(_q(k)) for k in keys]), F.lit(partitions))
    for r in g.groupBy(p.alias("p"), _any_null(keys).alias("n")).agg(F.sum("__skewjoin_c").alias("c")).collect():
        (null_rows if r["n"] else part_rows)[r["p"]] += r["c"]
    key_rows = [0] * len(candidates)
    if candidates:
        enc = _encoded(df, keys)
        wanted = reduce(lambda a, b: a | b, [reduce(lambda a, b: a & b, [e == F.lit(v) for e, v in zip(enc, c)]) for c in candidates])
        found = g.filter(wanted).select(*[e.alias(f"__k{i}") for i, e in enumerate(enc)], "__skewjoin_c").collect()
        for r in found:
            key = [r[f"__k{i}"] for i in range(len(keys))]
            if key in candidates:
                key_rows[candidates.index(key)] += r["__skewjoin_c"]
    return {
        "name": name,
        "keys": list(keys),
        "columns": [[f.name, f.dataType.simpleString()] for f in df.schema.fields],
        "rows": sum(part_rows) + sum(null_rows),
        "size_bytes": _size_in_bytes(df),
        "map_tasks": _map_tasks(df),
        "partition_rows": part_rows,
        "null_partition_rows": null_rows,
        "key_rows": key_rows,
    }


_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50, "EiB": 1 << 60}


def _size_in_bytes(df) -> int:
    """Spark's estimate of the DataFrame's size, as EXPLAIN COST prints it (classic sessions
    and Spark Connect): what it compares to the broadcast threshold."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        df.explain(mode="cost")
    m = re.search(r"sizeInBytes=([0-9.E+]+)\s*(B|KiB|MiB|GiB|TiB|PiB|EiB)?", buf.getvalue())
    return int(float(m.group(1)) * _UNITS[m.group(2) or "B"]) if m else 0


def _map_tasks(df) -> int:
    """The tasks that write the side's shuffle: its partitions (classic sessions); over Spark
    Connect, which does not give them, one."""
    try:
        return int(df.rdd.getNumPartitions())
    except Exception:  # noqa: BLE001 - Spark Connect has no RDDs
        return 1
