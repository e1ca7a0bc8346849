//! The window decisions on inputs described in memory: key counts in, the plan out, no file
//! read. Each shape over the same skewed input (a hot value, a hot NULL, a placeholder and 300
//! ordinary values over 16 partitions), and an even input where nothing is hot.

use super::*;
use crate::classify::Classifier;
use crate::hash::spark_partition;
use crate::plan::SideMeasure;
use crate::value::KeyType;

const PARTITIONS: u32 = 16;

type Counts = Vec<(Vec<Value>, u64)>;

fn measured(counts: &Counts) -> WindowMeasured {
    let mut top: Counts = counts.iter().filter(|c| !c.0[0].is_null()).cloned().collect();
    top.sort_by_key(|c| std::cmp::Reverse(c.1));
    let candidates: Vec<Vec<Value>> = top.into_iter().take(20).map(|c| c.0).collect();
    let side = SideMeasure::from_counts(
        "views",
        &[("user_id", KeyType::BigInt)],
        counts,
        &candidates,
        PARTITIONS,
        24,
    );
    WindowMeasured { partitions: PARTITIONS, candidates, side, reduced: None }
}

fn skewed() -> Counts {
    let mut c: Counts = (0..300).map(|i| (vec![Value::Long(1000 + i)], 10)).collect();
    c.push((vec![Value::Long(7)], 3000));
    c.push((vec![Value::Null], 1500));
    c.push((vec![Value::Long(-1)], 900));
    c
}

fn decided(counts: &Counts, shape: Shape) -> WindowPlan {
    decide(
        &measured(counts),
        shape,
        &Classifier::builtin().unwrap(),
        &PlanOptions { partitions: PARTITIONS, ..Default::default() },
    )
}

#[test]
fn whole_partition_window_rewrites_every_hot_value_and_leaves_the_rest_even() {
    let p = decided(&skewed(), Shape::WholePartition);
    assert_eq!(p.verdict, Verdict::Rewrite);
    let hot: Vec<(String, u64, Class)> =
        p.hot.iter().map(|h| (h.display.clone(), h.rows, h.class)).collect();
    assert_eq!(
        hot,
        vec![
            ("7".into(), 3000, Class::Demand),
            ("NULL".into(), 1500, Class::Null),
            ("-1".into(), 900, Class::Placeholder)
        ]
    );
    // Before: the hot value's partition holds its 3,000 rows plus its ordinary neighbours'.
    let part7 = spark_partition(&[Value::Long(7)], PARTITIONS) as usize;
    assert!(
        p.before_tasks[part7] >= 3000
            && p.before.max_task_rows == *p.before_tasks.iter().max().unwrap()
    );
    let after = p.after.as_ref().unwrap();
    // After: 3,000 ordinary rows over 16 partitions; no task holds a hot value's rows.
    assert_eq!(p.after_tasks.iter().sum::<u64>(), 3000);
    assert!(after.max_task_rows < 400, "{after:?}");
    assert!(
        p.why.contains("3,000 -> ")
            || p.why.contains(&crate::format::fmt_count(p.before.max_task_rows)),
        "{}",
        p.why
    );
}

#[test]
fn ordered_window_is_left_alone_with_the_rows_of_its_largest_value() {
    let p = decided(&skewed(), Shape::Ordered);
    assert_eq!(p.verdict, Verdict::LeftAlone);
    assert!(p.after.is_none() && p.after_tasks.is_empty());
    assert!(
        p.why.starts_with(
            "an ordered window needs the 3,000 rows (70.3 KB) of 7 in order in one task"
        ),
        "{}",
        p.why
    );
}

#[test]
fn top_n_and_aggregates_are_what_spark_reduces_before_the_shuffle() {
    let p = decided(&skewed(), Shape::TopN { n: 3 });
    assert_eq!(p.verdict, Verdict::GroupLimit);
    assert!(
        p.why.contains("at most 3 rows of each value per map task") && p.why.contains("3,000 rows"),
        "{}",
        p.why
    );
    let a = decided(&skewed(), Shape::Aggregate { lists: false });
    assert_eq!(a.verdict, Verdict::PartialAggregation);
    assert!(a.why.contains("one record per map task") && !a.why.contains("list"), "{}", a.why);
    let l = decided(&skewed(), Shape::Aggregate { lists: true });
    assert!(l.why.contains("whole list, 3,000 values"), "{}", l.why);
}

#[test]
fn an_even_input_has_nothing_hot_whatever_its_shape() {
    let even: Counts = (0..300).map(|i| (vec![Value::Long(i)], 10)).collect();
    for shape in [
        Shape::WholePartition,
        Shape::Ordered,
        Shape::TopN { n: 1 },
        Shape::Aggregate { lists: true },
    ] {
        let p = decided(&even, shape);
        assert_eq!(p.verdict, Verdict::NothingHot, "{shape:?}");
        assert!(p.hot.is_empty() && p.after.is_none() && !p.acts());
        assert!(p.why.contains("no value is over the 5x line"), "{}", p.why);
    }
}

#[test]
fn a_composite_key_never_takes_its_null_rows_as_one_value() {
    let mut c: Counts = (0..300).map(|i| (vec![Value::Long(i), Value::Long(1)], 10)).collect();
    c.push((vec![Value::Null, Value::Long(1)], 4000));
    let mut top: Counts = c.iter().filter(|c| !c.0.iter().any(Value::is_null)).cloned().collect();
    top.sort_by_key(|c| std::cmp::Reverse(c.1));
    let candidates: Vec<Vec<Value>> = top.into_iter().take(20).map(|c| c.0).collect();
    let side = SideMeasure::from_counts(
        "v",
        &[("a", KeyType::BigInt), ("b", KeyType::BigInt)],
        &c,
        &candidates,
        PARTITIONS,
        24,
    );
    let m = WindowMeasured { partitions: PARTITIONS, candidates, side, reduced: None };
    let p = decide(
        &m,
        Shape::WholePartition,
        &Classifier::builtin().unwrap(),
        &PlanOptions { partitions: PARTITIONS, ..Default::default() },
    );
    // The partly NULL rows are counted in their partition (so the stage before is right) but not
    // taken out as one value.
    assert!(p.before.max_task_rows >= 4000);
    assert!(p.hot.iter().all(|h| !h.key.iter().any(Value::is_null)));
}
