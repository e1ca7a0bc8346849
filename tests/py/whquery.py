"""Random warehouse queries (star and snowflake schemas) over skewed tables, for checking
skewjoin's rewrites on a real engine (test_warehouse_random.py) and for counting how many joins
it plans (bench/warehouse_reasons.py).

`tables(group, folder)` writes the seven tables of a group of seeds to Parquet; `query(seed,
tables)` draws one query over them. Both are functions of their seed alone, so a failing seed is
written again by `python tests/py/whquery.py SEED [FOLDER]`.

The schema: facts `sales` and `returns`; dimensions `item`, `customer` and `store`; `brand`
under `item` and `addr` under `customer` (a snowflake). Every foreign key is NULL on 0-30% of
its rows and Zipf-distributed over a domain the dimension covers only in part (unmatched keys),
and may have one hot id (20-40% of its rows); `returns` repeats a few of `sales`'s hot item (a
key hot on both sides). Column names carry their table's prefix, so no two inputs share one.

The shapes drawn (`Gen.SHAPES`): a star (a fact and 1-3 dimensions, INNER or LEFT, with an extra
ON condition on the dimension, written with ON or as a comma join); a snowflake (a dimension's
own dimension joined through it, the NULLs that a LEFT JOIN makes reaching the next join); a hub
(`item` joined to both facts on the same id: equal keys from two tables, in any FROM order); an
OR whose every branch shares the join's equality (in WHERE or ON); a hot key on the side a LEFT
JOIN does not preserve (`item LEFT JOIN sales ON ... AND ss_qty > k`); and a join with a subquery
that groups by the key. Each may have a WHERE on an input and an outer GROUP BY with exact
aggregates (counts and integer sums)."""
import random
from collections import Counter
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

import randquery
from randquery import Case

# table -> (rows, {column: kind}); kinds: 'id' (the table's own id, unique), ('fk', table) a
# foreign key, 'int' a small integer, 'cat' a low-cardinality string.
SCHEMA = {
    "sales": (10_000, {"ss_id": "id", "ss_item": ("fk", "item"), "ss_cust": ("fk", "customer"), "ss_store": ("fk", "store"), "ss_qty": "int", "ss_amt": "int"}),
    "returns": (1_500, {"sr_id": "id", "sr_item": ("fk", "item"), "sr_cust": ("fk", "customer"), "sr_qty": "int"}),
    "item": (1_000, {"i_id": "id", "i_brand": ("fk", "brand"), "i_cat": "cat", "i_price": "int"}),
    "customer": (2_000, {"c_id": "id", "c_addr": ("fk", "addr"), "c_seg": "cat"}),
    "store": (30, {"st_id": "id", "st_city": "cat"}),
    "brand": (60, {"b_id": "id", "b_name": "cat"}),
    "addr": (200, {"a_id": "id", "a_state": "cat"}),
}
# Each dimension's id covers [0, rows) of a domain 20% wider: the rest of a key matches nothing.
DOMAIN = {t: int(n * 1.2) for t, (n, _) in SCHEMA.items()}
ALIAS = {"sales": "s", "returns": "r", "item": "i", "customer": "c", "store": "st", "brand": "b", "addr": "a"}


@dataclass
class Table:
    name: str
    path: str
    rows: int
    note: str
    counts: dict  # foreign key column -> {id: rows}, for the row bound of a hub query


def _fk(rng, n, domain, hot):
    """n foreign keys: NULL on a share, one hot id on another, the rest Zipf over the domain."""
    nulls = rng.choice([0.0, 0.05, 0.15, 0.3])
    hot_share = rng.choice([0.0, 0.2, 0.4]) if hot is not None else 0.0
    skew = rng.choice([1.5, 2.5, 4.0])
    out = []
    for _ in range(n):
        u = rng.random()
        if u < nulls:
            out.append(None)
        elif u < nulls + hot_share:
            out.append(hot)
        else:
            out.append(min(domain - 1, int(domain * rng.random() ** skew)))
    return out, f"{nulls:.0%} NULL, {hot_share:.0%} on {hot}, zipf^{skew}"


