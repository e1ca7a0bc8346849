//! `rewrite` before/after: the emitted SQL of each kind of query pinned by snapshots, and what
//! is left alone and why. The tables are Arrow columns held by the in-memory engine
//! (`count::InMemory`): no file is written, and the counts are checked against the embedded
//! engine's in that engine's own tests. That the rows stay the same is checked on real Spark
//! (tests/py/test_rewrite_spark.py).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};

use skewjoin::classify::Classifier;
use skewjoin::count::{EngineRef, InMemory};
use skewjoin::plan::JoinType;
use skewjoin::plan::PlanOptions;
use skewjoin::rewrite::{rewrite, sql_with_comments, LeftAlone, Note, Rewritten, Untraced};
use skewjoin::stats::RunStats;
use skewjoin::table::Table;

/// events(event_id, title_id): 600 NULL, 400 'hot', 300 "O'Neil", 500 over 250 ordinary keys.
/// titles(title_id, name): one row per ordinary key and one 'hot'. Held in memory: the rewrite
/// measures them through the in-memory engine of `opts`, which this sets.
fn tables(opts: &mut PlanOptions) -> HashMap<String, Table> {
    let mut k: Vec<Option<String>> = Vec::new();
    k.extend(std::iter::repeat_n(None, 600));
    k.extend(std::iter::repeat_n(Some("hot".to_string()), 400));
    k.extend(std::iter::repeat_n(Some("O'Neil".to_string()), 300));
    k.extend((0..500).map(|i| Some(format!("k{:03}", i % 250))));
    let n = k.len() as i64;
    let mut tk: Vec<String> = (0..250).map(|i| format!("k{i:03}")).collect();
    tk.push("hot".into());
    let names: Vec<String> = tk.iter().map(|t| format!("name of {t}")).collect();
    in_memory(
        opts,
        vec![
            (
                "events",
                vec![
                    ("event_id", Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef),
                    ("title_id", Arc::new(StringArray::from(k)) as ArrayRef),
                ],
            ),
            (
                "titles",
                vec![
                    ("title_id", Arc::new(StringArray::from(tk)) as ArrayRef),
                    ("name", Arc::new(StringArray::from(names)) as ArrayRef),
                ],
            ),
        ],
    )
}

/// The tables, each given by its columns, held by an in-memory engine that `opts` then counts
/// with.
fn in_memory(
    opts: &mut PlanOptions,
    tables: Vec<(&str, Vec<(&str, ArrayRef)>)>,
) -> HashMap<String, Table> {
    let (engine, stats) = (InMemory::new(), RunStats::new());
    let held = tables
        .into_iter()
        .map(|(name, cols)| {
            let batch = RecordBatch::try_from_iter(cols).unwrap();
            (name.to_string(), engine.hold(name, batch, &stats))
        })
        .collect();
    opts.engine = EngineRef::new(engine);
    held
}

/// 16 shuffle partitions, a 1KB broadcast threshold.
fn small() -> PlanOptions {
    PlanOptions { partitions: 16, broadcast_threshold: 1024, ..Default::default() }
}

fn rw(sql: &str) -> Rewritten {
    let mut opts = small();
    let t = tables(&mut opts);
    rewrite(sql, &t, &Classifier::builtin().unwrap(), &opts).unwrap()
}

#[test]
fn left_join_with_where_group_order() {
    let r =
        rw("SELECT t.name, count(*) AS n FROM events e LEFT JOIN titles t ON e.title_id = t.title_id WHERE e.event_id > 10 GROUP BY t.name ORDER BY n DESC");
    assert_eq!(r.changes.len(), 1);
    // The string with a quote is a backslash-escaped literal, never a doubled quote.
    assert!(r.sql.contains(r"'O\'Neil'") && !r.sql.contains("O''Neil"), "{}", r.sql);
    insta::assert_snapshot!("left_join_where_group_order", sql_with_comments(&r));
}

#[test]
fn using_full_join_star() {
    let r = rw("SELECT * FROM events FULL JOIN titles USING (title_id)");
    assert_eq!(r.changes.len(), 1);
    assert!(r.sql.contains("coalesce("), "{}", r.sql);
    insta::assert_snapshot!("using_full_star", r.sql);
}

#[test]
fn cte_and_subquery_inputs() {
    let r = rw("WITH ev AS (SELECT event_id, title_id AS tid FROM events WHERE event_id > 5) SELECT ev.event_id, t.name FROM ev LEFT JOIN titles t ON ev.tid = t.title_id");
    assert_eq!(r.changes.len(), 1, "{:?}", r.unchanged_joins);
    // The CTE's WHERE is applied to the counts of events.
    assert!(
        r.changes[0].notes.iter().any(|n| n.to_string().contains("where event_id > 5")),
        "{:?}",
        r.changes[0].notes
    );
    insta::assert_snapshot!("cte_input", r.sql);
}

