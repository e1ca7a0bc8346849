//! The planner's decisions on joins described in memory: key counts in, the plan out, no file
//! read. Every join type is crossed with every strategy's case (and the no-hot-key and
//! "many mid-size keys share one partition" cases); the strategy each case must get is stated
//! in `EXPECTED`, and the whole listing (tasks before and after, each hot key's strategy) is
//! pinned as text, with two full reports.

use super::*;
use crate::classify::Classifier;
use crate::hash::spark_partition;
use crate::value::{KeyType, Value};

const PARTITIONS: u32 = 16;
const JOINS: [JoinType; 6] = [
    JoinType::Inner,
    JoinType::Left,
    JoinType::Right,
    JoinType::Full,
    JoinType::Semi,
    JoinType::Anti,
];

type Counts = Vec<(Vec<Value>, u64)>;

fn key(s: &str) -> Vec<Value> {
    vec![Value::Str(s.into())]
}

/// `keys` ordinary keys with `rows` rows each.
fn ordinary(keys: usize, rows: u64) -> Counts {
    (0..keys).map(|i| (key(&format!("k{i:03}")), rows)).collect()
}

fn with(mut c: Counts, extra: &[(Option<&str>, u64)]) -> Counts {
    c.extend(extra.iter().map(|(k, n)| (k.map(key).unwrap_or(vec![Value::Null]), *n)));
    c
}

/// A case: the two sides' counts, the options it needs, and the key it is about.
struct Case {
    name: &'static str,
    left: Counts,
    right: Counts,
    threshold: u64,
    drop_junk: bool,
    extra_predicates: bool,
    key: &'static str,
}

fn case(name: &'static str, left: Counts, right: Counts, key: &'static str) -> Case {
    Case { name, left, right, threshold: 256, drop_junk: false, extra_predicates: false, key }
}

/// Names of `n` keys that all land in Spark partition `part` of 16.
fn same_partition(n: usize, part: u32) -> Vec<String> {
    (0..)
        .map(|i| format!("m{i}"))
        .filter(|k| spark_partition(&key(k), PARTITIONS) == part)
        .take(n)
        .collect()
}

fn cases() -> Vec<Case> {
    let (l, r) = (|| ordinary(250, 2), || ordinary(250, 1));
    let mid: Vec<(String, u64)> = same_partition(6, 3).into_iter().map(|k| (k, 70)).collect();
    let mid_left = mid.iter().fold(l(), |c, (k, n)| with(c, &[(Some(k.as_str()), *n)]));
    vec![
        case("null", with(l(), &[(None, 600)]), with(r(), &[(None, 30)]), "NULL"),
        case("slice", with(l(), &[(Some("hot"), 400)]), with(r(), &[(Some("hot"), 1)]), "'hot'"),
        case("empty", with(l(), &[(Some("unknown"), 300)]), r(), "'unknown'"),
        case(
            "junk",
            with(l(), &[(Some("qa_test_user_01"), 300)]),
            with(r(), &[(Some("qa_test_user_01"), 1)]),
            "'qa_test_user_01'",
        ),
        Case {
            drop_junk: true,
            ..case(
                "drop",
                with(l(), &[(Some("qa_test_user_01"), 300)]),
                with(r(), &[(Some("qa_test_user_01"), 1)]),
                "'qa_test_user_01'",
            )
        },
        case("salt", with(l(), &[(Some("hot"), 400)]), with(r(), &[(Some("hot"), 300)]), "'hot'"),
        Case {
            extra_predicates: true,
            ..case(
                "keep",
                with(l(), &[(Some("hot"), 400)]),
                with(r(), &[(Some("hot"), 300)]),
                "'hot'",
            )
        },
        Case {
            extra_predicates: true,
            ..case(
                "keep-slice",
                with(l(), &[(Some("hot"), 400)]),
                with(r(), &[(Some("hot"), 1)]),
                "'hot'",
            )
        },
        Case {
            threshold: 10 << 20,
            ..case(
                "side",
                with(l(), &[(Some("hot"), 400)]),
                with(r(), &[(Some("hot"), 1)]),
                "'hot'",
            )
        },
        case("none", l(), r(), "-"),
        case("mid-size", mid_left, r(), "-"),
    ]
}

