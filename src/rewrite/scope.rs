//! Re-pointing references at a rewritten join: `alias.col` of an input that moved into a
//! derived table becomes `new_alias.exposed`, except where a subquery defines a table of the
//! same name (there `alias.col` means its own table).

use std::collections::HashMap;
use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Ident, Query, SetExpr, VisitMut, VisitorMut};

use super::names::{factor_alias, lc};

/// A qualifier re-pointed at a rewritten join: `alias.col` -> `new_alias.exposed`.
#[derive(Clone)]
pub(super) struct Remap {
    pub alias: String,
    pub new_alias: String,
    /// Column (lower case) -> exposed name.
    pub columns: HashMap<String, String>,
    /// The columns of `alias.*`, with their original names.
    pub star: Vec<(String, String)>,
}

/// Re-point `alias.col` everywhere in `node`, except inside a subquery that defines a table
/// of that name itself.
pub(super) fn repoint_all<T: VisitMut>(node: &mut T, remaps: &[Remap]) {
    let _ = node.visit(&mut Repointer { remaps, shadow: Vec::new() });
}

/// The visitor of `repoint_all`: the names each enclosing subquery defines, innermost last.
struct Repointer<'a> {
    remaps: &'a [Remap],
    shadow: Vec<Vec<String>>,
}

impl VisitorMut for Repointer<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        let mut names = Vec::new();
        if let Some(w) = &q.with {
            names.extend(w.cte_tables.iter().map(|c| lc(&c.alias.name.value)));
        }
        names_of_set(&q.body, &mut names);
        self.shadow.push(names);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
        self.shadow.pop();
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Expr::CompoundIdentifier(parts) = e {
            if parts.len() == 2 && self.shadow.iter().any(|s| s.contains(&lc(&parts[0].value))) {
                return ControlFlow::Continue(());
            }
        }
        repoint(e, self.remaps);
        ControlFlow::Continue(())
    }
}

/// The names (lower case) the FROM items of a query body define.
fn names_of_set(b: &SetExpr, names: &mut Vec<String>) {
    match b {
        SetExpr::Select(s) => {
            for twj in &s.from {
                names.extend(factor_alias(&twj.relation).map(|a| lc(&a)));
                names.extend(
                    twj.joins.iter().filter_map(|j| factor_alias(&j.relation)).map(|a| lc(&a)),
                );
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            names_of_set(left, names);
            names_of_set(right, names);
        }
        _ => {}
    }
}

fn repoint(e: &mut Expr, remaps: &[Remap]) {
    if let Expr::CompoundIdentifier(parts) = e {
        if parts.len() == 2 {
            if let Some(r) = remaps.iter().find(|r| r.alias.eq_ignore_ascii_case(&parts[0].value)) {
                if let Some(x) = r.columns.get(&lc(&parts[1].value)) {
                    parts[0] = Ident::with_quote('`', r.new_alias.clone());
                    parts[1] = Ident::with_quote('`', x.clone());
                }
            }
        }
    }
}
