"""Typed results, built from the JSON contracts of docs/json.md.

Each report keeps the whole JSON (`.data`) beside its typed fields, prints as the command's
text report, and renders in a notebook as the command's HTML page (`plan`, `verify`,
`diagnose`; the others as their text).
"""

from __future__ import annotations

import dataclasses
import html as _html
import typing
from dataclasses import dataclass, field
from typing import Any, List, Optional


def build(cls, d: Any):
    """An instance of the dataclass `cls` from its JSON object: fields by name (a field's
    `json` metadata gives another key), nested dataclasses and lists of them built too, keys
    the class does not name ignored."""
    if d is None:
        return None
    hints = _hints(cls)
    kw = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        key = f.metadata.get("json", f.name)
        if key in d:
            kw[f.name] = _convert(hints[f.name], d[key])
    return cls(**kw)


_hint_cache: dict = {}


def _hints(cls) -> dict:
    if cls not in _hint_cache:
        _hint_cache[cls] = typing.get_type_hints(cls)
    return _hint_cache[cls]


def _convert(hint, v):
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union and type(None) in args:
        inner = [a for a in args if a is not type(None)][0]
        return None if v is None else _convert(inner, v)
    if origin in (list, List) and args and dataclasses.is_dataclass(args[0]) and isinstance(v, list):
        return [build(args[0], x) for x in v]
    if dataclasses.is_dataclass(hint) and isinstance(v, dict):
        return build(hint, v)
    return v


class Report:
    """A command's report: typed fields, `.data` (the JSON), `.text` (the text report)."""

    data: dict
    text: str
    html: Optional[str]
    exit_code: int

    def _attach(self, run) -> "Report":
        self.data, self.text, self.html, self.exit_code = run.data, run.text, run.html, run.exit_code
        return self

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        if self.html:
            return self.html
        return f"<pre>{_html.escape(self.text)}</pre>"


def _report(cls):
    """A dataclass whose report fields (`data`, `text`, `html`, `exit_code`) are set after it
    is built and stay out of its repr and comparisons."""
    cls = dataclass(cls)
    cls.__repr__ = _short_repr
    return cls


def _short_repr(self) -> str:
    first = (self.text or "").strip().splitlines()[:1]
    return f"<skewjoin.{type(self).__name__}: {first[0] if first else ''}>"


# keys


@dataclass
class KeyValue:
    """One of a column's most frequent values."""

    value: Any
    count: int
    share: float
    category: str = field(default="", metadata={"json": "class"})
    reason: str = ""
    spark_partition: Optional[int] = None
    spark_hash: Optional[int] = None
    share_error: Optional[float] = None
    sample_count: Optional[int] = None
    hot: bool = False


@dataclass
class KeyVerdict:
    even_task_rows: float
    hot_factor: float
    hot: list
    text: str = ""
    details: list = field(default_factory=list)


@dataclass
class KeyColumn:
    """One key column (or composite key) counted."""

    column: str
    types: list
    rows: int
    nulls: int
    distinct: int
    exact: bool
    counts_exact: bool = True
    distinct_exact: bool = True
    rows_read: Optional[int] = None
    shuffle_partitions: int = 200
    top: List[KeyValue] = field(default_factory=list)
    verdict: Optional[KeyVerdict] = None
    sample: Optional[dict] = None


@_report
class KeysReport(Report):
    """`skewjoin keys`: each column's most frequent values, with their class and partition."""

    columns: List[KeyColumn]

    def __post_init__(self):
        for c in self.columns:
            hot = c.verdict.hot if c.verdict else []
            for v in c.top:
                v.hot = v.value in hot

    def rows(self) -> list:
        """The top values of every column, one dict per value (the CSV output's rows)."""
        return [
            {
                "column": c.column,
                "rank": i + 1,
                "value": v.value,
                "count": v.count,
                "share": v.share,
                "class": v.category,
                "hot": v.hot,
                "spark_partition": v.spark_partition,
                "reason": v.reason,
            }
            for c in self.columns
            for i, v in enumerate(c.top)
        ]

    def to_arrow(self):
        """The top values as a pyarrow Table (pyarrow must be installed). A column whose
        values mix types (a composite key's lists) holds them as text."""
        pa = _need("pyarrow", "to_arrow")
        rows = self.rows()
        values = [r["value"] for r in rows]
        kinds = {type(v) for v in values if v is not None}
        if len(kinds) > 1 or kinds & {list, dict}:
            values = [None if v is None else str(v) for v in values]
        cols = {k: [r[k] for r in rows] for k in rows[0]} if rows else {k: [] for k in ("column", "rank", "value", "count", "share", "class", "hot", "spark_partition", "reason")}
        cols["value"] = values
        return pa.table(cols)

    def to_pandas(self):
        """The top values as a pandas DataFrame (pandas must be installed)."""
        pd = _need("pandas", "to_pandas")
        return pd.DataFrame(self.rows())


