"""`skewjoin.spark.skew_join` and the fix as code (`plan --emit pyspark|scala`) on real Spark.

For every join type, NULL keys, a composite key, keys of different names (`on=e.k == t.tid`),
duplicate column names (both sides have `g` and `name`), a placeholder the other side lacks,
a string key that needs escaping and a salted key hot on both sides:
- the DataFrame `skew_join` returns, and the PySpark `plan --emit pyspark` prints (run with
  `exec` over the two DataFrames: skew_join runs that very text, which the test checks), give
  the rows of `events.join(titles, on, how)` as multisets, with its columns, on Spark 3.5 and
  4.x, and over Spark Connect (4.x, where the CLI's code is also run on its own);
- the largest shuffle task (records, from Spark's REST API) is smaller than the plain join's;
- the Scala `plan --emit scala` prints gives the same rows through pyspark's own spark-shell
  (both lines ship it, with the Scala REPL: Scala 2.12 on 3.5, 2.13 on 4.x);
- `rewrite --emit pyspark` writes each rewritten join of a query over its inputs by alias;
- `fix --emit pyspark` on a DataFrame job's event log names the Python line of the join and
  writes the fix for that join, which gives the job's rows.
One session, tables of a few thousand rows, written once.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import ROOT, binary, event_logs, run
from sparkrun import max_records, measured_frame, multiset

sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("SKEWJOIN_BIN", binary())

import pyspark  # noqa: E402

from skewjoin import SkewjoinError  # noqa: E402
from skewjoin import spark as sj  # noqa: E402

SPARK4 = int(pyspark.__version__.split(".")[0]) >= 4
LINE = "4.x" if SPARK4 else "3.5"
# 32 partitions: the ordinary keys' median task is about 60 rows, the hot keys' several hundred.
# 128 B: a slice of a row is broadcast, the salted key's 20 rows are not, nor a side. AQE on,
# but without coalescing: at a few thousand rows on 2 cores it would make the whole stage 2 tasks.
CONF = {"spark.sql.shuffle.partitions": "32", "spark.sql.autoBroadcastJoinThreshold": "128", "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "false"}
ESCAPED = "it's \"é\" \\n"

# (the keys as written, how): every join type on one key; a composite key; keys of other names.
CASES = [("k", h) for h in ("inner", "left", "right", "full", "left_semi", "left_anti")] + [
    ("k,g", "full"), ("k=tid", "right"), ("k=tid", "left_anti")]


def tables(folder):
    """events (3,500 rows) and titles (670): 'hot' (600 events, 1 title), 'salty' (300, 20:
    salted), 'ph' (400 events, no title), NULL (300, 50), a key to escape (400, 1), and 300
    ordinary keys (5 events, 2 titles each). Both have `g` and `name`; titles' `tid` is its `k`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    special_e = [("hot", 600), ("salty", 300), ("ph", 400), (None, 300), (ESCAPED, 400)]
    special_t = [("hot", 1), ("salty", 20), (None, 50), (ESCAPED, 1)]
    ek = [k for k, n in special_e for _ in range(n)] + [f"k{i % 300:03}" for i in range(1500)]
    tk = [k for k, n in special_t for _ in range(n)] + [f"k{i % 300:03}" for i in range(600)]
    ng = sum(n for _, n in special_e)
    e = pa.table({"k": ek, "g": [0 if i < ng else i % 3 for i in range(len(ek))],
                  "name": [f"e{i % 7}" for i in range(len(ek))], "v": list(range(len(ek)))})
    ng = sum(n for _, n in special_t)
    t = pa.table({"k": tk, "tid": tk, "g": [0 if i < ng else i % 3 for i in range(len(tk))],
                  "name": [f"t{i}" for i in range(len(tk))], "w": [i * 10 for i in range(len(tk))]})
    paths = folder / "events.parquet", folder / "titles.parquet"
    pq.write_table(e, paths[0])
    pq.write_table(t, paths[1])
    return str(paths[0]), str(paths[1])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return tables(tmp_path_factory.mktemp("skew_join"))


@pytest.fixture
def joins(spark):
    """The shared session with CONF (undone after)."""
    for k, v in CONF.items():
        spark.conf.set(k, v)
    yield spark
    spark.conf.set("spark.sql.shuffle.partitions", "8")
    for k in CONF:
        if k != "spark.sql.shuffle.partitions":
            spark.conf.unset(k)


