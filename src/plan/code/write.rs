//! The writing of a plan's branches in one language (a `Syntax`): the header with the hot
//! values' counts, the function of the two inputs with its `join` helper, each branch as
//! statements, their `union`, and the line that calls the function in place of the join.

use super::branches::{branches, Branch, Rows, SaltedKey};
use super::{join_how, CodeJoin, Syntax};
use crate::format::{fmt_count, fmt_share};
use crate::plan::model::{HotKey, HotSide, Plan, Side, Strategy};
use crate::plan::SALT_COLUMN;
use crate::value::{KeyType, Value};

/// Writes a plan's branches in one language.
struct Writer<'a> {
    j: &'a CodeJoin<'a>,
    s: &'a dyn Syntax,
    names: [String; 2],
}

/// Names the code binds itself, which an input's name must not take.
const TAKEN: [&str; 14] = [
    "join",
    "l",
    "r",
    "how",
    "joined",
    "rest",
    "checked",
    "slices_right",
    "slices_left",
    "inner_slices_right",
    "inner_slices_left",
    "F",
    "DataFrame",
    "functions",
];

/// An input's name as an identifier the code's own names leave alone.
fn input_name(s: &dyn Syntax, name: &str) -> String {
    let id = s.identifier(name);
    let own = TAKEN.contains(&id.as_str())
        || ["salted_", "unmatched_", "nulls_", "hot_", "keys_"].iter().any(|p| id.starts_with(p));
    if own {
        format!("{id}_df")
    } else {
        id
    }
}

pub(super) fn render(j: &CodeJoin, s: &dyn Syntax) -> String {
    let mut names = [input_name(s, &j.names[0]), input_name(s, &j.names[1])];
    if names[0] == names[1] {
        names[1].push_str("_2");
    }
    let w = Writer { j, s, names };
    let acts = j.plan.acts();
    let as_written;
    let plan = if acts {
        j.plan
    } else {
        as_written = j.plan.left_as_written();
        &as_written
    };
    let mut lines: Vec<String> = w.header(acts).into_iter().map(|l| w.comment(&l)).collect();
    lines.push(s.imports().to_string());
    let f = s.function_name(&w.names);
    let on = w.on("l", Side::Left, "r", &[]);
    lines.extend(s.open(&f, &w.names, &w.doc(), &on));
    let bs = branches(plan);
    let mut parts = Vec::new();
    for b in &bs {
        for l in w.branch(b) {
            lines.push(format!("    {l}"));
        }
        parts.push(b.name());
    }
    let value = parts.iter().skip(1).fold(parts[0].clone(), |acc, p| format!("{acc}.union({p})"));
    lines.extend(s.close(&value));
    lines.push(String::new());
    let call = w.plain_call();
    let at = match &j.call_site {
        Some(site) => format!("in place of the join at {site}: {call}"),
        None => format!("in place of {call}"),
    };
    lines.push(w.comment(&at));
    lines.push(s.bind("joined", &format!("{f}({}, {})", w.names[0], w.names[1])));
    lines.join("\n") + "\n"
}

