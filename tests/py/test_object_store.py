"""Tables in an S3-compatible object store: moto's own server on the loopback interface holds
the samples, a Hive-partitioned folder and the corrupt files of parquet-testing; `keys`, `plan`
and `rewrite` over s3:// give what they give over the same files on disk, fetch only the key
columns, and end a failure (no bucket, no object, a server that keeps failing or stalls) in one
line with exit code 2 and no secret in it. A small proxy in front of the server injects the
faults: it is the network between the tool and the real store, not a stand-in for the store."""
import http.client
import http.server
import json
import os
import re
import shutil
import socket
import socketserver
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import synthlogs
from conftest import CORPUS, ROOT, SECRET, failure, free_port, run, sj, upload

BUCKET = "lake"
SAMPLES = ROOT / "samples"


@pytest.fixture(scope="module")
def s3(moto_s3, tmp_path_factory):
    """The bucket filled; yields (endpoint, local mirror)."""
    endpoint, client = moto_s3
    client.create_bucket(Bucket=BUCKET)
    local = tmp_path_factory.mktemp("lake")
    make_tables(local)
    for p in sorted(local.rglob("*")):
        if p.is_file():
            client.upload_file(str(p), BUCKET, p.relative_to(local).as_posix())
    yield endpoint, local


def make_tables(local):
    """samples/, a Hive-partitioned copy of events (with Spark's marker and checksum files) and
    parquet-testing's bad_data/."""
    shutil.copytree(SAMPLES, local / "samples", ignore=shutil.ignore_patterns("*.py", "*.sql"))
    events = pq.read_table(SAMPLES / "events.parquet")
    device = events.column("device") if "device" in events.column_names else None
    hive = local / "hive"
    col = "device" if device is not None else events.column_names[-1]
    for i, value in enumerate(sorted(set(events.column(col).to_pylist()), key=str)):
        part = events.filter(pa.compute.equal(events.column(col), value)) if value is not None else \
            events.filter(pa.compute.is_null(events.column(col)))
        folder = hive / f"{col}={value if value is not None else '__HIVE_DEFAULT_PARTITION__'}"
        folder.mkdir(parents=True)
        pq.write_table(part.drop([col]), folder / f"part-{i:05d}.snappy.parquet", row_group_size=20000)
        (folder / f".part-{i:05d}.snappy.parquet.crc").write_bytes(b"crc")
    (hive / "_SUCCESS").write_bytes(b"")
    shutil.copytree(CORPUS / "bad_data", local / "bad_data")
    # Few row groups of many pages, with and without the offset index: --sample draws pages.
    for name, index in [("paged_index.parquet", True), ("paged.parquet", False)]:
        pq.write_table(events, local / "samples" / name, row_group_size=50_000, data_page_size=8192,
                       write_page_index=index)
    # Spark's escaped partition folder names (a value with '/' and '='): keys as they are.
    for i, value in enumerate(["a%2Fb", "c%3Dd", "plain"]):
        (local / "escaped" / f"k={value}").mkdir(parents=True)
        pq.write_table(events.slice(i * 1000, 1000), local / "escaped" / f"k={value}" / "part-00000.parquet")
    # A warehouse for --tables: one table as a file, one as a folder in another case.
    (local / "wh" / "Titles").mkdir(parents=True)
    shutil.copy(SAMPLES / "events.parquet", local / "wh" / "events.parquet")
    shutil.copy(SAMPLES / "titles.parquet", local / "wh" / "Titles" / "part-00000.parquet")


def ok(p):
    assert p.returncode == 0, p.stderr
    return p.stdout


def same_json(remote, local, prefix, root):
    """The remote JSON is the local one, but for paths (s3 URL for local path) and `io`."""
    r = json.loads(remote)
    io = r.pop("io")
    assert "io" not in json.loads(local)
    r2 = json.loads(remote.replace(prefix, str(root)))
    r2.pop("io")
    assert r2 == json.loads(local)
    return io


def make_delta(folder):
    """A Delta table of three commits by delta-rs: two appends and an overwrite of one shard."""
    import pyarrow as pa
    from deltalake import write_deltalake
    for i, mode in enumerate(["append", "append", "overwrite"]):
        t = pa.table({"k": [f"k{(j * 7 + i) % 13}" if j % 5 else "hot" for j in range(2000)],
                      "shard": [i % 2] * 2000})
        write_deltalake(str(folder), t, mode=mode, partition_by=["shard"],
                        predicate="shard = 0" if mode == "overwrite" else None)


