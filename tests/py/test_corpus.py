"""Every flat column of every file in parquet-testing/data is counted by skewjoin exactly as an
independent reader (pyarrow, Arrow C++; DuckDB where pyarrow cannot read a file) counts it, or
refused with a reason when its type cannot be a Spark join key. Every file in bad_data ends in a
one-line error with exit code 2 when its columns are read."""
import datetime as dt
import decimal
import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from conftest import CORPUS, failure, run

DATA_FILES = sorted(p for p in (CORPUS / "data").rglob("*.parquet"))
BAD_FILES = sorted((CORPUS / "bad_data").glob("*.parquet"))

# Types Spark cannot read as a join key: skewjoin must refuse them with a reason.
REFUSED = ("float16", "halffloat", "time32", "time64", "duration", "interval")


def flat(t):
    return not (pa.types.is_nested(t) or pa.types.is_dictionary(t) and pa.types.is_nested(t.value_type))


def norm(v, t):
    """A pyarrow value as skewjoin's JSON writes it."""
    if v is None:
        return None
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_boolean(t):
        return bool(v)
    if pa.types.is_uint64(t):
        return str(v)  # Spark reads UINT64 as decimal(20,0)
    if pa.types.is_integer(t):
        return int(v)
    if pa.types.is_float32(t):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return float(str(np.float32(v))) + 0.0
    if pa.types.is_floating(t):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return float(v) + 0.0  # -0.0 counts as 0.0, as in Spark
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return v
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t):
        return bytes(v).hex()
    if pa.types.is_date(t):
        return v.isoformat()
    if pa.types.is_timestamp(t):
        return None  # compared through micros below
    if pa.types.is_decimal(t):
        return format(v, "f") if isinstance(v, decimal.Decimal) else str(v)
    raise TypeError(f"no normalisation for {t}")


