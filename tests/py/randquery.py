"""Random join queries over random skewed tables, for checking skewjoin's rewrites on a real
engine (test_random_polars.py, test_random_spark.py).

`tables(group, folder)` writes the 3 or 4 tables of a group of seeds to Parquet; `query(seed,
tables, bound)` draws one query over them. Both are functions of their seed alone (Python's
`random.Random` is stable across versions, and no set is iterated, whose order of strings changes
with each process), so a failing seed is reproduced by running it again:
`python tests/py/randquery.py SEED` writes its tables and prints the case and its commands.

The tables share three key columns, so that any two can be joined on them, with USING too:
`ki` (int64), `ks` (string) and `kc` (a low-cardinality region string, only ever joined on as
part of a composite key, with `ki` or `ks`). Each key column of each table may have a hot value
(30-60% of its rows: a domain value, a placeholder or NULL), NULLs (0-20%), placeholders
(`-1`, `0`, `''`, `'unknown'`), a few rows of another table's hot value (a hot key on both
sides: salting) and a range of the domain that the other tables miss or cover (unmatched keys
for outer, semi and anti joins). The payload columns are named after the table (`ev_id`,
`ev_n`, `ev_s`, `ev_x`), so qualified select lists never collide; `*_x` is a double that is a
multiple of 0.25, so its sums are exact in any order.

The queries: chains of 2-4 inputs (tables, a table twice, filtering CTEs, aggregating CTEs,
derived tables) joined INNER, LEFT, RIGHT, FULL, LEFT SEMI or LEFT ANTI, written with ON (either
order of the equality, parentheses, composite keys, an extra condition on one input), USING, or
as a comma join with the key equalities in WHERE; WHERE filters (comparisons, IN, NOT IN,
BETWEEN, IS [NOT] NULL, LIKE, AND, OR, NOT), outer aggregates with GROUP BY and HAVING. Every
query is valid Spark SQL and, by construction, within what skewjoin's Polars renderer takes
(USING only as the first join of the only FROM item; ON conditions on one input, never a right
join's left side after the first join), or of Polars SQL: a column whose name two inputs share is
grouped by its position or its alias (`GROUP BY b.k` next to an `a.k` is "unable to find column
k:b" in Polars SQL). What the rendering gets wrong today is drawn anyway, rarely (see KNOWN_BUGS
in test_random_polars.py). No LIMIT, so every result is a set of rows, not a pick.
A query whose join (every join made FULL, filters dropped) would exceed `max_rows` rows is drawn
again, so that no case is slow.

`window_query(seed, tables)` draws a window or aggregate over one input instead (see
`Gen.draw_window`): aggregates over the whole partition, a running sum, a top N, a GROUP BY.
"""
import math
import random
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

TABLE_NAMES = ["events", "users", "orders", "items", "clicks", "accounts", "sessions", "titles", "devices", "stores"]
PREFIX = {"events": "ev", "users": "us", "orders": "od", "items": "it", "clicks": "cl", "accounts": "ac",
          "sessions": "se", "titles": "ti", "devices": "dv", "stores": "st"}
REGIONS = ["EU", "US", "APAC", "LATAM"]
PLACEHOLDERS = {"ki": [-1, 0], "ks": ["", "unknown"]}
# The keys a join can be on: one column, or two (composite). kc alone is too coarse to join on.
JOIN_KEYS = [("ki",), ("ks",), ("ki",), ("ks",), ("kc", "ki"), ("kc", "ks"), ("ki", "ks")]
GROUP_SIZE = 25  # seeds per group of tables


@dataclass
class Table:
    name: str
    prefix: str
    path: str
    rows: int
    # column -> 'i' (int64), 's' (string), 'd' (double)
    cols: dict
    # Values worth naming in a literal, per column: the hot one, placeholders, some others.
    literals: dict
    hot: dict  # key column -> hot value (None: NULL), absent: no hot value
    note: str = ""


def _key_values(rng, n, col, domain, others_hot, literals, p_hot):
    """n values for key column `col` (ki: ints, ks: strings) and the hot value (or a marker)."""
    def dom(v):
        return v if col == "ki" else f"s{v}"
    out = []
    hot = "none"
    null_share = rng.choice([0.0, 0.0, rng.uniform(0.0, 0.2)])
    if rng.random() < p_hot:
        share = rng.uniform(0.3, 0.6)
        r = rng.random()
        if r < 0.15:
            hot = None
            null_share = max(null_share, share)
        else:
            if r < 0.3:
                hot = rng.choice(PLACEHOLDERS[col])
            else:
                taken = {h for h in others_hot if h is not None}
                hot = dom(rng.randint(1, domain))
                while hot in taken:
                    hot = dom(rng.randint(1, domain))
            out += [hot] * int(n * share)
    out += [None] * int(n * null_share)
    # Another table's hot value, a few rows of it: the same key hot on both sides.
    partners = [h for h in others_hot if h is not None and h != hot]
    if partners and rng.random() < 0.35:
        out += [rng.choice(partners)] * rng.randint(3, 60)
    for p in PLACEHOLDERS[col]:
        if p != hot and rng.random() < 0.4:
            out += [p] * int(n * rng.uniform(0.0, 0.05))
    lo, hi = rng.choice([(1, domain), (1, domain), (1, int(domain * 0.8)), (int(domain * 0.2) + 1, int(domain * 1.15))])
    while len(out) < n:
        out.append(dom(rng.randint(lo, hi)))
    out = out[:n]
    rng.shuffle(out)
    # (dict.fromkeys, not a set: a set of strings has another order in each process.)
    literals[col] = [x for x in dict.fromkeys([hot if hot != "none" else dom(1), *PLACEHOLDERS[col], dom(rng.randint(lo, hi)), dom(rng.randint(lo, hi)), dom(hi + 5)]) if x is not None]
    return out, hot