#[test]
fn left_alone_with_reasons() {
    for (sql, why) in [
        ("SELECT * FROM events NATURAL JOIN titles", "natural_join"),
        ("SELECT * FROM events e JOIN titles t ON e.title_id > t.title_id", "non_equi"),
        ("SELECT * FROM events e JOIN nope t ON e.title_id = t.title_id", "right_input_not_given"),
        ("SELECT * FROM events e CROSS JOIN titles t", "cross_join"),
    ] {
        let r = rw(sql);
        assert!(r.changes.is_empty(), "{sql}");
        assert_eq!(codes(&r), [why], "{sql}");
    }
}

/// The codes of the joins left as written.
fn codes(r: &Rewritten) -> Vec<String> {
    r.unchanged_joins.iter().map(|u| u.code.clone()).collect()
}

#[test]
fn sql_that_does_not_parse_names_line_and_column() {
    let mut opts = PlanOptions::default();
    let t = tables(&mut opts);
    let err = rewrite(
        "SELECT *\nFROM events e JOIN titles t ON e.title_id = = t.title_id",
        &t,
        &Classifier::builtin().unwrap(),
        &opts,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("Line: 2"), "{err}");
}

#[test]
fn chain_of_joins_each_planned_on_the_joins_before() {
    let r =
        rw("SELECT e.event_id, a.name, b.name AS n2 FROM events e LEFT JOIN titles a ON e.title_id = a.title_id LEFT JOIN titles b ON e.title_id = b.title_id");
    assert_eq!(
        r.changes.len(),
        2,
        "{:?}",
        r.unchanged_joins.iter().map(|u| u.reason.to_string()).collect::<Vec<_>>()
    );
    // The second join's left input is the first (rewritten) join, counted through it.
    assert!(
        r.changes[1].join.starts_with("events e ... LEFT JOIN titles b"),
        "{}",
        r.changes[1].join
    );
    // The first runs again in each of the second's branches: its tasks after are a bound there.
    assert!(r.changes[0].in_branches && !r.changes[1].in_branches);
    let notes: Vec<String> = r.changes[1].notes.iter().map(ToString::to_string).collect();
    assert!(
        notes.iter().any(|n| n.contains(
            "the joins before it (events e LEFT JOIN titles a ON e.title_id = a.title_id)"
        )),
        "{notes:?}"
    );
    assert!(!notes.iter().any(|n| n.contains("estimates")), "{notes:?}");
    insta::assert_snapshot!("chain_two_joins", sql_with_comments(&r));
}

/// a(x): x = 1 on 1,000 rows, x = 2..=101 on 10 rows each; b(x, y): one row per x, y = 'p'
/// for x = 1, else 'q<x>'; c(y, z): one row per y. With a filter on b, `b.y <> 'q2'`.
fn chain_tables(opts: &mut PlanOptions) -> HashMap<String, Table> {
    let mut ax: Vec<i64> = vec![1; 1000];
    ax.extend((2..=101).flat_map(|x| std::iter::repeat_n(x, 10)));
    let ys: Vec<String> =
        (1..=101).map(|x| if x == 1 { "p".to_string() } else { format!("q{x}") }).collect();
    let zs: Vec<String> = ys
        .iter()
        .map(|y| format!("the row of {y}, long enough to keep c over the threshold"))
        .collect();
    in_memory(
        opts,
        vec![
            ("a", vec![("x", Arc::new(Int64Array::from(ax)) as ArrayRef)]),
            (
                "b",
                vec![
                    ("x", Arc::new(Int64Array::from_iter_values(1..=101)) as ArrayRef),
                    ("y", Arc::new(StringArray::from(ys.clone())) as ArrayRef),
                ],
            ),
            (
                "c",
                vec![
                    ("y", Arc::new(StringArray::from(ys)) as ArrayRef),
                    ("z", Arc::new(StringArray::from(zs)) as ArrayRef),
                ],
            ),
        ],
    )
}