def _need(module: str, what: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        from ._run import SkewjoinError

        raise SkewjoinError(f"{what}() needs {module}: pip install {module}", 2) from None


# plan


@dataclass
class Tasks:
    """A join stage's shuffle tasks: their count, and the largest and median in rows and bytes."""

    tasks: int
    max_task_rows: int
    median_task_rows: float
    max_task_bytes: int = 0
    median_task_bytes: float = 0
    shuffled_rows: int = 0


@dataclass
class Side:
    name: str
    table: str
    keys: list
    rows: int
    null_key_rows: int
    disk_bytes: Optional[int] = None
    memory_bytes: Optional[int] = None
    bytes_per_row: Optional[float] = None
    key_types: list = field(default_factory=list)
    columns: list = field(default_factory=list)
    spark_drops_nulls: bool = False
    preserved: bool = False
    may_broadcast: bool = False


@dataclass
class HotKey:
    value: Any
    side: str
    rows: int
    share: float
    category: str = field(default="", metadata={"json": "class"})
    reason: str = ""
    left_rows: Optional[int] = None
    right_rows: Optional[int] = None
    other_side_rows: Optional[int] = None
    spark_partition: Optional[int] = None
    strategy: Optional[dict] = None
    why: str = ""


@dataclass
class Decision:
    """Whether the rewrite is made: `code` is rewrite, nothing_to_move, aqe_splits_it,
    aqe_broadcasts_it, not_material or costs_more."""

    code: str
    before_seconds: Optional[float] = None
    after_seconds: Optional[float] = None
    margin_off: Optional[bool] = None


@dataclass
class Setting:
    """A Spark setting the prediction assumed, and where it came from."""

    key: str
    value: str
    origin: str
    source: Optional[str] = field(default=None, metadata={"json": "from"})


@dataclass
class Code:
    """The fix as code (`emit="pyspark"` or `"scala"`): the language, the text to paste in place
    of the join, and whether it moves anything (False: the join as written)."""

    language: str
    text: str
    rewrites: bool = False


@_report
class PlanReport(Report):
    """`skewjoin plan`: the hot keys of a join, how each is moved, the tasks before and after."""

    how: str
    shuffle_partitions: int
    broadcast_threshold: int
    left: Side
    right: Side
    hot_keys: List[HotKey]
    before: Tasks
    after: Tasks
    decision: Optional[Decision] = None
    broadcast_side: Optional[str] = None
    sql: str = ""
    notes: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    results_change: bool = False
    settings: List[Setting] = field(default_factory=list)
    aqe: Optional[dict] = None
    cost: Optional[dict] = None
    code: Optional[Code] = None


@_report
class WindowPlanReport(Report):
    """`skewjoin plan --partition-by`: a window or GROUP BY stage over a table."""

    shape: dict
    keys: list
    rows: int
    hot: list
    verdict: str
    why: str
    before: Tasks
    after: Optional[Tasks] = None
    records: Optional[dict] = None


# rewrite


@dataclass
class JoinStatus:
    """A join of the query: `status` is rewritten or left_as_written (then `reason`)."""

    join: str
    status: str
    at: Optional[dict] = None
    how: Optional[str] = None
    alias: Optional[str] = None
    reason: Optional[str] = None


@dataclass
class Change:
    join: str
    how: str
    keys: Any
    alias: str
    hot_keys: List[HotKey]
    before: Tasks
    after: Tasks
    decision: Optional[Decision] = None
    broadcast_side: Optional[str] = None
    notes: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    results_change: bool = False
    in_branches: bool = False


@_report
class RewriteReport(Report):
    """`skewjoin rewrite`: the rewritten SQL (`.sql`), and what happened to each join."""

    sql: str
    joins: List[JoinStatus]
    changes: List[Change] = field(default_factory=list)
    unchanged_joins: list = field(default_factory=list)
    windows: list = field(default_factory=list)
    settings: List[Setting] = field(default_factory=list)
    code: Optional[Code] = None

    @property
    def changed(self) -> bool:
        """Whether any join or window was rewritten."""
        return bool(self.changes) or any(w.get("status") == "rewritten" for w in self.windows)


# verify


@dataclass
class Stage:
    stage_id: int
    tasks: int
    duration_ms: int
    max_task_records: int
    median_task_records: float
    max_task_bytes: int = 0
    max_task_ms: int = 0
    median_task_ms: float = 0
    spill_bytes: int = 0


@dataclass
class Measured:
    """One query's run: wall time, result size, and with Spark its stages and what AQE did."""

    wall_ms: int
    rows: int
    columns: int
    stages: List[Stage] = field(default_factory=list)
    aqe: Optional[dict] = None

    @property
    def max_task_records(self) -> Optional[int]:
        """The largest shuffle-read task's records, over the stages (None with Polars)."""
        return max((s.max_task_records for s in self.stages), default=None)


@_report
class VerifyReport(Report):
    """`skewjoin verify`: whether both queries return the same rows, and their runs."""

    engine: str
    identical: bool
    rows_original: int
    rows_rewritten: int
    measured_before: Measured
    measured_after: Measured
    engine_version: str = ""
    spark_version: str = ""
    master: str = ""
    columns_match: bool = True
    only_in_original: list = field(default_factory=list)
    only_in_rewritten: list = field(default_factory=list)
    predicted_before: Optional[Tasks] = None
    predicted_after: Optional[Tasks] = None
    notes: list = field(default_factory=list)
    conf: list = field(default_factory=list)
    slower: bool = False

    def __bool__(self) -> bool:
        return self.identical


# diagnose


@dataclass
class Finding:
    """What slowed a stage (`kind`: hot_key, too_few_partitions, ...), its evidence and fix."""

    kind: str
    stage_id: Optional[int]
    evidence: Any
    fix: Any
    cost: Any = None
    verify: Any = None
    join: Optional[dict] = None
    next_commands: Optional[list] = None


@dataclass
class StageSummary:
    stage_id: int
    name: str
    duration_ms: int
    tasks: int
    share: float = 0.0
    attempt: int = 0
    job_id: Optional[int] = None
    failed_tasks: int = 0
    task_summary: Optional[dict] = None
    totals: Optional[dict] = None


@_report
class DiagnoseReport(Report):
    """`skewjoin diagnose`: an application's slow stages, and what slowed each."""

    app: dict
    stages: List[StageSummary]
    findings: List[Finding]
    checks: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    locate: Any = None
    memory: Any = None
    baseline: Any = None


@_report
class ApplicationList(Report):
    """`skewjoin diagnose URL` without `--app`: the History Server's applications."""

    applications: list


# fix


@dataclass
class FixQuery:
    """The query `fix` rewrote: `source` is sql_text (the log's) or rebuilt_from_plan."""

    sql: str
    source: str
    tables: list
    notes: list = field(default_factory=list)


@dataclass
class StageCheck:
    """The slow stage as the log measured it and as predicted, written and rewritten."""

    stage_id: int
    measured_max_task_records: int
    measured_median_task_records: int = 0
    predicted_before: Optional[Tasks] = None
    predicted_after: Optional[Tasks] = None
    before_gap: Optional[float] = None
    rewritten: bool = False
    notes: list = field(default_factory=list)


@dataclass
class TableCheck:
    """A table of the query: the files and bytes the job read (the log's SQL metrics) against
    the files there now; `changed` when they differ and the scan read every partition."""

    name: str
    files_read: int
    bytes_read: int
    files_now: int
    bytes_now: int
    pruned: bool = False
    changed: bool = False


@_report
class FixReport(Report):
    """`skewjoin fix`: the diagnosis, the query, its rewrite, the stage check, the tables as the
    job read them, the verification."""

    diagnosis: dict
    no_query: Optional[str] = None
    query: Optional[FixQuery] = None
    rewrite: Optional[dict] = None
    stage: Optional[StageCheck] = None
    tables: List[TableCheck] = field(default_factory=list)
    verification: Optional[dict] = None

    @property
    def sql(self) -> Optional[str]:
        """The rewritten query (None when there was nothing to rewrite)."""
        return self.rewrite["sql"] if self.rewrite else None
