"""`skewjoin diagnose` on event logs written by real Spark: tests/py/eventlogs.py runs each
scenario as its own Spark application (in its own process, since this one already holds a
Spark session), then every log is diagnosed. The hot-key case also runs the `skewjoin plan`
command the diagnosis hands over, on the tables the physical plan names."""
import json
import shlex
import subprocess
import sys

import pytest

from conftest import ROOT, binary, run


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("eventlogs")
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "py" / "eventlogs.py"), str(d)], capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def diag(path):
    # These applications run stages of seconds on small data: the rule that flags only stages
    # of 10 s or more (tested on synthetic logs) is set to 0 here.
    p = run("diagnose", path, "--format", "json", "--min-stage-seconds", "0")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def kinds(d):
    return [f["kind"] for f in d["findings"]]


def why(d):
    return [(c["kind"], c["confirmed"], c["numbers"]) for c in d["checks"]]


def test_hot_null_join_names_the_join_and_the_next_command(logs):
    d = diag(logs["hot_null_join"])
    assert "hot_key" in kinds(d), why(d)
    f = next(f for f in d["findings"] if f["kind"] == "hot_key")
    j = f["join"]
    assert j["join_type"] == "LeftOuter" and j["operator"] == "SortMergeJoin"
    assert j["left_table"].endswith(".parquet") and "events" in j["left_table"] and "titles" in j["right_table"]
    plan_cmd = next(c for c in f["next_commands"] if c.startswith("skewjoin plan"))
    assert "--how left" in plan_cmd and "--on title_id" in plan_cmd and "--shuffle-partitions 16" in plan_cmd
    # The hand-over works: the command runs and finds the NULL keys of the preserved side.
    args = shlex.split(plan_cmd)[1:] + ["--format", "json", "-q"]
    p = subprocess.run([binary(), *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    assert any(h["class"] == "null" for h in plan["hot_keys"]), plan["hot_keys"]
    # The stage's largest task is the one that read the NULL keys: 40% of the rows.
    s = next(s for s in d["stages"] if s["stage_id"] == f["stage_id"])
    assert s["task_summary"]["shuffle_read_records"]["max"] >= 5 * s["task_summary"]["shuffle_read_records"]["median"]


@pytest.mark.parametrize("scenario,kind", [
    ("tiny_files", "tiny_tasks"),
    ("spill", "memory_pressure"),
    ("even_volume", "shuffle_volume"),
    ("python_udf", "slow_code"),
])
def test_causes(logs, scenario, kind):
    d = diag(logs[scenario])
    assert kind in kinds(d), why(d)
    assert "hot_key" not in kinds(d), why(d)
    if kind == "slow_code":
        assert "EvalPython" in next(f for f in d["findings"] if f["kind"] == kind)["evidence"]


@pytest.mark.parametrize("codec", ["zstd", "lz4", "snappy", "lzf", "rolling"])
def test_compressed_and_rolling_logs(logs, codec):
    d = diag(logs[codec])
    assert d["app"]["codec"] == ("none" if codec == "rolling" else codec) or codec == "rolling"
    if codec == "rolling":
        assert d["app"]["files"] >= 1
    assert "hot_key" in kinds(d), why(d)
    assert not d["warnings"] or all("cut short" not in w for w in d["warnings"]), d["warnings"]


def test_truncated_real_log(logs, tmp_path):
    src = logs["hot_null_join"]
    data = open(src, "rb").read()
    cut = tmp_path / "cut"
    cut.write_bytes(data[: len(data) * 6 // 10])
    d = diag(cut)
    assert any("cut short" in w for w in d["warnings"]), d["warnings"]
    # Compressed and cut: the stream error is a warning too, not a failure.
    zs = open(logs["zstd"], "rb").read()
    cutz = tmp_path / "cut.zstd"
    cutz.write_bytes(zs[: len(zs) * 6 // 10])
    p = run("diagnose", cutz)
    assert p.returncode == 0 and "warning" in p.stdout, p.stderr


def test_rolling_folder_of_several_files_reads_as_one_log(logs, tmp_path):
    src = open(logs["hot_null_join"], "rb").read().splitlines(keepends=True)
    folder = tmp_path / "eventlog_v2_app-1"
    folder.mkdir()
    third = len(src) // 3
    for i, part in enumerate([src[:third], src[third:2 * third], src[2 * third:]], start=1):
        (folder / f"events_{i}_app-1").write_bytes(b"".join(part))
    (folder / "appstatus_app-1").write_bytes(b"")
    whole, rolled = diag(logs["hot_null_join"]), diag(folder)
    assert rolled["app"]["files"] == 3 and not rolled["warnings"], rolled["warnings"]
    assert rolled["stages"] == whole["stages"] and rolled["findings"] == whole["findings"]