#[test]
fn a_later_join_is_counted_through_the_joins_before() {
    let mut opts = PlanOptions { partitions: 16, broadcast_threshold: 100, ..Default::default() };
    let t = chain_tables(&mut opts);
    // b.y = 'p' is one row of b, but 1,000 rows of a JOIN b: hot only when counted through.
    let sql = "SELECT a.x, c.z FROM a JOIN b ON a.x = b.x JOIN c ON b.y = c.y WHERE b.y <> 'q2'";
    let r = rewrite(sql, &t, &Classifier::builtin().unwrap(), &opts).unwrap();
    let second =
        r.changes.iter().find(|c| c.join.contains("JOIN c")).expect("the join with c rewritten");
    let p = second.hot_keys.iter().find(|h| h.display == "'p'").expect("'p' hot");
    assert_eq!(p.left_rows, 1000);
    let notes: Vec<String> = second.notes.iter().map(ToString::to_string).collect();
    assert!(!notes.iter().any(|n| n.contains("estimates")), "{notes:?}");
    // 1,000 rows of 'p', 9 values x 10 rows ('q2' filtered out by the WHERE on b).
    let counted = notes
        .iter()
        .find(|n| n.contains("the joins before it (a JOIN b ON a.x = b.x)"))
        .expect("the counts' note");
    assert!(counted.contains("1,990 rows") && counted.contains("where y <> 'q2'"), "{counted}");
    // Counted on the key's table, with the reason: a condition across the inputs of a join
    // before it.
    let sql = "SELECT a.x FROM b JOIN a ON a.x = b.x AND a.x >= b.x - 1 JOIN b b2 ON a.x = b2.x";
    let r = rewrite(sql, &t, &Classifier::builtin().unwrap(), &opts).unwrap();
    let second = r
        .changes
        .iter()
        .find(|c| c.join.contains("JOIN b b2"))
        .expect("the join with b2 rewritten");
    let notes: Vec<String> = second.notes.iter().map(ToString::to_string).collect();
    assert!(
        notes.iter().any(|n| n.contains(
            "estimates (the counts do not follow the joins: the condition a.x >= b.x - 1 in ON"
        )),
        "{notes:?}"
    );
}

#[test]
fn a_window_over_joins_is_counted_through_them() {
    let mut opts = PlanOptions { partitions: 16, ..Default::default() };
    // Spark broadcasts b and c (10 MB): the joins stay as written and the window is planned.
    let t = chain_tables(&mut opts);
    // By b.y: 'p' is one row of b, 1,000 rows of a JOIN b; 'q2' is dropped by the WHERE.
    let sql = "SELECT a.x, count(*) OVER (PARTITION BY b.y) AS n FROM a JOIN b ON a.x = b.x WHERE b.y <> 'q2'";
    let r = rewrite(sql, &t, &Classifier::builtin().unwrap(), &opts).unwrap();
    let w = &r.windows[0];
    let p = w.plan.as_ref().unwrap_or_else(|| panic!("{:?} {:?}", w.reason, w.notes));
    let hot: Vec<(String, u64)> = p.hot.iter().map(|h| (h.display.clone(), h.rows)).collect();
    assert_eq!((p.rows, hot[0].clone()), (1990, ("'p'".to_string(), 1000)), "{:?}", w.notes);
    assert!(
        w.notes.iter().any(|n| n.contains("the counts are of the 1,990 rows its joins give")),
        "{:?}",
        w.notes
    );
    // A join on the side a left join keeps NULLs for: counted on a before the joins, said so.
    let sql = "SELECT a.x, count(*) OVER (PARTITION BY a.x) AS n FROM a LEFT JOIN b ON a.x = b.x JOIN c ON b.y = c.y";
    let r = rewrite(sql, &t, &Classifier::builtin().unwrap(), &opts).unwrap();
    let notes = &r.windows[0].notes;
    assert!(
        notes.iter().any(|n| n.contains(
            "estimates (a join on the side a left outer join before it keeps NULLs for)"
        )),
        "{notes:?}"
    );
}

#[test]
fn chains_left_alone_with_reasons() {
    for (sql, why) in [
        ("SELECT * FROM events e LEFT JOIN titles a ON e.title_id = a.title_id JOIN titles b USING (title_id)", "using_in_chain"),
        (
            "SELECT * FROM events e LEFT JOIN titles a ON e.title_id = a.title_id JOIN titles b ON e.title_id = b.title_id AND a.name = b.name",
            "keys_from_two_tables",
        ),
        ("SELECT * FROM events e LEFT JOIN nope a ON e.title_id = a.title_id JOIN titles b ON e.title_id = b.title_id", "chain_untraced"),
    ] {
        let r = rw(sql);
        assert!(codes(&r).iter().any(|c| c == why), "{sql}: {:?}", codes(&r));
    }
}

#[test]
fn comma_join_is_planned_as_the_inner_join_of_its_equalities() {
    let r = rw("SELECT t.name, count(*) AS n FROM events e, titles t WHERE e.event_id > 10 AND (t.title_id = e.title_id) GROUP BY t.name");
    assert_eq!(
        r.changes.len(),
        1,
        "{:?}",
        r.unchanged_joins.iter().map(|u| u.reason.to_string()).collect::<Vec<_>>()
    );
    assert!(r.changes[0].join.ends_with("(written as a comma join)"), "{}", r.changes[0].join);
    insta::assert_snapshot!("comma_join", sql_with_comments(&r));
}

