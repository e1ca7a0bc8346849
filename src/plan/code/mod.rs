//! The plan as DataFrame code, PySpark or Scala, to paste in place of the user's join
//! (`--emit pyspark|scala`). Built from the `Plan`, the value the SQL of `emit` is written
//! from, not from that SQL's text: `branches` lists the same parts of the split, in the same
//! order (`strategy::BRANCH_ORDER`): the rest, the hot keys' joins, the salted pieces, the
//! unmatched rows of decomposed keys, the NULL keys that skip the join. Each part is the join
//! as the user wrote it (one `join(l, r, how)` helper: `on` as a list of names, or as
//! equalities) over the two inputs filtered by key, so every part has the join's own columns
//! in its own order, and `union` (by position, as UNION ALL) puts them together. The hot
//! values go in as literals, under a header that says when they were counted and their shares.
//! `pyspark.rs` and `scala.rs` hold each language's syntax; this file the shape.

mod pyspark;
mod scala;

use super::model::{HotKey, HotSide, JoinType, Plan, Side, Strategy};
use super::strategy::null_bypass;
use super::SALT_COLUMN;
use crate::format::{fmt_count, fmt_share};
use crate::value::{KeyType, Value};

/// The language of the fix as code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    PySpark,
    Scala,
}

/// What the code needs beside the plan: what the inputs are called in the user's code, how
/// the user wrote the keys, when the counts were made, and where the join is.
pub struct CodeJoin<'a> {
    pub plan: &'a Plan,
    /// The DataFrames' names (made identifiers where they are not).
    pub names: [String; 2],
    /// `on` as a list of column names (a USING join: one merged column per key) rather than as
    /// equalities of the two sides' columns.
    pub using: bool,
    /// The date the keys were counted, `YYYY-MM-DD`.
    pub counted_on: String,
    /// Where the join is in the user's code (`job.py:42`), when known.
    pub call_site: Option<String>,
}

impl CodeJoin<'_> {
    /// The usual case: `on` as names when both sides' keys have the same names.
    pub fn new(plan: &Plan, names: [String; 2], counted_on: String) -> CodeJoin<'_> {
        let using =
            plan.left.keys.iter().zip(&plan.right.keys).all(|(a, b)| a.eq_ignore_ascii_case(b));
        CodeJoin { plan, names, using, counted_on, call_site: None }
    }
}

/// What a join's fix as code needs, kept to be written later (by `rewrite` and `fix`, for each
/// join they rewrite): the plan with the keys as the query names them, the inputs' names, the
/// way the keys were written; or why the join cannot be written as DataFrame code.
#[derive(Debug, Clone)]
pub struct CodeParts {
    pub plan: Plan,
    pub names: [String; 2],
    pub using: bool,
    /// Why the code is not written (predicates in ON beyond the key equalities).
    pub unsupported: Option<String>,
}

impl CodeParts {
    /// The join as code in `lang`, or a comment saying why there is none; `call_site` where the
    /// join is in the user's code.
    pub fn emit(&self, lang: Language, counted_on: &str, call_site: Option<&str>) -> String {
        if let Some(why) = &self.unsupported {
            let c = match lang {
                Language::PySpark => "#",
                Language::Scala => "//",
            };
            return format!(
                "{c} skewjoin: {} JOIN {}: not written as DataFrame code: {why}\n",
                self.names[0], self.names[1]
            );
        }
        let j = CodeJoin {
            plan: &self.plan,
            names: self.names.clone(),
            using: self.using,
            counted_on: counted_on.to_string(),
            call_site: call_site.map(str::to_string),
        };
        emit(&j, lang)
    }
}

/// The join as code in `lang`: imports, a function of the two inputs, and the line that calls
/// it in place of the join.
pub fn emit(j: &CodeJoin, lang: Language) -> String {
    match lang {
        Language::PySpark => render(j, &pyspark::PySpark),
        Language::Scala => render(j, &scala::Scala),
    }
}

/// Today's date (UTC), as the code's header gives the counts'.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Value::date_string((secs / 86_400) as i32)
}

/// Which rows of one side a branch reads, by their key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Rows {
    All,
    /// None: the empty side a padding join pads against.
    Nothing,
    /// The key is one of these (never a NULL key).
    In(Vec<Vec<Value>>),
    NullKeys,
    /// The key is not one of these; `nulls`: NULL keys stay (else they are left out too).
    NotIn {
        set: Vec<Vec<Value>>,
        nulls: bool,
    },
}

