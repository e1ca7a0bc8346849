//! The planner on small tables written here: the strategy chosen for each kind of hot key and
//! join type, the predicted tasks, and the emitted SQL pinned by snapshots. Whether that SQL
//! returns the original's rows is checked on real Spark (tests/py/test_plan_spark.py).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, StringArray};

mod common;
use common::write;
use skewjoin::classify::Classifier;
use skewjoin::count::KeySpec;
use skewjoin::plan::{self, JoinType, PlanOptions, SideInput, Strategy};
use skewjoin::table::Table;

/// Left: 2100 rows; key NULL x600, 'unknown' x300, 'hot' x400, 'qa_test_user_01' x300, and
/// 500 rows over 250 ordinary keys. Right: one row per ordinary key, `right_hot` rows of
/// 'hot', 30 NULL keys.
fn tables(dir: &Path, right_hot: usize) -> (String, String) {
    let mut lk: Vec<Option<String>> = Vec::new();
    lk.extend(std::iter::repeat_n(None, 600));
    lk.extend(std::iter::repeat_n(Some("unknown".to_string()), 300));
    lk.extend(std::iter::repeat_n(Some("hot".to_string()), 400));
    lk.extend(std::iter::repeat_n(Some("qa_test_user_01".to_string()), 300));
    lk.extend((0..500).map(|i| Some(format!("k{:03}", i % 250))));
    let n = lk.len() as i64;
    let l = write(
        &dir.join("left.parquet"),
        vec![
            ("k", Arc::new(StringArray::from(lk)) as ArrayRef),
            ("v", Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef),
        ],
    );
    let mut rk: Vec<Option<String>> = (0..250).map(|i| Some(format!("k{i:03}"))).collect();
    rk.extend(std::iter::repeat_n(Some("hot".to_string()), right_hot));
    rk.extend(std::iter::repeat_n(None, 30));
    let m = rk.len() as i64;
    let r = write(
        &dir.join("right.parquet"),
        vec![
            ("k", Arc::new(StringArray::from(rk)) as ArrayRef),
            ("w", Arc::new(Int64Array::from_iter_values(0..m)) as ArrayRef),
        ],
    );
    (l, r)
}

fn run(l: &str, r: &str, how: JoinType, f: impl FnOnce(&mut PlanOptions)) -> plan::Plan {
    let lt = Table::open(&[l.to_string()]).unwrap();
    let rt = Table::open(&[r.to_string()]).unwrap();
    let left =
        SideInput::new(&lt, KeySpec { columns: vec![lt.resolve("k").unwrap()] }, "lt".into());
    let right =
        SideInput::new(&rt, KeySpec { columns: vec![rt.resolve("k").unwrap()] }, "rt".into());
    let mut opts =
        PlanOptions { how, partitions: 16, broadcast_threshold: 256, ..Default::default() };
    f(&mut opts);
    plan::plan(&left, &right, &Classifier::builtin().unwrap(), &opts).unwrap()
}

fn strategy<'a>(p: &'a plan::Plan, display: &str) -> &'a Strategy {
    &p.hot_keys
        .iter()
        .find(|h| h.display == display)
        .unwrap_or_else(|| {
            panic!(
                "{display} not hot in {:?}",
                p.hot_keys.iter().map(|h| &h.display).collect::<Vec<_>>()
            )
        })
        .strategy
}

fn dir() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

#[test]
fn left_join_null_bypass_and_slices() {
    let (_d, p) = dir();
    let (l, r) = tables(&p, 1);
    let plan = run(&l, &r, JoinType::Left, |_| {});
    assert!(matches!(strategy(&plan, "NULL"), Strategy::NullBypass));
    // 'hot' has one right row: broadcast it straight into the left join.
    assert!(matches!(
        strategy(&plan, "'hot'"),
        Strategy::BroadcastSlice {
            broadcast: plan::Side::Right,
            slice_rows: 1,
            decomposed: false,
            ..
        }
    ));
    // A placeholder with nothing on the right: an empty slice, still joined (correct tomorrow).
    assert!(matches!(strategy(&plan, "'unknown'"), Strategy::BroadcastSlice { slice_rows: 0, .. }));
    // Junk is joined as demand, with a warning.
    assert!(plan.warnings.iter().any(|w| w.contains("qa_test_user_01")));
    assert!(!plan.results_change);
    // Predicted: 600 NULL rows in partition pmod(42, 16) = 10 before; gone after.
    assert!(plan.before.max_task_rows >= 600, "{:?}", plan.before);
    assert!(
        plan.after.max_task_rows * 4 <= plan.before.max_task_rows,
        "{:?} -> {:?}",
        plan.before,
        plan.after
    );
    insta::assert_snapshot!("left_join_bypass_and_slices", plan.sql);
}

#[test]
fn inner_join_leaves_nulls_to_spark() {
    let (_d, p) = dir();
    let (l, r) = tables(&p, 1);
    let plan = run(&l, &r, JoinType::Inner, |_| {});
    assert!(plan.hot_keys.iter().all(|h| h.display != "NULL"));
    assert!(
        plan.notes.iter().any(|n| n.contains("NULL-keyed rows") && n.contains("Spark drops them")),
        "{:?}",
        plan.notes
    );
    assert!(matches!(strategy(&plan, "'hot'"), Strategy::BroadcastSlice { decomposed: false, .. }));
}

