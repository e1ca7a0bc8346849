"""Tables in Azure Blob Storage: Azurite, Microsoft's own storage emulator (from npm, installed
into tests/node by scripts/test), started here on 127.0.0.1 and stopped at the end. The
container holds the samples, a Hive-partitioned folder, a Delta table and parquet-testing's
corrupt files, uploaded with Microsoft's Python SDK; `keys`, `plan` and `rewrite` over az://
and abfss:// give what they give over the same files on disk, and a missing container or blob,
refused credentials and corrupt files end in one line with exit code 2 and no secret in it.

skewjoin reaches Azurite as any Azure user reaches it: `AZURE_STORAGE_USE_EMULATOR=true` (the
`object_store` crate's emulator setting) with `AZURITE_BLOB_STORAGE_URL` at the port."""
import json
import socket
import subprocess
import time

import pytest

from conftest import ROOT, SECRET, free_port, run, sj
from test_object_store import bad_cases, bad_file_columns, make_tables, ok, one_line_error, same_json

AZURITE = ROOT / "tests" / "node" / "node_modules" / ".bin" / "azurite-blob"
ACCOUNT = "devstoreaccount1"
# Azurite's well-known development key (published in Microsoft's documentation): not a secret.
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
CONTAINER = "lake"
SAMPLES = ROOT / "samples"


@pytest.fixture(scope="module")
def azurite(tmp_path_factory):
    """Azurite's blob service on 127.0.0.1, the container filled: (env for skewjoin, mirror)."""
    assert AZURITE.exists(), "Azurite is not installed: npm ci --prefix tests/node (scripts/test does it)"
    port = free_port()
    data = tmp_path_factory.mktemp("azurite")
    proc = subprocess.Popen([str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(data),
                             "--silent", "--skipApiVersionCheck", "--loose"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc)
        local = tmp_path_factory.mktemp("lake")
        make_tables(local)
        make_delta(local / "delta")
        fill(port, local)
        yield {"AZURE_STORAGE_USE_EMULATOR": "true", "AZURITE_BLOB_STORAGE_URL": f"http://127.0.0.1:{port}"}, local
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def wait_listening(port, proc, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Azurite exited: {proc.stderr.read().decode()[:500]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"Azurite did not listen on {port} in {seconds} s")


def connection(port):
    return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
            f"BlobEndpoint=http://127.0.0.1:{port}/{ACCOUNT};")


def fill(port, local):
    from azure.storage.blob import BlobServiceClient
    container = BlobServiceClient.from_connection_string(connection(port)).create_container(CONTAINER)
    for p in sorted(local.rglob("*")):
        if p.is_file():
            with open(p, "rb") as f:
                container.upload_blob(p.relative_to(local).as_posix(), f, overwrite=True)


def make_delta(folder):
    """A Delta table of three commits by delta-rs: two appends and an overwrite of one shard."""
    import pyarrow as pa
    from deltalake import write_deltalake
    for i, mode in enumerate(["append", "append", "overwrite"]):
        t = pa.table({"k": [f"k{(j * 7 + i) % 13}" if j % 5 else "hot" for j in range(2000)],
                      "shard": [i % 2] * 2000})
        write_deltalake(str(folder), t, mode=mode, partition_by=["shard"],
                        predicate="shard = 0" if mode == "overwrite" else None)


def az(env, *args, extra=None):
    e = dict(env)
    e.update(extra or {})
    # No AWS endpoint: the store is Azure's. sj() sets the S3 ones; they are not read for az://.
    return sj("http://127.0.0.1:9", *args, env=e)


@pytest.mark.parametrize("url", [f"az://{CONTAINER}", f"abfss://{CONTAINER}@{ACCOUNT}.dfs.core.windows.net"], ids=["az", "abfss"])
def test_keys_over_azure_count_what_the_files_on_disk_count(azurite, url):
    env, local = azurite
    for name, column in [("samples/events.parquet", "title_id"), ("samples/titles.parquet", "title_id"), ("hive", "user_id")]:
        args = ["--column", column, "--format", "json", "--quiet"]
        remote = ok(az(env, "keys", f"{url}/{name}", *args))
        disk = ok(run("keys", local / name, *args))
        io = same_json(remote, disk, url, local)
        assert io["requests"] > 0 and io["bytes"] > 0


def test_a_delta_table_in_azure(azurite):
    env, local = azurite
    args = ["--column", "k", "--column", "shard", "--format", "json", "-q"]
    remote = json.loads(ok(az(env, "keys", f"az://{CONTAINER}/delta", *args)))
    disk = json.loads(run("keys", local / "delta", *args, check=True).stdout)
    assert remote.pop("io")["requests"] > 0
    assert remote.pop("table_notes", []) == [n.replace(str(local / "delta"), f"az://{CONTAINER}/delta") for n in disk.pop("table_notes", [])]
    assert remote == disk
    # The overwrite of shard 0 removed the first commit's file: 4,000 live rows, not 6,000.
    assert remote["columns"][0]["rows"] == 4000


def test_plan_and_rewrite_over_azure_as_over_disk(azurite):
    env, local = azurite
    root = f"az://{CONTAINER}"
    def plan(events, titles, runner):
        return ok(runner("plan", "--left", events, "--right", titles, "--on", "title_id", "--how", "left", "--format", "json", "-q",
                         "--broadcast-threshold", "256KB"))
    same_json(plan(f"{root}/samples/events.parquet", f"{root}/samples/titles.parquet", lambda *a: az(env, *a)),
              plan(local / "samples/events.parquet", local / "samples/titles.parquet", run), root, local)
    remote = ok(az(env, "rewrite", SAMPLES / "query.sql", "--tables", f"{root}/wh/", "--broadcast-threshold", "256KB", "-q"))
    disk = ok(run("rewrite", SAMPLES / "query.sql", "--tables", local / "wh", "--broadcast-threshold", "256KB", "-q"))
    assert remote.replace(root, str(local)) == disk
    assert "__sj1" in disk


def test_missing_container_blob_and_refused_key(azurite):
    env, _ = azurite
    err = one_line_error(az(env, "keys", "az://no-such-container/t/", "--column", "k"))
    assert "az://no-such-container/t/" in err and "no such" in err, err
    err = one_line_error(az(env, "keys", f"az://{CONTAINER}/samples/nothing.parquet", "--column", "k"))
    assert "nothing.parquet" in err and "no such object" in err, err
    # A wrong account key: Azurite refuses the signature; the key is never printed.
    wrong = {"AZURE_STORAGE_ACCOUNT_KEY": "c2otdGVzdC1zZWNyZXQtWnE4dzNYdg==", "AZURE_STORAGE_ACCOUNT_NAME": ACCOUNT}
    p = az(env, "keys", f"az://{CONTAINER}/samples/events.parquet", "--column", "title_id", extra=wrong)
    err = one_line_error(p)
    assert "samples/events.parquet" in err and ("refused" in err or "denied" in err), err
    assert wrong["AZURE_STORAGE_ACCOUNT_KEY"] not in err and SECRET not in err, err


@pytest.mark.parametrize("path", bad_cases(), ids=lambda p: p.name)
def test_bad_files_from_azure_end_in_one_line_error(azurite, path):
    env, _ = azurite
    args = bad_file_columns(path)
    err = one_line_error(az(env, "keys", f"az://{CONTAINER}/bad_data/{path.name}", *args, "--format", "json"))
    assert path.name in err or "column" in err, err
