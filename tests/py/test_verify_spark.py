"""`skewjoin verify --engine spark` in the Spark harness: on three skewed data sets the rewrite
returns the same rows and Spark's largest task shrinks, measured by Spark and next to the
planner's prediction; a broken rewrite (a bare NOT IN that loses the NULL keys) is caught with
exit code 1; and the engine's errors are one line, exit 2. Each verify starts its own Spark
application in a child process."""
import json
import subprocess
import sys

import pytest

from conftest import LEGACY, ONE_RUN, ROOT, binary, failure, verify_run
from test_plan_spark import P, data  # noqa: F401  (fixture)


def verify(tmp_path, sql, tables, *extra, rewritten=None, python=sys.executable):
    return verify_run(tmp_path, sql, tables, *LEGACY, *ONE_RUN, "--engine", "spark", "--shuffle-partitions", P,
                      "--python", python, *extra, rewritten=rewritten, timeout=900)


@pytest.mark.parametrize("case", [
    ("null-placeholder-demand", ["events", "titles"], "SELECT * FROM events e LEFT JOIN titles t ON e.title_id = t.title_id", ["--broadcast-threshold", "4KB"]),
    ("salted", ["mm_left", "mm_right"], "SELECT a.k, a.a, b.b FROM mm_left a JOIN mm_right b ON a.k = b.k", ["--broadcast-threshold", "100"]),
    ("both-sides-null-full", ["fl", "fr"], "SELECT * FROM fl a FULL JOIN fr b ON a.k = b.k", ["--broadcast-threshold", "1KB"]),
], ids=lambda c: c[0])
def test_verify_on_skewed_data(data, tmp_path, case):
    name, names, sql, extra = case
    html = tmp_path / "verify.html"
    p = verify(tmp_path, sql, {n: data[n] for n in names}, *extra, "--html", str(html))
    assert p.returncode == 0, p.stderr + p.stdout
    v = json.loads(p.stdout)
    assert v["identical"] and v["columns_match"] and v["rows_original"] == v["rows_rewritten"] > 0
    before = max(s["max_task_records"] for s in v["measured_before"]["stages"])
    after = max(s["max_task_records"] for s in v["measured_after"]["stages"])
    assert after * 4 <= before, (before, after)
    # Measured next to predicted: the planner's largest task before is Spark's.
    pb = v["predicted_before"]["max_task_rows"]
    assert abs(pb - before) <= 0.05 * before + 20, (pb, before)
    verify_html(tmp_path, html, v, name)


def verify_html(tmp_path, html, v, name):
    """The HTML report: one bar per task of the join stage before and after, the largest
    marked with its count, drawn in Chromium (where the machine has it)."""
    text = html.read_text()
    assert "skewjoin verify: identical rows" in text
    b, a = v["measured_before"], v["measured_after"]
    join = lambda r: max(r["stages"], key=lambda s: (s["max_task_records"], s["max_task_bytes"]))
    assert f"the largest ({join(b)['max_task_records']:,} records)" in text
    charts = text.split("shuffle records per task of stage")
    assert len(charts) == 5, "two charts, each titled twice"
    assert charts[2].count('<rect class="bar') == join(b)["tasks"] or join(b)["tasks"] > 1000
    from browser import CHROMIUM, open_in_browser, red_pixels
    if CHROMIUM:
        dom, img = open_in_browser(tmp_path, html, f"verify-{name}")
        assert dom.count('class="bar hot"') == 2 and red_pixels(img) > 20


def test_broken_rewrite_is_caught(data, tmp_path):
    """The classic mistake: the rest-of-the-keys branch written with a bare NOT IN, which is NULL
    for a NULL key, so the NULL-keyed events vanish."""
    sql = "SELECT e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id"
    broken = ("SELECT e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id WHERE e.title_id NOT IN ('unknown') "
              "UNION ALL SELECT e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id WHERE e.title_id IN ('unknown')")
    tables = {n: data[n] for n in ["events", "titles"]}
    p = verify(tmp_path, sql, tables, "--broadcast-threshold", "4KB", rewritten=broken)
    assert p.returncode == 1, p.stderr + p.stdout
    v = json.loads(p.stdout)
    assert not v["identical"] and v["rows_rewritten"] < v["rows_original"]
    assert v["only_in_original"] and not v["only_in_rewritten"]
    # The text report of the same finding is checked on Polars (test_verify_polars.py): one
    # Spark application per test here.