#[test]
fn on_in_parentheses_is_planned() {
    let r = rw(
        "SELECT e.event_id, t.name FROM events e LEFT JOIN titles t ON ((e.title_id = t.title_id))",
    );
    assert_eq!(
        r.changes.len(),
        1,
        "{:?}",
        r.unchanged_joins.iter().map(|u| u.reason.to_string()).collect::<Vec<_>>()
    );
}

#[test]
fn nothing_rewritten_gives_the_query_back_byte_for_byte() {
    let sql =
        "select  e.event_id\n  from events e, titles t -- a cross join\n where e.event_id = 1\n";
    let r = rw(sql);
    assert!(r.changes.is_empty());
    assert_eq!(r.sql, sql);
    let out = sql_with_comments(&r);
    assert!(out.ends_with(sql) && out.starts_with("-- skewjoin: no join rewritten"), "{out}");
    assert_eq!(codes(&r), ["comma_no_equality"]);
}

#[test]
fn where_conditions_spark_applies_after_the_join_are_listed() {
    let r = rw(
        "SELECT e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id WHERE (t.name <> 'x' OR t.name IS NULL) AND e.event_id + 1 > 3",
    );
    assert_eq!(r.changes[0].how, JoinType::Left);
    let notes: Vec<String> = r.changes[0].notes.iter().map(ToString::to_string).collect();
    let n = notes
        .iter()
        .find(|n| n.starts_with("the counts do not apply"))
        .expect("a note on the conditions not applied");
    assert!(
        n.contains(
            "(t.name <> 'x' OR t.name IS NULL): Spark applies it after this left outer join"
        ),
        "{n}"
    );
    assert!(n.contains("e.event_id + 1 > 3: "), "{n}");
}

#[test]
fn an_outer_join_whose_null_filled_rows_where_drops_is_planned_as_the_inner_join_spark_runs() {
    // Spark's EliminateOuterJoin: t.name <> 'x' is NULL for a row the left join fills with NULLs.
    let r = rw("SELECT e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id WHERE t.name <> 'x'");
    let c = &r.changes[0];
    assert_eq!(c.how, JoinType::Inner);
    assert!(
        c.notes.iter().any(|n| matches!(
            n,
            Note::OuterAsSpark { written: JoinType::Left, runs: JoinType::Inner, .. }
        )),
        "{:?}",
        c.notes
    );
    // The inner join drops the NULL keys: none of them is a hot key moved.
    assert!(c.hot_keys.iter().all(|h| !h.key.iter().any(|v| v.is_null())), "{:?}", c.hot_keys);
    // Not when the condition keeps NULLs, or reads the kept side only.
    for sql in [
        "SELECT e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id WHERE t.name IS NULL OR t.name <> 'x'",
        "SELECT e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id WHERE e.event_id > 3",
    ] {
        assert_eq!(rw(sql).changes[0].how, JoinType::Left, "{sql}");
    }
}

#[test]
fn an_input_grouped_by_the_key_counts_one_row_per_group() {
    // events: 'hot' 400 rows, "O'Neil" 300, NULL 600, k000..k249 2 each: 253 groups.
    for (sql, groups) in [
        ("SELECT e.event_id, c.n FROM events e JOIN (SELECT title_id, count(*) AS n FROM events GROUP BY title_id) c ON e.title_id = c.title_id", "253 groups"),
        ("WITH c AS (SELECT DISTINCT title_id FROM events WHERE event_id >= 0) SELECT e.event_id FROM events e LEFT JOIN c ON e.title_id = c.title_id", "253 groups"),
        (
            "SELECT e.event_id, c.n FROM events e JOIN (SELECT e2.title_id AS tid, max(event_id) AS n FROM events e2 WHERE e2.title_id <> 'k000' GROUP BY e2.title_id) c ON e.title_id = c.tid",
            "251 groups",
        ),
    ] {
        let r = rw(sql);
        assert_eq!(r.changes.len(), 1, "{sql}: {:?}", r.unchanged_joins.iter().map(|u| u.reason.to_string()).collect::<Vec<_>>());
        let c = &r.changes[0];
        let hot = c.hot_keys.iter().find(|h| h.display == "'hot'").expect("'hot' is hot");
        assert_eq!((hot.left_rows, hot.right_rows), (400, 1), "{sql}");
        let notes: Vec<String> = c.notes.iter().map(ToString::to_string).collect();
        assert!(notes.iter().any(|n| n.contains(&format!("the counts are of its {groups}, one row each"))), "{sql}: {notes:?}");
    }
}