def tables(group, folder):
    """The group's seven tables, written under `folder`: {name: Table}."""
    rng = random.Random(10_000 + group)
    hot_item = rng.randrange(DOMAIN["item"] // 2)
    out = {}
    for name, (rows, cols) in SCHEMA.items():
        data, notes = {}, []
        for col, kind in cols.items():
            if kind == "id":
                data[col] = pa.array(range(rows), pa.int64())
            elif kind == "int":
                data[col] = pa.array([rng.randrange(10) for _ in range(rows)], pa.int64())
            elif kind == "cat":
                data[col] = pa.array([f"{col[-3:]}{rng.randrange(8)}" for _ in range(rows)], pa.string())
            else:
                target = kind[1]
                hot = hot_item if target == "item" else rng.randrange(DOMAIN[target] // 2)
                vals, note = _fk(rng, rows, DOMAIN[target], hot)
                if name == "returns" and col == "sr_item":
                    # A few returns of sales's hot item: hot on one side, present on the other.
                    for i in range(0, min(rows, 40), 8):
                        vals[i] = hot_item
                data[col] = pa.array(vals, pa.int64())
                notes.append(f"{col}: {note}")
        path = f"{folder}/{name}.parquet"
        pq.write_table(pa.table(data), path)
        counts = {c: Counter(v for v in data[c].to_pylist() if v is not None) for c, k in cols.items() if isinstance(k, tuple)}
        out[name] = Table(name, path, rows, f"{name} ({rows} rows; {'; '.join(notes) or 'dimension'})", counts)
    return out


THRESHOLDS = ["100", "1KB", "8KB"]
# A hub query whose facts meet in more rows is drawn as a star instead: no case is slow.
MAX_HUB_ROWS = 60_000


class Gen:
    SHAPES = ["star", "star", "snowflake", "snowflake", "hub", "or", "non_preserved", "grouped"]

    def __init__(self, rng, tabs):
        self.rng = rng
        self.tabs = tabs
        self.where = []
        self.tables = []

    def pick(self, xs):
        return self.rng.choice(xs)

    def join(self, how, table, on, extra=""):
        self.tables.append(table)
        a = ALIAS[table]
        kw = {"inner": "JOIN", "left": "LEFT JOIN"}[how]
        return f" {kw} {table} {a} ON {on}{extra}"

    def dim_extra(self, table):
        """Sometimes an extra ON condition on the dimension."""
        if self.rng.random() < 0.4:
            col = {"item": "i_cat", "customer": "c_seg", "store": "st_city", "brand": "b_name", "addr": "a_state"}[table]
            return f" AND {ALIAS[table]}.{col} <> '{col[-3:]}{self.rng.randrange(8)}'"
        return ""

    def star(self):
        fact = self.pick(["sales", "returns"])
        p = "ss" if fact == "sales" else "sr"
        dims = self.rng.sample(["item", "customer", "store"] if fact == "sales" else ["item", "customer"], self.rng.randint(1, 2 if fact == "returns" else 3))
        fk = {"item": f"{p}_item", "customer": f"{p}_cust", "store": "ss_store"}
        ids = {"item": "i_id", "customer": "c_id", "store": "st_id"}
        self.tables.append(fact)
        if self.rng.random() < 0.3:
            # A comma join: inner joins on the equalities in WHERE.
            self.tables += dims
            self.where += [f"{ALIAS[fact]}.{fk[d]} = {ALIAS[d]}.{ids[d]}" for d in dims]
            return f"{fact} {ALIAS[fact]}, " + ", ".join(f"{d} {ALIAS[d]}" for d in dims)
        sql = f"{fact} {ALIAS[fact]}"
        for d in dims:
            how = self.pick(["inner", "left", "left"])
            sql += self.join(how, d, f"{ALIAS[fact]}.{fk[d]} = {ALIAS[d]}.{ids[d]}", self.dim_extra(d) if how == "left" else "")
        return sql

    def snowflake(self):
        fact = self.pick(["sales", "returns"])
        p = "ss" if fact == "sales" else "sr"
        dim, sub, fk, sub_fk, sub_id = self.pick([("item", "brand", f"{p}_item", "i_brand", "b_id"), ("customer", "addr", f"{p}_cust", "c_addr", "a_id")])
        self.tables.append(fact)
        d_id = "i_id" if dim == "item" else "c_id"
        h1, h2 = self.pick(["left", "left", "inner"]), self.pick(["left", "left", "inner"])
        sql = f"{fact} {ALIAS[fact]}"
        sql += self.join(h1, dim, f"{ALIAS[fact]}.{fk} = {ALIAS[dim]}.{d_id}")
        sql += self.join(h2, sub, f"{ALIAS[dim]}.{sub_fk} = {ALIAS[sub]}.{sub_id}", self.dim_extra(sub) if h2 == "left" else "")
        return sql

    def hub_rows(self):
        """The rows of sales joined to returns on the item: what a hub query multiplies."""
        s, r = self.tabs["sales"].counts["ss_item"], self.tabs["returns"].counts["sr_item"]
        return sum(n * r.get(v, 0) for v, n in s.items())

    def hub(self):
        order = self.rng.sample(["sales", "returns", "item"], 3)
        self.tables += order
        eqs = ["s.ss_item = r.sr_item", "i.i_id = s.ss_item", "i.i_id = r.sr_item"]
        if self.rng.random() < 0.3:
            eqs.append("s.ss_cust = r.sr_cust")
        self.rng.shuffle(eqs)
        if self.rng.random() < 0.5:
            self.where += eqs
            return ", ".join(f"{t} {ALIAS[t]}" for t in order)
        # Explicit joins: each equality in the ON of the later of its two tables.
        sql = f"{order[0]} {ALIAS[order[0]]}"
        for n, t in enumerate(order[1:], 1):
            seen = {ALIAS[x] for x in order[:n + 1]}
            on = [e for e in eqs if {x.split(".")[0] for x in e.split(" = ")} <= seen and ALIAS[t] in {x.split(".")[0] for x in e.split(" = ")}]
            sql += self.join("inner", t, " AND ".join(on))
        return sql

    def or_shape(self):
        fact, dim = self.pick([("sales", "item"), ("sales", "customer"), ("returns", "item")])
        p = "ss" if fact == "sales" else "sr"
        eq = f"{ALIAS[fact]}.{p}_{'item' if dim == 'item' else 'cust'} = {ALIAS[dim]}.{'i_id' if dim == 'item' else 'c_id'}"
        col = "i_cat" if dim == "item" else "c_seg"
        branches = [f"({eq} AND {ALIAS[fact]}.{p}_qty > {self.rng.randrange(6)})",
                    f"({eq.split(' = ')[1]} = {eq.split(' = ')[0]} AND {ALIAS[dim]}.{col} = '{col[-3:]}{self.rng.randrange(8)}')"]
        if self.rng.random() < 0.5:
            branches.append(f"({eq} AND {ALIAS[fact]}.{p}_qty = 0 AND {ALIAS[dim]}.{col} > '{col[-3:]}3')")
        self.tables += [fact, dim]
        if self.rng.random() < 0.5:
            self.where.append("(" + " OR ".join(branches) + ")")
            return f"{fact} {ALIAS[fact]}, {dim} {ALIAS[dim]}"
        return f"{fact} {ALIAS[fact]} JOIN {dim} {ALIAS[dim]} ON " + " OR ".join(branches)

    def non_preserved(self):
        self.tables += ["item", "sales"]
        extra = f" AND s.ss_qty > {self.rng.randrange(8)}" if self.rng.random() < 0.7 else ""
        return f"item i LEFT JOIN sales s ON i.i_id = s.ss_item{extra}"

    def grouped(self):
        self.tables += ["item", "sales"]
        k = self.rng.randrange(3)
        sub = f"(SELECT ss_item, count(*) AS n, sum(ss_qty) AS q FROM sales WHERE ss_qty > {k} GROUP BY ss_item) g"
        return f"item i {self.pick(['JOIN', 'LEFT JOIN'])} {sub} ON i.i_id = g.ss_item"

    def draw(self):
        shape = self.pick(self.SHAPES)
        if shape == "hub" and self.hub_rows() > MAX_HUB_ROWS:
            shape = "star"
        frm = getattr(self, "or_shape" if shape == "or" else shape)()
        cols = self.columns(shape)
        if self.rng.random() < 0.3 and shape != "grouped":
            t = self.pick(self.tables)
            col = next(c for c, k in SCHEMA[t][1].items() if k == "int" or k == "cat") if t != "sales" else "ss_amt"
            kind = SCHEMA[t][1][col]
            self.where.append(f"{ALIAS[t]}.{col} {'<> 3' if kind == 'int' else 'IS NOT NULL'}")
        where = f" WHERE {' AND '.join(self.where)}" if self.where else ""
        if self.rng.random() < 0.35:
            g = cols[0]
            sums = [c for c in cols[1:] if c.endswith(("qty", "amt", "price")) or c in ("g.n", "g.q")]
            agg = ", ".join([g, "count(*) AS cnt"] + [f"sum({c}) AS sum_{i}" for i, c in enumerate(sums)])
            sql = f"SELECT {agg} FROM {frm}{where} GROUP BY {g}"
        else:
            sql = f"SELECT {', '.join(cols)} FROM {frm}{where}"
        return sql, shape

    def columns(self, shape):
        """A few columns of the inputs (the first one an id or key of the first input)."""
        out = []
        for t in self.tables:
            if shape == "grouped" and t == "sales":
                continue  # read in the subquery g only
            cols = list(SCHEMA[t][1])
            out += [f"{ALIAS[t]}.{c}" for c in self.rng.sample(cols, min(2, len(cols)))]
        if shape == "grouped":
            out += ["g.n", "g.q"]
        return out[:5]


def query(seed, tabs):
    """Case `seed` over its group's tables `tabs`."""
    rng = random.Random(seed)
    g = Gen(rng, tabs)
    sql, shape = g.draw()
    used = sorted(set(g.tables))
    opts = ["--shuffle-partitions", "8", "--hot-factor", "2", "--broadcast-threshold", rng.choice(THRESHOLDS)]
    return Case(seed, sql, used, opts, shape, set(), f"python tests/py/whquery.py {seed}")


def Group(folder):
    """The tables of each group of seeds, written once under `folder`: `Group(folder)(seed)`."""
    return randquery.Group(folder, tables, "w")


if __name__ == "__main__":
    import argparse
    import os

    from randquery import args_of, describe
    ap = argparse.ArgumentParser()
    ap.add_argument("seed", type=int)
    ap.add_argument("folder", nargs="?")
    a = ap.parse_args()
    folder = a.folder or f"/tmp/whquery-{a.seed}"
    tabs = Group(folder)(a.seed)
    case = query(a.seed, tabs)
    q = os.path.join(folder, f"q{a.seed}.sql")
    with open(q, "w") as f:
        f.write(case.sql + "\n")
    print(describe(case, tabs))
    args = " ".join(args_of(case, tabs))
    print(f"skewjoin rewrite {q} {args}\nskewjoin verify {q} --engine polars {args}")