def test_engine_errors_are_one_line(data, tmp_path):
    tables = {n: data[n] for n in ["events", "titles"]}
    sql = "SELECT * FROM events e JOIN titles t ON e.title_id = t.title_id"
    f = failure(verify(tmp_path, sql, tables, python="/nonexistent/python3"))
    assert (f["code"], f["kind"]) == ("usage", "usage") and "/nonexistent/python3" in f["message"], f
    f = failure(verify(tmp_path, sql, tables, "--conf", "novalue"))
    assert (f["code"], f["kind"]) == ("usage", "usage"), f
    # A rewrite Spark refuses (a misspelled column) is Spark's one-line error, the user's to fix.
    f = failure(verify(tmp_path, sql, tables, rewritten="SELECT nope FROM events"))
    assert (f["code"], f["kind"]) == ("usage", "usage") and "`nope`" in f["message"], f
    # Spark's start and both queries' runs are bounded by --spark-timeout: past it, the driver
    # is stopped (here before Spark has even started) and the command fails in one line.
    f = failure(verify(tmp_path, sql, tables, "--spark-timeout", "1"))
    assert (f["code"], f["kind"]) == ("server", "server") and "--spark-timeout" in f["message"], f


def test_timed_runs_and_a_slower_rewrite(data, tmp_path):
    """--runs 3: the first round gives the rows and warms Spark up, the other two are timed.
    A rewrite given by hand that returns the same rows but also counts 225M pairs first is
    slower than the original by more than the noise measured: exit code 1 with the default
    margin (the legacy --min-gain off only reports it)."""
    sql = "SELECT e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id"
    pairs = "(SELECT count(*) FROM range(15000) a CROSS JOIN range(15000) b WHERE (a.id * 7 + b.id) % 13 = 0) > 0"
    slow = f"{sql} WHERE {pairs}"
    tables = {n: data[n] for n in ["events", "titles"]}
    q, w = tmp_path / "q.sql", tmp_path / "slow.sql"
    q.write_text(sql)
    w.write_text(slow)
    args = [binary(), "verify", "--conf", "spark.sql.adaptive.enabled=false", str(q), "-q", "--engine", "spark",
            "--shuffle-partitions", str(P), "--python", sys.executable, "--rewritten", str(w), "--runs", "3"]
    for name, path in tables.items():
        args += ["--table", f"{name}={path}"]
    p = subprocess.run([*args, "--format", "json"], capture_output=True, text=True, timeout=900)
    assert p.returncode == 1, p.stderr + p.stdout
    v = json.loads(p.stdout)
    assert v["identical"] and v["slower"] and v["runs"] == 3
    b, a = v["measured_before"], v["measured_after"]
    for r in (b, a):
        assert len(r["runs_ms"]) == 2 and r["warmup_ms"] is not None, r
        assert r["wall_ms"] == max(r["runs_ms"]), r  # the median of two: the upper
        assert r["total_task_ms"] == sum(s["task_ms"] for s in r["stages"]) > 0
        assert all(s["task_ms"] >= s["max_task_ms"] for s in r["stages"])
    spread = lambda r: max(r["runs_ms"]) - min(r["runs_ms"])
    assert v["noise_ms"] == max(spread(b), spread(a))
    assert a["wall_ms"] - b["wall_ms"] > v["noise_ms"], v
    # The same runs with the margin off: reported, exit 0.
    p = subprocess.run([*args, "--min-gain", "off", "--format", "json"], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0 and json.loads(p.stdout)["slower"], p.stderr + p.stdout


@pytest.mark.both_lines("AQE's tasks, and verify's runner reading each line's REST API")
def test_the_demo_predicts_the_tasks_spark_runs_with_aqe_on(tmp_path):
    """The README's demo: samples/query.sql under samples/scaled-down.conf (AQE on, its sizes
    scaled to the samples), the rewrite forced. AQE broadcasts titles at run time before and
    after, and reads the events' shuffle where it was written: the largest task predicted before
    and after is the one Spark runs, record for record. (The WHERE's column `day` is filtered on
    before the shuffle, not shuffled: counting its bytes made 2 coalesced tasks too many.)"""
    s = ROOT / "samples"
    args = [binary(), "verify", *ONE_RUN, str(s / "query.sql"), "-q", "--engine", "spark", "--python", sys.executable,
            "--table", f"events={s / 'events.parquet'}", "--table", f"titles={s / 'titles.parquet'}",
            "--spark-defaults", str(s / "scaled-down.conf"), "--cores", "2", "--min-gain", "off", "--format", "json"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr + p.stdout
    v = json.loads(p.stdout)
    assert v["identical"] and v["rows_original"] == 9
    for when in ("before", "after"):
        predicted = v[f"predicted_{when}"]
        stages = v[f"measured_{when}"]["stages"]
        join = max(stages, key=lambda st: st["max_task_records"])
        assert (predicted["max_task_rows"], predicted["median_task_rows"]) == (join["max_task_records"], join["median_task_records"]), (when, predicted, join)


@pytest.fixture(scope="module")
def replay_data(tmp_path_factory):
    """A join whose tasks take real time on this machine: 1.2M facts in 6 files, 20% of them one
    key, against a 200k-row dimension (over the broadcast threshold, so it is shuffled)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    d = tmp_path_factory.mktemp("replay")
    g = np.random.default_rng(5)
    n = 1_200_000
    k = g.integers(1, 200_001, n)
    k[g.random(n) < 0.2] = 7
    facts = pa.table({"k": k, "v": g.random(n)})
    (d / "facts").mkdir()
    for i in range(6):
        pq.write_table(facts.slice(i * n // 6, n // 6), d / "facts" / f"part-{i}.parquet")
    pq.write_table(pa.table({"k": np.arange(1, 200_001), "g": g.integers(0, 20, 200_000)}), d / "dim.parquet")
    return {"facts": str(d / "facts"), "dim": str(d / "dim.parquet")}


def replayed(tmp_path, data, master):
    """verify on `master` with a cluster of 8 cores' parallelism (the same tasks on local[1]
    and local[2]), a warm-up and one timed run; its JSON."""
    q = tmp_path / "q.sql"
    q.write_text("SELECT d.g, count(*) AS n, sum(f.v) AS v FROM facts f JOIN dim d ON f.k = d.k GROUP BY d.g")
    args = [binary(), "verify", str(q), "-q", "--engine", "spark", "--python", sys.executable, "--master", master,
            "--table", f"facts={data['facts']}", "--table", f"dim={data['dim']}", "--cores", "8",
            "--broadcast-threshold", "1MB", "--min-gain", "off", "--runs", "2", "--format", "json"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr + p.stdout
    v = json.loads(p.stdout)
    assert v["identical"], v
    return v


def test_the_replay_on_1_and_2_cores_is_what_local_1_and_local_2_measure(replay_data, tmp_path):
    """The queries' tasks replayed in Spark's order (src/replay.rs): each run's own tasks on its
    own cores give its measured time within 15%, fewer cores never replay faster and more never
    slower, and the cluster's size (--cores 8) is named where it came from, its times the
    replay's at 8 cores. A run replayed on the other's cores is printed, not asserted: on this
    machine two tasks at once slow each other up to 2x, and the replay takes each task's time as
    measured (docs/cost-model.md)."""
    one = replayed(tmp_path, replay_data, "local[1]")
    two = replayed(tmp_path, replay_data, "local[2]")
    within = lambda got, want: abs(got - want) <= 0.15 * want  # noqa: E731
    at = lambda v, when, cores: next(r["wall_ms"] for r in v["timing"][when]["replayed"] if r["cores"] == cores)  # noqa: E731
    for v, cores in ((one, 1), (two, 2)):
        t = v["timing"]
        assert t["here_cores"] == cores and t["cluster"]["cores"] == 8 and t["cluster"]["source"] == "flag", t
        for when in ("before", "after"):
            x = t[when]
            assert x["measured_ms"] == v[f"measured_{when}"]["wall_ms"]
            assert within(x["replayed_here_ms"], x["measured_ms"]), (cores, when, x)
            assert x["cluster_ms"] == at(v, when, 8)
            assert at(v, when, 1) >= at(v, when, 2) >= at(v, when, 8), x
            assert x["task_ms"] == v[f"measured_{when}"]["total_task_ms"]
    for when in ("before", "after"):
        print(f"replay across cores ({when}): local[2]'s tasks on 1 core {at(two, when, 1)} ms, local[1] measured "
              f"{one['timing'][when]['measured_ms']} ms; local[1]'s on 2 cores {at(one, when, 2)} ms, local[2] "
              f"measured {two['timing'][when]['measured_ms']} ms")