#[test]
fn an_aggregate_the_counts_cannot_follow_is_left_alone() {
    for (sql, why) in [
        (
            "SELECT * FROM events e JOIN (SELECT upper(title_id) AS u, count(*) AS n FROM events GROUP BY upper(title_id)) c ON e.title_id = c.u",
            "groups by upper(title_id)",
        ),
        ("SELECT * FROM events e JOIN (SELECT title_id, count(*) AS n FROM events GROUP BY ROLLUP (title_id)) c ON e.title_id = c.title_id", "ROLLUP"),
    ] {
        let r = rw(sql);
        assert!(r.changes.is_empty(), "{sql}");
        assert_eq!(codes(&r), ["right_input_aggregates"], "{sql}");
        // What the aggregate does is data of the reason, shown in its sentence.
        assert!(matches!(&r.unchanged_joins[0].reason, LeftAlone::RightInput(Untraced::Aggregates(what)) if what.contains(why)), "{sql}");
    }
}

#[test]
fn in_and_exists_subqueries_are_planned_as_the_joins_spark_makes_of_them() {
    for (sql, how, label) in [
        (
            "SELECT e.event_id FROM events e WHERE e.event_id > 3 AND e.title_id IN (SELECT title_id FROM titles WHERE name <> 'x')",
            "left semi",
            "IN (subquery)",
        ),
        ("SELECT event_id FROM events WHERE title_id IN (SELECT DISTINCT title_id FROM titles)", "left semi", "IN (subquery)"),
        (
            "SELECT * FROM events e WHERE EXISTS (SELECT 1 FROM titles t WHERE t.title_id = e.title_id AND t.name LIKE 'name%')",
            "left semi",
            "EXISTS (subquery)",
        ),
        ("SELECT e.event_id FROM events e WHERE NOT EXISTS (SELECT * FROM titles WHERE e.title_id = title_id)", "left anti", "NOT EXISTS (subquery)"),
    ] {
        let r = rw(sql);
        assert_eq!(r.changes.len(), 1, "{sql}: {:?}", r.unchanged_joins.iter().map(|u| u.reason.to_string()).collect::<Vec<_>>());
        let c = &r.changes[0];
        assert_eq!(c.how.as_str(), how, "{sql}");
        assert!(c.join.ends_with(&format!("(written as {label})")), "{sql}: {}", c.join);
        assert!(c.hot_keys.iter().any(|h| h.display == "'hot'"), "{sql}");
        assert!(!r.sql.contains(" IN (SELECT") && !r.sql.contains("EXISTS"), "{sql}: {}", r.sql);
    }
}

#[test]
fn subqueries_of_where_spark_does_not_shuffle_or_the_tool_cannot_join_are_listed() {
    for (sql, code, why) in [
        ("SELECT e.event_id FROM events e WHERE e.title_id NOT IN (SELECT title_id FROM titles)", "null_aware_anti", ""),
        (
            "SELECT e.event_id FROM events e WHERE e.title_id IN (SELECT t.title_id FROM titles t WHERE t.name = e.title_id)",
            "subquery_not_joined",
            "may refer to the outer query",
        ),
        (
            "SELECT e.event_id FROM events e WHERE EXISTS (SELECT 1 FROM titles t WHERE t.title_id > e.title_id)",
            "subquery_not_joined",
            "other than an equality",
        ),
        ("SELECT e.event_id FROM events e WHERE EXISTS (SELECT 1 FROM titles t WHERE t.name = 'x')", "subquery_not_joined", "uncorrelated EXISTS"),
        ("SELECT e.event_id FROM events e WHERE e.title_id IN (SELECT title_id FROM nope)", "subquery_not_joined", "not given"),
    ] {
        let r = rw(sql);
        assert!(r.changes.is_empty(), "{sql}");
        assert_eq!(r.sql, sql, "nothing rewritten: the query as given");
        assert_eq!(codes(&r), [code], "{sql}");
        // Which kind of subquery Spark does not join is data of the reason (its sentence).
        if let LeftAlone::SubqueryNotJoined(what) = &r.unchanged_joins[0].reason {
            assert!(what.contains(why), "{sql}: {what}");
        }
    }
}

#[test]
fn joins_inside_a_where_subquery_are_rewritten_in_its_scope() {
    let r = rw("SELECT count(*) AS n FROM titles WHERE title_id IN (SELECT e.title_id FROM events e LEFT JOIN titles t ON e.title_id = t.title_id WHERE t.name IS NULL)");
    assert_eq!(
        r.changes.len(),
        1,
        "{:?}",
        r.unchanged_joins.iter().map(|u| u.reason.to_string()).collect::<Vec<_>>()
    );
    assert!(r.changes[0].join.starts_with("events e LEFT JOIN titles t"), "{}", r.changes[0].join);
}