/// One part of the split: its rows, as a join of the two inputs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Branch {
    /// The join (as written, or inner) of each side's rows, one side broadcast.
    Join { name: &'static str, how: JoinType, rows: [Rows; 2], broadcast: Option<Side> },
    /// A semi or anti join of the left side's rows for `set` against the right side's distinct
    /// keys, broadcast.
    DistinctKeys { set: Vec<Vec<Value>> },
    /// `split`'s rows for the keys, salted; the other side's, copied once per salt.
    Salted { split: Side, keys: Vec<SaltedKey> },
    /// `side`'s rows for `set` that have no match on the other side, padded with NULLs.
    Unmatched { side: Side, set: Vec<Vec<Value>> },
    /// `side`'s NULL-keyed rows, padded with NULLs: they match nothing.
    NullKeys { side: Side },
}

/// One salted key: its value, the pieces and the salt of each.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SaltedKey {
    pub key: Vec<Value>,
    pub n: u32,
    pub salts: Vec<i32>,
}

impl Branch {
    /// The variable the code gives the branch's rows.
    fn name(&self) -> String {
        match self {
            Branch::Join { name, .. } => (*name).to_string(),
            Branch::DistinctKeys { .. } => "checked".into(),
            Branch::Salted { split, .. } => format!("salted_{}", split.as_str()),
            Branch::Unmatched { side, .. } => format!("unmatched_{}", side.as_str()),
            Branch::NullKeys { side } => format!("nulls_{}", side.as_str()),
        }
    }
}

/// The keys whose strategy `f` selects.
fn set_of(hot: &[HotKey], f: impl Fn(&Strategy) -> bool) -> Vec<Vec<Value>> {
    hot.iter().filter(|h| f(&h.strategy)).map(|h| h.key.clone()).collect()
}

/// The parts of the split, in the order of `strategy::BRANCH_ORDER` (one part: the whole-side
/// broadcast, or the join as written when nothing moves).
pub(crate) fn branches(plan: &Plan) -> Vec<Branch> {
    let (how, hot) = (plan.how, plan.hot_keys.as_slice());
    if let Some(b) = plan.broadcast_side {
        let dropped = set_of(hot, |s| matches!(s, Strategy::Drop));
        let rows =
            if dropped.is_empty() { Rows::All } else { Rows::NotIn { set: dropped, nulls: true } };
        return vec![Branch::Join {
            name: "joined",
            how,
            rows: [rows.clone(), rows],
            broadcast: Some(b),
        }];
    }
    let mut out = vec![rest(plan)];
    for b in [Side::Right, Side::Left] {
        let set = set_of(
            hot,
            |s| matches!(s, Strategy::BroadcastSlice { broadcast, decomposed: false, .. } if *broadcast == b),
        );
        if !set.is_empty() {
            let name = if b == Side::Right { "slices_right" } else { "slices_left" };
            out.push(Branch::Join {
                name,
                how,
                rows: [Rows::In(set.clone()), Rows::In(set)],
                broadcast: Some(b),
            });
        }
    }
    let keys = set_of(hot, |s| matches!(s, Strategy::BroadcastKeys));
    if !keys.is_empty() {
        out.push(Branch::DistinctKeys { set: keys });
    }
    for b in [Side::Right, Side::Left] {
        let set = set_of(
            hot,
            |s| matches!(s, Strategy::BroadcastSlice { broadcast, decomposed: true, .. } if *broadcast == b),
        );
        if !set.is_empty() {
            let name = if b == Side::Right { "inner_slices_right" } else { "inner_slices_left" };
            out.push(Branch::Join {
                name,
                how: JoinType::Inner,
                rows: [Rows::In(set.clone()), Rows::In(set)],
                broadcast: Some(b),
            });
        }
    }
    out.extend(salted(hot));
    let decomposed = set_of(hot, |s| {
        matches!(
            s,
            Strategy::BroadcastSlice { decomposed: true, .. }
                | Strategy::Salt { decomposed: true, .. }
        )
    });
    if !decomposed.is_empty() {
        out.extend(
            [Side::Left, Side::Right]
                .into_iter()
                .filter(|s| how.preserves(*s))
                .map(|side| Branch::Unmatched { side, set: decomposed.clone() }),
        );
    }
    out.extend(
        [Side::Left, Side::Right]
            .into_iter()
            .filter(|s| null_bypass::bypasses(hot, *s))
            .map(|side| Branch::NullKeys { side }),
    );
    out
}

