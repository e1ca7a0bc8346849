"""The five commands as Python functions. Each takes the command's options as keyword
arguments with Python names (`--min-gain 0.2` is `min_gain=0.2`, `--conf k=v` is
`conf={"k": "v"}`), runs the binary once, and returns the command's typed report.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Mapping, Optional, Sequence, Union

from . import _results as r
from ._run import as_list, flags, run

PathLike = Union[str, "os.PathLike[str]"]


def keys(table: Union[PathLike, Sequence[PathLike]], columns: Union[str, Sequence[str]], *, top: Optional[int] = None, sample: Union[float, int, str, None] = None, **options: Any) -> r.KeysReport:
    """`skewjoin keys TABLE -c COLUMN`: the most frequent values of each key column.

    `columns` is a column, `"a,b"` (a composite key) or a list of either; `sample` a fraction
    (0.01) or a row count.
    """
    args = [os.fspath(t) for t in as_list(table)] + flags({"column": as_list(columns), "top": top, "sample": sample, **options})
    return r.build(r.KeysReport, (out := run("keys", args)).data)._attach(out)


def plan(left: Optional[PathLike] = None, right: Optional[PathLike] = None, on: Any = None, *, how: str = "inner", **options: Any) -> Union[r.PlanReport, r.WindowPlanReport]:
    """`skewjoin plan --left L --right R --on K`: the join's hot keys, how each is moved, and
    its tasks before and after.

    `on` is a column, `"l=r"`, a `(l, r)` pair or a list of those (a composite key). With
    `partition_by=[...]` (and no `right`), the window or GROUP BY stage over `left`. With
    `counts=FILE` (and no tables), the join a Spark session counted (`skewjoin.spark`).
    `emit="pyspark"` or `"scala"` adds the fix as code (`.code`).
    """
    on_flags = [f"{k[0]}={k[1]}" if isinstance(k, tuple) else k for k in ([on] if isinstance(on, (str, tuple)) else as_list(on))]
    window = bool(options.get("partition_by"))
    args = flags({"left": left, "right": right, "on": on_flags, "how": None if window else how, **options})
    out = run("plan", args, html=not window)
    return r.build(r.WindowPlanReport if window else r.PlanReport, out.data)._attach(out)


def rewrite(sql: str, *, tables: Optional[Mapping[str, PathLike]] = None, tables_dir: Optional[PathLike] = None, **options: Any) -> r.RewriteReport:
    """`skewjoin rewrite`: the query (SQL text) rewritten so no task carries its hot keys.

    `tables` maps the query's table names to their data (`--table NAME=PATH`); `tables_dir` is a
    folder holding a table per name (`--tables DIR`).
    """
    args = _table_flags(tables, tables_dir) + flags(options)
    out = run("rewrite", ["-", *args], stdin=sql)
    return r.build(r.RewriteReport, out.data)._attach(out)


def verify(sql: str, *, tables: Optional[Mapping[str, PathLike]] = None, tables_dir: Optional[PathLike] = None, rewritten: Optional[str] = None, engine: Optional[str] = None, **options: Any) -> r.VerifyReport:
    """`skewjoin verify`: runs the query and its rewrite (or `rewritten`, SQL text) on Spark or
    Polars (`engine="polars"`), and compares their rows as multisets and their largest tasks.

    A difference is not an error: the report's `identical` (and its truth value) says it.
    """
    with tempfile.TemporaryDirectory(prefix="skewjoin-") as tmp:
        extra = {}
        if rewritten is not None:
            extra["rewritten"] = os.path.join(tmp, "rewritten.sql")
            with open(extra["rewritten"], "w", encoding="utf-8") as f:
                f.write(rewritten)
        args = _table_flags(tables, tables_dir) + flags({"engine": engine, **extra, **options})
        out = run("verify", ["-", *args], stdin=sql, html=True)
    return r.build(r.VerifyReport, out.data)._attach(out)


def diagnose(log_or_url: PathLike, *, app: Optional[str] = None, **options: Any) -> Union[r.DiagnoseReport, r.ApplicationList]:
    """`skewjoin diagnose`: an event log's (or a History Server application's) slow stages and
    their causes. A History Server URL without `app` gives its list of applications."""
    out = run("diagnose", [os.fspath(log_or_url), *flags({"app": app, **options})], html=True)
    if "applications" in out.data:
        return r.build(r.ApplicationList, out.data)._attach(out)
    return r.build(r.DiagnoseReport, out.data)._attach(out)


def fix(log_or_url: PathLike, *, app: Optional[str] = None, verify: bool = False, **options: Any) -> r.FixReport:
    """`skewjoin fix`: from a slow job's event log (or History Server application) to the
    rewritten query: the diagnosis, the slow stage's query rewritten under the job's settings,
    the stage predicted against the log, and with `verify=True` both queries run."""
    out = run("fix", [os.fspath(log_or_url), *flags({"app": app, "verify": verify, **options})], html=True)
    return r.build(r.FixReport, out.data)._attach(out)


def _table_flags(tables: Optional[Mapping[str, PathLike]], tables_dir: Optional[PathLike]) -> list:
    named = [f"{name}={os.fspath(path)}" for name, path in (tables or {}).items()]
    return flags({"table": named, "tables": tables_dir})
