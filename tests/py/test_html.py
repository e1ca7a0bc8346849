"""`--html FILE` of `diagnose` and `plan` (verify's is in test_verify_spark.py), opened in a
real headless browser: Debian's Chromium, started here with no network, renders each page
to a PNG and dumps the DOM it built. Checked: the charts' bars are in the DOM (one per
partition or task, the hot ones marked), the screenshot shows them (the hot bars' red is
there), the console has no errors, nothing from the input is ever markup, and the terminal's
one-line task histogram. Without Chromium these tests skip, except under CI (.ci/run installs
it), where they fail.

SKEWJOIN_SCREENSHOTS=1 also copies the samples' screenshots to docs/img/."""
import json
import subprocess

import synthlogs
from conftest import ROOT, binary, legacy, run

from browser import open_in_browser, red_pixels, require_chromium

require_chromium()


def test_plan_html_shows_partitions_before_and_after(tmp_path):
    html = tmp_path / "plan.html"
    s = ROOT / "samples"
    p = run("plan", "--left", s / "events.parquet", "--right", s / "titles.parquet", "--on", "title_id", "--how", "left",
            "--broadcast-threshold", "256KB", "--html", html, "--format", "json", "-q")
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    dom, img = open_in_browser(tmp_path, html, "plan")
    # One bar per shuffle partition before, and per task after (partitions, then salted pieces).
    before, after = dom.split("rows per task after")[0], dom.split("rows per task after")[-1]
    assert before.count('<rect class="bar') == plan["shuffle_partitions"]
    assert after.count('<rect class="bar') >= plan["shuffle_partitions"]
    hot_parts = {h["spark_partition"] for h in plan["hot_keys"]}
    assert before.count('class="bar hot"') == len(hot_parts)
    assert f"partition 42: NULL ({plan['before']['max_task_rows']:,} rows)" in dom
    assert red_pixels(img) > 50
    assert "<script" not in dom


def test_diagnose_html_timeline_tasks_and_findings(tmp_path):
    log = tmp_path / "hot"
    synthlogs.worked_hot_key(log)
    html = tmp_path / "diagnose.html"
    p = run("diagnose", log, "--html", html)
    assert p.returncode == 0, p.stderr
    dom, img = open_in_browser(tmp_path, html, "diagnose")
    # The timeline (4 stages), the slow stage's 200 tasks with the hot one red, the histogram.
    assert dom.count("stages over the wall clock") >= 1 and dom.count("<title>stage ") == 4
    tasks = dom.split("per task of stage 2")[-1].split("task durations")[0]
    assert tasks.count('<rect class="bar') == 200 and tasks.count('class="bar hot"') == 1
    assert "task 173: the largest (138,691,652 shuffle records)" in dom
    assert "1 task(s) of" in dom and "hot_key (stage 2)" in dom
    assert red_pixels(img) > 200


def test_input_is_never_markup(tmp_path):
    """A log is input like any other: names that carry markup come out as text."""
    src = tmp_path / "hot"
    synthlogs.worked_hot_key(src)
    evil = '<script>alert(1)</script><img src=x onerror=alert(2)></svg><b>'
    lines = []
    for line in src.read_text().splitlines():
        e = json.loads(line)
        if e["Event"] == "SparkListenerApplicationStart":
            e["App Name"] = evil
        if "Stage Info" in e:
            e["Stage Info"]["Stage Name"] = evil
        lines.append(json.dumps(e, separators=(",", ":")))
    log = tmp_path / "evil"
    log.write_text("\n".join(lines) + "\n")
    html = tmp_path / "evil.html"
    assert run("diagnose", log, "--html", html).returncode == 0
    text = html.read_text()
    assert "<script" not in text and "<img" not in text and "</svg><b>" not in text
    dom, _ = open_in_browser(tmp_path, html, "evil")
    assert "<script" not in dom and "<img" not in dom and "&lt;script&gt;alert(1)" in dom


def test_html_cannot_be_written(tmp_path):
    s = ROOT / "samples"
    p = run("plan", "--left", s / "events.parquet", "--right", s / "titles.parquet", "--on", "title_id",
            "--html", tmp_path / "no" / "such" / "dir.html", "-q")
    assert p.returncode == 2 and "cannot read" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_terminal_gets_a_one_line_task_histogram(tmp_path):
    """On a terminal (a pty here), diagnose and plan add a line of block characters."""
    log = tmp_path / "hot"
    synthlogs.worked_hot_key(log)
    s = ROOT / "samples"
    for args, want in [(["diagnose", str(log)], "shuffle records per task, task 0 to 199: "),
                       (["plan", "--left", str(s / "events.parquet"), "--right", str(s / "titles.parquet"), "--on", "title_id", "-q"],
                        "rows per partition, 0 to 199: ")]:
        cmd = " ".join([binary(), *legacy(args)])
        out = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True, timeout=120).stdout
        line = next((l for l in out.splitlines() if want in l), None)
        assert line and "█" in line and "▁" in line, out[-2000:]
        # Piped output stays as it was: no such line.
        assert want not in run(*args).stdout