def keys_like_disk(runner, url, local):
    """`keys` over the store (`runner`, at `url`) gives what it gives over the mirror on disk."""
    for name, column in [("samples/events.parquet", "title_id"), ("samples/titles.parquet", "title_id"), ("hive", "user_id")]:
        args = ["--column", column, "--format", "json", "--quiet"]
        remote = ok(runner("keys", f"{url}/{name}", *args))
        disk = ok(run("keys", local / name, *args))
        io = same_json(remote, disk, url, local)
        assert io["requests"] > 0 and io["bytes"] > 0


def delta_like_disk(runner, root, local):
    """The Delta table of `make_delta`, read from the store as from disk."""
    args = ["--column", "k", "--column", "shard", "--format", "json", "-q"]
    remote = json.loads(ok(runner("keys", f"{root}/delta", *args)))
    disk = json.loads(run("keys", local / "delta", *args, check=True).stdout)
    assert remote.pop("io")["requests"] > 0
    assert remote.pop("table_notes", []) == [n.replace(str(local / "delta"), f"{root}/delta") for n in disk.pop("table_notes", [])]
    assert remote == disk
    # The overwrite of shard 0 removed the first commit's file: 4,000 live rows, not 6,000.
    assert remote["columns"][0]["rows"] == 4000


def plan_and_rewrite_like_disk(runner, root, local):
    """`plan` of the samples and `rewrite --tables` of the sample query, from the store as
    from disk."""
    def plan(events, titles, run_):
        return ok(run_("plan", "--left", events, "--right", titles, "--on", "title_id", "--how", "left", "--format", "json", "-q",
                       "--broadcast-threshold", "256KB"))
    same_json(plan(f"{root}/samples/events.parquet", f"{root}/samples/titles.parquet", runner),
              plan(local / "samples/events.parquet", local / "samples/titles.parquet", run), root, local)
    remote = ok(runner("rewrite", SAMPLES / "query.sql", "--tables", f"{root}/wh/", "--broadcast-threshold", "256KB", "-q"))
    disk = ok(run("rewrite", SAMPLES / "query.sql", "--tables", local / "wh", "--broadcast-threshold", "256KB", "-q"))
    assert remote.replace(root, str(local)) == disk
    assert "__sj1" in disk


def test_keys_over_s3_count_what_the_files_on_disk_count(s3):
    endpoint, local = s3
    for name, column in [("samples/events.parquet", "title_id"), ("samples/titles.parquet", "title_id"), ("hive", "user_id")]:
        args = ["--column", column, "--format", "json", "--quiet"]
        remote = ok(sj(endpoint, "keys", f"s3://{BUCKET}/{name}", *args))
        disk = ok(sj(endpoint, "keys", local / name, *args))
        io = same_json(remote, disk, f"s3://{BUCKET}", local)
        assert io["requests"] > 0 and io["bytes"] > 0


def test_a_hive_partition_column_read_from_object_names(s3):
    endpoint, local = s3
    col = next(p.name.split("=")[0] for p in (local / "hive").iterdir() if "=" in p.name)
    remote = ok(sj(endpoint, "keys", f"s3a://{BUCKET}/hive/", "--column", col, "--format", "csv", "--quiet"))
    assert remote == ok(sj(endpoint, "keys", local / "hive", "--column", col, "--format", "csv", "--quiet"))
    # A glob over object names, as over files.
    remote = ok(sj(endpoint, "keys", f"s3://{BUCKET}/hive/{col}=*/part-*.parquet", "--column", "user_id", "--format", "csv", "--quiet"))
    assert remote == ok(sj(endpoint, "keys", f"{local}/hive/{col}=*/part-*.parquet", "--column", "user_id", "--format", "csv", "--quiet"))


def test_escaped_partition_folders_are_read_as_named(s3):
    endpoint, local = s3
    args = ["--column", "k", "--column", "title_id", "--format", "csv", "-q"]
    remote = ok(sj(endpoint, "keys", f"s3://{BUCKET}/escaped", *args))
    assert remote == ok(sj(endpoint, "keys", local / "escaped", *args))
    assert "a/b" in remote and "c=d" in remote