fn options(c: &Case, how: JoinType) -> PlanOptions {
    PlanOptions {
        how,
        partitions: PARTITIONS,
        broadcast_threshold: c.threshold,
        drop_junk: c.drop_junk,
        extra_predicates: c.extra_predicates,
        ..Default::default()
    }
}

fn decide_case(c: &Case, how: JoinType) -> Plan {
    let m = Measured::from_counts(
        ("lt", c.left.as_slice()),
        ("rt", c.right.as_slice()),
        KeyType::String,
        PARTITIONS,
        20,
    );
    decide(&m, &Classifier::builtin().unwrap(), &options(c, how)).unwrap()
}

/// A strategy as the tables below write it; `*` marks a decomposed branch.
fn label(s: &Strategy) -> String {
    match s {
        Strategy::BroadcastSlice { broadcast, decomposed, .. } => {
            format!("slice:{}{}", broadcast.as_str(), if *decomposed { "*" } else { "" })
        }
        Strategy::Salt { split, decomposed, n, .. } => {
            format!("salt:{}:{n}{}", split.as_str(), if *decomposed { "*" } else { "" })
        }
        other => other.name().to_string(),
    }
}

/// What happens to a case's key: its strategy, `broadcast:SIDE` when a whole side is, or `-`.
fn outcome(p: &Plan, key: &str) -> String {
    if let Some(b) = p.broadcast_side {
        return format!("broadcast:{}", b.as_str());
    }
    p.hot_keys
        .iter()
        .find(|h| h.display == key)
        .map(|h| label(&h.strategy))
        .unwrap_or_else(|| "-".into())
}

/// Per case, the outcome for inner, left, right, full, semi and anti joins.
const EXPECTED: &[(&str, [&str; 6])] = &[
    // Spark drops NULL keys itself where the left side is not kept.
    ("null", ["-", "null_bypass", "-", "null_bypass", "-", "null_bypass"]),
    // A right join may not broadcast the right side: inner join + unmatched rows.
    (
        "slice",
        [
            "slice:right",
            "slice:right",
            "slice:right*",
            "slice:right*",
            "slice:right",
            "slice:right",
        ],
    ),
    (
        "empty",
        [
            "slice:right",
            "slice:right",
            "slice:right*",
            "slice:right*",
            "slice:right",
            "slice:right",
        ],
    ),
    (
        "junk",
        [
            "slice:right",
            "slice:right",
            "slice:right*",
            "slice:right*",
            "slice:right",
            "slice:right",
        ],
    ),
    ("drop", ["drop", "drop", "drop", "drop", "drop", "drop"]),
    // Semi and anti joins need only the right side's distinct key.
    (
        "salt",
        [
            "salt:left:2",
            "salt:left:2*",
            "salt:left:2*",
            "salt:left:2*",
            "broadcast_keys",
            "broadcast_keys",
        ],
    ),
    // Predicates beyond the keys: the unmatched rows (or the semi/anti answer) need rows.
    ("keep", ["salt:left:2", "keep", "keep", "keep", "keep", "keep"]),
    ("keep-slice", ["slice:right", "slice:right", "keep", "keep", "slice:right", "slice:right"]),
    // A full join broadcasts nothing: the smaller slice, decomposed.
    (
        "side",
        [
            "broadcast:right",
            "broadcast:right",
            "broadcast:left",
            "slice:right*",
            "broadcast:right",
            "broadcast:right",
        ],
    ),
    ("none", ["-", "-", "-", "-", "-", "-"]),
    ("mid-size", ["-", "-", "-", "-", "-", "-"]),
];

