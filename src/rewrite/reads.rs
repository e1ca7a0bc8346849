//! How many times a rewritten join's plan reads each table, as Spark plans it: every copy of a
//! CTE is inlined where it is read (Spark's `InlineCTE` inlines each deterministic CTE), so a
//! chain of rewritten joins reads the first join's inputs once per branch of every join after
//! it. Spark's optimiser pays for the plan, not for the SQL's bytes: a rewrite whose plan reads
//! a table more than `MAX_READS` times is left as written (`LeftAlone::PlanTooLarge`).

use std::collections::HashMap;
use std::ops::ControlFlow;

use sqlparser::ast::{visit_relations, Query, TableFactor};

use super::names::lc;

/// The most reads of one table a rewritten plan may hold: a chain of rewritten joins of 3
/// branches each reads its first table 3, 9, 27 times; Spark's planning time grows faster
/// than the reads (BENCHMARKS.md, "Spark's planning time"), past 5 s at 27.
pub const MAX_READS: usize = 12;

/// Each table's reads in `relation` (lower-case names), a CTE of `ctes` counted as the reads of
/// its body wherever it is read.
pub fn reads(relation: &TableFactor, ctes: &HashMap<String, Query>) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    let mut seen = Vec::new();
    count(relation, ctes, &mut out, &mut seen);
    out
}

/// Each table's reads in a whole query, its CTEs inlined where they are read.
pub fn reads_of_query(q: &Query) -> HashMap<String, usize> {
    let ctes: HashMap<String, Query> = q
        .with
        .iter()
        .flat_map(|w| &w.cte_tables)
        .map(|c| (lc(&c.alias.name.value), (*c.query).clone()))
        .collect();
    let mut out = HashMap::new();
    count(&*q.body, &ctes, &mut out, &mut Vec::new());
    out
}

/// The table read the most times, and how many.
pub fn most_read(reads: &HashMap<String, usize>) -> Option<(String, usize)> {
    reads
        .iter()
        .max_by_key(|(name, n)| (**n, std::cmp::Reverse((*name).clone())))
        .map(|(t, n)| (t.clone(), *n))
}

fn count<V: sqlparser::ast::Visit>(
    node: &V,
    ctes: &HashMap<String, Query>,
    out: &mut HashMap<String, usize>,
    seen: &mut Vec<String>,
) {
    let mut names = Vec::new();
    let _ = visit_relations(node, |name| {
        names.push(lc(&name.to_string()));
        ControlFlow::<()>::Continue(())
    });
    for name in names {
        match ctes.get(&name) {
            // A CTE read inside its own body (or a cycle) is not followed again.
            Some(body) if !seen.contains(&name) => {
                seen.push(name.clone());
                count(body, ctes, out, seen);
                seen.pop();
            }
            _ => *out.entry(name).or_default() += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parse_query;
    use sqlparser::ast::SetExpr;

    fn relation(sql: &str) -> TableFactor {
        let q = parse_query(&format!("SELECT * FROM ({sql}) AS t")).unwrap();
        let SetExpr::Select(mut s) = *q.body else { panic!() };
        s.from.remove(0).relation
    }

    #[test]
    fn each_copy_of_a_table_and_of_a_cte_is_a_read() {
        let r = relation(
            "SELECT * FROM f JOIN d ON f.k = d.k WHERE f.k <> 1 \
             UNION ALL SELECT * FROM f JOIN (SELECT * FROM d WHERE k = 1) s ON f.k = s.k \
             UNION ALL SELECT * FROM x",
        );
        let ctes =
            HashMap::from([("x".to_string(), parse_query("SELECT * FROM f, f AS g").unwrap())]);
        let n = reads(&r, &ctes);
        assert_eq!(n["f"], 4);
        assert_eq!(n["d"], 2);
        assert!(!n.contains_key("x"));
        assert_eq!(most_read(&n), Some(("f".to_string(), 4)));
    }
}