#[test]
fn cross_join_with_on_is_the_inner_join_spark_reads() {
    let r = rw(
        "SELECT e.event_id, t.name FROM events e CROSS JOIN titles t ON e.title_id = t.title_id",
    );
    assert_eq!(
        r.changes.len(),
        1,
        "{:?}",
        r.unchanged_joins.iter().map(|u| u.reason.to_string()).collect::<Vec<_>>()
    );
    assert_eq!(r.changes[0].how.as_str(), "inner");
}

#[test]
fn a_correlated_subquery_keeps_its_joins_as_written() {
    let sql = "SELECT t.name FROM titles t WHERE EXISTS (SELECT 1 FROM events e LEFT JOIN titles u ON e.title_id = u.title_id WHERE u.name = t.name)";
    let r = rw(sql);
    assert!(r.changes.is_empty() && r.sql == sql, "{}", r.sql);
}

#[test]
fn every_join_is_listed_with_where_it_is() {
    let sql = "SELECT e.event_id\nFROM events e\n  LEFT JOIN titles t ON e.title_id = t.title_id\n  CROSS JOIN titles c\nWHERE e.title_id NOT IN (SELECT title_id FROM titles)";
    let r = rw(sql);
    let seen: Vec<(u64, u64, &str)> =
        r.joins.iter().map(|s| s.at.map(|a| (a.line, a.column, s.status)).unwrap()).collect();
    assert_eq!(
        seen,
        vec![(3, 13, "rewritten"), (4, 14, "left_as_written"), (5, 7, "left_as_written")],
        "{:?}",
        r.joins
    );
    assert_eq!(r.joins[2].code.as_deref(), Some("null_aware_anti"));
    assert!(
        sql_with_comments(&r)
            .contains("(left outer) at line 3, column 13 is now the derived table __sj1"),
        "{}",
        sql_with_comments(&r)
    );
}

#[test]
fn a_subquery_under_or_is_listed_as_an_existence_join() {
    let sql = "SELECT e.event_id FROM events e WHERE e.event_id < 3 OR e.title_id IN (SELECT title_id FROM titles)";
    let r = rw(sql);
    assert!(r.changes.is_empty() && r.sql == sql);
    assert_eq!(codes(&r), ["subquery_not_joined"]);
    assert!(
        matches!(&r.unchanged_joins[0].reason, LeftAlone::SubqueryNotJoined(what) if what.contains("existence join")),
        "{:?}",
        r.unchanged_joins
    );
}

#[test]
fn join_hints_decide_the_join_as_spark_does() {
    // A BROADCAST hint on a side the join can build: no shuffle, the query back unchanged.
    let q = "SELECT /*+ BROADCAST(t) */ e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id";
    let r = rw(q);
    assert!(r.changes.is_empty());
    assert_eq!(r.sql, q);
    assert_eq!(
        r.unchanged_joins[0].reason,
        LeftAlone::HintBroadcasts { input: "t".into(), hint: "BROADCAST(t)".into() }
    );
    assert_eq!(r.unchanged_joins[0].code, "hint_broadcasts_side");
    // The same hint on the preserved side of a left join is ignored by Spark: rewritten, noted.
    let r = rw("SELECT /*+ BROADCAST(e) */ e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id");
    assert_eq!(r.changes.len(), 1);
    assert!(
        r.changes[0].notes.iter().any(|n| n
            .to_string()
            .starts_with("Spark does not follow the query's hint BROADCAST(e)")),
        "{:?}",
        r.changes[0].notes
    );
    // MERGE keeps the shuffle: its branch that shuffles carries it, the slices are broadcast.
    let r = rw("SELECT /*+ MERGE(t) */ e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id");
    assert_eq!(r.changes.len(), 1);
    assert!(r.sql.contains("    SELECT /*+ MERGE(`t`) */\n      `e`.`event_id`"), "{}", r.sql);
    // The outer SELECT no longer names t or e (they are inside __sj1): Spark would warn that it
    // cannot find them. What the hint names elsewhere, and other hints, stay.
    assert!(r.sql.starts_with("SELECT\n  `__sj1`"), "{}", r.sql);
    let r = rw("SELECT /*+ MERGE(t), BROADCAST(x), REPARTITION(4) */ e.event_id, t.name FROM events e LEFT JOIN titles t ON e.title_id = t.title_id");
    assert!(
        r.sql.starts_with("SELECT /*+ BROADCAST(x), REPARTITION(4) */\n  `__sj1`"),
        "{}",
        r.sql
    );
}

