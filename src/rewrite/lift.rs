//! A rewritten join that a later rewritten join of its chain reads runs in each of that join's
//! branches: its derived table (`__sjN`) is copied into every branch, and a chain of rewritten
//! joins would grow the SQL with the product of their branches. Here each derived table of the
//! rewrite that a query holds more than once becomes one CTE of that query, named as it was,
//! and every copy a reference to it, so the SQL text grows with the sum. Spark inlines a
//! deterministic CTE where it is read, so the plan it optimises and runs is the one the copies
//! made: the bound on what a rewrite adds (`SqlGrowth`) counts the copies, not the text.
//!
//! A copy inside a query that has a WITH of its own (a user's CTE it may read) stays where it
//! is: lifted, it would lose sight of that CTE.

use std::collections::HashMap;
use std::ops::ControlFlow;

use sqlparser::ast::helpers::attached_token::AttachedToken;
use sqlparser::ast::{
    Cte, Query, TableAlias, TableFactor, Visit, VisitMut, Visitor, VisitorMut, With,
};

/// Whether a derived table's alias is one the rewrite made for a join or a window (`__sj1`,
/// `__sjp2`, `__sw3`; not the `__sj_t` of a filtered input, which names many bodies).
fn made_here(alias: &TableAlias) -> bool {
    let name = alias.name.value.as_str();
    ["__sjp", "__sj", "__sw"].iter().any(|p| {
        name.strip_prefix(p).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The rewrite's derived tables that `q`'s body holds more than once, each once as a CTE at the
/// end of `q`'s WITH (an earlier one before a later one that reads it), every copy now a
/// reference to it.
pub(super) fn lift_repeated(q: &mut Query) {
    let mut seen = Seen::default();
    let _ = Visit::visit(q.body.as_ref(), &mut seen);
    // An alias with two different bodies (not made by one rewrite) is left alone.
    let lift: Vec<String> = seen
        .copies
        .into_iter()
        .filter(|(_, texts)| texts.len() == 1 && texts.values().all(|n| *n > 1))
        .map(|(alias, _)| alias)
        .collect();
    if lift.is_empty() {
        return;
    }
    let mut lifting = Lifting { lift, depth: Vec::new(), defs: Vec::new() };
    let _ = VisitMut::visit(q.body.as_mut(), &mut lifting);
    let with = q.with.get_or_insert_with(|| With {
        with_token: AttachedToken::empty(),
        recursive: false,
        cte_tables: Vec::new(),
    });
    with.cte_tables.extend(lifting.defs);
}

/// The text of each derived table the rewrite made, by alias, and how often each appears (not
/// counting those inside a query with a WITH of its own).
#[derive(Default)]
struct Seen {
    copies: HashMap<String, HashMap<String, usize>>,
    /// For each query entered: whether it (or one around it, below the top) has a WITH.
    depth: Vec<bool>,
}

impl Visitor for Seen {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        let shut = self.depth.last().copied().unwrap_or(false) || query.with.is_some();
        self.depth.push(shut);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.depth.pop();
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Derived { subquery, alias: Some(alias), lateral: false, .. } = f {
            if made_here(alias) && !self.depth.last().copied().unwrap_or(false) {
                let texts = self.copies.entry(alias.name.value.clone()).or_default();
                *texts.entry(subquery.to_string()).or_default() += 1;
            }
        }
        ControlFlow::Continue(())
    }
}

/// Replacing the copies of `lift` by references, inner ones first, and keeping each one's
/// definition the first time it is met (after the ones it reads).
struct Lifting {
    lift: Vec<String>,
    depth: Vec<bool>,
    defs: Vec<Cte>,
}

impl VisitorMut for Lifting {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let shut = self.depth.last().copied().unwrap_or(false) || query.with.is_some();
        self.depth.push(shut);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth.pop();
        ControlFlow::Continue(())
    }

    fn post_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Derived { subquery, alias: Some(alias), lateral: false, .. } = f else {
            return ControlFlow::Continue(());
        };
        if self.depth.last().copied().unwrap_or(false) || !self.lift.contains(&alias.name.value) {
            return ControlFlow::Continue(());
        }
        let name = alias.name.value.clone();
        if !self.defs.iter().any(|c| c.alias.name.value == name) {
            self.defs.push(Cte {
                // `name AS (...)`: a CTE's name takes no AS before it.
                alias: TableAlias { explicit: false, at: None, ..alias.clone() },
                query: subquery.clone(),
                from: None,
                materialized: None,
                closing_paren_token: AttachedToken::empty(),
            });
        }
        *f = crate::sql::table_factor(&name, None);
        ControlFlow::Continue(())
    }
}

/// The reverse of `lift_repeated`, for an engine that reads the rewrite's CTEs otherwise than
/// Spark: each CTE the rewrite made (in any query of `q`) written back as the derived table it
/// names wherever it is read. The names inlined, in order.
pub(crate) fn inline_lifted(q: &mut Query) -> Vec<String> {
    let mut inlining = Inlining { names: Vec::new() };
    let _ = VisitMut::visit(q, &mut inlining);
    inlining.names
}

/// Queries with the rewrite's CTEs, inner ones first: their CTEs written back into the body.
struct Inlining {
    names: Vec<String>,
}

