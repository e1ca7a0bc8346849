//! Salting: a value hot on both sides, with no slice small enough to broadcast. The bigger
//! side's rows for it are split `n` ways by a salt computed from their other columns (a hash,
//! so a retried task gets the same salt, which `rand()` would not), and the other side's rows
//! for it are copied once per salt. Always an inner join, decomposed for the other join types
//! (see `decompose`), so a kept side is never copied. It leaves `n` tasks, one per salt, each
//! in a partition no other salted piece uses while partitions last.

use std::collections::{BTreeMap, HashSet};

use super::{Choice, KeyFacts, KeyStrategy, Strategy};
use crate::format::{fmt_count, human};
use crate::hash::spark_partition;
use crate::plan::builder::{BranchSql, JoinSql, ROWS, SALT_COLUMN};
use crate::plan::decompose;
use crate::plan::model::{HotKey, JoinType, Side};
use crate::plan::tasks::Task;
use crate::sql::ident;
use crate::value::Value;

/// Shared by the salted keys of one join: how many there are (they share the partitions) and
/// the partitions their pieces already use.
pub(crate) struct Salting {
    pub keys: u32,
    pub used: HashSet<u32>,
}

impl Salting {
    pub fn new(keys: u32) -> Salting {
        Salting { keys: keys.max(1), used: HashSet::new() }
    }
}

pub(crate) fn fix(names: [&str; 2], n: u32, split: Side, salts: &[i32]) -> String {
    let list = if salts.len() <= 12 {
        salts.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(",")
    } else {
        format!(
            "{},... ({} values)",
            salts[..10].iter().map(|s| s.to_string()).collect::<Vec<_>>().join(","),
            salts.len()
        )
    };
    format!(
        "salt: split {} {n} ways (salts {list}), copy the other side {n} times",
        names[split as usize]
    )
}

pub(crate) fn comment(n: u32) -> String {
    format!("is salted {n} ways")
}

/// A key hot on both sides with no slice that fits.
pub(crate) struct Salt;

impl KeyStrategy for Salt {
    fn choose(&self, f: &KeyFacts, salting: &mut Salting) -> Option<Choice> {
        choose(f, salting)
    }
}

fn choose(f: &KeyFacts, salting: &mut Salting) -> Option<Choice> {
    let decomposed = decompose::salt_is_decomposed(f.how());
    if f.how().is_semi_or_anti()
        || super::broadcast_slice::fits(f)
        || !decompose::is_safe(decomposed, f.opts)
    {
        return None;
    }
    let (lr, rr) = (f.rows(Side::Left), f.rows(Side::Right));
    let split = if lr >= rr { Side::Left } else { Side::Right };
    let (srows, reprows) = (f.rows(split), f.rows(split.other()));
    let n = pieces(f, split, salting.keys);
    let salts = choose_salts(f.key, n, f.partitions, &mut salting.used);
    let why = format!(
        "both slices are over the {} threshold ({} left, {} right): {}'s {} rows are split {n} ways by a salt from their other columns and the other side's {} rows are copied {n} times ({} extra rows shuffled): its task goes from {} rows to {n} tasks of about {} ({:.1}x the median task of {}){}",
        human(f.threshold()),
        human(f.bytes(Side::Left)),
        human(f.bytes(Side::Right)),
        split.as_str(),
        fmt_count(srows),
        fmt_count(reprows),
        fmt_count(reprows * (n as u64 - 1)),
        fmt_count(srows + reprows),
        fmt_count(srows.div_ceil(n as u64) + reprows),
        (srows.div_ceil(n as u64) + reprows) as f64 / f.median.max(1.0),
        fmt_count(f.median as u64),
        if decomposed { format!("; as an inner join, plus an anti join that keeps the unmatched rows of the {} join's kept side", f.how().as_str()) } else { String::new() }
    );
    Some((Strategy::Salt { n, split, salts, decomposed }, why))
}

/// Pieces of at most twice the median task where the copied rows allow it, and none over the
/// target task size. Every piece carries all the copied rows r: with r up to the median m, a
/// split share of m keeps a piece under 2m; with r up to 1.5m, a share of 2m - r does; beyond,
/// no share does, and smaller shares than r only copy r again for little gain. The salted keys
/// share the partitions.
fn pieces(f: &KeyFacts, split: Side, salted_keys: u32) -> u32 {
    let (srows, reprows) = (f.rows(split), f.rows(split.other()) as f64);
    let m = f.median.max(1.0);
    let share = if reprows <= m {
        m
    } else if reprows < 1.5 * m {
        2.0 * m - reprows
    } else {
        reprows
    };
    let by_median = (srows as f64 / share).ceil();
    let by_size = (srows as f64 * f.bytes_per_row[split as usize]
        / f.opts.target_task_size.max(1) as f64)
        .ceil();
    (by_median.max(by_size) as u32).clamp(2, (f.partitions / salted_keys).max(2))
}