/// a(x, y): 2,000 rows, x = i % 100 (20 rows each), y = 1 on the first 1,000 (hot), else 2..=101;
/// b(x): one row per x; c(y, z): one row per y, wide enough to stay over the threshold.
fn branch_tables(opts: &mut PlanOptions) -> HashMap<String, Table> {
    let ax: Vec<i64> = (0..2000).map(|i| i % 100).collect();
    let ay: Vec<i64> = (0..2000).map(|i| if i < 1000 { 1 } else { 2 + i % 100 }).collect();
    let zs: Vec<String> = (1..=101)
        .map(|y| format!("the row of {y}, long enough to keep c over the threshold"))
        .collect();
    in_memory(
        opts,
        vec![
            (
                "a",
                vec![
                    ("x", Arc::new(Int64Array::from(ax)) as ArrayRef),
                    ("y", Arc::new(Int64Array::from(ay)) as ArrayRef),
                ],
            ),
            ("b", vec![("x", Arc::new(Int64Array::from_iter_values(0..100)) as ArrayRef)]),
            (
                "c",
                vec![
                    ("y", Arc::new(Int64Array::from_iter_values(1..=101)) as ArrayRef),
                    ("z", Arc::new(StringArray::from(zs)) as ArrayRef),
                ],
            ),
        ],
    )
}

#[test]
fn a_join_before_a_rewritten_one_is_counted_on_each_branchs_rows() {
    let mut opts = PlanOptions { partitions: 16, broadcast_threshold: 100, ..Default::default() };
    let t = branch_tables(&mut opts);
    let plan = |sql: &str| rewrite(sql, &t, &Classifier::builtin().unwrap(), &opts).unwrap();
    let r = plan("SELECT a.x, c.z FROM a JOIN b ON a.x = b.x JOIN c ON a.y = c.y");
    assert_eq!(
        r.changes.len(),
        1,
        "{:?}",
        r.unchanged_joins.iter().map(|u| u.reason.to_string()).collect::<Vec<_>>()
    );
    let first = r
        .unchanged_joins
        .iter()
        .find(|u| u.join.contains("JOIN b"))
        .expect("the join with b left as written");
    assert!(first.in_branches);
    let (before, after) =
        (first.before.as_ref().unwrap(), first.after.as_ref().expect("counted in the branches"));
    // Each branch reads half of a (y = 1, and y <> 1), 10 rows per x, and all of b: the same
    // tasks as the join under either condition, written in the query.
    let alone = plan("SELECT a.x FROM a JOIN b ON a.x = b.x WHERE a.y = 1");
    let under = alone.unchanged_joins[0].before.as_ref().expect("measured");
    assert_eq!(after.max_task_rows, under.max_task_rows);
    assert!(
        after.max_task_rows < before.max_task_rows,
        "{} -> {}",
        before.max_task_rows,
        after.max_task_rows
    );
    let text = sql_with_comments(&r);
    assert!(
        text.contains(&format!(
            "on the branch's rows: largest task {} rows -> {}",
            before.max_task_rows, after.max_task_rows
        )),
        "{text}"
    );
}

/// A chain of left joins, each with hot keys: each rewritten join reads the ones before it in
/// each of its branches. The text reads them by name (a CTE each, defined once), but Spark
/// inlines a CTE where it is read, so the plan still grows with the product of the branches:
/// the rewrite stops at the bound (16 KB and 8 KB a hot key moved, counted with the copies)
/// and leaves the later joins with the reason; what comes back parses and is within the bound.
#[test]
fn a_long_chain_stays_within_the_sql_bound() {
    let joins: Vec<String> =
        (0..7).map(|i| format!("LEFT JOIN titles t{i} ON e.title_id = t{i}.title_id")).collect();
    let names: Vec<String> = (0..7).map(|i| format!("t{i}.name AS n{i}")).collect();
    let sql = format!("SELECT e.event_id, {} FROM events e {}", names.join(", "), joins.join(" "));
    let r = rw(&sql);
    let moved: usize = r.changes.iter().map(|c| c.hot_keys.len()).sum();
    assert!(r.changes.len() >= 2 && r.changes.len() < 7, "{} rewritten", r.changes.len());
    assert!(
        r.sql.len() <= sql.len() + (16 << 10) + (8 << 10) * moved,
        "{} bytes for {moved} hot keys",
        r.sql.len()
    );
    // The later joins are left by the bound on the SQL or by the one on the plan's reads.
    assert!(r.unchanged_joins.iter().any(|u| matches!(
        u.reason,
        LeftAlone::SqlTooLarge { .. } | LeftAlone::PlanTooLarge { .. }
    )));
    let stmt = skewjoin::sql::parse(&r.sql).unwrap().remove(0);
    let sqlparser::ast::Statement::Query(q) = stmt else { panic!("not a query") };
    let ctes: Vec<String> =
        q.with.iter().flat_map(|w| &w.cte_tables).map(|c| c.alias.name.value.clone()).collect();
    // Each rewritten join but the last is read by the next one's branches: a CTE, defined once.
    let n = r.changes.len();
    let read: Vec<String> = r.changes[..n - 1].iter().map(|c| c.alias.clone()).collect();
    assert!(read.iter().all(|a| ctes.iter().filter(|c| *c == a).count() == 1), "{ctes:?}");
}

