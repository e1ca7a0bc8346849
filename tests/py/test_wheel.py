"""The wheel, as a user installs it: built once (scripts/wheel; the test suite's run gives it
in $SKEWJOIN_WHEEL), installed into a fresh venv outside the repository (no target/, no
python/ on the path, no SKEWJOIN_BIN), then:

- the `skewjoin` command it installs gives the same output as the build under test;
- every API function returns the CLI's JSON on the samples, with typed fields that read it;
- the bad-input paths raise SkewjoinError with the CLI's one-line message, its code and kind, and exit code;
- the example notebook runs end to end in a real Jupyter kernel (nbclient), each cell's output
  checked, the HTML render of plan and verify included, and its `skew_join` section on a local
  Spark (the test run's pyspark, made visible to the venv as a user's installed pyspark is).
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, binary
import synthlogs

# What the venv gets besides the wheel: the optional converters and a Jupyter kernel.
EXTRAS = ["pyarrow>=15", "pandas>=2", "nbclient>=0.10", "ipykernel>=6"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    given = os.environ.get("SKEWJOIN_WHEEL")
    if given:
        return pathlib.Path(given)
    out = tmp_path_factory.mktemp("wheel")
    p = subprocess.run([str(ROOT / "scripts" / "wheel"), "--profile", "dev", "--out", str(out)],
                       capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stderr[-2000:]
    return pathlib.Path(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """A fresh venv with the wheel installed, and a work folder holding a copy of samples/."""
    home = tmp_path_factory.mktemp("user")
    env_dir = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
    py = env_dir / "bin" / "python"
    p = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel), *EXTRAS],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    # The notebook's skew_join section needs pyspark: this run's own (and py4j), not installed
    # again from the network, seen by the venv through a .pth file of their folder.
    import py4j
    import pyspark
    shared = home / "pyspark-packages"
    shared.mkdir()
    for pkg in (pyspark, py4j):
        (shared / pkg.__name__).symlink_to(pathlib.Path(pkg.__file__).parent)
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    (site / "pyspark-of-the-test-run.pth").write_text(f"{shared}\n")
    shutil.copytree(ROOT / "samples", home / "samples")
    shutil.copytree(ROOT / "examples", home / "examples")
    return env_dir, home


def user_env():
    """The environment of a user's shell: no pointer to the repository's build or sources."""
    env = {k: v for k, v in os.environ.items() if k not in ("SKEWJOIN_BIN", "PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    return env


def in_venv(venv, code, timeout=600):
    """Runs Python `code` in the venv, from the work folder; its stdout as JSON."""
    env_dir, home = venv
    p = subprocess.run([str(env_dir / "bin" / "python"), "-c", textwrap.dedent(code)], cwd=home,
                       env=user_env(), capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def cli_json(*args, cwd=None):
    """The build under test's JSON for `args` (run from `cwd`)."""
    p = subprocess.run([binary(), *args, "--format", "json", "-q"], capture_output=True, text=True, timeout=600, cwd=cwd)
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


def test_the_wheel_installs_the_command_and_the_package(venv):
    env_dir, home = venv
    sj = env_dir / "bin" / "skewjoin"
    version = subprocess.run([str(sj), "--version"], capture_output=True, text=True, env=user_env()).stdout.split()[-1]
    cargo_version = next(l.split('"')[1] for l in (ROOT / "Cargo.toml").read_text().splitlines() if l.startswith("version"))
    assert version == cargo_version
    got = in_venv(venv, """
        import json, skewjoin
        print(json.dumps({"version": skewjoin.__version__, "binary": skewjoin.binary(), "file": skewjoin.__file__}))""")
    assert got["version"] == cargo_version
    assert got["binary"] == str(sj)
    assert not got["file"].startswith(str(ROOT)), got["file"]
    # The installed command and the build under test print the same report.
    args = ["keys", "samples/events.parquet", "-c", "title_id", "--top", "5", "-q"]
    mine = subprocess.run([str(sj), *args], cwd=home, capture_output=True, text=True, env=user_env())
    theirs = subprocess.run([binary(), *args], cwd=home, capture_output=True, text=True)
    assert mine.returncode == 0 and mine.stdout == theirs.stdout