/// Every key not moved, through the join as written; a side whose NULL keys bypass the join
/// brings only its non-NULL keys (as `strategy::rest`).
fn rest(plan: &Plan) -> Branch {
    let moved = set_of(&plan.hot_keys, Strategy::moves);
    let rows = |side: Side| {
        let bypass = null_bypass::bypasses(&plan.hot_keys, side);
        if moved.is_empty() && !bypass {
            Rows::All
        } else {
            Rows::NotIn { set: moved.clone(), nulls: !bypass }
        }
    };
    Branch::Join {
        name: "rest",
        how: plan.how,
        rows: [rows(Side::Left), rows(Side::Right)],
        broadcast: None,
    }
}

/// One branch per split side, with its salted keys (as `strategy::salt`).
fn salted(hot: &[HotKey]) -> Vec<Branch> {
    [Side::Left, Side::Right]
        .into_iter()
        .filter_map(|split| {
            let keys: Vec<SaltedKey> = hot
                .iter()
                .filter_map(|h| match &h.strategy {
                    Strategy::Salt { n, split: s, salts, .. } if *s == split => {
                        Some(SaltedKey { key: h.key.clone(), n: *n, salts: salts.clone() })
                    }
                    _ => None,
                })
                .collect();
            (!keys.is_empty()).then_some(Branch::Salted { split, keys })
        })
        .collect()
}

/// The pieces of a language: its expressions, statements and the function around them.
pub(crate) trait Syntax {
    /// The start of a line comment.
    fn comment(&self) -> &'static str;
    /// The imports the code needs.
    fn imports(&self) -> &'static str;
    /// A string literal.
    fn string(&self, s: &str) -> String;
    /// A key value as a literal of its column's type.
    fn literal(&self, v: &Value, t: KeyType) -> String;
    /// An integer literal column.
    fn int(&self, i: i64) -> String;
    /// A column of the one DataFrame an expression reads.
    fn col(&self, name: &str) -> String;
    /// A column of a named DataFrame (in a join condition).
    fn col_of(&self, df: &str, name: &str) -> String;
    /// A function of `functions`.
    fn call(&self, f: &str, args: &[String]) -> String;
    fn eq(&self, a: &str, b: &str) -> String;
    fn and(&self, parts: &[String]) -> String;
    fn or(&self, parts: &[String]) -> String;
    fn not(&self, x: &str) -> String;
    fn is_null(&self, x: &str) -> String;
    fn is_not_null(&self, x: &str) -> String;
    fn isin(&self, x: &str, items: &[String]) -> String;
    fn false_(&self) -> String;
    /// A list of strings (the names `on` takes).
    fn names(&self, items: &[String]) -> String;
    /// `name = value` as a statement.
    fn bind(&self, name: &str, value: &str) -> String;
    /// The function's first line and the join helper; `on` is the helper's join condition
    /// over `l` and `r`.
    fn open(&self, f: &str, names: &[String; 2], doc: &str, on: &str) -> Vec<String>;
    /// The function's last lines (indented as they go): the value it returns, and its end.
    fn close(&self, value: &str) -> Vec<String>;
    /// The function's name for two inputs.
    fn function_name(&self, names: &[String; 2]) -> String;
    /// An identifier made of `name`.
    fn identifier(&self, name: &str) -> String;
}

/// `how` as `DataFrame.join` spells it.
pub fn join_how(how: JoinType) -> &'static str {
    match how {
        JoinType::Inner => "inner",
        JoinType::Left => "left",
        JoinType::Right => "right",
        JoinType::Full => "full",
        JoinType::Semi => "left_semi",
        JoinType::Anti => "left_anti",
    }
}

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

fn render(j: &CodeJoin, s: &dyn Syntax) -> String {
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
                super::BROADCAST_SIDE_COMMENT.split(':').next().unwrap_or_default()
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

#[cfg(test)]
mod tests;