/// Spark inlines every copy of a CTE: a chain's rewrite reads the first join's inputs once per
/// branch of every join after it. However many joins could be rewritten (`--min-gain off`),
/// the plan that comes back reads no table more than the bound allows.
#[test]
fn a_long_chain_reads_no_table_more_than_the_bound() {
    use skewjoin::rewrite::reads::{most_read, reads_of_query, MAX_READS};
    let joins: Vec<String> =
        (0..7).map(|i| format!("LEFT JOIN titles t{i} ON e.title_id = t{i}.title_id")).collect();
    let names: Vec<String> = (0..7).map(|i| format!("t{i}.name AS n{i}")).collect();
    let sql = format!("SELECT e.event_id, {} FROM events e {}", names.join(", "), joins.join(" "));
    let r = rw(&sql);
    let stmt = skewjoin::sql::parse(&r.sql).unwrap().remove(0);
    let sqlparser::ast::Statement::Query(q) = stmt else { panic!("not a query") };
    // events, read once as written (each titles t0..t6 is an input of its own).
    let reads = reads_of_query(&q);
    assert!(reads["events"] <= MAX_READS, "events read {} times", reads["events"]);
    assert!(most_read(&reads).is_some());
    assert!(r.changes.len() >= 2, "{} rewritten", r.changes.len());
    let bounded = |u: &&skewjoin::rewrite::Unchanged| {
        matches!(u.reason, LeftAlone::SqlTooLarge { .. } | LeftAlone::PlanTooLarge { .. })
    };
    assert!(r.unchanged_joins.iter().any(|u| bounded(&u)), "{:?}", r.unchanged_joins);
}

#[test]
fn a_join_inside_a_grouped_subquery_is_planned_and_the_join_over_it_named_briefly() {
    let r = rw("SELECT x.title_id, x.n, t2.name FROM (SELECT e.title_id, count(*) AS n FROM events e LEFT JOIN titles t ON e.title_id = t.title_id GROUP BY e.title_id) x JOIN titles t2 ON x.title_id = t2.title_id");
    assert_eq!(r.changes.len(), 1, "{:?}", r.unchanged_joins);
    assert!(r.changes[0].join.starts_with("events e LEFT JOIN titles t"), "{}", r.changes[0].join);
    let u = &r.unchanged_joins[0];
    assert_eq!(u.reason, LeftAlone::LeftInput(Untraced::NotRowsOfOneTable));
    assert_eq!(
        u.join,
        "(subquery, its joins rewritten) x JOIN titles t2 ON x.title_id = t2.title_id"
    );
}

/// A window or aggregate stage left as written carries a code beside its sentence; a stage the
/// plan decides on has no code (its verdict is the reason).
#[test]
fn window_stages_left_as_written_have_codes() {
    let cases = [
        ("SELECT event_id, count(*) OVER (PARTITION BY title_id) AS a, count(*) OVER (PARTITION BY event_id) AS b FROM events", "partition_by_differs"),
        ("SELECT event_id, count(*) OVER (PARTITION BY title_id) AS n FROM events WHERE rand() < 0.5", "nondeterministic_input"),
        // The join under the window is rewritten (its hot keys): the window is left to it.
        (
            "SELECT e.event_id, count(*) OVER (PARTITION BY e.title_id) AS n FROM titles t RIGHT JOIN events e ON e.title_id = t.title_id",
            "input_is_a_rewritten_join",
        ),
    ];
    for (sql, code) in cases {
        let r = rw(sql);
        assert_eq!(r.windows[0].code, Some(code), "{sql}: {:?}", r.windows[0].reason);
        assert!(r.windows[0].reason.is_some(), "{sql}");
    }
    let planned = rw("SELECT title_id, count(*) AS n FROM events GROUP BY title_id");
    assert_eq!(
        (planned.windows[0].code, planned.windows[0].plan.is_some()),
        (None, true),
        "{:?}",
        planned.windows[0].reason
    );
}