def test_the_wheel_is_manylinux_as_auditwheel_reads_its_binary(wheel):
    """PyPA's auditwheel reads the binary's versioned glibc symbols and external libraries:
    the tag it allows is the wheel's own, and the binary needs no library but the system's."""
    tag = wheel.name.split("-")[-1].removesuffix(".whl")
    assert tag.startswith("manylinux_") and tag.endswith("_x86_64"), wheel.name
    auditwheel = pathlib.Path(sys.executable).parent / "auditwheel"
    p = subprocess.run([str(auditwheel), "show", str(wheel)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = " ".join(p.stdout.split())
    assert f'consistent with the following platform tag: "{tag}"' in out, out
    assert "system-provided shared libraries" in out and "external shared libraries" not in out, out


SETTINGS = ["--spark-defaults", "samples/scaled-down.conf", "--cores", "2", "--min-gain", "off"]
TABLES = ["--table", "events=samples/events.parquet", "--table", "titles=samples/titles.parquet"]


def test_each_function_returns_the_cli_json(venv, tmp_path):
    env_dir, home = venv
    log = tmp_path / "hot_key.log"
    synthlogs.worked_hot_key(str(log))
    got = in_venv(venv, f"""
        import json, skewjoin
        s = dict(spark_defaults="samples/scaled-down.conf", cores=2, min_gain="off")
        t = {{"events": "samples/events.parquet", "titles": "samples/titles.parquet"}}
        sql = open("samples/query.sql").read()
        k = skewjoin.keys("samples/events.parquet", ["title_id", "user_id"], top=5, exact_distinct=True)
        p = skewjoin.plan("samples/events.parquet", "samples/titles.parquet", on="title_id", how="left", **s)
        w = skewjoin.plan("samples/events.parquet", partition_by=["title_id"], shape="top-3")
        q = skewjoin.rewrite(sql, tables=t, **s)
        v = skewjoin.verify(sql, tables=t, engine="polars", **s)
        d = skewjoin.diagnose({str(log)!r})
        f = skewjoin.fix({str(log)!r})
        arrow = k.to_arrow()
        print(json.dumps({{
            "keys": k.data, "plan": p.data, "window": w.data, "rewrite": q.data, "verify": v.data, "diagnose": d.data, "fix": f.data,
            "typed": {{
                "keys": [k.columns[0].column, k.columns[0].rows, k.columns[0].nulls, k.columns[0].top[1].value,
                         k.columns[0].top[1].count, k.columns[0].top[1].category, k.columns[0].top[1].hot],
                "plan": [p.how, p.before.max_task_rows, p.after.max_task_rows, p.decision.code, len(p.hot_keys),
                         p.hot_keys[0].category, p.left.rows, [s.key for s in p.settings][:3]],
                "window": [type(w).__name__, w.verdict, w.before.max_task_rows],
                "rewrite": [q.sql, q.changed, [j.status for j in q.joins], q.changes[0].after.max_task_rows],
                "verify": [bool(v), v.identical, v.rows_original, v.predicted_before.max_task_rows, v.measured_before.rows],
                "diagnose": [d.findings[0].kind, d.findings[0].stage_id, d.app["id"]],
                "fix": [type(f).__name__, f.no_query, f.query, f.sql, f.diagnosis["app"]["id"]],
                "arrow": [arrow.num_rows, arrow.column_names, arrow.column("count").to_pylist()[:2]],
                "pandas": list(k.to_pandas()["count"][:2]),
                "text": [str(k).splitlines()[0], str(p).splitlines()[0], str(q).splitlines()[0]],
                "html": [p._repr_html_()[:15], "<svg" in p._repr_html_(), v._repr_html_()[:15], k._repr_html_()[:5]],
            }},
        }}, default=str))""")
    cli = {
        "keys": cli_json("keys", "samples/events.parquet", "-c", "title_id", "-c", "user_id", "--top", "5", "--exact-distinct", cwd=home),
        "plan": cli_json("plan", "--left", "samples/events.parquet", "--right", "samples/titles.parquet", "--on", "title_id",
                         "--how", "left", *SETTINGS, cwd=home),
        "window": cli_json("plan", "--left", "samples/events.parquet", "--partition-by", "title_id", "--shape", "top-3", cwd=home),
        "rewrite": cli_json("rewrite", "samples/query.sql", *TABLES, *SETTINGS, cwd=home),
        "diagnose": cli_json("diagnose", str(log)),
        "fix": cli_json("fix", str(log)),
    }
    for name, want in cli.items():
        assert got[name] == want, name
    verify = cli_json("verify", "samples/query.sql", *TABLES, *SETTINGS, "--engine", "polars", cwd=home)
    for field in ("identical", "rows_original", "rows_rewritten", "predicted_before", "predicted_after", "engine"):
        assert got["verify"][field] == verify[field], field

    t = got["typed"]
    col = cli["keys"]["columns"][0]
    assert t["keys"] == ["title_id", col["rows"], col["nulls"], col["top"][1]["value"], col["top"][1]["count"],
                         col["top"][1]["class"], col["top"][1]["value"] in col["verdict"]["hot"]]
    plan = cli["plan"]
    assert t["plan"] == ["left", plan["before"]["max_task_rows"], plan["after"]["max_task_rows"], plan["decision"]["code"],
                         len(plan["hot_keys"]), plan["hot_keys"][0]["class"], plan["left"]["rows"],
                         [s["key"] for s in plan["settings"]][:3]]
    assert t["window"] == ["WindowPlanReport", cli["window"]["verdict"], cli["window"]["before"]["max_task_rows"]]
    rw = cli["rewrite"]
    assert t["rewrite"] == [rw["sql"], True, [j["status"] for j in rw["joins"]], rw["changes"][0]["after"]["max_task_rows"]]
    assert t["verify"][:3] == [True, True, verify["rows_original"]]
    assert t["verify"][3] == verify["predicted_before"]["max_task_rows"]
    assert t["diagnose"] == [cli["diagnose"]["findings"][0]["kind"], cli["diagnose"]["findings"][0]["stage_id"], cli["diagnose"]["app"]["id"]]
    assert t["fix"] == ["FixReport", cli["fix"]["no_query"], None, None, cli["diagnose"]["app"]["id"]]
    assert t["arrow"][0] == 10 and t["arrow"][1][:4] == ["column", "rank", "value", "count"]
    assert t["arrow"][2] == [v["count"] for v in col["top"][:2]] == t["pandas"]
    assert t["text"][0].startswith("title_id (")
    assert t["text"][1] == "events LEFT OUTER JOIN titles ON events.title_id = titles.title_id"
    assert t["text"][2].startswith("-- skewjoin:")
    assert t["html"] == ["<!DOCTYPE html>", True, "<!DOCTYPE html>", "<pre>"]


@pytest.mark.parametrize("call,code,kind", [
    ('skewjoin.keys("samples/missing.parquet", "title_id")', "not_found", "usage"),
    ('skewjoin.plan("samples/events.parquet", "samples/titles.parquet", on="nope")', "no_column", "usage"),
    ('skewjoin.rewrite("SELEC x FROM t", tables={"t": "samples/titles.parquet"})', "usage", "usage"),
    ('skewjoin.plan("samples/events.parquet", "samples/titles.parquet", on="title_id", no_such_option=1)', "usage", "usage"),
    ('skewjoin.keys("samples/query.sql", "title_id")', "bad_file", "data"),
])
def test_errors_raise_with_the_cli_code_and_message(venv, call, code, kind):
    env_dir, home = venv
    got = in_venv(venv, f"""
        import json, skewjoin
        try:
            {call}
            print(json.dumps(None))
        except skewjoin.SkewjoinError as e:
            print(json.dumps([e.message, e.exit_code, str(e), e.code, e.kind]))""")
    assert got is not None, "no exception"
    msg, exit_code, text, got_code, got_kind = got
    assert (exit_code, got_code, got_kind) == (2, code, kind) and msg == text and msg and "\n" not in msg


def test_the_example_notebook_runs_in_a_jupyter_kernel(venv):
    env_dir, home = venv
    got = in_venv(venv, """
        import json, nbformat
        from nbclient import NotebookClient
        nb = nbformat.read("examples/skewjoin.ipynb", as_version=4)
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": "examples"}}).execute()
        out = []
        for c in nb.cells:
            if c.cell_type != "code":
                continue
            text = "".join(o.get("text", "") for o in c.outputs if o.output_type == "stream")
            data = {}
            for o in c.outputs:
                data.update(o.get("data", {}))
            out.append({"stream": text, "html": data.get("text/html", ""), "errors": [o.get("ename") for o in c.outputs if o.output_type == "error"]})
        print(json.dumps(out))""", timeout=900)
    assert all(not c["errors"] for c in got), [c["errors"] for c in got]
    version, keys, keys_frame, plan, plan_line, rewrite, verify, verify_line, sj, sj_code, sj_tasks, _ = got
    assert version["stream"].strip() == subprocess.run([binary(), "--version"], capture_output=True, text=True).stdout.split()[-1]
    col = cli_json("keys", "samples/events.parquet", "-c", "title_id", "--top", "6", cwd=venv[1])["columns"][0]
    assert keys["stream"].startswith(f"title_id (string): {col['rows']:,} rows, {col['nulls']:,} NULL")
    assert "<table" in keys_frame["html"] and f"{col['top'][1]['count']}" in keys_frame["html"]
    # plan and verify render as their --html pages (inline SVG charts).
    assert plan["html"].startswith("<!DOCTYPE html>") and "<svg" in plan["html"]
    p = cli_json("plan", "--left", "samples/events.parquet", "--right", "samples/titles.parquet", "--on", "title_id", "--how", "left",
                 "--spark-defaults", "samples/scaled-down.conf", "--cores", "2", cwd=venv[1])
    assert plan_line["stream"].split() == [p["decision"]["code"], str(p["before"]["max_task_rows"]),
                                           str(p["after"]["max_task_rows"]), str(len(p["hot_keys"]))]
    assert rewrite["stream"].startswith("['rewritten']")
    assert verify["html"].startswith("<!DOCTYPE html>")
    v = cli_json("verify", "samples/query.sql", *TABLES, *SETTINGS, "--engine", "polars", cwd=venv[1])
    assert verify_line["stream"].split() == ["True", str(v["rows_original"]), str(v["rows_rewritten"]),
                                             str(v["predicted_before"]["max_task_rows"]), str(v["predicted_after"]["max_task_rows"])]
    # skew_join: counted here from the files, rewritten; the code it ran is printed; both joins
    # give the same rows, and the largest task is the plain join's NULL partition, gone after.
    assert sj["stream"].split() == ["True", "files", "rewrite", str(len(p["hot_keys"]))], sj["stream"]
    assert "def left_join_right(left: DataFrame, right: DataFrame) -> DataFrame:" in sj_code["stream"]
    same, rows_before, rows_after, before, after = sj_tasks["stream"].split()
    assert same == "True" and rows_before == rows_after == "200000", sj_tasks["stream"]
    assert int(before) == p["before"]["max_task_rows"] and int(after) * 10 < int(before), sj_tasks["stream"]
    assert "<table" in sj_tasks["html"] and "plain join" in sj_tasks["html"] and "skew_join" in sj_tasks["html"]