def test_only_the_key_column_is_fetched(s3):
    endpoint, local = s3
    size = (local / "samples" / "events.parquet").stat().st_size
    meta = pq.ParquetFile(local / "samples" / "events.parquet").metadata
    idx = meta.schema.names.index("title_id")
    key_bytes = sum(meta.row_group(g).column(idx).total_compressed_size for g in range(meta.num_row_groups))
    io = json.loads(ok(sj(endpoint, "keys", f"s3://{BUCKET}/samples/events.parquet", "--column", "title_id", "--format", "json", "-q")))["io"]
    # The key column's chunks and the footer (one 64 KiB read from the end).
    assert io["bytes"] <= key_bytes + 64 * 1024 + 4096, (io, key_bytes, size)
    assert io["bytes"] < size / 2, (io, size)
    assert io["requests"] <= 2 + 2 * meta.num_row_groups, io
    text = ok(sj(endpoint, "keys", f"s3://{BUCKET}/samples/events.parquet", "--column", "title_id", "-q", "--verbose"))
    assert re.search(r"^object stores: \d+ requests, [\d.]+ [KM]B fetched$", text, re.M), text


@pytest.mark.parametrize("name", ["paged_index.parquet", "paged.parquet"])
def test_a_page_sample_costs_no_more_than_the_exact_count(s3, name):
    endpoint, local = s3
    args = ["--column", "user_id", "--format", "json", "-q"]
    exact = json.loads(ok(sj(endpoint, "keys", f"s3://{BUCKET}/samples/{name}", *args)))
    remote = ok(sj(endpoint, "keys", f"s3://{BUCKET}/samples/{name}", *args, "--sample", "0.05"))
    disk = ok(sj(endpoint, "keys", local / "samples" / name, *args, "--sample", "0.05"))
    if name == "paged_index.parquet":
        # The offset index lists the pages: the sample is the one drawn on disk.
        io = same_json(remote, disk, f"s3://{BUCKET}", local)
        assert json.loads(disk)["columns"][0]["sample"]["method"] == "whole pages"
    else:
        # Without it, whole row groups are drawn (4 of these 4): no page header is fetched alone.
        io = json.loads(remote)["io"]
        assert json.loads(remote)["columns"][0]["sample"]["method"] != "whole pages"
    # Page headers are not fetched one request each.
    assert io["requests"] <= exact["io"]["requests"] + 4, (io, exact["io"])
    assert io["bytes"] <= exact["io"]["bytes"] * 1.1, (io, exact["io"])


def test_plan_and_rewrite_over_s3_as_over_disk(s3):
    endpoint, local = s3
    def plan(events, titles):
        return ok(sj(endpoint, "plan", "--left", events, "--right", titles, "--on", "title_id", "--how", "left", "--format", "json", "-q",
                     "--broadcast-threshold", "256KB"))
    same_json(plan(f"s3://{BUCKET}/samples/events.parquet", f"s3://{BUCKET}/samples/titles.parquet"),
              plan(local / "samples/events.parquet", local / "samples/titles.parquet"), f"s3://{BUCKET}", local)
    def rewrite(root):
        return ok(sj(endpoint, "rewrite", SAMPLES / "query.sql", "--table", f"events={root}/samples/events.parquet",
                     "--table", f"titles={root}/samples/titles.parquet", "--broadcast-threshold", "256KB", "-q"))
    remote, disk = rewrite(f"s3://{BUCKET}"), rewrite(local)
    assert remote.replace(f"s3://{BUCKET}", str(local)) == disk
    assert "UNION ALL" in disk or "JOIN" in disk


def test_rewrite_finds_the_querys_tables_in_a_warehouse_folder(s3):
    endpoint, local = s3
    def rewrite(tables):
        return ok(sj(endpoint, "rewrite", SAMPLES / "query.sql", "--tables", tables, "--broadcast-threshold", "256KB", "-q"))
    remote, disk = rewrite(f"s3://{BUCKET}/wh/"), rewrite(local / "wh")
    assert remote.replace(f"s3://{BUCKET}", str(local)) == disk
    assert "__sj1" in disk
    err = one_line_error(sj(endpoint, "rewrite", SAMPLES / "query.sql", "--tables", f"s3://{BUCKET}/nowhere"))
    assert "nowhere" in err, err