impl Writer<'_> {
    fn plan(&self) -> &Plan {
        self.j.plan
    }

    fn comment(&self, line: &str) -> String {
        if line.is_empty() {
            self.s.comment().to_string()
        } else {
            format!("{} {line}", self.s.comment())
        }
    }

    /// The function's one-line description.
    fn doc(&self) -> String {
        let p = self.plan();
        let keys = self.keys_text();
        format!(
            "{} {} JOIN {} ON {keys}, its hot keys out of the shuffle (skewjoin).",
            self.names[0],
            p.how.as_str().to_uppercase(),
            self.names[1]
        )
    }

    fn keys_text(&self) -> String {
        let p = self.plan();
        p.left
            .keys
            .iter()
            .zip(&p.right.keys)
            .map(|(a, b)| if a == b { a.clone() } else { format!("{a} = {b}") })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The header: the join, what happens to each hot key and its share when counted, and
    /// when to run the tool again.
    fn header(&self, acts: bool) -> Vec<String> {
        let p = self.plan();
        let mut o = vec![format!(
            "skewjoin: {} {} JOIN {} ON {}, planned for {} shuffle partitions.",
            self.names[0],
            p.how.as_str().to_uppercase(),
            self.names[1],
            self.keys_text(),
            p.shuffle_partitions
        )];
        if !acts {
            o.push(format!("Left as written ({}).", p.decision));
            if p.hot_keys.is_empty() {
                return o;
            }
        } else {
            o.push(format!(
                "Largest task predicted: {} rows as written, {} with this code.",
                fmt_count(p.before.max_task_rows),
                fmt_count(p.after.max_task_rows)
            ));
        }
        o.push(format!("Hot keys, counted on {}, written in as literals:", self.j.counted_on));
        let width = p.hot_keys.iter().map(|h| h.display.chars().count()).max().unwrap_or(0);
        if let (true, Some(b)) = (acts, p.broadcast_side) {
            o.push(format!(
                "{} is broadcast whole ({}): no key shuffles.",
                self.names[b as usize],
                crate::plan::BROADCAST_SIDE_COMMENT.split(':').next().unwrap_or_default()
            ));
        }
        for h in &p.hot_keys {
            let what = match (acts, p.broadcast_side) {
                (false, _) => "stays in the shuffle".into(),
                (true, Some(_)) if !matches!(h.strategy, Strategy::Drop) => {
                    "in the broadcast join".into()
                }
                _ => h.strategy.comment(),
            };
            o.push(format!("  {:<width$}  {}: {what}", h.display, self.share(h)));
        }
        o.push(
            "Run skewjoin again when these shares change: a key that cools keeps a branch for"
                .into(),
        );
        o.push("nothing, and a key that turns hot stays in the shuffle.".into());
        o
    }

    /// A hot key's share of the side (or sides) it is hot on.
    fn share(&self, h: &HotKey) -> String {
        let p = self.plan();
        let of = |side: Side| {
            let rows = if side == Side::Left { h.left_rows } else { h.right_rows };
            let all = p.side(side).rows.max(1);
            format!("{} of {}", fmt_share(rows as f64 / all as f64), self.names[side as usize])
        };
        match h.side {
            HotSide::Left => of(Side::Left),
            HotSide::Right => of(Side::Right),
            HotSide::Both => format!("{}, {}", of(Side::Left), of(Side::Right)),
        }
    }

    /// The join as the user wrote it, in this language.
    fn plain_call(&self) -> String {
        let on = self.on(&self.names[0], Side::Left, &self.names[1], &[]);
        format!(
            "{}.join({}, {on}, {})",
            self.names[0],
            self.names[1],
            self.s.string(join_how(self.plan().how))
        )
    }

    fn keys(&self, side: Side) -> &[String] {
        &self.plan().side(side).keys
    }

    fn key_types(&self) -> &[KeyType] {
        &self.plan().left.key_kinds
    }

    /// The join condition of `a` (rows of side `a_side`) and `b` (of the other side): the key
    /// names (and `extra` names) for a USING join, else the keys' equalities.
    fn on(&self, a: &str, a_side: Side, b: &str, extra: &[&str]) -> String {
        let s = self.s;
        if self.j.using {
            let mut names: Vec<String> = self.keys(a_side).iter().map(|k| s.string(k)).collect();
            names.extend(extra.iter().map(|e| s.string(e)));
            return s.names(&names);
        }
        let pairs = self.keys(a_side).iter().zip(self.keys(a_side.other()));
        let mut eqs: Vec<String> =
            pairs.map(|(x, y)| s.eq(&s.col_of(a, x), &s.col_of(b, y))).collect();
        eqs.extend(extra.iter().map(|e| s.eq(&s.col_of(a, e), &s.col_of(b, e))));
        s.and(&eqs)
    }

    /// The row's key (of `side`) equals `key`.
    fn key_eq(&self, side: Side, key: &[Value]) -> String {
        let s = self.s;
        let parts: Vec<String> = self
            .keys(side)
            .iter()
            .zip(key)
            .zip(self.key_types())
            .map(|((c, v), t)| {
                if v.is_nan() {
                    s.call("isnan", &[s.col(c)])
                } else {
                    s.eq(&s.col(c), &s.literal(v, *t))
                }
            })
            .collect();
        s.and(&parts)
    }

    /// The row's key is one of `set`.
    fn key_in(&self, side: Side, set: &[Vec<Value>]) -> String {
        let s = self.s;
        if self.keys(side).len() > 1 {
            let each: Vec<String> = set.iter().map(|k| self.key_eq(side, k)).collect();
            return s.or(&each);
        }
        let c = s.col(&self.keys(side)[0]);
        let t = self.key_types()[0];
        let lits: Vec<String> =
            set.iter().filter(|k| !k[0].is_nan()).map(|k| s.literal(&k[0], t)).collect();
        let mut any = Vec::new();
        if !lits.is_empty() {
            any.push(s.isin(&c, &lits));
        }
        if set.iter().any(|k| k[0].is_nan()) {
            any.push(s.call("isnan", &[c]));
        }
        match any.len() {
            0 => s.false_(),
            1 => any.remove(0),
            _ => s.or(&any),
        }
    }

    fn null_key(&self, side: Side) -> String {
        let s = self.s;
        let each: Vec<String> = self.keys(side).iter().map(|c| s.is_null(&s.col(c))).collect();
        s.or(&each)
    }

    fn not_null_key(&self, side: Side) -> String {
        let s = self.s;
        let each: Vec<String> = self.keys(side).iter().map(|c| s.is_not_null(&s.col(c))).collect();
        s.and(&each)
    }

    /// Side `side`'s input with `rows` of it.
    fn rows(&self, side: Side, rows: &Rows) -> String {
        let s = self.s;
        let input = &self.names[side as usize];
        let pred = match rows {
            Rows::All => return input.clone(),
            Rows::Nothing => s.false_(),
            Rows::In(set) => self.key_in(side, set),
            Rows::NullKeys => self.null_key(side),
            Rows::NotIn { set, nulls } => match (set.is_empty(), nulls) {
                (true, true) => return input.clone(),
                (true, false) => self.not_null_key(side),
                (false, true) => s.or(&[self.null_key(side), s.not(&self.key_in(side, set))]),
                (false, false) => s.and(&[self.not_null_key(side), s.not(&self.key_in(side, set))]),
            },
        };
        format!("{input}.filter({pred})")
    }

    fn broadcast(&self, df: String, yes: bool) -> String {
        if yes {
            self.s.call("broadcast", &[df])
        } else {
            df
        }
    }

    /// The statements of one branch, ending with the binding of its name.
    fn branch(&self, b: &Branch) -> Vec<String> {
        let s = self.s;
        let name = b.name();
        match b {
            Branch::Join { how, rows, broadcast, .. } => {
                let l =
                    self.broadcast(self.rows(Side::Left, &rows[0]), *broadcast == Some(Side::Left));
                let r = self
                    .broadcast(self.rows(Side::Right, &rows[1]), *broadcast == Some(Side::Right));
                vec![s.bind(&name, &format!("join({l}, {r}, {})", s.string(join_how(*how))))]
            }
            Branch::DistinctKeys { set } => {
                let l = self.rows(Side::Left, &Rows::In(set.clone()));
                let r = self.broadcast(self.distinct_keys(Side::Right, set), true);
                vec![s.bind(
                    &name,
                    &format!("join({l}, {r}, {})", s.string(join_how(self.plan().how))),
                )]
            }
            Branch::Salted { split, keys } => self.salted(&name, *split, keys),
            Branch::Unmatched { side, set } => self.unmatched(&name, *side, set),
            Branch::NullKeys { side } => {
                vec![s.bind(&name, &self.padded(*side, &self.rows(*side, &Rows::NullKeys)))]
            }
        }
    }

    /// `side`'s distinct keys among `set`.
    fn distinct_keys(&self, side: Side, set: &[Vec<Value>]) -> String {
        let cols: Vec<String> = self.keys(side).iter().map(|k| self.s.col(k)).collect();
        format!(
            "{}.select({}).distinct()",
            self.rows(side, &Rows::In(set.to_vec())),
            cols.join(", ")
        )
    }

    /// `rows` (of `side`) padded with NULLs for the other side's columns: the join as written
    /// against no rows of the other side, which Spark runs without a join.
    fn padded(&self, side: Side, rows: &str) -> String {
        let how = self.s.string(join_how(self.plan().how));
        let none = self.rows(side.other(), &Rows::Nothing);
        match side {
            Side::Left => format!("join({rows}, {none}, {how})"),
            Side::Right => format!("join({none}, {rows}, {how})"),
        }
    }

    /// `side`'s rows for `set` with no match on the other side (the other side's distinct
    /// keys, broadcast, anti-joined), padded with NULLs.
    fn unmatched(&self, name: &str, side: Side, set: &[Vec<Value>]) -> Vec<String> {
        let s = self.s;
        let (hot, keys) =
            (format!("hot_{}", side.as_str()), format!("keys_{}", side.other().as_str()));
        let on = self.on(&hot, side, &keys, &[]);
        let anti = format!(
            "{hot}.join({}, {on}, {})",
            s.call("broadcast", std::slice::from_ref(&keys)),
            s.string("left_anti")
        );
        vec![
            s.bind(&hot, &self.rows(side, &Rows::In(set.to_vec()))),
            s.bind(&keys, &self.distinct_keys(side.other(), set)),
            s.bind(name, &self.padded(side, &anti)),
        ]
    }

    /// The salted branch: `split`'s rows for the keys, each with the salt of its piece (a hash
    /// of its other columns: a retried task gets the same salts), the other side's rows copied
    /// once per salt, joined on key and salt (an inner join: no kept side is copied).
    fn salted(&self, name: &str, split: Side, keys: &[SaltedKey]) -> Vec<String> {
        let s = self.s;
        let set: Vec<Vec<Value>> = keys.iter().map(|k| k.key.clone()).collect();
        let arr = |salts: &[i32]| {
            s.call("array", &salts.iter().map(|x| s.int(*x as i64)).collect::<Vec<_>>())
        };
        let hashed = self.hashed(split);
        let piece: Vec<(String, String)> = keys
            .iter()
            .map(|k| {
                let at = format!("{} + 1", s.call("pmod", &[hashed.clone(), s.int(k.n as i64)]));
                (self.key_eq(split, &k.key), s.call("element_at", &[arr(&k.salts), at]))
            })
            .collect();
        let copies: Vec<(String, String)> =
            keys.iter().map(|k| (self.key_eq(split.other(), &k.key), arr(&k.salts))).collect();
        let salt = s.string(SALT_COLUMN);
        let (sv, cv) = (format!("{name}_split"), format!("{name}_copies"));
        let with = |side: Side, value: String| {
            format!("{}.withColumn({salt}, {value})", self.rows(side, &Rows::In(set.clone())))
        };
        let (lv, rv) = if split == Side::Left { (&sv, &cv) } else { (&cv, &sv) };
        let on = self.on(lv, Side::Left, rv, &[SALT_COLUMN]);
        vec![
            s.bind(&sv, &with(split, self.when(&piece))),
            s.bind(&cv, &with(split.other(), s.call("explode", &[self.when(&copies)]))),
            s.bind(name, &format!("{lv}.join({rv}, {on}, {}).drop({salt})", s.string("inner"))),
        ]
    }

    /// `CASE WHEN c THEN v ... END` as `when(c, v).when(...)`.
    fn when(&self, cases: &[(String, String)]) -> String {
        let s = self.s;
        let (c0, v0) = &cases[0];
        cases[1..].iter().fold(s.call("when", &[c0.clone(), v0.clone()]), |acc, (c, v)| {
            format!("{acc}.when({c}, {v})")
        })
    }

    /// What a salt hashes: the split side's columns but the keys. With none, its rows for a
    /// key are all alike, so any spread of them gives the same rows, even on a retried task.
    fn hashed(&self, split: Side) -> String {
        let s = self.s;
        let side = self.plan().side(split);
        let cols: Vec<String> = side
            .hashable
            .iter()
            .filter(|c| !side.keys.iter().any(|k| k.eq_ignore_ascii_case(c)))
            .map(|c| s.col(c))
            .collect();
        if cols.is_empty() {
            s.call("monotonically_increasing_id", &[])
        } else {
            s.call("hash", &cols)
        }
    }
}
