"""Delta Lake tables written by the `deltalake` package (delta-rs): several commits, a delete
that removes files, a string and an int partition column, a checkpoint. skewjoin counts each
version as deltalake's own reader reads it (not the folder's files, which include removed
ones), types partition columns by the table's schema, reads the same table from moto's S3
server, and ends a broken log in one line."""
import collections
import json
import shutil

import pyarrow as pa
import pyarrow.compute  # noqa: F401 (pa.compute)
import pytest

from conftest import failure, run, sj, upload

deltalake = pytest.importorskip("deltalake")


def batch(seed, n=3000):
    keys = [None if i % 11 == 0 else ("hot" if i % 3 == 0 else f"k{(i * seed) % 97}") for i in range(n)]
    return pa.table({
        "k": keys,
        "user": pa.array([(i * 7 + seed) % 50 for i in range(n)], pa.int64()),
        "day": [f"2024-01-0{1 + (i + seed) % 3}" for i in range(n)],
        "shard": pa.array([(i + seed) % 4 for i in range(n)], pa.int32()),
    })


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """Versions 0-4: append, append, delete (files removed), checkpoint at 2, append, overwrite of one partition."""
    from deltalake import DeltaTable, write_deltalake
    path = tmp_path_factory.mktemp("delta") / "events"
    write_deltalake(str(path), batch(1), partition_by=["day", "shard"])
    write_deltalake(str(path), batch(2), mode="append", partition_by=["day", "shard"])
    DeltaTable(str(path)).delete("user < 10")
    DeltaTable(str(path)).create_checkpoint()
    write_deltalake(str(path), batch(3), mode="append", partition_by=["day", "shard"])
    jan1 = batch(4, 500).filter(pa.compute.equal(pa.compute.field("day"), "2024-01-01"))
    write_deltalake(str(path), jan1, mode="overwrite", partition_by=["day", "shard"], predicate="day = '2024-01-01'")
    return path


def reference(path, version, column):
    from deltalake import DeltaTable
    t = DeltaTable(str(path), version=version).to_pyarrow_table()
    return t.num_rows, collections.Counter(t.column(column).to_pylist())


def counts(out):
    col = json.loads(out)["columns"][0]
    return col["rows"], col["nulls"], {tuple(v["value"]) if isinstance(v["value"], list) else v["value"]: v["count"] for v in col["top"]}


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_each_version_counts_as_deltalake_reads_it(table, version):
    for column in ["k", "user", "day", "shard"]:
        p = run("keys", table, "--column", column, "--as-of", version, "--format", "json", "--top", 100, "-q")
        assert p.returncode == 0, p.stderr
        rows, nulls, top = counts(p.stdout)
        want_rows, want = reference(table, version, column)
        assert rows == want_rows, (column, rows, want_rows)
        assert nulls == want.get(None, 0)
        got = {str(k): c for k, c in top.items() if k is not None}
        assert got == {str(k): c for k, c in want.items() if k is not None}, column


def test_removed_files_in_the_folder_are_not_counted(table):
    files = [p for p in table.rglob("*.parquet") if "_delta_log" not in str(p)]
    live = json.loads(run("keys", table, "--column", "k", "--format", "json", "-q", check=True).stdout)
    assert live["table_notes"] == [f"{table}: Delta table version 4, {len(live_files(table))} live files"]
    assert len(files) > len(live_files(table)), "the delete and the overwrite left removed files"
    assert live["columns"][0]["rows"] == reference(table, 4, "k")[0]


def live_files(table):
    from deltalake import DeltaTable
    return DeltaTable(str(table)).file_uris()


def test_partition_columns_have_the_schemas_types(table):
    out = json.loads(run("keys", table, "--column", "day", "--column", "shard", "--format", "json", "-q", check=True).stdout)
    assert [c["types"] for c in out["columns"]] == [["string"], ["int"]]
    # As a plain folder the same names would be guessed a date: the log's schema says string.
    assert "2024-01-0" in json.dumps(out["columns"][0]["top"])


def test_a_delta_table_in_an_object_store(table, moto_s3):
    endpoint, client = moto_s3
    client.create_bucket(Bucket="deltas")
    upload(client, "deltas", table, "events/")
    for version in [1, 4]:
        args = ["--column", "k", "--column", "shard", "--as-of", version, "--format", "json", "-q"]
        remote = json.loads(sj(endpoint, "keys", "s3://deltas/events", *args).stdout or "{}")
        local = json.loads(run("keys", table, *args, check=True).stdout)
        assert remote.pop("io")["requests"] > 0
        assert remote.pop("table_notes") == [n.replace(str(table), "s3://deltas/events") for n in local.pop("table_notes")]
        assert remote == local


def test_plan_reads_delta_tables(table):
    p = run("plan", "--left", table, "--right", table, "--on", "k", "--as-of", 2, "--format", "json", "-q")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["left"]["rows"] == reference(table, 2, "k")[0]


def test_a_broken_log_ends_in_one_line(table, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(table, broken)
    (broken / "_delta_log" / "00000000000000000004.json").unlink()
    (broken / "_delta_log" / "00000000000000000003.json").write_text("{not json\n")
    def keys(*args):
        return failure(run("keys", *args, "--format", "json"))
    for args, code in [((), "bad_file"), (("--as-of", 9), "usage"), (("--as-of", 2), None)]:
        if code is None:
            p = run("keys", broken, "--column", "k", *args)
            assert p.returncode == 0, p.stderr
            continue
        f = keys(broken, "--column", "k", *args)
        assert f["code"] == code, (args, f)
    shutil.rmtree(broken / "_delta_log")
    (broken / "_delta_log").mkdir()
    (broken / "_delta_log" / "00000000000000000001.json").write_text("{}\n")
    f = keys(broken, "--column", "k")
    assert (f["code"], f["kind"]) == ("bad_file", "data"), f
    f = keys(table.parent, "--column", "k", "--as-of", 1)
    assert (f["code"], f["kind"]) == ("usage", "usage"), f