def on_arg(keys, e, t):
    """`on` as a PySpark user writes it."""
    if keys == "k=tid":
        return e["k"] == t["tid"]
    return keys.split(",") if "," in keys else keys


def emitted(files, keys, how, lang, names=("events", "titles"), cores=2):
    """The fix `plan --emit LANG` prints for the join, over `events` and `titles`."""
    p = run("plan", "--left", files[0], "--right", files[1], "--on", keys, "--how", how.removeprefix("left_"),
            "--left-name", names[0], "--right-name", names[1], "--emit", lang, "--format", "json", "-q",
            "--min-gain", "off", "--spark-version", LINE, "--cores", str(cores),
            *[x for k, v in CONF.items() for x in ("--conf", f"{k}={v}")], check=True)
    code = json.loads(p.stdout)["code"]
    assert code["language"] == lang and code["rewrites"], code
    return code["text"]


def strategies(report):
    return {h.strategy["kind"] for h in report.plan.hot_keys}


@pytest.mark.both_lines("the DataFrame API, AQE's defaults and the plan Spark makes of the branches differ between 3.5 and 4.x")
def test_skew_join_and_the_emitted_pyspark_give_the_plain_joins_rows(joins, files):
    e, t = joins.read.parquet(files[0]), joins.read.parquet(files[1])
    figures = {}
    for keys, how in CASES:
        on = on_arg(keys, e, t)
        plain = e.join(t, on, how)
        df, report = sj.skew_join_plan(e, t, on, how, min_gain="off")
        assert report.rewritten and report.counted == "files", (keys, how, report.reason, report.notes)
        assert df.columns == plain.columns, (keys, how)
        # skew_join ran, with exec over the two DataFrames, the very code `plan --emit pyspark`
        # prints for the files under the session's settings: its rows are that code's rows.
        assert report.code == emitted(files, keys, how, "pyspark", names=("left", "right")), (keys, how)
        (before, before_tasks), (after, after_tasks) = measured_frame(joins, plain), measured_frame(joins, df)
        assert multiset(after) == multiset(before), (keys, how)
        assert len(before) > 0
        figures[f"{keys} {how}"] = (len(before), max_records(before_tasks), max_records(after_tasks))
        moved = strategies(report)
        assert "broadcast_slice" in moved, (keys, how, moved)
        assert ("broadcast_keys" if how in ("left_semi", "left_anti") else "salt") in moved, (keys, how, moved)
    print(f"\nSpark {pyspark.__version__}: rows compared, largest shuffle task before -> after (records)")
    for case, (rows, b, a) in figures.items():
        print(f"  {case:<16} {rows:>7,} rows  {b:>5,} -> {a:,}")
    for case, (_, b, a) in figures.items():
        assert a < b, (case, b, a)


@pytest.mark.both_lines("Spark's size estimate (EXPLAIN COST) and its hash of the keys are read from each line's own output")
def test_skew_join_counts_on_the_session_when_a_side_is_not_a_whole_scan(joins, files):
    from pyspark.sql import functions as F

    e = joins.read.parquet(files[0]).filter(F.col("v") % 5 != 1)
    t = joins.createDataFrame(joins.read.parquet(files[1]).collect())
    for how in ("left", "full"):
        plain = e.join(t, "k", how)
        df, report = sj.skew_join_plan(e, t, "k", how, min_gain="off")
        assert report.counted == "spark" and report.rewritten, (how, report.reason, report.notes)
        assert [h.value for h in report.plan.hot_keys if h.value is not None][:1] == ["hot"], report.plan.hot_keys
        assert df.columns == plain.columns and multiset(df.collect()) == multiset(plain.collect()), how


def test_skew_join_says_what_is_wrong_in_one_line(joins, files):
    e, t = joins.read.parquet(files[0]), joins.read.parquet(files[1])
    with pytest.raises(SkewjoinError) as bad_how:
        sj.skew_join(e, t, "k", "sideways")
    assert "unknown join type 'sideways'" in bad_how.value.message and "\n" not in bad_how.value.message
    with pytest.raises(SkewjoinError) as missing:
        sj.skew_join(e, t, "nope", "left")
    assert "no column 'nope' in the left DataFrame" in missing.value.message
    crossed, report = sj.skew_join_plan(e, t, how="cross")
    assert not report.rewritten and report.how == "cross" and crossed.count() == e.count() * t.count()