#[test]
fn full_join_decomposes() {
    let (_d, p) = dir();
    let (l, r) = tables(&p, 1);
    let plan = run(&l, &r, JoinType::Full, |_| {});
    // NULLs on both sides are kept by a full join, but the right has only 30: not hot.
    assert!(matches!(strategy(&plan, "NULL"), Strategy::NullBypass));
    // A full join may broadcast neither side: inner join of the slice plus both anti joins.
    assert!(matches!(strategy(&plan, "'hot'"), Strategy::BroadcastSlice { decomposed: true, .. }));
    assert_eq!(plan.sql.matches("LEFT ANTI JOIN").count(), 2, "{}", plan.sql);
    insta::assert_snapshot!("full_join_decomposed", plan.sql);
}

#[test]
fn semi_and_anti() {
    let (_d, p) = dir();
    let (l, r) = tables(&p, 200);
    let semi = run(&l, &r, JoinType::Semi, |_| {});
    // 200 right rows for 'hot' do not fit in 256 bytes: broadcast its distinct keys instead.
    assert!(matches!(strategy(&semi, "'hot'"), Strategy::BroadcastKeys));
    assert!(semi.sql.contains("SELECT DISTINCT"));
    let anti = run(&l, &r, JoinType::Anti, |_| {});
    assert!(matches!(strategy(&anti, "NULL"), Strategy::NullBypass));
    insta::assert_snapshot!("anti_join", anti.sql);
}

#[test]
fn salting_when_no_slice_fits() {
    let (_d, p) = dir();
    let (l, r) = tables(&p, 200);
    let plan = run(&l, &r, JoinType::Inner, |_| {});
    let Strategy::Salt { n, split, salts, decomposed } = strategy(&plan, "'hot'") else {
        panic!("{:?}", plan.hot_keys)
    };
    assert_eq!(*split, plan::Side::Left);
    assert!(!decomposed);
    assert!(*n >= 2 && salts.len() == *n as usize);
    // Salt values chosen so that every (key, salt) lands in its own shuffle partition.
    let parts: std::collections::HashSet<u32> = salts
        .iter()
        .map(|s| {
            skewjoin::hash::spark_partition(
                &[skewjoin::value::Value::Str("hot".into()), skewjoin::value::Value::Int(*s)],
                16,
            )
        })
        .collect();
    assert_eq!(parts.len(), salts.len());
    assert!(plan.sql.contains("explode(") && plan.sql.contains("pmod(hash("), "{}", plan.sql);
    // Each piece carries all 200 copied rows: pieces no smaller than that, and never worse.
    assert_eq!(*n, 2);
    assert!(
        plan.after.max_task_rows < plan.before.max_task_rows,
        "{:?} -> {:?}",
        plan.before,
        plan.after
    );
    // A left join may not replicate its left side: the salted branch is an inner join, plus the
    // unmatched left rows.
    let left = run(&l, &r, JoinType::Left, |_| {});
    assert!(matches!(strategy(&left, "'hot'"), Strategy::Salt { decomposed: true, .. }));
    assert!(left.sql.contains("LEFT ANTI JOIN"));
    insta::assert_snapshot!("salted_inner", plan.sql);
}

#[test]
fn drop_junk_and_whole_side_broadcast() {
    let (_d, p) = dir();
    let (l, r) = tables(&p, 1);
    let plan = run(&l, &r, JoinType::Left, |o| o.drop_junk = true);
    assert!(matches!(strategy(&plan, "'qa_test_user_01'"), Strategy::Drop));
    assert!(plan.results_change);
    // The right side (a few KB) fits a 10 MB threshold: broadcast all of it.
    let plan = run(&l, &r, JoinType::Left, |o| o.broadcast_threshold = 10 << 20);
    assert_eq!(plan.broadcast_side, Some(plan::Side::Right));
    assert_eq!(plan.after.tasks, 0);
    assert!(plan.sql.contains("BROADCAST(r)"));
    // A full join may broadcast neither side.
    let plan = run(&l, &r, JoinType::Full, |o| o.broadcast_threshold = 10 << 20);
    assert_eq!(plan.broadcast_side, None);
}

#[test]
fn nothing_hot_says_what_next() {
    let (_d, p) = dir();
    let k: Vec<String> = (0..4000).map(|i| format!("k{}", i % 2000)).collect();
    let l = write(&p.join("even.parquet"), vec![("k", Arc::new(StringArray::from(k)) as ArrayRef)]);
    let plan = run(&l, &l, JoinType::Inner, |_| {});
    assert!(plan.hot_keys.is_empty());
    assert!(plan.next.as_deref().unwrap_or("").contains("no"), "{:?}", plan.next);
}

#[test]
fn key_types_must_agree() {
    let (_d, p) = dir();
    let l = write(
        &p.join("a.parquet"),
        vec![("k", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef)],
    );
    let r = write(
        &p.join("b.parquet"),
        vec![("k", Arc::new(StringArray::from(vec!["1", "2"])) as ArrayRef)],
    );
    let lt = Table::open(&[l]).unwrap();
    let rt = Table::open(&[r]).unwrap();
    let left = SideInput::new(&lt, KeySpec { columns: vec![lt.resolve("k").unwrap()] }, "a".into());
    let right =
        SideInput::new(&rt, KeySpec { columns: vec![rt.resolve("k").unwrap()] }, "b".into());
    let err = plan::plan(&left, &right, &Classifier::builtin().unwrap(), &PlanOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("types differ") && err.contains("bigint") && err.contains("string"),
        "{err}"
    );
}
