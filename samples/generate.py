"""Write the sample tables: viewing events and a title catalog, skewed the way real ones are.

    python samples/generate.py                 # the shipped samples (200,000 events)
    python samples/generate.py --rows 40000000 --out /tmp/big

events (event_id bigint, user_id string, title_id string, hours double, day date):
  - about 31% of title_id are NULL: a client release dropped the title from app-open events;
  - about 4% are the placeholder 'unknown';
  - one genuinely hot title, tt0903747, has about 9% of the events (real demand);
  - one junk account, qa_test_user_01, owns about 6% of user_id;
  - the rest follow a Zipf-like popularity over the catalog.
titles (title_id string, name string, genre string, synopsis string): one row per title,
  with a wide text column; it has no row for 'unknown'.
Needs numpy and pyarrow.
"""
import argparse
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

GENRES = ["drama", "comedy", "crime", "documentary", "thriller", "animation", "reality", "sci-fi"]
HOT_TITLE = "tt0903747"
JUNK_USER = "qa_test_user_01"


def title_ids(n):
    return np.array([f"tt{1000000 + i:07d}" for i in range(n)], dtype=object)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000, help="events to write (default 200,000)")
    ap.add_argument("--titles", type=int, default=5_000, help="titles in the catalog")
    ap.add_argument("--users", type=int, default=20_000, help="distinct real users")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)), help="output folder")
    ap.add_argument("--row-group-rows", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    os.makedirs(a.out, exist_ok=True)

    catalog = title_ids(a.titles)
    catalog[0] = HOT_TITLE
    # Zipf-like popularity over the catalog (the hot title is placed by hand below).
    weights = 1.0 / np.arange(1, a.titles + 1) ** 0.9
    weights[0] = 0.0
    weights /= weights.sum()

    writer = None
    schema = pa.schema([("event_id", pa.int64()), ("user_id", pa.string()), ("title_id", pa.string()),
                        ("hours", pa.float64()), ("day", pa.date32())])
    path = os.path.join(a.out, "events.parquet")
    chunk = 2_000_000
    written = 0
    users = np.array([f"u{i:07d}" for i in range(a.users)], dtype=object)
    uw = 1.0 / np.arange(1, a.users + 1) ** 0.5
    uw /= uw.sum()
    while written < a.rows:
        n = min(chunk, a.rows - written)
        r = rng.random(n)
        titles = catalog[rng.choice(a.titles, size=n, p=weights)]
        titles = np.where(r < 0.09, HOT_TITLE, titles)
        titles = np.where((r >= 0.09) & (r < 0.13), "unknown", titles)
        null_title = (r >= 0.13) & (r < 0.44)
        u = users[rng.choice(a.users, size=n, p=uw)]
        u = np.where(rng.random(n) < 0.06, JUNK_USER, u)
        hours = np.round(rng.gamma(1.5, 0.6, size=n), 3)
        day = (np.datetime64("2026-10-01") + rng.integers(0, 30, size=n)).astype("datetime64[D]")
        batch = pa.table({
            "event_id": pa.array(np.arange(written, written + n, dtype=np.int64)),
            "user_id": pa.array(u, type=pa.string()),
            "title_id": pa.array(titles, type=pa.string(), mask=null_title),
            "hours": pa.array(hours),
            "day": pa.array(day),
        }, schema=schema)
        if writer is None:
            writer = pq.ParquetWriter(path, schema, compression="snappy")
        writer.write_table(batch, row_group_size=a.row_group_rows)
        written += n
    writer.close()

    words = ["the", "night", "city", "house", "of", "last", "river", "secret", "war", "love", "road", "dark"]
    names = [" ".join(rng.choice(words, size=3)).title() for _ in range(a.titles)]
    names[0] = "Breaking Bad"
    synopsis = [" ".join(rng.choice(words, size=60)) for _ in range(a.titles)]
    titles_tbl = pa.table({
        "title_id": pa.array(catalog, type=pa.string()),
        "name": pa.array(names),
        "genre": pa.array(rng.choice(GENRES, size=a.titles)),
        "synopsis": pa.array(synopsis),
    })
    pq.write_table(titles_tbl, os.path.join(a.out, "titles.parquet"), compression="snappy")
    print(f"wrote {written:,} events to {path} and {a.titles:,} titles")


if __name__ == "__main__":
    main()