def one_line_error(p):
    """The failure's message (held to the one-line contract), with no secret in it."""
    assert SECRET not in p.stderr, p.stderr
    return failure(p)["message"]


def store_failure(p):
    """The failure of a `--format json` run, as (code, kind, message), with no secret in it."""
    assert SECRET not in p.stderr, p.stderr
    f = failure(p)
    return f["code"], f["kind"], f["message"]


def test_missing_bucket_object_and_column(s3):
    endpoint, _ = s3
    def keys(table, column):
        return store_failure(sj(endpoint, "keys", table, "--column", column, "--format", "json"))
    code, kind, message = keys("s3://no-such-bucket/t/", "k")
    assert (code, kind) == ("not_found", "usage") and message.startswith("s3://no-such-bucket/t/"), message
    code, kind, message = keys(f"s3://{BUCKET}/samples/nothing.parquet", "k")
    assert (code, kind) == ("not_found", "usage") and message.startswith(f"s3://{BUCKET}/samples/nothing.parquet"), message
    code, kind, message = keys(f"s3://{BUCKET}/samples/events.parquet", "nope")
    assert (code, kind) == ("no_column", "usage"), message


def test_wrong_endpoint_fails_fast_with_one_line(s3):
    port = free_port()  # nothing listens there
    p = sj(f"http://127.0.0.1:{port}", "keys", f"s3://{BUCKET}/samples/events.parquet", "--column", "title_id",
           timeout=60)
    err = one_line_error(p)
    assert f"s3://{BUCKET}/samples/events.parquet" in err, err


def bad_cases():
    from test_corpus import BAD_FILES, INTACT
    return [p for p in BAD_FILES if p.name not in INTACT]


def bad_file_columns(path):
    """`--column` arguments for a corrupt file: its flat columns the tool reads, else its first."""
    from test_corpus import columns_of, flat, REFUSED
    cols = columns_of(path)
    names = [n for n, t in cols if flat(t) and not any(r in str(t).lower() for r in REFUSED)] if cols else []
    args = []
    for n in names or ([cols[0][0]] if cols else ["x"]):
        args += ["--column", n]
    return args


@pytest.mark.parametrize("path", bad_cases(), ids=lambda p: p.name)
def test_bad_files_from_the_store_end_in_one_line_error(s3, path):
    endpoint, _ = s3
    args = bad_file_columns(path)
    code, kind, err = store_failure(sj(endpoint, "keys", f"s3://{BUCKET}/bad_data/{path.name}", *args, "--format", "json"))
    assert kind == "data" and (path.name in err or code == "bad_column"), (code, kind, err)