CONNECT = """
import collections, json, sys
sys.path.insert(0, {python!r})
from pyspark.sql import SparkSession, functions as F
from skewjoin import spark as sj
s = SparkSession.builder.remote({url!r}).getOrCreate()
for k, v in {conf!r}.items():
    s.conf.set(k, v)
e, t = s.read.parquet({events!r}), s.read.parquet({titles!r})
codes = json.load(open({codes!r}))
out = {{}}
def rows(df):
    return collections.Counter(tuple(r) for r in df.collect())
for keys, how in {cases!r}:
    on = (e["k"] == t["tid"]) if keys == "k=tid" else keys.split(",") if "," in keys else keys
    plain = e.join(t, on, how)
    df, report = sj.skew_join_plan(e, t, on, how, min_gain="off")
    want = rows(plain)
    # skew_join ran the CLI's code for these files and settings over the two DataFrames.
    out[keys + " " + how] = {{"rewritten": report.rewritten, "counted": report.counted, "rows": sum(want.values()),
        "skew_join": rows(df) == want, "code": report.code == codes[keys + " " + how], "columns": df.columns == plain.columns}}
f = e.filter(F.col("v") % 5 != 1)
df, report = sj.skew_join_plan(f, t, "k", "left", min_gain="off")
out["filtered left"] = {{"rewritten": report.rewritten, "counted": report.counted, "skew_join": rows(df) == rows(f.join(t, "k", "left")),
    "code": True, "columns": df.columns == f.join(t, "k", "left").columns, "rows": 0}}
print(json.dumps(out))
"""


@pytest.mark.both_lines("Spark Connect servers ship with pyspark 4.x: this runs on the 4.x line only")
def test_skew_join_and_the_emitted_pyspark_over_spark_connect(connect, files, tmp_path):
    cases = [c for c in CASES if c[0] == "k"] + [("k=tid", "full")]
    # The Connect server has the suite's local[2]: 2 cores, as emitted() assumes.
    codes = {f"{k} {h}": emitted(files, k, h, "pyspark", names=("left", "right")) for k, h in cases}
    (tmp_path / "codes.json").write_text(json.dumps(codes))
    script = CONNECT.format(python=str(ROOT / "python"), url=connect, conf=CONF, events=files[0], titles=files[1],
                            codes=str(tmp_path / "codes.json"), cases=cases)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, SKEWJOIN_BIN=binary()))
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(got) == len(cases) + 1
    for case, g in got.items():
        assert g["rewritten"] and g["skew_join"] and g["code"] and g["columns"], (case, g)
        assert g["counted"] == ("spark" if case == "filtered left" else "files"), (case, g)


def spark_shell():
    """pyspark's spark-shell, where its jars hold the Scala REPL."""
    home = pathlib.Path(pyspark.__file__).parent
    shell, jars = home / "bin" / "spark-shell", home / "jars"
    if not shell.exists() or not list(jars.glob("spark-repl_*.jar")) or not list(jars.glob("scala-compiler-*.jar")):
        return None
    return shell


