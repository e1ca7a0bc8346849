//! The fix as code on plans decided in memory: the same parts as the SQL fix for every join
//! type and strategy, and the PySpark and Scala texts pinned (the Spark suites run them:
//! tests/py/test_code_spark.py).

use super::branches::branches;
use super::*;
use crate::classify::Classifier;
use crate::plan::{decide, Measured, PlanOptions};
use crate::value::{KeyType, Value};

const JOINS: [JoinType; 6] = [
    JoinType::Inner,
    JoinType::Left,
    JoinType::Right,
    JoinType::Full,
    JoinType::Semi,
    JoinType::Anti,
];

type Counts = Vec<(Vec<Value>, u64)>;

fn counts(rows_each: u64, extra: &[(Option<&str>, u64)]) -> Counts {
    let mut c: Counts =
        (0..250).map(|i| (vec![Value::Str(format!("k{i:03}"))], rows_each)).collect();
    c.extend(
        extra
            .iter()
            .map(|(k, n)| (vec![k.map(|k| Value::Str(k.into())).unwrap_or(Value::Null)], *n)),
    );
    c
}

/// The plans of the cases: NULL keys, a broadcast slice, a placeholder, a salted key, and all
/// of them at once; each with the threshold that makes the strategy apply.
fn cases() -> Vec<(&'static str, Counts, Counts)> {
    vec![
        ("null", counts(2, &[(None, 600)]), counts(1, &[(None, 30)])),
        ("slice", counts(2, &[(Some("hot"), 400)]), counts(1, &[(Some("hot"), 1)])),
        ("salt", counts(2, &[(Some("hot"), 400)]), counts(1, &[(Some("hot"), 300)])),
        (
            "all",
            counts(2, &[(None, 500), (Some("hot"), 400), (Some("it's"), 450)]),
            counts(1, &[(None, 40), (Some("hot"), 300), (Some("it's"), 1)]),
        ),
    ]
}

fn plan_of(left: &Counts, right: &Counts, how: JoinType) -> Plan {
    let m = Measured::from_counts(("events", left), ("titles", right), KeyType::String, 16, 20);
    let opts = PlanOptions {
        how,
        partitions: 16,
        broadcast_threshold: 256,
        min_gain: None,
        ..Default::default()
    };
    decide(&m, &Classifier::builtin().unwrap(), &opts).unwrap()
}

fn sql_branches(sql: &str) -> usize {
    sql.matches("UNION ALL").count() + 1
}

#[test]
fn the_code_has_the_parts_of_the_sql_fix_for_every_join_type() {
    for (name, l, r) in cases() {
        for how in JOINS {
            let p = plan_of(&l, &r, how);
            assert!(p.acts() || p.hot_keys.is_empty(), "{name} {how:?}: {:?}", p.decision);
            assert_eq!(
                branches(&p).len(),
                sql_branches(&p.sql),
                "{name} {}:\n{}",
                how.as_str(),
                p.sql
            );
        }
    }
}

fn code(name: &str, how: JoinType, lang: Language, using: bool) -> String {
    let (_, l, r) = cases().into_iter().find(|c| c.0 == name).unwrap();
    let mut p = plan_of(&l, &r, how);
    if !using {
        p.right.keys = vec!["id".into()];
    }
    let mut j = CodeJoin::new(&p, ["events".into(), "titles".into()], "2026-01-05".into());
    j.call_site = Some("job.py:42".into());
    emit(&j, lang)
}

#[test]
fn pyspark_and_scala_texts() {
    insta::assert_snapshot!(
        "pyspark_left_all",
        code("all", JoinType::Left, Language::PySpark, true)
    );
    insta::assert_snapshot!(
        "pyspark_full_salt_condition",
        code("salt", JoinType::Full, Language::PySpark, false)
    );
    insta::assert_snapshot!(
        "pyspark_anti_salt",
        code("salt", JoinType::Anti, Language::PySpark, true)
    );
    insta::assert_snapshot!("scala_left_all", code("all", JoinType::Left, Language::Scala, true));
    insta::assert_snapshot!(
        "scala_right_all_condition",
        code("all", JoinType::Right, Language::Scala, false)
    );
}

#[test]
fn nothing_hot_is_the_join_as_written() {
    let p = plan_of(&counts(2, &[]), &counts(1, &[]), JoinType::Left);
    let text =
        emit(&CodeJoin::new(&p, ["e".into(), "t".into()], "2026-01-05".into()), Language::PySpark);
    assert!(text.contains("    rest = join(e, t, \"left\")\n    return rest\n"), "{text}");
    assert!(text.contains("Left as written (nothing hot to move)"), "{text}");
}

#[test]
fn names_become_identifiers_the_code_does_not_use() {
    let p = plan_of(&counts(2, &[]), &counts(1, &[]), JoinType::Inner);
    let text = emit(
        &CodeJoin::new(&p, ["my-events".into(), "rest".into()], "d".into()),
        Language::PySpark,
    );
    assert!(
        text.contains("def my_events_join_rest_df(my_events: DataFrame, rest_df: DataFrame)"),
        "{text}"
    );
    let text =
        emit(&CodeJoin::new(&p, ["class".into(), "class".into()], "d".into()), Language::Scala);
    assert!(
        text.contains("def class_JoinClass_2(class_ : DataFrame")
            || text.contains("(class_: DataFrame, class__2: DataFrame)"),
        "{text}"
    );
}

#[test]
fn literals_cannot_change_the_code() {
    let s = super::scala::Scala;
    assert_eq!(s.string("a\"b\\c\u{e9}\n"), "\"a\\\"b\\\\c\\u00e9\\n\"");
    let p = super::pyspark::PySpark;
    assert_eq!(p.string("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
    assert_eq!(p.col("a.b"), "F.col(\"`a.b`\")");
}
