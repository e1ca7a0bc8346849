"""Tables in Azure Blob Storage: Azurite, Microsoft's own storage emulator (from npm, installed
into tests/node by scripts/test), started here on 127.0.0.1 and stopped at the end. The
container holds the samples, a Hive-partitioned folder, a Delta table and parquet-testing's
corrupt files, uploaded with Microsoft's Python SDK; `keys`, `plan` and `rewrite` over az://
and abfss:// give what they give over the same files on disk, and a missing container or blob,
refused credentials and corrupt files end in one line with exit code 2 and no secret in it.

skewjoin reaches Azurite as any Azure user reaches it: `AZURE_STORAGE_USE_EMULATOR=true` (the
`object_store` crate's emulator setting) with `AZURITE_BLOB_STORAGE_URL` at the port."""
import subprocess

import pytest

from conftest import ROOT, SECRET, free_port, sj, wait_listening
from test_object_store import (bad_cases, bad_file_columns, delta_like_disk, keys_like_disk, make_delta, make_tables, one_line_error, store_failure,
                               plan_and_rewrite_like_disk)

AZURITE = ROOT / "tests" / "node" / "node_modules" / ".bin" / "azurite-blob"
ACCOUNT = "devstoreaccount1"
# Azurite's well-known development key (published in Microsoft's documentation): not a secret.
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
CONTAINER = "lake"


@pytest.fixture(scope="module")
def azurite(tmp_path_factory):
    """Azurite's blob service on 127.0.0.1, the container filled: (env for skewjoin, mirror)."""
    assert AZURITE.exists(), "Azurite is not installed: npm ci --prefix tests/node (scripts/test does it)"
    port = free_port()
    data = tmp_path_factory.mktemp("azurite")
    proc = subprocess.Popen([str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(data),
                             "--silent", "--skipApiVersionCheck", "--loose"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc, "Azurite")
        local = tmp_path_factory.mktemp("lake")
        make_tables(local)
        make_delta(local / "delta")
        fill(port, local)
        yield {"AZURE_STORAGE_USE_EMULATOR": "true", "AZURITE_BLOB_STORAGE_URL": f"http://127.0.0.1:{port}"}, local
    finally:
        proc.terminate()
        proc.wait(timeout=20)


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


def az(env, *args, extra=None):
    e = dict(env)
    e.update(extra or {})
    # No AWS endpoint: the store is Azure's. sj() sets the S3 ones; they are not read for az://.
    return sj("http://127.0.0.1:9", *args, env=e)


@pytest.mark.parametrize("url", [f"az://{CONTAINER}", f"abfss://{CONTAINER}@{ACCOUNT}.dfs.core.windows.net"], ids=["az", "abfss"])
def test_keys_over_azure_count_what_the_files_on_disk_count(azurite, url):
    env, local = azurite
    keys_like_disk(lambda *a: az(env, *a), url, local)


def test_a_delta_table_in_azure(azurite):
    env, local = azurite
    delta_like_disk(lambda *a: az(env, *a), f"az://{CONTAINER}", local)


def test_plan_and_rewrite_over_azure_as_over_disk(azurite):
    env, local = azurite
    plan_and_rewrite_like_disk(lambda *a: az(env, *a), f"az://{CONTAINER}", local)


def test_missing_container_blob_and_refused_key(azurite):
    env, _ = azurite
    def keys(table, **kw):
        return store_failure(az(env, "keys", table, "--column", "title_id", "--format", "json", **kw))
    code, kind, err = keys("az://no-such-container/t/")
    assert (code, kind) == ("not_found", "usage") and err.startswith("az://no-such-container/t/"), err
    code, kind, err = keys(f"az://{CONTAINER}/samples/nothing.parquet")
    assert (code, kind) == ("not_found", "usage") and "nothing.parquet" in err, err
    # A wrong account key: Azurite refuses the signature; the key is never printed.
    wrong = {"AZURE_STORAGE_ACCOUNT_KEY": "c2otdGVzdC1zZWNyZXQtWnE4dzNYdg==", "AZURE_STORAGE_ACCOUNT_NAME": ACCOUNT}
    code, kind, err = keys(f"az://{CONTAINER}/samples/events.parquet", extra=wrong)
    assert code in ("credentials", "access_denied") and kind == "usage" and "samples/events.parquet" in err, err
    assert wrong["AZURE_STORAGE_ACCOUNT_KEY"] not in err and SECRET not in err, err


@pytest.mark.parametrize("path", bad_cases(), ids=lambda p: p.name)
def test_bad_files_from_azure_end_in_one_line_error(azurite, path):
    env, _ = azurite
    args = bad_file_columns(path)
    err = one_line_error(az(env, "keys", f"az://{CONTAINER}/bad_data/{path.name}", *args, "--format", "json"))
    assert path.name in err or "column" in err, err
