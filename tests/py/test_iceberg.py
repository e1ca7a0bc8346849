"""Apache Iceberg tables written by `pyiceberg` (a SQL catalog over SQLite, the table on disk or
in moto's S3 server): appends, a delete that rewrites files, an identity partition. skewjoin
counts each snapshot as pyiceberg's own scan reads it, not the files in the folder, and ends
an empty table or an unknown snapshot in one line."""
import collections
import json

import pyarrow as pa
import pytest

from conftest import SECRET, failure, run, sj

pytest.importorskip("pyiceberg")


def batch(seed, n=2000):
    return pa.table({
        "k": [None if i % 13 == 0 else ("hot" if i % 4 == 0 else f"k{(i * seed) % 89}") for i in range(n)],
        "user": pa.array([(i * 5 + seed) % 40 for i in range(n)], pa.int64()),
        "day": [f"2024-02-0{1 + (i + seed) % 3}" for i in range(n)],
    })


def make_table(catalog):
    catalog.create_namespace("db")
    t = catalog.create_table("db.events", schema=batch(1).schema)
    with t.update_spec() as u:
        u.add_identity("day")
    t.append(batch(1))
    t.append(batch(2))
    t.delete("user < 8")
    t.append(batch(3))
    return catalog.load_table("db.events")


@pytest.fixture(scope="module")
def local_table(tmp_path_factory):
    from pyiceberg.catalog.sql import SqlCatalog
    d = tmp_path_factory.mktemp("iceberg")
    catalog = SqlCatalog("local", uri=f"sqlite:///{d}/catalog.db", warehouse=f"file://{d}/wh")
    return make_table(catalog), d / "wh" / "db" / "events"


def reference(table, snapshot_id, column):
    t = table.scan(snapshot_id=snapshot_id).to_arrow()
    return t.num_rows, collections.Counter(t.column(column).to_pylist())


def check(out, table, snapshot_id, column):
    col = json.loads(out)["columns"][0]
    rows, want = reference(table, snapshot_id, column)
    assert col["rows"] == rows, (col["rows"], rows)
    assert col["nulls"] == want.get(None, 0)
    assert {str(v["value"]): v["count"] for v in col["top"] if v["value"] is not None} == {str(k): c for k, c in want.items() if k is not None}


def test_each_snapshot_counts_as_pyiceberg_scans_it(local_table):
    table, folder = local_table
    snapshots = [s.snapshot_id for s in table.snapshots()]
    assert len(snapshots) >= 4
    for sid in snapshots:
        for column in ["k", "user", "day"]:
            p = run("keys", folder, "--column", column, "--as-of", sid, "--format", "json", "--top", 100, "-q")
            assert p.returncode == 0, p.stderr
            check(p.stdout, table, sid, column)


def test_the_current_snapshot_not_the_folders_files(local_table):
    table, folder = local_table
    out = json.loads(run("keys", folder, "--column", "k", "--format", "json", "--top", 100, "-q", check=True).stdout)
    sid = table.current_snapshot().snapshot_id
    live = len(table.inspect.files())
    assert out["table_notes"][0].startswith(f"{folder}: Iceberg table snapshot {sid} (")
    assert out["table_notes"][0].endswith(f", {live} data files")
    assert len(list((folder / "data").rglob("*.parquet"))) > live, "the delete left rewritten files"
    check(json.dumps(out), table, sid, "k")
    # The metadata file named directly reads the same.
    meta = table.metadata_location.removeprefix("file://")
    again = json.loads(run("keys", meta, "--column", "k", "--format", "json", "--top", 100, "-q", check=True).stdout)
    assert again["columns"] == out["columns"]


def test_an_iceberg_table_in_an_object_store(moto_s3, tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog
    endpoint, client = moto_s3
    client.create_bucket(Bucket="ice")
    catalog = SqlCatalog("s3", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse="s3://ice/wh",
                         **{"s3.endpoint": endpoint, "s3.access-key-id": "testing",
                            "s3.secret-access-key": SECRET,
                            "s3.region": "us-east-1"})
    table = make_table(catalog)
    sid = table.current_snapshot().snapshot_id
    p = sj(endpoint, "keys", "s3://ice/wh/db/events", "--column", "k", "--format", "json", "--top", 100, "-q")
    assert p.returncode == 0, p.stderr
    check(p.stdout, table, sid, "k")
    first = table.snapshots()[0].snapshot_id
    p = sj(endpoint, "keys", "s3://ice/wh/db/events/", "--column", "user", "--as-of", first, "--format", "json", "--top", 100, "-q")
    assert p.returncode == 0, p.stderr
    check(p.stdout, table, first, "user")


def test_empty_table_and_unknown_snapshot_end_in_one_line(local_table, tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog
    catalog = SqlCatalog("e", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    catalog.create_table("db.empty", schema=batch(1).schema)
    f = failure(run("keys", tmp_path / "wh" / "db" / "empty", "--column", "k", "--format", "json"))
    assert f["kind"] in ("usage", "data"), f
    _, folder = local_table
    f = failure(run("keys", folder, "--column", "k", "--as-of", 12345, "--format", "json"))
    assert (f["code"], f["kind"]) == ("usage", "usage"), f