class FaultProxy:
    """A loopback HTTP proxy to the store that fails requests as told: `plan` maps a request's
    number (from 1) to 'error' (HTTP 503), 'reset' (the connection closed with no answer),
    'truncate' (half of the body, then closed) or 'stall' (no answer for `stall` seconds)."""

    def __init__(self, upstream, plan, every=None, stall=5.0):
        self.upstream = upstream.removeprefix("http://")
        self.plan, self.every, self.stall = plan, every, stall
        self.count = 0
        self.inflight = self.most_inflight = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                proxy.handle(self, "GET")

            def do_HEAD(self):
                proxy.handle(self, "HEAD")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def handle(self, h, method):
        with self.lock:
            self.count += 1
            self.inflight += 1
            self.most_inflight = max(self.most_inflight, self.inflight)
            fault = self.every or self.plan.get(self.count)
        try:
            self.answer(h, method, fault)
        finally:
            with self.lock:
                self.inflight -= 1

    def answer(self, h, method, fault):
        if fault == "error":
            body = b"<Error><Code>SlowDown</Code><Message>injected</Message></Error>"
            h.send_response(503)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
            return
        if fault == "reset":
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault in ("stall", "delay"):
            threading.Event().wait(self.stall)
        conn = http.client.HTTPConnection(self.upstream, timeout=30)
        headers = {k: v for k, v in h.headers.items() if k.lower() != "host"}
        headers["Host"] = h.headers.get("Host", self.upstream)
        conn.request(method, h.path, headers=headers)
        r = conn.getresponse()
        body = r.read()
        h.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection"):
                h.send_header(k, v)
        h.end_headers()
        if fault == "truncate" and method == "GET" and len(body) > 1:
            h.wfile.write(body[: len(body) // 2])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        h.wfile.write(body)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_failed_requests_are_retried_and_give_the_same_counts(s3):
    endpoint, local = s3
    args = ["keys", f"s3://{BUCKET}/samples/events.parquet", "--column", "title_id", "--format", "csv", "-q"]
    want = ok(sj(endpoint, *args))
    # Requests 1-4: the listing, the footer, the key column (the numbering moves with retries).
    proxy = FaultProxy(endpoint, {1: "error", 2: "reset", 3: "truncate", 5: "error"})
    try:
        assert ok(sj(proxy.endpoint, *args)) == want
        assert proxy.count >= 7
    finally:
        proxy.close()


def test_a_server_that_keeps_failing_ends_in_one_line(s3):
    endpoint, _ = s3
    proxy = FaultProxy(endpoint, {}, every="error")
    try:
        code, kind, err = store_failure(sj(proxy.endpoint, "keys", f"s3://{BUCKET}/samples/events.parquet", "--column", "title_id",
                                           "--format", "json", timeout=90))
        assert (code, kind) == ("store", "server") and "503" in err and f"s3://{BUCKET}/samples/events.parquet" in err, err
    finally:
        proxy.close()


def test_a_stalled_server_times_out(s3):
    endpoint, _ = s3
    proxy = FaultProxy(endpoint, {}, every="stall", stall=20)
    try:
        p = sj(proxy.endpoint, "keys", f"s3://{BUCKET}/samples/events.parquet", "--column", "title_id",
               env={"AWS_TIMEOUT": "500ms"}, timeout=60)
        err = one_line_error(p)
        assert "timed out" in err.lower() or "timeout" in err.lower(), err
    finally:
        proxy.close()


def write_event_logs(folder):
    """A Spark event log of a hot-key join in `folder`: whole (app-1), and as a rolling log
    (eventlog_v2_app-2: a folder of events_N_* files, in index order)."""
    folder.mkdir(exist_ok=True)
    synthlogs.worked_hot_key(folder / "app-1")
    rolling = folder / "eventlog_v2_app-2"
    rolling.mkdir()
    lines = (folder / "app-1").read_text().splitlines(keepends=True)
    half = len(lines) // 2
    (rolling / "events_1_app-2").write_text("".join(lines[:half]))
    (rolling / "events_2_app-2").write_text("".join(lines[half:]))


def test_diagnose_reads_an_event_log_from_the_store(s3, moto_s3, tmp_path):
    endpoint, _ = s3
    _, client = moto_s3
    write_event_logs(tmp_path)
    client.upload_file(str(tmp_path / "app-1"), BUCKET, "logs/app-1")
    upload(client, BUCKET, tmp_path / "eventlog_v2_app-2", "logs/eventlog_v2_app-2/")
    local = json.loads(ok(sj(endpoint, "diagnose", tmp_path / "app-1", "--format", "json")))
    for url in [f"s3://{BUCKET}/logs/app-1", f"s3://{BUCKET}/logs/eventlog_v2_app-2"]:
        remote = json.loads(ok(sj(endpoint, "diagnose", url, "--format", "json")))
        assert remote["findings"] == local["findings"] and remote["stages"] == local["stages"]
    code, kind, err = store_failure(sj(endpoint, "diagnose", f"s3://{BUCKET}/logs/app-9", "--format", "json"))
    assert (code, kind) == ("not_found", "usage") and "app-9" in err, err


@pytest.fixture(scope="module")
def guarded_s3(tmp_path_factory):
    """A second moto server, in its own process, that checks every request against IAM after
    the first 4 (which make a user without permissions, its key, a bucket and an object)."""
    import boto3
    import subprocess
    import sys
    import time
    port = free_port()
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="4")
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        kw = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key=SECRET)
        iam = boto3.client("iam", **kw)
        iam.create_user(UserName="reader")
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        s3 = boto3.client("s3", **kw)
        s3.create_bucket(Bucket="guarded")
        s3.put_object(Bucket="guarded", Key="t/part-0.parquet", Body=(SAMPLES / "titles.parquet").read_bytes())
        yield endpoint, key
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_denied_access_and_a_wrong_key_end_in_one_line(guarded_s3):
    endpoint, key = guarded_s3
    user_secret = key["SecretAccessKey"]
    p = sj(endpoint, "keys", "s3://guarded/t/", "--column", "title_id", "--format", "json",
           env={"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": user_secret})
    code, kind, err = store_failure(p)
    assert (code, kind) == ("access_denied", "usage") and err.startswith("s3://guarded/t/"), err
    assert user_secret not in err and "<Error>" not in err, err
    p = sj(endpoint, "keys", "s3://guarded/t/", "--column", "title_id", "--format", "json",
           env={"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": "wrong-" + user_secret})
    code, kind, err = store_failure(p)
    assert (code, kind) == ("credentials", "usage") and err.startswith("s3://guarded/t/"), err
    assert user_secret not in err, err