/// Salt values for one key: `n` ints whose (key, salt) pairs land in partitions not yet used.
fn choose_salts(key: &[Value], n: u32, partitions: u32, used: &mut HashSet<u32>) -> Vec<i32> {
    let mut salts = Vec::with_capacity(n as usize);
    let mut s: i32 = 0;
    let mut k: Vec<Value> = key.to_vec();
    k.push(Value::Int(0));
    let slot = k.len() - 1;
    while salts.len() < n as usize {
        k[slot] = Value::Int(s);
        let p = spark_partition(&k, partitions);
        // Once every partition is taken (n close to the partition count), accept collisions.
        if !used.contains(&p) || used.len() >= partitions as usize || s > 100_000 {
            used.insert(p);
            salts.push(s);
        }
        s += 1;
    }
    salts
}

/// The tasks a salted key leaves: one per salt, in the partition of (key, salt), each with its
/// piece of the split side (`pmod(hash(other columns), n)` spreads it evenly) and every row of
/// the copied side. Pieces of several keys in one partition add up in `tasks`.
pub(crate) fn add_tasks(
    h: &HotKey,
    bytes_per_row: [f64; 2],
    partitions: u32,
    tasks: &mut BTreeMap<u32, Task>,
) {
    let Strategy::Salt { n, split, salts, .. } = &h.strategy else { return };
    let (srows, rrows) = if *split == Side::Left {
        (h.left_rows, h.right_rows)
    } else {
        (h.right_rows, h.left_rows)
    };
    let (sb, rb) = (bytes_per_row[*split as usize], bytes_per_row[split.other() as usize]);
    for (j, s) in salts.iter().enumerate() {
        let mut k = h.key.clone();
        k.push(Value::Int(*s));
        let p = spark_partition(&k, partitions);
        let piece = srows / *n as u64 + u64::from((j as u64) < srows % *n as u64);
        let e = tasks.entry(p).or_default();
        e.0 += piece + rrows;
        e.1 += piece as f64 * sb + rrows as f64 * rb;
    }
}

/// The hash columns of a salt: every column of the split side that is not a key (and that
/// Spark can hash: not a map).
fn salt_columns(js: &JoinSql, side: Side) -> Vec<String> {
    let (cols, keys) = match side {
        Side::Left => (&js.left_hashable, &js.left_keys),
        Side::Right => (&js.right_hashable, &js.right_keys),
    };
    cols.iter().filter(|c| !keys.iter().any(|k| k.eq_ignore_ascii_case(c))).cloned().collect()
}

/// One branch per split side: its rows for the salted keys each get the salt of their piece,
/// the other side's rows for them are exploded over all the key's salts, and the two meet on
/// key and salt.
pub(crate) fn branches(g: &BranchSql, hot: &[&HotKey]) -> Vec<String> {
    let mut out = Vec::new();
    for split in [Side::Left, Side::Right] {
        let salted: Vec<(&[Value], u32, &Vec<i32>)> = hot
            .iter()
            .filter_map(|h| match &h.strategy {
                Strategy::Salt { n, split: s, salts, .. } if *s == split => {
                    Some((h.key.as_slice(), *n, salts))
                }
                _ => None,
            })
            .collect();
        if !salted.is_empty() {
            out.push(branch(g, split, &salted));
        }
    }
    out
}

fn branch(g: &BranchSql, split: Side, salted: &[(&[Value], u32, &Vec<i32>)]) -> String {
    let set: Vec<&[Value]> = salted.iter().map(|s| s.0).collect();
    let arr = |salts: &[i32]| {
        format!("array({})", salts.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "))
    };
    let hcols = salt_columns(g.js, split);
    let hash_of = if hcols.is_empty() {
        "monotonically_increasing_id()".to_string()
    } else {
        hcols.iter().map(|c| format!("{ROWS}.{}", ident(c))).collect::<Vec<_>>().join(", ")
    };
    let split_case: Vec<String> = salted
        .iter()
        .map(|(k, n, salts)| {
            format!(
                "WHEN {} THEN element_at({}, pmod(hash({hash_of}), {n}) + 1)",
                g.eq(ROWS, split, k),
                arr(salts)
            )
        })
        .collect();
    let rep_case: Vec<String> = salted
        .iter()
        .map(|(k, _, salts)| format!("WHEN {} THEN {}", g.eq(ROWS, split.other(), k), arr(salts)))
        .collect();
    let split_t = format!(
        "(SELECT {ROWS}.*, CASE {} END AS {SALT_COLUMN} FROM {} {ROWS} WHERE {}) {}",
        split_case.join(" "),
        g.table(split),
        g.in_set(ROWS, split, &set),
        g.alias(split)
    );
    let rep_t = format!(
        "(SELECT {ROWS}.*, explode(CASE {} END) AS {SALT_COLUMN} FROM {} {ROWS} WHERE {}) {}",
        rep_case.join(" "),
        g.table(split.other()),
        g.in_set(ROWS, split.other(), &set),
        g.alias(split.other())
    );
    let (l, r) = if split == Side::Left { (split_t, rep_t) } else { (rep_t, split_t) };
    let (la, ra) = (&g.js.left_alias, &g.js.right_alias);
    g.join(JoinType::Inner, &[], l, r, &format!(" AND {la}.{SALT_COLUMN} = {ra}.{SALT_COLUMN}"))
}