def tables(group, folder):
    """The tables of a group of seeds, written to Parquet under `folder`: {name: Table}."""
    rng = random.Random(1_000_003 * group + 17)
    names = rng.sample(TABLE_NAMES, rng.choice([3, 4, 4]))
    domains = {"ki": rng.randint(80, 600), "ks": rng.randint(80, 600)}
    hots = {"ki": [], "ks": []}
    out = {}
    for x, name in enumerate(names):
        p = PREFIX[name]
        # A large table, mostly skewed (the first one always), or a small one, seldom skewed.
        fact = x == 0 or rng.random() < 0.5
        lo, hi = (1000, 3000) if fact else (200, 900)
        n = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
        p_hot = 0.75 if fact else 0.2
        literals = {}
        ki, hot_i = _key_values(rng, n, "ki", domains["ki"], hots["ki"], literals, p_hot)
        ks, hot_s = _key_values(rng, n, "ks", domains["ks"], hots["ks"], literals, p_hot)
        # Most rows' ks follows from their ki, the same way in every table, so that a composite
        # key (ki, ks) matches across tables.
        corr = rng.uniform(0.3, 0.9)
        for i, v in enumerate(ki):
            if v is not None and v > 0 and ks[i] is not None and ks[i] != hot_s and rng.random() < corr:
                ks[i] = f"s{(v * 7) % domains['ks'] + 1}"
        hot = {}
        for col, h, vals in [("ki", hot_i, ki), ("ks", hot_s, ks)]:
            if h != "none":
                hot[col] = h
                hots[col].append(h)
        # Rows whose ki is the hot value mostly share their ks hot value too (a hot pair for a
        # composite key), in half the tables.
        if "ki" in hot and "ks" in hot and rng.random() < 0.5:
            hi_rows = [i for i, v in enumerate(ki) if v == hot["ki"]]
            hs_rows = [i for i, v in enumerate(ks) if v == hot["ks"]]
            rest = [i for i in range(n) if ks[i] != hot["ks"]]
            rng.shuffle(rest)
            moved = set(hi_rows[:len(hs_rows)])
            new_ks = list(ks)
            # Put the hot ks values on the hot ki rows; what was there goes where they were.
            displaced = [ks[i] for i in hi_rows[:len(hs_rows)] if ks[i] != hot["ks"]]
            for i in moved:
                new_ks[i] = hot["ks"]
            spare = [i for i in hs_rows if i not in moved]
            for i, v in zip(spare, displaced):
                new_ks[i] = v
            ks = new_ks
        # kc: one region for most rows of the hot ki value (a hot composite (kc, ki)).
        main_region = rng.choice(REGIONS)
        kc_null = rng.choice([0.0, rng.uniform(0.0, 0.1)])
        kc_blank = rng.choice([0.0, rng.uniform(0.0, 0.05)])
        kc = []
        for v in ki:
            r = rng.random()
            if r < kc_null:
                kc.append(None)
            elif r < kc_null + kc_blank:
                kc.append("")
            elif "ki" in hot and v == hot["ki"] and rng.random() < 0.9:
                kc.append(main_region)
            else:
                kc.append(rng.choice(REGIONS))
        literals["kc"] = REGIONS[:2] + [""]
        n_null = rng.choice([0.0, 0.05])
        cols = {
            f"{p}_id": pa.array(range(n), pa.int64()),
            "ki": pa.array(ki, pa.int64()),
            "ks": pa.array(ks, pa.string()),
            "kc": pa.array(kc, pa.string()),
            f"{p}_n": pa.array([None if rng.random() < n_null else rng.randint(0, 99) for _ in range(n)], pa.int64()),
            f"{p}_s": pa.array([None if rng.random() < n_null else f"x{rng.randint(0, 30)}" for _ in range(n)], pa.string()),
            f"{p}_x": pa.array([None if rng.random() < n_null else rng.randint(0, 4000) / 4 for _ in range(n)], pa.float64()),
        }
        # Column order varies from table to table.
        order = list(cols)
        rng.shuffle(order)
        path = f"{folder}/{name}.parquet"
        pq.write_table(pa.table({c: cols[c] for c in order}), path)
        literals.update({f"{p}_id": [0, n // 2, n], f"{p}_n": [0, 10, 50, 90], f"{p}_s": ["x1", "x7", "x20"], f"{p}_x": [0.0, 100.5, 500.25, 900.0]})
        # And a few values the table has, so that an equality or an IN list keeps some rows.
        for c in literals:
            real = [v for v in cols[c].to_pylist() if v is not None]
            literals[c] = list(dict.fromkeys(literals[c] + [rng.choice(real) for _ in range(3)]))
        types = {f"{p}_id": "i", "ki": "i", "ks": "s", "kc": "s", f"{p}_n": "i", f"{p}_s": "s", f"{p}_x": "d"}
        note = ", ".join(f"{c} hot {hot[c]!r}" for c in hot) or "no hot key"
        out[name] = Table(name, p, path, n, {c: types[c] for c in order}, literals, hot, f"{name}: {n} rows, {note}")
    return out


def group_of(seed):
    return seed // GROUP_SIZE


# ---------------------------------------------------------------------------------------------
# Queries.

@dataclass
class Source:
    alias: str      # the name columns are qualified with
    text: str       # the FROM item as written
    table: Table    # the table it reads
    cols: dict      # visible column -> type
    keys: set       # key columns it has
    literals: dict


@dataclass
class Case:
    seed: int
    sql: str
    tables: list                       # names of the tables the query reads
    options: list                      # skewjoin options
    shape: str                         # one line: the query's form, for the report
    tags: set = field(default_factory=set)
    again: str = ""                    # the command that writes the case again


def lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(v, float):
        return repr(v)
    return str(v)


class Gen:
    def __init__(self, rng, tabs, max_rows, bound, parens):
        self.rng = rng
        self.parens = parens
        self.tabs = tabs
        self.max_rows = max_rows
        self.bound = bound
        self.lower = rng.random() < 0.1
        self.n_alias = 0
        self.n_cte = 0
        self.ctes = []
        self.tags = set()

    def kw(self, s):
        return s.lower() if self.lower else s

    def chance(self, p):
        return self.rng.random() < p

    # -- predicates ---------------------------------------------------------------------------
    def pred(self, src, qualify=True, depth=0):
        """A random predicate over the columns of `src`."""
        rng = self.rng
        if depth < 1 and self.chance(0.2):
            a, b = self.pred(src, qualify, depth + 1), self.pred(src, qualify, depth + 1)
            op = rng.choice(["AND", "OR", "OR"])
            e = f"({a} {self.kw(op)} {b})"
            return f"{self.kw('NOT')} {e}" if self.chance(0.2) else e
        col = rng.choice(list(src.cols))
        t = src.cols[col]
        c = f"{src.alias}.{col}" if qualify else col
        vals = src.literals.get(col) or ([1, 5] if t == "i" else ["x1"] if t == "s" else [1.5])
        v = rng.choice(vals)
        r = rng.random()
        # About half of the predicates keep most rows (<>, NOT IN, IS NOT NULL, a range), so
        # that a conjunction of a few still leaves rows to compare.
        if r < 0.12:
            return f"{c} {self.kw('IS NULL' if self.chance(0.3) else 'IS NOT NULL')}"
        if r < 0.3:
            items = rng.sample(vals, min(len(vals), rng.randint(1, 3)))
            neg = self.kw("NOT IN") if self.chance(0.5) else self.kw("IN")
            return f"{c} {neg} ({', '.join(lit(x) for x in items)})"
        if t in "id" and r < 0.42:
            a, b = sorted(rng.sample(vals, 2)) if len(vals) > 1 else (v, v)
            return f"{c} {self.kw('BETWEEN')} {lit(a)} {self.kw('AND')} {lit(b)}"
        if t == "s" and r < 0.5:
            pats = {"ks": ["s1%", "s_%", "%0", "%nk%", "%", "s__"], "kc": ["E%", "%A%", "%", "_S"]}.get(col, ["x1%", "x_", "%0", "%"])
            pat = rng.choice(pats)
            neg = self.kw("NOT LIKE") if pat != "%" and self.chance(0.4) else self.kw("LIKE")
            return f"{c} {neg} '{pat}'"
        op = rng.choice(["=", "<>", "<", ">", "<=", ">=", "!=", "<>", "!="])
        return f"{c} {op} {lit(v)}"

    # -- inputs -------------------------------------------------------------------------------
    def alias(self, table):
        self.n_alias += 1
        return self.rng.choice([table.prefix, table.name[0], "t"]) + str(self.n_alias)

    def source(self, table, used_names):
        """A FROM item reading `table`: the table itself, a filtering or aggregating CTE, or a
        derived table."""
        rng = self.rng
        r = rng.random()
        cols = dict(table.cols)
        if r < 0.66:
            # The table, named by an alias (with or without AS) or, the first time, by its name.
            if table.name not in used_names and self.chance(0.25):
                return Source(table.name, table.name, table, cols, {"ki", "ks", "kc"}, table.literals)
            a = self.alias(table)
            return Source(a, f"{table.name} {self.kw('AS') + ' ' if self.chance(0.3) else ''}{a}", table, cols, {"ki", "ks", "kc"}, table.literals)
        base = Source(table.name, table.name, table, cols, {"ki", "ks", "kc"}, table.literals)
        if r < 0.94:
            # A filter: SELECT * or some columns (the keys always), WHERE one or two predicates.
            where = self.pred(base, qualify=False)
            if self.chance(0.2):
                where = f"{where} {self.kw('AND')} {self.pred(base, qualify=False)}"
            if self.chance(0.5):
                proj = "*"
            else:
                keep = [c for c in table.cols if c in ("ki", "ks", "kc") or self.chance(0.5)]
                cols = {c: table.cols[c] for c in keep}
                proj = ", ".join(keep)
            body = f"{self.kw('SELECT')} {proj} {self.kw('FROM')} {table.name} {self.kw('WHERE')} {where}"
            self.tags.add("filtered-input")
            if self.chance(0.7):
                self.n_cte += 1
                name = f"x{self.n_cte}"
                self.ctes.append(f"{name} {self.kw('AS')} ({body})")
                self.tags.add("cte")
                a = name if self.chance(0.5) else self.alias(table)
                return Source(a, name if a == name else f"{name} {a}", table, cols, set(k for k in ("ki", "ks", "kc") if k in cols), table.literals)
            a = self.alias(table)
            self.tags.add("derived")
            return Source(a, f"({body}) {a}", table, cols, set(k for k in ("ki", "ks", "kc") if k in cols), table.literals)
        # An aggregating CTE: one row per key (one or two key columns).
        keys = rng.choice([("ki",), ("ks",), ("kc", "ki"), ("kc", "ks")])
        p = table.prefix
        self.n_cte += 1
        name = f"g{self.n_cte}"
        aggs = [f"{self.kw('count')}(*) {self.kw('AS')} {name}_c", f"{self.kw('sum')}({p}_n) {self.kw('AS')} {name}_n", f"{self.kw('max')}({p}_s) {self.kw('AS')} {name}_s"]
        where = f" {self.kw('WHERE')} {self.pred(base, qualify=False)}" if self.chance(0.4) else ""
        body = f"{self.kw('SELECT')} {', '.join(keys)}, {', '.join(aggs)} {self.kw('FROM')} {table.name}{where} {self.kw('GROUP BY')} {', '.join(keys)}"
        self.ctes.append(f"{name} {self.kw('AS')} ({body})")
        self.tags.add("agg-cte")
        cols = {k: table.cols[k] for k in keys}
        cols.update({f"{name}_c": "i", f"{name}_n": "i", f"{name}_s": "s"})
        lits = dict(table.literals)
        lits.update({f"{name}_c": [1, 2, 5], f"{name}_n": [0, 100], f"{name}_s": ["x1", "x2"]})
        a = name if self.chance(0.6) else self.alias(table)
        return Source(a, name if a == name else f"{name} {a}", table, cols, set(keys), lits)

    # -- the query ----------------------------------------------------------------------------
    def draw(self):
        rng = self.rng
        names = list(self.tabs)
        n = rng.choice([2, 2, 2, 3, 3, 4])
        picked = []
        for _ in range(n):
            # Mostly distinct tables; sometimes one twice (a self-join).
            free = [t for t in names if t not in picked]
            picked.append(rng.choice(free) if free and not self.chance(0.12) else rng.choice(names))
        comma = n >= 2 and self.chance(0.22)
        srcs = []
        used = set()
        for t in picked:
            s = self.source(self.tabs[t], used)
            used.add(t)
            srcs.append(s)
        # The joins: each input joins one visible earlier input on a key both have.
        joins = []  # (kind, right index, left index, key columns)
        visible = [0]
        for i in range(1, n):
            cands = [(j, k) for j in visible for k in JOIN_KEYS if set(k) <= srcs[j].keys and set(k) <= srcs[i].keys]
            if not cands:
                return None
            j, k = rng.choice(cands)
            if comma:
                kind = "inner"
            else:
                kind = rng.choices(["inner", "left", "right", "full", "semi", "anti"], [3, 4, 2, 2, 1.5, 1.5])[0]
            joins.append((kind, i, j, k))
            if kind not in ("semi", "anti"):
                visible.append(i)
        # Too many rows: draw again.
        if self.bound(srcs, joins) > self.max_rows:
            return None
        vis = [srcs[i] for i in visible]
        self.tags.add(f"chain{n}")
        self.tags.update(k for k, *_ in joins)

        where = []
        using = ()
        if comma:
            self.tags.add("comma")
            from_ = ", ".join(s.text for s in srcs)
            for kind, i, j, k in joins:
                where += [self.eq(srcs[j], srcs[i], c) for c in k]
            rng.shuffle(where)
        else:
            parts = [srcs[0].text]
            for x, (kind, i, j, k) in enumerate(joins):
                word = {"inner": rng.choice(["JOIN", "INNER JOIN"]), "left": rng.choice(["LEFT JOIN", "LEFT OUTER JOIN"]),
                        "right": rng.choice(["RIGHT JOIN", "RIGHT OUTER JOIN"]), "full": rng.choice(["FULL JOIN", "FULL OUTER JOIN"]),
                        "semi": "LEFT SEMI JOIN", "anti": "LEFT ANTI JOIN"}[kind]
                if x == 0 and n == 2 and self.chance(0.2) and all(c in srcs[0].cols for c in k):
                    using = k
                    self.tags.add("using")
                    parts.append(f"{self.kw(word)} {srcs[i].text} {self.kw('USING')} ({', '.join(k)})")
                    continue
                conds = [self.eq(srcs[j], srcs[i], c) for c in k]
                if self.chance(0.25):
                    # An extra condition on one input: the right one, or one on the left (not
                    # the left of a right join after the first: Polars has no form for it).
                    lefts = [srcs[v] for v in visible if v < i]
                    if kind == "right" and x > 0:
                        side = srcs[i]
                    else:
                        side = srcs[i] if self.chance(0.6) else rng.choice(lefts)
                    conds.insert(rng.randint(0, len(conds)), self.pred(side))
                    self.tags.add("on-extra")
                on = f" {self.kw('AND')} ".join(conds)
                if self.chance(self.parens):
                    on = f"({on})"
                    self.tags.add("on-parens")
                parts.append(f"{self.kw(word)} {srcs[i].text} {self.kw('ON')} {on}")
            from_ = " ".join(parts)
        if self.chance(0.5):
            for _ in range(rng.choice([1, 1, 1, 2])):
                where.append(self.pred(rng.choice(vis)))
            self.tags.add("where")

        # The select list.
        agg = self.chance(0.3)
        group_by = []
        having = ""
        bare_using = using and self.chance(0.5)
        if agg:
            self.tags.add("aggregate")
            gcols = []
            for _ in range(rng.choice([0, 1, 1, 2])):
                s = rng.choice(vis)
                c = rng.choice([c for c in s.cols if not c.endswith("_x")] or list(s.cols))
                gcols.append((s.alias, c))
            gcols = list(dict.fromkeys(gcols))
            items = [f"{a}.{c} {self.kw('AS')} g{x}" for x, (a, c) in enumerate(gcols)]
            # A column whose name another input has too is grouped by its position or its
            # alias: Polars SQL cannot find `b.k` in GROUP BY when `a.k` exists as well ("unable
            # to find column k:b"), a limit of Polars that the rendering does not work around.
            shared = {c for s in srcs for c in s.cols if sum(c in t.cols for t in srcs) > 1}
            group_by = [f"{a}.{c}" if c not in shared else rng.choice([str(x + 1), f"g{x}"]) for x, (a, c) in enumerate(gcols)]
            if group_by and group_by != [f"{a}.{c}" for a, c in gcols]:
                self.tags.add("group-by-position-or-alias")
            items.append(f"{self.kw('count')}(*) {self.kw('AS')} n")
            for x in range(rng.randint(1, 3)):
                s = rng.choice(vis)
                c = rng.choice(list(s.cols))
                t = s.cols[c]
                f = rng.choice(["count", "min", "max"] + (["sum", "sum"] if t != "s" else []))
                items.append(f"{self.kw(f)}({s.alias}.{c}) {self.kw('AS')} a{x}")
            if gcols and self.chance(0.3):
                having = f" {self.kw('HAVING')} {self.kw('count')}(*) > {rng.choice([1, 2, 5])}"
        elif len(vis) == 1 and self.chance(0.5):
            items = ["*"]
        else:
            items = []
            names_out = set()
            if self.chance(0.15):
                s = rng.choice(vis)
                items.append(f"{s.alias}.*")
                names_out.update(s.cols)
            for x in range(rng.randint(2, 5)):
                s = rng.choice(vis)
                c = rng.choice(list(s.cols))
                if bare_using and c in using and self.chance(0.5):
                    e = c
                else:
                    e = f"{s.alias}.{c}"
                if c in names_out or self.chance(0.5):
                    items.append(f"{e} {self.kw('AS')} col{x}")
                    names_out.add(f"col{x}")
                else:
                    items.append(e)
                    names_out.add(c)
            if any(k == "full" for k, *_ in joins) and self.chance(0.3):
                kc = [c for c in ("ki", "ks") if all(c in s.cols for s in vis[:2])]
                if kc and len(vis) >= 2:
                    items.append(f"{self.kw('coalesce')}({vis[0].alias}.{kc[0]}, {vis[1].alias}.{kc[0]}) {self.kw('AS')} ck")
            if len(vis) >= 2 and self.chance(0.15):
                a, b = vis[0], vis[1]
                na, nb = f"{a.table.prefix}_n", f"{b.table.prefix}_n"
                if na in a.cols and nb in b.cols:
                    items.append(f"{a.alias}.{na} + {b.alias}.{nb} {self.kw('AS')} nn")
                elif "ks" in b.cols:
                    items.append(f"{self.kw('coalesce')}({b.alias}.ks, 'none') {self.kw('AS')} cz")
        distinct = self.kw("DISTINCT ") if not agg and items != ["*"] and self.chance(0.06) else ""
        sql = ""
        if self.ctes:
            sql = f"{self.kw('WITH')} " + ", ".join(self.ctes) + " "
        sql += f"{self.kw('SELECT')} {distinct}{', '.join(items)} {self.kw('FROM')} {from_}"
        if where:
            sql += f" {self.kw('WHERE')} " + f" {self.kw('AND')} ".join(where)
        if group_by:
            sql += f" {self.kw('GROUP BY')} " + ", ".join(group_by) + having
        if self.chance(0.1) and agg and group_by:
            sql += f" {self.kw('ORDER BY')} n {self.kw('DESC')}"
        shape = f"{'comma' if comma else 'explicit'} chain of {n}: " + ", ".join(f"{k} on {'+'.join(c)}" for k, _, _, c in joins)
        return sql, sorted(set(picked)), shape

    def eq(self, left, right, col):
        a, b = f"{left.alias}.{col}", f"{right.alias}.{col}"
        return f"{b} = {a}" if self.chance(0.3) else f"{a} = {b}"


    # -- windows and aggregates over one input ---------------------------------------------
    def draw_window(self):
        """One input (a table, a filtering or aggregating CTE, a derived table) with window
        functions over a PARTITION BY of its key columns: aggregates over the whole partition
        (mostly; what skewjoin rewrites), a running sum (RANGE frame: ties share a value, so the
        result is deterministic), a top N by a unique column, or a GROUP BY."""
        rng = self.rng
        table = self.tabs[rng.choice(sorted(self.tabs))]
        src = self.source(table, set())
        keys = [k for k in [("ki",), ("ks",), ("ki",), ("kc", "ki"), ("kc", "ks")] if set(k) <= src.keys]
        if not keys:
            return None
        joined = self.window_join(src, table) if self.bound is not None and self.chance(0.3) else ""
        if joined is None:
            return None
        used = [table.name] + ([self.joined_table] if joined else [])
        part = ", ".join(f"{src.alias}.{c}" if joined or self.chance(0.5) else c for c in rng.choice(keys))
        nums = [c for c, t in src.cols.items() if t in "id" and c not in ("ki",)]
        if not nums:
            return None
        over = f"{self.kw('OVER')} ({self.kw('PARTITION BY')} {part})"
        where = f" {self.kw('WHERE')} {self.pred(src)}" if self.chance(0.5) else ""
        with_ = f"{self.kw('WITH')} {', '.join(self.ctes)} " if self.ctes else ""
        r = rng.random()
        if r < 0.72:
            fns = [rng.choice(["sum", "min", "max", "avg", "count"]) for _ in range(rng.randint(1, 3))]
            items = [f"{self.kw(f)}({rng.choice(nums) if f != 'count' or self.chance(0.5) else '*'}) {over} {self.kw('AS')} w{i}" for i, f in enumerate(fns)]
            if self.chance(0.3):
                c = rng.choice(nums)
                items.append(f"{c} - {self.kw('min')}({c}) {over} {self.kw('AS')} wd")
            head = f"{src.alias}.*" if self.chance(0.4) else ", ".join(f"{src.alias}.{c}" if joined else c for c in list(src.cols)[:4])
            self.tags.add("window")
            return f"{with_}{self.kw('SELECT')} {head}, {', '.join(items)} {self.kw('FROM')} {src.text}{joined}{where}", used, "window over the whole partition"
        if r < 0.82:
            c = rng.choice(nums)
            order = f"{self.kw('ORDER BY')} {c}"
            self.tags.add("ordered-window")
            return f"{with_}{self.kw('SELECT')} {', '.join(f'{src.alias}.{x}' for x in src.cols)}, {self.kw('sum')}({c}) {over[:-1]} {order}) {self.kw('AS')} running {self.kw('FROM')} {src.text}{joined}{where}", used, "running sum"
        if r < 0.92 and f"{table.prefix}_id" in src.cols:
            order = f"{self.kw('ORDER BY')} {table.prefix}_id"
            inner = f"{self.kw('SELECT')} {', '.join(f'{src.alias}.{x}' for x in src.cols)}, {self.kw('row_number')}() {over[:-1]} {order}) {self.kw('AS')} rn {self.kw('FROM')} {src.text}{joined}{where}"
            self.tags.add("top-n")
            return f"{with_}{self.kw('SELECT')} * {self.kw('FROM')} ({inner}) tn {self.kw('WHERE')} rn <= {rng.randint(1, 3)}", used, "top N"
        cols = rng.choice(keys)
        g = ", ".join(f"{src.alias}.{c}" for c in cols)
        self.tags.add("group-by")
        return f"{with_}{self.kw('SELECT')} {g}, {self.kw('count')}(*) {self.kw('AS')} n, {self.kw('sum')}({rng.choice(nums)}) {self.kw('AS')} s {self.kw('FROM')} {src.text}{joined}{where} {self.kw('GROUP BY')} {g}", used, "group by"


    def window_join(self, src, table):
        """` JOIN other ON ...` (inner or left) of the window's input with another table on a
        key both have, when the join stays under `max_rows` rows; None when it would not."""
        rng = self.rng
        other = self.tabs[rng.choice(sorted(t for t in self.tabs if t != table.name))]
        o = self.source(other, {table.name})
        k = rng.choice([k for k in [("ki",), ("ks",)] if set(k) <= src.keys and set(k) <= o.keys] or [None])
        if k is None or self.bound([src, o], [("inner", 1, 0, k)]) > self.max_rows:
            return None
        kind = self.kw(rng.choice(["JOIN", "LEFT JOIN"]))
        self.tags.add("window-over-join")
        self.joined_table = other.name
        return f" {kind} {o.text} {self.kw('ON')} {src.alias}.{k[0]} = {o.alias}.{k[0]}"

THRESHOLDS = ["256", "1KB", "2KB", "2KB", "4KB", "16KB"]


def window_query(seed, tabs, bound=None, max_rows=20_000):
    """Case `seed` over the tables `tabs`: a window or aggregate over one input, or (with
    `bound`) over it joined to another table (see `Gen.draw_window`)."""
    rng = random.Random(seed)
    for _ in range(50):
        g = Gen(rng, tabs, max_rows, bound, 0.0)
        out = g.draw_window()
        if out is not None:
            sql, used, shape = out
            # A low hot line, so that many cases are rewritten (the point is their rows).
            opts = ["--shuffle-partitions", "8", "--hot-factor", "1.5"]
            return Case(seed, sql, used, opts, shape, g.tags, f"python tests/py/randquery.py {seed} --windows")
    raise AssertionError(f"seed {seed}: no window query in 50 draws")


def rewritten(rw):
    """Whether the rewrite changed a join or a window."""
    return bool(rw["changes"]) or any(w["status"] == "rewritten" for w in rw.get("windows", []))


def query(seed, tabs, bound, max_rows=150_000, parens=0.02):
    """Case `seed` over the tables `tabs` ({name: Table} of its group). `bound(sources, joins)`
    gives an upper bound of the join's rows (see `Bound`); `parens`: how often an ON condition
    is written in parentheses."""
    rng = random.Random(seed)
    for _ in range(50):
        g = Gen(rng, tabs, max_rows, bound, parens)
        out = g.draw()
        if out is not None:
            sql, used, shape = out
            opts = ["--shuffle-partitions", "8", "--hot-factor", "2", "--broadcast-threshold", rng.choice(THRESHOLDS)]
            again = f"python tests/py/randquery.py {seed}" + (f" --max-rows {max_rows} --parens {parens}" if (max_rows, parens) != (150_000, 0.02) else "")
            return Case(seed, sql, used, opts, shape, g.tags, again)
    raise AssertionError(f"seed {seed}: no query under {max_rows} rows in 50 draws")


class Bound:
    """An upper bound of a chain's rows, from DuckDB: every join FULL on the same keys, over the
    base tables, no filters (semi and anti joins add no rows and are left out)."""

    def __init__(self, tabs):
        import duckdb
        self.con = duckdb.connect()
        for t in tabs.values():
            self.con.execute(f"CREATE VIEW {t.name} AS SELECT * FROM read_parquet('{t.path}')")
        self.cache = {}

    def __call__(self, srcs, joins):
        parts = [f"{srcs[0].table.name} s0"]
        for kind, i, j, k in joins:
            if kind in ("semi", "anti"):
                continue
            on = " AND ".join(f"s{j}.{c} = s{i}.{c}" for c in k)
            parts.append(f"FULL JOIN {srcs[i].table.name} s{i} ON {on}")
        q = "SELECT count(*) FROM " + " ".join(parts)
        if q not in self.cache:
            self.cache[q] = self.con.execute(q).fetchone()[0]
        return self.cache[q]


# ---------------------------------------------------------------------------------------------
# Running a case through skewjoin.

REFUSAL = "cannot render the query for Polars SQL"


def describe(case, tabs):
    """The case in a few lines: what a failure prints."""
    return "\n".join([f"seed {case.seed}: {case.shape}", f"query: {case.sql}",
                      "tables: " + "; ".join(tabs[t].note for t in case.tables),
                      f"options: {' '.join(case.options)}",
                      f"again: {case.again} [FOLDER]  (writes the tables, prints the commands)"])


def args_of(case, tabs):
    out = list(case.options)
    for t in case.tables:
        out += ["--table", f"{t}={tabs[t].path}"]
    return out


def _run(binary, cmd, case, tabs, tmp, extra, settings=None):
    import json
    import subprocess
    q = f"{tmp}/{cmd}{case.seed}.sql"
    with open(q, "w") as f:
        f.write(case.sql)
    # Every join with a movable hot key rewritten; AQE off unless `settings` (Spark settings,
    # `--conf` pairs) say otherwise.
    confs = settings or {"spark.sql.adaptive.enabled": "false"}
    legacy = [a for k, v in confs.items() for a in ("--conf", f"{k}={v}")] + ["--min-gain", "off"]
    p = subprocess.run([binary, cmd, *legacy, q, "-q", "--format", "json", *extra, *args_of(case, tabs)], capture_output=True, text=True, timeout=300)
    try:
        out = json.loads(p.stdout) if p.stdout.strip() else None
    except ValueError:
        out = None
    return p.returncode, out, p.stderr


def rewrite(binary, case, tabs, tmp, settings=None):
    """`skewjoin rewrite --format json` of the case: (exit code, JSON or None, stderr), under
    the Spark `settings` given (default: AQE off)."""
    return _run(binary, "rewrite", case, tabs, tmp, ["--threads", "1"], settings)


def verify(binary, case, tabs, tmp):
    """`skewjoin verify --engine polars --format json` of the case: (exit code, JSON or None,
    stderr)."""
    return _run(binary, "verify", case, tabs, tmp, ["--engine", "polars"])


@dataclass
class Outcome:
    kind: str        # rewritten, unchanged, refused or failed
    message: str     # why it failed (or was refused)
    rows: int = -1   # rows of the original
    changes: list = field(default_factory=list)


def changes_line(rw):
    out = []
    for c in (rw or {}).get("changes", []):
        kinds = sorted({h["strategy"]["kind"] for h in c["hot_keys"]})
        out.append(f"{c['join']} [{c['how']}]: {', '.join(kinds)} for {len(c['hot_keys'])} hot key(s)")
    for w in (rw or {}).get("windows", []):
        if w["status"] == "rewritten":
            out.append(f"{w['stage']}: {len(w['plan']['hot'])} hot value(s) out of the window")
    return out


def check_polars(binary, case, tabs, tmp):
    """Rewrite the case and verify it on Polars: an Outcome. Anything but the same rows and
    columns (or a one-line refusal to render for Polars) is a failure. A case with nothing
    rewritten is not run: its rewrite is the query as given (the rewrite tests check that)."""
    rc, rw, rerr = rewrite(binary, case, tabs, tmp)
    if rc != 0 or rw is None or "panicked" in rerr:
        return Outcome("failed", f"skewjoin rewrite exited {rc}: {rerr.strip()[:2000]}")
    if not rewritten(rw):
        return Outcome("unchanged", "")
    changes = changes_line(rw)
    vc, v, verr = verify(binary, case, tabs, tmp)
    if vc == 2 and REFUSAL in verr and len(verr.strip().splitlines()) == 1:
        return Outcome("refused", verr.strip(), changes=changes)
    if vc not in (0, 1) or v is None or "panicked" in verr:
        return Outcome("failed", f"skewjoin verify exited {vc}: {verr.strip()[:2000]}", changes=changes)
    before, after = v["measured_before"]["columns"], v["measured_after"]["columns"]
    if not (v["identical"] and v["columns_match"]) or vc != 0 or v["rows_original"] != v["rows_rewritten"]:
        msg = (f"verify: identical={v['identical']} columns_match={v['columns_match']} (exit {vc}); rows {v['rows_original']} vs "
               f"{v['rows_rewritten']}; columns {before} vs {after}\n"
               f"only in the original ({len(v['only_in_original'])} shown): {v['only_in_original'][:3]}\n"
               f"only in the rewrite ({len(v['only_in_rewritten'])} shown): {v['only_in_rewritten'][:3]}")
        return Outcome("failed", msg, v["rows_original"], changes)
    return Outcome("rewritten" if rewritten(rw) else "unchanged", "", v["rows_original"], changes)


def summary(outcomes, what, known=0):
    """One line: how many cases were rewritten, left alone, refused, failed (`known`: how many of
    the cases are listed as known bugs)."""
    from collections import Counter
    k = Counter(o.kind for o in outcomes)
    empty = sum(1 for o in outcomes if o.rows == 0)  # of the cases run (the rewritten ones)
    refused = f"{k['refused']} refused by the Polars rendering, " if what == "polars" else ""
    return (f"{what}: {len(outcomes)} random queries: {k['rewritten']} rewritten, {k['unchanged']} unchanged, "
            f"{refused}{k['failed']} failed ({known} listed as known bugs); {empty} with an empty result")


def _tables_and_bound(group, folder):
    tabs = tables(group, folder)
    return tabs, Bound(tabs)


class Group:
    """What each group of seeds shares, made once under `folder` (in `{prefix}{group}`): by
    default its tables and their bounds; `make(group, folder)` for another generator's."""

    def __init__(self, folder, make=_tables_and_bound, prefix="g"):
        self.folder = folder
        self.make = make
        self.prefix = prefix
        self.groups = {}

    def __call__(self, seed):
        import os
        g = group_of(seed)
        if g not in self.groups:
            d = os.path.join(str(self.folder), f"{self.prefix}{g}")
            os.makedirs(d, exist_ok=True)
            self.groups[g] = self.make(g, d)
        return self.groups[g]


def check_all_polars(binary, cases, folder):
    """`check_polars` of each (case, tables), two at a time: {seed: (case, tables, Outcome)}."""
    from concurrent.futures import ThreadPoolExecutor

    def one(ct):
        case, tabs = ct
        return case.seed, (case, tabs, check_polars(binary, case, tabs, folder))

    with ThreadPoolExecutor(2) as ex:
        return dict(ex.map(one, cases))


if __name__ == "__main__":
    # python tests/py/randquery.py SEED [--max-rows N] [--parens P] [FOLDER]: write the seed's
    # tables, print the case and the commands that rewrite and verify it.
    import argparse
    import os
    ap = argparse.ArgumentParser()
    ap.add_argument("seed", type=int)
    ap.add_argument("folder", nargs="?")
    ap.add_argument("--max-rows", type=int, default=150_000)
    ap.add_argument("--parens", type=float, default=0.02)
    ap.add_argument("--windows", action="store_true", help="a window case (window_query)")
    a = ap.parse_intermixed_args()
    seed = a.seed
    folder = a.folder or f"/tmp/randquery-{seed}"
    tabs, bound = Group(folder)(seed)
    case = window_query(seed, tabs, bound) if a.windows else query(seed, tabs, bound, max_rows=a.max_rows, parens=a.parens)
    q = os.path.join(folder, f"q{seed}.sql")
    with open(q, "w") as f:
        f.write(case.sql + "\n")
    print(describe(case, tabs))
    a = " ".join(args_of(case, tabs))
    print(f"skewjoin rewrite {q} {a}\nskewjoin verify {q} --engine polars {a}")


def params(seeds, known_bugs, both_every=0, why=""):
    """The seeds as pytest parameters, each known bug a strict xfail with its description;
    with `both_every` N, every Nth seed also runs on Spark 4.x (marked both_lines for `why`)."""
    import pytest
    out = []
    for i, s in enumerate(seeds):
        marks = [pytest.mark.xfail(strict=True, reason=known_bugs[s])] if s in known_bugs else []
        if both_every and i % both_every == 0:
            marks.append(pytest.mark.both_lines(why))
        out.append(pytest.param(s, marks=marks))
    return out