def test_a_count_over_a_store_shows_the_bytes_fetched_on_a_terminal(s3):
    """On a terminal (a pseudo-terminal from util-linux's `script`), the count's bar gives the
    rows read and the bytes fetched so far with their rate; off a terminal, or with -q, nothing
    of it is written."""
    import shlex
    import subprocess
    from conftest import binary
    endpoint, _ = s3
    url = f"s3://{BUCKET}/samples/events.parquet"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint)
    def on_tty(*args):
        cmd = " ".join(shlex.quote(str(a)) for a in [binary(), "keys", url, "--column", "title_id", *args])
        return subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True, env=env, timeout=120).stdout
    shown = on_tty()
    assert re.search(r"counting keys .* [\d,]+/200,000 rows, [\d.]+ [KM]?B fetched \([\d.]+ [KM]?B/s\)", shown), shown[:500]
    assert "counting keys" not in on_tty("-q")
    off = sj(endpoint, "keys", url, "--column", "title_id")
    assert off.returncode == 0 and "counting keys" not in off.stderr + off.stdout


def test_key_chunks_are_fetched_several_at_a_time(s3):
    """The key column's chunks of the row groups to count are fetched ahead of the counting
    threads, several requests at a time (each answer delayed 0.2 s by the proxy), and no more
    is fetched than counting them one by one: the same requests and bytes as without delay."""
    endpoint, local = s3
    url = f"s3://{BUCKET}/samples/events.parquet"
    args = ["--column", "user_id", "--format", "json", "-q", "--threads", "1"]
    plain = json.loads(ok(sj(endpoint, "keys", url, *args)))
    proxy = FaultProxy(endpoint, {}, every="delay", stall=0.2)
    try:
        slow = json.loads(ok(sj(proxy.endpoint, "keys", url, *args)))
    finally:
        proxy.close()
    groups = pq.ParquetFile(local / "samples" / "events.parquet").metadata.num_row_groups
    assert groups >= 4, groups
    # One counting thread; the chunks of later row groups are in flight meanwhile.
    assert proxy.most_inflight >= 3, proxy.most_inflight
    assert slow["io"] == plain["io"], (slow["io"], plain["io"])
    assert slow["columns"] == plain["columns"]


def test_verify_on_polars_over_s3_as_over_disk(s3):
    """verify --engine polars over tables in the store: their files are copied to a temporary
    folder first (this build's Polars reads local files), said in `inputs`, and the run gives
    what it gives over the same files on disk; a missing object ends in one line."""
    endpoint, local = s3
    def verify(root):
        p = sj(endpoint, "verify", SAMPLES / "query.sql", "--table", f"events={root}/hive",
               "--table", f"titles={root}/samples/titles.parquet", "--engine", "polars", "--broadcast-threshold", "256KB", "--format", "json", "-q")
        if p.returncode != 0 and "polars" in p.stderr and "feature" in p.stderr:
            pytest.skip("a build without the polars feature")
        return json.loads(ok(p))
    remote, disk = verify(f"s3://{BUCKET}"), verify(local)
    assert remote["identical"] and disk["identical"]
    for k in ("rows_original", "rows_rewritten", "predicted_before", "predicted_after", "columns_match"):
        assert remote[k] == disk[k], k
    assert [i.split(" (its ")[0] for i in remote["inputs"]] == disk["inputs"], remote["inputs"]
    assert "copied here first" in remote["inputs"][0] and "copied here first" not in disk["inputs"][0]
    err = one_line_error(sj(endpoint, "verify", SAMPLES / "query.sql", "--table", f"events=s3://{BUCKET}/samples/nothing.parquet",
                            "--table", f"titles={local}/samples/titles.parquet", "--engine", "polars"))
    assert "nothing.parquet" in err, err
