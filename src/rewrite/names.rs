//! Names and small SQL pieces the rewrite reads and builds: the tables a query names, the name
//! a FROM item goes by, select items made from text, a join as the reports show it.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    Ident, ObjectName, ObjectNamePart, Query, SelectItem, SetExpr, TableFactor, TableWithJoins,
    Visit, Visitor,
};

use crate::error::{Error, Result};
use crate::sql::{ident, parse_query};

/// The tables a query names (lower case, without quotes), CTE names excluded, in first-seen
/// order.
pub fn table_names(sql: &str) -> Result<Vec<String>> {
    let stmts = crate::sql::parse(sql)?;
    let mut v = Names::default();
    let _ = stmts.visit(&mut v);
    Ok(v.tables.into_iter().filter(|t| !v.ctes.contains(t)).collect())
}

#[derive(Default)]
struct Names {
    tables: Vec<String>,
    ctes: BTreeSet<String>,
}

impl Visitor for Names {
    type Break = ();

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if let Some(w) = &q.with {
            self.ctes.extend(w.cte_tables.iter().map(|c| c.alias.name.value.to_ascii_lowercase()));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, name: &ObjectName) -> ControlFlow<()> {
        let n = name.to_string().replace('`', "").to_ascii_lowercase();
        if !self.tables.contains(&n) {
            self.tables.push(n);
        }
        ControlFlow::Continue(())
    }
}

/// A name as the rewrite compares it.
pub(super) fn lc(s: &str) -> String {
    s.to_ascii_lowercase()
}

pub(super) fn last_ident(name: &ObjectName) -> Option<&Ident> {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(i)) => Some(i),
        _ => None,
    }
}

/// The name a FROM item goes by: its alias, or the table's name.
pub(super) fn factor_alias(f: &TableFactor) -> Option<String> {
    match f {
        TableFactor::Table { name, alias, .. } => alias
            .as_ref()
            .map(|a| a.name.value.clone())
            .or_else(|| last_ident(name).map(|i| i.value.clone())),
        TableFactor::Derived { alias, .. } => alias.as_ref().map(|a| a.name.value.clone()),
        _ => None,
    }
}

/// `alias.col`, renamed only when the exposed name differs: Spark 4.3's optimizer
/// (RemoveRedundantAliases) fails on a UNION of `x AS x` items under a window function.
pub(super) fn select_item(alias: &str, col: &str, exposed: &str) -> String {
    if col == exposed {
        format!("{}.{}", ident(alias), ident(col))
    } else {
        format!("{}.{} AS {}", ident(alias), ident(col), ident(exposed))
    }
}

/// `alias.exposed AS original` for each column.
pub(super) fn star_items(alias: &str, cols: &[(String, String)]) -> Result<Vec<SelectItem>> {
    cols.iter()
        .map(|(exposed, original)| {
            parse_item(&format!("{}.{} AS {}", ident(alias), ident(exposed), ident(original)))
        })
        .collect()
}

pub(super) fn parse_item(text: &str) -> Result<SelectItem> {
    let q = parse_query(&format!("SELECT {text}"))?;
    match *q.body {
        SetExpr::Select(mut s) if s.projection.len() == 1 => Ok(s.projection.remove(0)),
        _ => Err(Error::Internal(format!("cannot build select item {text}"))),
    }
}

/// The `j`-th join of a FROM item as the reports show it: `a JOIN b ON ...`, or
/// `a ... JOIN c ON ...` for a later one.
pub(super) fn join_text(twj: &TableWithJoins, j: usize) -> String {
    let mut twj = twj.clone();
    crate::sql::fix_literals(&mut twj);
    // A subquery whose joins this rewrite made derived tables is named, not printed: its SQL is
    // the rewrite's, many times the query's.
    let rewritten = |f: &mut sqlparser::ast::TableFactor| {
        if let sqlparser::ast::TableFactor::Derived { subquery, alias, .. } = f {
            if subquery.to_string().contains("`__sj") {
                let name = alias.as_ref().map(|a| a.name.value.clone()).unwrap_or_default();
                *f = crate::sql::table_factor(
                    format!("(subquery, its joins rewritten) {name}").trim_end(),
                    None,
                );
            }
        }
    };
    rewritten(&mut twj.relation);
    twj.joins.iter_mut().for_each(|j| rewritten(&mut j.relation));
    let t = match twj.joins.get(j) {
        Some(x) if j == 0 => format!("{} {}", twj.relation, x),
        Some(x) => format!("{} ... {}", twj.relation, x),
        None => twj.relation.to_string(),
    };
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_without_ctes() {
        let sql = "WITH x AS (SELECT * FROM a) SELECT * FROM x, `B` JOIN db.c ON 1=1 WHERE EXISTS (SELECT 1 FROM a)";
        assert_eq!(table_names(sql).unwrap(), vec!["a", "b", "db.c"]);
    }
}
