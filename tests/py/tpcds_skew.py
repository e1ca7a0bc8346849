"""A skewed TPC-DS: the generated tables (tests/py/tpcds.py) with the skew real warehouses have,
and queries in the TPC-DS style where it matters.

`store_sales` is changed, every other table is linked as generated:
- ss_customer_sk: 30% NULL (a sale with no customer: a cash sale, a lost loyalty card) and 10%
  the placeholder customer 1, renamed 'Unknown' in `customer` (a "walk-in" account);
- ss_item_sk: 12% item 1 and 6% item 2 (two best sellers), drawn from the remaining rows;
- ss_sold_date_sk and ss_store_sk as generated (at scale factor 0.1 there is one store: the
  store join is one key value whatever is done here).

Deterministic (a seeded numpy generator): the same files every run.

    python tests/py/tpcds_skew.py SRC_TABLES DST_TABLES
"""
import fcntl
import os
import pathlib
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

NULL_CUSTOMER = 0.30
PLACEHOLDER_CUSTOMER = 0.10
PLACEHOLDER_SK = 1
HOT_ITEMS = [(1, 0.12), (2, 0.06)]

# Queries in the TPC-DS style: the fact's foreign keys joined to the dimensions, comma joins,
# chains, filters. Each one's hot key is one of the skews above.
QUERIES = {
    # A left join from the fact to a dimension: the NULL and the placeholder customer.
    "customer_left": """
SELECT c_customer_id, c_last_name, ss_ticket_number, ss_net_paid
FROM store_sales LEFT JOIN customer ON ss_customer_sk = c_customer_sk
WHERE ss_quantity > 20
""",
    # The comma form, the hot items met after a filtering join on the date.
    "item_comma_chain": """
SELECT i_item_id, i_category, d_year, ss_ext_sales_price
FROM store_sales, date_dim, item
WHERE ss_sold_date_sk = d_date_sk AND ss_item_sk = i_item_sk AND d_year IN (1999, 2000, 2001)
""",
    # Explicit joins in parentheses, three dimensions: customer (NULL dropped by the inner join,
    # the placeholder hot), then item.
    "three_dimensions": """
SELECT c.c_last_name, i.i_brand, s.ss_quantity
FROM store_sales s
JOIN customer c ON (s.ss_customer_sk = c.c_customer_sk)
JOIN item i ON (s.ss_item_sk = i.i_item_sk)
WHERE i.i_current_price > 0.5
""",
    # Returns joined back to their sales on the ticket and item, then to the customer: the
    # later join counted through the first.
    "returns_chain": """
SELECT ss.ss_ticket_number, sr.sr_return_amt, c.c_customer_id
FROM store_sales ss
LEFT JOIN store_returns sr ON ss.ss_ticket_number = sr.sr_ticket_number AND ss.ss_item_sk = sr.sr_item_sk
LEFT JOIN customer c ON ss.ss_customer_sk = c.c_customer_sk
""",
}


def column(t, name):
    """A column as numpy int64 (NULLs as 0) and its NULL mask."""
    c = t.column(name)
    return pc.fill_null(c, 0).to_numpy(zero_copy_only=False).astype(np.int64), pc.is_null(c).to_numpy(zero_copy_only=False)


def set_column(t, name, values, null):
    i = t.schema.get_field_index(name)
    return t.set_column(i, name, pa.array(values, mask=null, type=t.schema.field(name).type))


def skew_store_sales(t, rng):
    n = t.num_rows
    u = rng.random(n)
    cust, cust_null = column(t, "ss_customer_sk")
    chosen = u < NULL_CUSTOMER + PLACEHOLDER_CUSTOMER
    cust = np.where(chosen, PLACEHOLDER_SK, cust)
    t = set_column(t, "ss_customer_sk", cust, (u < NULL_CUSTOMER) | (cust_null & ~chosen))
    item, item_null = column(t, "ss_item_sk")
    v = rng.random(n)
    lo = 0.0
    for sk, share in HOT_ITEMS:
        hot = (v >= lo) & (v < lo + share)
        item, item_null = np.where(hot, sk, item), item_null & ~hot
        lo += share
    return set_column(t, "ss_item_sk", item, item_null)


def placeholder_customer(t):
    is_ph = pc.equal(t.column("c_customer_sk"), PLACEHOLDER_SK)
    for col in ("c_first_name", "c_last_name"):
        i = t.schema.get_field_index(col)
        t = t.set_column(i, col, pc.if_else(is_ph, pa.scalar("Unknown", t.schema.field(col).type), t.column(col)))
    return t


def make(src, dst, seed=7):
    """The skewed tables in `dst` (once: a `done` file marks them). The Spark 3.5 and 4.x suites
    run at the same time and may both ask first: a lock file lets one write them, the other wait."""
    src, dst = pathlib.Path(src), pathlib.Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(dst.with_name(dst.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (dst / "done").exists():
            write_skewed(src, dst, seed)
    return dst


def write_skewed(src, dst, seed):
    dst.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for p in sorted(src.glob("*.parquet")):
        out = dst / p.name
        if out.exists():
            out.unlink()
        if p.stem == "store_sales":
            pq.write_table(skew_store_sales(pq.read_table(p), rng), out, row_group_size=64 * 1024)
        elif p.stem == "customer":
            pq.write_table(placeholder_customer(pq.read_table(p)), out)
        else:
            os.link(p, out)
    (dst / "done").write_text("ok\n")


if __name__ == "__main__":
    make(sys.argv[1], sys.argv[2])