#[test]
fn every_join_type_gets_the_strategy_of_each_case() {
    let mut listing = String::new();
    let mut wrong = Vec::new();
    for c in cases() {
        let expected = EXPECTED
            .iter()
            .find(|e| e.0 == c.name)
            .unwrap_or_else(|| panic!("no expectation for {}", c.name))
            .1;
        for (how, want) in JOINS.iter().zip(expected) {
            let p = decide_case(&c, *how);
            let got = outcome(&p, c.key);
            if got != want {
                wrong.push(format!("{} {}: expected {want}, got {got}", c.name, how.as_str()));
            }
            listing.push_str(&summary(c.name, &p));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    insta::assert_snapshot!("decisions", listing);
}

fn summary(name: &str, p: &Plan) -> String {
    let keys: Vec<String> = p
        .hot_keys
        .iter()
        .map(|h| format!("{} {} {}", h.display, h.side, label(&h.strategy)))
        .collect();
    let mut line = format!(
        "{name:<10} {:<11} before {}/{} after {}/{} | {}",
        p.how.as_str(),
        p.before.max_task_rows,
        p.before.median_task_rows,
        p.after.max_task_rows,
        p.after.median_task_rows,
        keys.join(", ")
    );
    if let Some(b) = p.broadcast_side {
        line.push_str(&format!(" | broadcast {}", b.as_str()));
    }
    if let Some(n) = &p.next {
        line.push_str(&format!(" | {}", n.split(':').next().unwrap_or("")));
    }
    line + "\n"
}

#[test]
fn the_stage_after_takes_the_hot_rows_out() {
    let c = &cases()[1];
    let p = decide_case(c, JoinType::Left);
    // 'hot' (400 left rows) leaves the shuffle; the largest task is then an ordinary one.
    assert!(p.before.max_task_rows >= 400, "{:?}", p.before);
    assert!(p.after.max_task_rows * 4 <= p.before.max_task_rows, "{:?} -> {:?}", p.before, p.after);
    assert_eq!(p.hot_keys.len(), 1);
}

#[test]
fn salted_pieces_share_no_partition() {
    let c = &cases()[5];
    let p = decide_case(c, JoinType::Inner);
    let Strategy::Salt { salts, n, .. } = &p.hot_keys[0].strategy else {
        panic!("{:?}", p.hot_keys[0].strategy)
    };
    assert_eq!(salts.len(), *n as usize);
    let parts: std::collections::HashSet<u32> = salts
        .iter()
        .map(|s| spark_partition(&[Value::Str("hot".into()), Value::Int(*s)], PARTITIONS))
        .collect();
    assert_eq!(parts.len(), salts.len());
}

#[test]
fn mid_size_keys_sharing_a_partition_get_the_partitions_advice() {
    let p = decide_case(&cases()[10], JoinType::Inner);
    assert!(p.hot_keys.is_empty());
    assert!(p.next.as_deref().unwrap_or("").starts_with("no single hot key"), "{:?}", p.next);
    assert!(p.before.ratio() > 5.0, "{:?}", p.before);
}

#[test]
fn full_reports_of_a_left_join_and_a_salted_full_join() {
    insta::assert_snapshot!(
        "report_left_null_and_slice",
        text(&decide_case(&cases()[0], JoinType::Left))
    );
    insta::assert_snapshot!("report_full_salt", text(&decide_case(&cases()[5], JoinType::Full)));
}

#[test]
fn salted_pieces_stay_within_twice_the_median_when_the_copied_rows_allow() {
    // The copied side has 60 rows for the key, between the median task (48) and 1.5x it: a
    // split share of the copied rows (the old rule, 7 pieces of 118) would leave pieces of 2.5x.
    let c = case(
        "salt-mid",
        with(ordinary(250, 2), &[(Some("hot"), 400)]),
        with(ordinary(250, 1), &[(Some("hot"), 60)]),
        "'hot'",
    );
    let p = decide_case(&c, JoinType::Inner);
    let Strategy::Salt { n, .. } = &p.hot_keys[0].strategy else {
        panic!("{:?}", p.hot_keys[0].strategy)
    };
    let median = p.before.median_task_rows as f64;
    assert_eq!(*n, 12, "{:?}", p.hot_keys[0].why);
    assert!((400f64 / *n as f64).ceil() + 60.0 <= 2.0 * median, "{n} pieces, median {median}");
    assert!(
        p.hot_keys[0].why.contains(&format!("{n} tasks of about 94 (2.0x the median task of 48)")),
        "{}",
        p.hot_keys[0].why
    );
}