def reference_counts(path, col):
    """value -> count, by pyarrow's value_counts on the column. INT96 timestamps are read as
    microseconds, as Spark reads them."""
    table = pq.read_table(path, columns=[col], coerce_int96_timestamp_unit="us")
    arr = table.column(col).combine_chunks()
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    counts = {}
    if pa.types.is_timestamp(t):
        micros = pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False).astype(object)
        unit = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": None}[t.unit]
        mask = arr.is_null().to_numpy(zero_copy_only=False)
        for m, isnull in zip(micros, mask):
            key = None if isnull else (int(m) // 1000 if unit is None else int(m) * unit)
            counts[key] = counts.get(key, 0) + 1
        return counts, "micros"
    if pa.types.is_date64(t):
        arr = pc.cast(arr, pa.date32())
        t = pa.date32()
    for v in arr.to_pylist():
        k = norm(v, t)
        counts[k] = counts.get(k, 0) + 1
    return counts, "value"


def iso_to_micros(s):
    if s.endswith("microseconds after 1970-01-01"):
        return int(s.split()[0])
    utc = s.endswith("Z")
    s = s.rstrip("Z")
    date, _, time = s.partition("T")
    frac = 0
    if "." in time:
        time, f = time.split(".")
        frac = int(f.ljust(6, "0"))
    d = dt.datetime.fromisoformat(f"{date}T{time}") if int(date.split("-")[0]) > 0 else None
    base = dt.datetime(1970, 1, 1)
    delta = d - base
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + frac


def columns_of(path):
    try:
        schema = pq.read_schema(path)
    except Exception:
        return None
    return [(f.name, f.type) for f in schema]


# Files the Rust Parquet reader (parquet 60) refuses while Arrow C++ reads them. skewjoin must
# then end in a one-line error naming the file, and these stay listed until the reader reads them.
RUST_READER_REFUSES = {
    # footer: a Thrift list whose element type does not match the schema (arrow-rs #9924
    # validates list element types since 2026-05; Arrow C++ skips the field).
    "dict-page-offset-zero.parquet": "Expected list element type",
    # a dictionary page header the Rust reader rejects as invalid.
    "nation.dict-malformed.parquet": "Invalid page header",
}


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: str(p.relative_to(CORPUS / "data")))
def test_counts_match_pyarrow(path):
    cols = columns_of(path)
    if cols is None:
        # pyarrow refuses the schema (incorrect_map_schema.parquet): DuckDB names the columns,
        # and each must be counted or refused as nested like any other.
        import duckdb
        described = duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()
        assert described, "no reader can read this file's schema"
        for name, dtype, *_ in described:
            p = run("keys", path, "--column", name, "--format", "json")
            nested = any(t in dtype for t in ("MAP(", "STRUCT(", "[]"))
            assert (p.returncode == 2 and "nested" in p.stderr) if nested else p.returncode == 0, (name, dtype, p.stderr)
        return
    checked = refused = 0
    problems = []
    for name, t in cols:
        if not flat(t):
            p = run("keys", path, "--column", name, "--format", "json")
            assert failure(p)["code"] == "bad_column", (name, p.stderr)
            continue
        p = run("keys", path, "--column", name, "--top", "0", "--format", "json", "--quiet")
        tname = str(t).lower()
        if any(r in tname for r in REFUSED):
            assert failure(p)["code"] == "bad_column", (name, t, p.stderr)
            refused += 1
            continue
        try:
            ref, mode = reference_counts(path, name)
        except Exception as e:  # noqa: BLE001 - the reference cannot read it either
            assert p.returncode == 2, f"{name}: pyarrow fails ({e}) but skewjoin read it"
            continue
        if p.returncode != 0:
            known = RUST_READER_REFUSES.get(path.name)
            if known and known in p.stderr and p.returncode == 2 and p.stderr.count("\n") == 1 and path.name in p.stderr:
                continue
            problems.append(f"{name} ({t}): skewjoin failed: {p.stderr.strip()}")
            continue
        col = json.loads(p.stdout)["columns"][0]
        ours = {}
        for e in col["top"]:
            v = e["value"]
            if mode == "micros" and v is not None:
                v = iso_to_micros(v)
            ours[v] = ours.get(v, 0) + e["count"]
        rows = sum(ref.values())
        if mode == "micros":
            # pyarrow wraps INT96 values past year 294247 around; Spark and skewjoin do not.
            # Such a value must still be counted once on each side.
            wrapped = [k for k in ref if k is not None and k < -62135596800000000 and k not in ours]
            extra = [k for k in ours if k is not None and k > 253402300800000000 and k not in ref]
            if len(wrapped) == len(extra):
                for a, b in zip(sorted(wrapped), sorted(extra)):
                    if ref[a] == ours[b]:
                        ref[b] = ref.pop(a)
        if col["rows"] != rows or col["nulls"] != ref.get(None, 0) or ours != ref or not col["exact"] \
                or col["distinct"] != len([k for k in ref if k is not None]):
            diff = {k: (ours.get(k), ref.get(k)) for k in set(ours) | set(ref) if ours.get(k) != ref.get(k)}
            problems.append(f"{name} ({t}): rows {col['rows']} vs {rows}, nulls {col['nulls']} vs {ref.get(None, 0)}, "
                            f"distinct {col['distinct']}, diff {list(diff.items())[:5]}")
        checked += 1
    assert not problems, "\n".join(problems)


def test_corpus_is_covered():
    assert len(DATA_FILES) >= 60


# bad_data files whose key columns are in fact intact: the Arrow C++ bug they reproduce (a
# crash on a Polars-written dictionary page, GH-43605) is not in the Rust reader, and pyarrow
# and DuckDB read the same 21,186 zeros. skewjoin must count them as both do.
INTACT = {"ARROW-GH-43605.parquet"}


def test_intact_bad_file_counts_match_two_readers():
    import duckdb
    path = CORPUS / "bad_data" / "ARROW-GH-43605.parquet"
    p = run("keys", path, "--column", "min_fl", "--top", "0", "--format", "json", check=True)
    ours = {e["value"]: e["count"] for e in json.loads(p.stdout)["columns"][0]["top"]}
    duck = dict(duckdb.sql(f"select min_fl, count(*) from '{path}' group by all").fetchall())
    ref, _ = reference_counts(path, "min_fl")
    assert ours == duck == ref


@pytest.mark.parametrize("path", [p for p in BAD_FILES if p.name not in INTACT], ids=lambda p: p.name)
def test_bad_files_end_in_one_line_error(path):
    """Read every flat column of the file at once, as a user profiling all of them would."""
    cols = columns_of(path)
    args = ["keys", path, "--format", "json"]
    if cols:
        names = [n for n, t in cols if flat(t) and not any(r in str(t).lower() for r in REFUSED)]
        for n in names or [cols[0][0]]:
            args += ["--column", n]
    else:
        args += ["--column", "x"]
    p = run(*args)
    assert failure(p)["kind"] == "data", p.stderr
    assert "panicked" not in p.stderr and "RUST_BACKTRACE" not in p.stderr
    assert path.name in p.stderr or "column" in p.stderr