@pytest.mark.both_lines("Scala 2.12 (Spark 3.5) and 2.13 (Spark 4.x) compile the emitted Scala, and read its escapes, differently")
def test_the_emitted_scala_gives_the_plain_joins_rows_in_spark_shell(files, tmp_path):
    shell = spark_shell()
    if shell is None:
        pytest.skip("this pyspark ships no Scala REPL: the Scala text is pinned by src/plan/code/tests.rs")
    # The Scala shares its shape with the PySpark (src/plan/code/): these two cover its own
    # syntax: equalities and names in `on`, a composite key, a salt, the unmatched rows of both
    # sides, distinct keys, NULL keys, the escaped string.
    cases = [("k=tid", "full"), ("k,g", "left_anti")]
    script = []
    for i, (keys, how) in enumerate(cases):
        on = {"k,g": 'Seq("k", "g")', "k=tid": 'events("k") === titles("tid")'}[keys]
        script += [f"object Case{i} {{",
                   f"val events = spark.read.parquet({json.dumps(files[0])})",
                   f"val titles = spark.read.parquet({json.dumps(files[1])})",
                   emitted(files, keys, how, "scala"),
                   f'val plain = events.join(titles, {on}, "{how}")',
                   "}",
                   # No row of one missing from the other, and as many rows: the same multiset.
                   f'println(s"RESULT {i} ${{Case{i}.joined.exceptAll(Case{i}.plain).count}} '
                   f'${{Case{i}.joined.count}} ${{Case{i}.plain.count}} ${{Case{i}.joined.columns.sameElements(Case{i}.plain.columns)}}")']
    script.append("System.exit(0)")
    (tmp_path / "cases.scala").write_text("\n".join(script) + "\n")
    args = [str(shell), "--master", "local[2]", "--conf", "spark.ui.enabled=false", "--conf", "spark.ui.showConsoleProgress=false",
            "--conf", "spark.driver.memory=1g", *[x for k, v in CONF.items() for x in ("--conf", f"{k}={v}")],
            "-i", str(tmp_path / "cases.scala")]
    env = dict(os.environ, SPARK_HOME=str(shell.parent.parent), SPARK_LOCAL_IP="127.0.0.1")
    p = subprocess.run(args, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, env=env, cwd=tmp_path)
    results = [line.split()[1:] for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(results) == len(cases), (p.stdout[-3000:], p.stderr[-3000:])
    for (i, only_fixed, fixed, plain, columns), case in zip(results, cases):
        assert (only_fixed, columns) == ("0", "true") and fixed == plain != "0", (case, only_fixed, fixed, plain)


def test_fix_on_a_dataframe_job_names_its_line_and_writes_the_fix_for_that_join(spark, tmp_path_factory):
    """eventlogs.py's DataFrame job (plays filtered, joined to titles on title_id, collected):
    the log's call site is the Python line of the join, and the PySpark fix, run over the
    job's two DataFrames, gives the rows of the job's join."""
    from pyspark.sql import functions as F

    log = event_logs(tmp_path_factory, ["dataframe_join"])["dataframe_join"]
    p = run("fix", log, "--min-stage-seconds", "0", "--min-gain", "off", "--emit", "pyspark", "--format", "json", "-q", check=True)
    f = json.loads(p.stdout)
    source = (ROOT / "tests" / "py" / "eventlogs.py").read_text().splitlines()
    line = next(i + 1 for i, text in enumerate(source) if 'plays.join(titles, "title_id")' in text)
    site = f["call_site"]
    assert (site["action"], pathlib.Path(site["file"]).name, site["line"]) == ("collect", "eventlogs.py", line), site
    code = f["code"]["text"]
    assert f["code"]["rewrites"] and f"in place of the join at {site['file']}:{line}" in code, code
    plays_name, titles_name = [t["name"] for t in f["query"]["tables"]]
    tables = {t["name"]: t["table"] for t in f["query"]["tables"]}
    plays = spark.read.parquet(tables[plays_name]).where((F.col("views") >= 100) & (F.col("kind") == "play"))
    titles = spark.read.parquet(tables[titles_name])
    scope = {plays_name: plays, titles_name: titles}
    exec(compile(code, "<fix --emit pyspark>", "exec"), scope)  # noqa: S102 - the code under test
    fixed, plain = scope["joined"], plays.join(titles, "title_id")
    assert fixed.columns == plain.columns
    assert fixed.count() == plain.count() > 0 and fixed.exceptAll(plain).isEmpty()


def test_rewrite_emits_each_rewritten_join_over_its_inputs(joins, files, tmp_path):
    """A query's anti join (its right side a subquery that renames the key) as PySpark over the
    inputs the query names, `e` and `t`: the rows of the join as the DataFrames write it."""
    from pyspark.sql import functions as F

    sql = "SELECT * FROM events e LEFT ANTI JOIN (SELECT tid AS id, name, w FROM titles) t ON e.k = t.id"
    (tmp_path / "q.sql").write_text(sql)
    p = run("rewrite", str(tmp_path / "q.sql"), "--table", f"events={files[0]}", "--table", f"titles={files[1]}",
            "--emit", "pyspark", "--min-gain", "off", "--spark-version", LINE, "-q",
            *[x for k, v in CONF.items() for x in ("--conf", f"{k}={v}")], check=True)
    assert p.stdout.startswith("# skewjoin: in place of events e LEFT ANTI JOIN"), p.stdout[:300]
    e = joins.read.parquet(files[0])
    t = joins.read.parquet(files[1]).select(F.col("tid").alias("id"), "name", "w")
    fixed, plain = _run_as(p.stdout, {"e": e, "t": t}), e.join(t, e["k"] == t["id"], "left_anti")
    assert fixed.columns == plain.columns and multiset(fixed.collect()) == multiset(plain.collect())


def _run_as(code, inputs):
    scope = dict(inputs)
    exec(compile(code, "<emitted>", "exec"), scope)  # noqa: S102 - the code under test
    return scope["joined"]