impl VisitorMut for Inlining {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let Some(with) = &mut query.with else { return ControlFlow::Continue(()) };
        let (made, kept): (Vec<Cte>, Vec<Cte>) =
            std::mem::take(&mut with.cte_tables).into_iter().partition(|c| made_here(&c.alias));
        with.cte_tables = kept;
        if with.cte_tables.is_empty() {
            query.with = None;
        }
        // Each definition reads only those before it: inline those first.
        let mut defs: Vec<(String, Box<Query>)> = Vec::new();
        for mut c in made {
            let _ = VisitMut::visit(c.query.as_mut(), &mut Reading { defs: &defs });
            self.names.push(c.alias.name.value.clone());
            defs.push((c.alias.name.value.clone(), c.query));
        }
        if !defs.is_empty() {
            let _ = VisitMut::visit(query.body.as_mut(), &mut Reading { defs: &defs });
        }
        ControlFlow::Continue(())
    }
}

/// A table read by one of `defs`' names, written as that definition under its name.
struct Reading<'a> {
    defs: &'a [(String, Box<Query>)],
}

impl VisitorMut for Reading<'_> {
    type Break = ();

    fn post_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table { name, alias, .. } = f else { return ControlFlow::Continue(()) };
        let [sqlparser::ast::ObjectNamePart::Identifier(id)] = name.0.as_slice() else {
            return ControlFlow::Continue(());
        };
        if let Some((n, def)) = self.defs.iter().find(|(n, _)| n.eq_ignore_ascii_case(&id.value)) {
            let alias = alias.clone().unwrap_or_else(|| TableAlias {
                explicit: true,
                name: sqlparser::ast::Ident::new(n),
                columns: vec![],
                at: None,
            });
            *f = TableFactor::Derived {
                lateral: false,
                subquery: def.clone(),
                alias: Some(alias),
                sample: None,
            };
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sql` with the rewrite's repeated derived tables lifted, as one line.
    fn lifted(sql: &str) -> String {
        let mut q = crate::sql::parse_query(sql).unwrap();
        lift_repeated(&mut q);
        q.to_string()
    }

    const D1: &str = "(SELECT k FROM t WHERE k IS NULL) AS __sj1";

    #[test]
    fn a_derived_table_read_twice_becomes_one_cte() {
        let sql = format!("SELECT * FROM (SELECT * FROM {D1}) AS a UNION ALL SELECT * FROM (SELECT * FROM {D1}) AS b");
        assert_eq!(
            lifted(&sql),
            "WITH __sj1 AS (SELECT k FROM t WHERE k IS NULL) SELECT * FROM (SELECT * FROM __sj1) AS a UNION ALL SELECT * FROM (SELECT * FROM __sj1) AS b"
        );
    }

    #[test]
    fn one_read_or_two_bodies_or_a_users_name_stay_as_written() {
        let once = format!("SELECT * FROM {D1}");
        let two = format!("SELECT * FROM {D1} UNION ALL SELECT * FROM (SELECT 2 AS k) AS __sj1");
        let users =
            "SELECT * FROM (SELECT 1 AS k) AS s UNION ALL SELECT * FROM (SELECT 1 AS k) AS s";
        let t = "SELECT * FROM (SELECT 1 AS k) AS __sj_t UNION ALL SELECT * FROM (SELECT 1 AS k) AS __sj_t";
        for sql in [once.as_str(), two.as_str(), users, t] {
            assert_eq!(lifted(sql), crate::sql::parse_query(sql).unwrap().to_string(), "{sql}");
        }
    }

    #[test]
    fn a_copy_under_a_users_with_keeps_sight_of_it() {
        let inner = "(WITH w AS (SELECT 1 AS k) SELECT * FROM (SELECT k FROM w) AS __sj1)";
        let sql = format!("SELECT * FROM {inner} AS a UNION ALL SELECT * FROM {inner} AS b");
        assert_eq!(lifted(&sql), crate::sql::parse_query(&sql).unwrap().to_string());
    }

    #[test]
    fn nested_copies_are_defined_before_the_cte_that_reads_them() {
        let d3 = format!("(SELECT * FROM {D1} UNION ALL SELECT * FROM {D1}) AS __sj3");
        let sql = format!("SELECT * FROM {d3} UNION ALL SELECT * FROM {d3}");
        assert_eq!(
            lifted(&sql),
            "WITH __sj1 AS (SELECT k FROM t WHERE k IS NULL), __sj3 AS (SELECT * FROM __sj1 UNION ALL SELECT * FROM __sj1) SELECT * FROM __sj3 UNION ALL SELECT * FROM __sj3"
        );
    }

    #[test]
    fn inlined_back_the_copies_are_as_the_rewrite_made_them() {
        let d3 = format!("(SELECT * FROM {D1} UNION ALL SELECT * FROM {D1}) AS __sj3");
        let sql =
            format!("WITH u AS (SELECT 1 AS k) SELECT * FROM {d3} UNION ALL SELECT * FROM {d3}");
        let copies = crate::sql::parse_query(&sql).unwrap().to_string();
        let mut q = crate::sql::parse_query(&lifted(&sql)).unwrap();
        assert_eq!(inline_lifted(&mut q), ["__sj1", "__sj3"]);
        assert_eq!(q.to_string(), copies);
    }
}
