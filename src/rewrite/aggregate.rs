//! A GROUP BY (or a `SELECT DISTINCT`) of one traced input, planned as the aggregate Spark
//! runs: partial aggregation per map task, or two shuffles for DISTINCT aggregates; a
//! list-building aggregate's hot list in bytes. Reported beside the windows (`windows` in the
//! JSON), never rewritten: Spark already reduces the hot value before the shuffle.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, FunctionArguments, GroupByExpr, Select, SelectItem, Visit, Visitor};

use super::filters::column_of;
use super::input::{input_of, Input};
use super::names::lc;
use super::reason::StageWhy;
use super::window::{
    fn_name, joined_input, planned, planned_on_joined_rows, WindowSeen, BROADCAST_RECORDS,
};
use super::{At, Ctx};
use crate::sql::render_expr;
use crate::value::KeyType;
use crate::window::{Shape, WindowPlan};

/// Aggregates that build a list of their group's values.
/// (`percentile` and `median` keep every value of the group in their buffer, as a list does.)
const LIST_AGGREGATES: [&str; 5] =
    ["collect_list", "collect_set", "array_agg", "percentile", "median"];

/// DISTINCT aggregates of more columns than this are not looked at: Spark numbers them in an
/// order of its own, and each of the n! orders is counted.
const MAX_DISTINCT_COLUMNS: usize = 4;

/// A GROUP BY of columns of one traced table: planned as an aggregate (which Spark aggregates
/// per map task before the shuffle) and reported; one over anything else, or with DISTINCT
/// aggregates of several arguments or of more than `MAX_DISTINCT_COLUMNS` columns, is not
/// looked at.
pub(super) fn aggregate(sel: &Select, ctx: &mut Ctx) {
    let Some((keys, text)) = grouping(sel) else { return };
    if sel.from.len() != 1 {
        return;
    }
    let joined = !sel.from[0].joins.is_empty();
    let inp = if joined {
        joined_input(&sel.from[0], &keys, ctx).ok()
    } else {
        input_of(&sel.from[0].relation, ctx, 0).ok().map(|i| (0, i))
    };
    let Some((root, inp)) = inp.filter(|(_, inp)| keys.iter().all(|k| column_of(k, inp).is_some()))
    else {
        return;
    };
    let Some(distinct) = distinct_arguments(sel) else { return };
    let shape = match distinct.len() {
        0 => Shape::Aggregate { lists: builds_lists(sel) },
        n if n <= MAX_DISTINCT_COLUMNS => {
            Shape::DistinctAggregate { groups: n as u32, regular: has_regular_aggregate(sel) }
        }
        _ => return,
    };
    let mut seen = WindowSeen::left(keys.first().and_then(At::of), text);
    match planned_over_joins(sel, root, &inp, &keys, shape, &distinct, ctx) {
        Ok((p, notes)) => {
            let per_value = list_argument(sel).and_then(|e| list_bytes_per_value(&e, &inp, ctx));
            seen.plan = Some(match per_value {
                Some(b) if matches!(shape, Shape::Aggregate { lists: true }) => {
                    p.with_list_bytes(b)
                }
                _ => p,
            });
            seen.notes = notes;
        }
        Err(why) => seen.left_because(why),
    }
    ctx.windows.push(seen);
}

/// The aggregate planned on its input's rows: over joins, on the rows the joins give where the
/// counts follow them (a GROUP BY without DISTINCT aggregates), else on the key's table before
/// its joins, with a note that says so. Either way the records assume the joins run in the
/// key table's map tasks (broadcast joins), as Spark runs them when the other inputs are small.
fn planned_over_joins(
    sel: &Select,
    root: usize,
    inp: &Input,
    keys: &[Expr],
    shape: Shape,
    distinct: &[Expr],
    ctx: &Ctx,
) -> std::result::Result<(WindowPlan, Vec<String>), StageWhy> {
    if sel.from[0].joins.is_empty() {
        return planned(sel, inp, keys, shape, distinct, ctx);
    }
    let why = match shape {
        Shape::Aggregate { .. } => match planned_on_joined_rows(sel, root, inp, keys, shape, ctx) {
            Ok(planned) => return Ok(planned),
            Err(why) => why,
        },
        _ => "DISTINCT aggregates over joins are not counted through them".to_string(),
    };
    let (p, mut notes) = planned(sel, inp, keys, shape, distinct, ctx)?;
    notes.push(format!(
        "the key is counted on {} before its joins, which can drop or repeat its rows: the task sizes are estimates ({why}), and {BROADCAST_RECORDS}",
        inp.display()
    ));
    Ok((p, notes))
}

/// The grouping of a SELECT and how it is written: its GROUP BY columns, or the columns of a
/// `SELECT DISTINCT` of plain columns.
fn grouping(sel: &Select) -> Option<(Vec<Expr>, String)> {
    match (&sel.group_by, &sel.distinct) {
        (GroupByExpr::Expressions(keys, modifiers), _)
            if !keys.is_empty() && modifiers.is_empty() =>
        {
            Some((
                keys.clone(),
                format!("GROUP BY {}", keys.iter().map(render_expr).collect::<Vec<_>>().join(", ")),
            ))
        }
        (GroupByExpr::Expressions(keys, _), Some(sqlparser::ast::Distinct::Distinct))
            if keys.is_empty() =>
        {
            let cols: Vec<Expr> = sel
                .projection
                .iter()
                .map(|i| match i {
                    SelectItem::UnnamedExpr(
                        e @ (Expr::Identifier(_) | Expr::CompoundIdentifier(_)),
                    ) => Some(e.clone()),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            Some((
                cols.clone(),
                format!(
                    "SELECT DISTINCT {}",
                    cols.iter().map(render_expr).collect::<Vec<_>>().join(", ")
                ),
            ))
        }
        _ => None,
    }
}

/// The arguments of the DISTINCT aggregates of the select list and HAVING, each once; None
/// when one has other than one plain argument.
fn distinct_arguments(sel: &Select) -> Option<Vec<Expr>> {
    use sqlparser::ast::{FunctionArg, FunctionArgExpr};
    struct Distinct {
        args: Vec<Expr>,
        plain: bool,
    }
    impl Visitor for Distinct {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            let Expr::Function(f) = e else { return ControlFlow::Continue(()) };
            let FunctionArguments::List(l) = &f.args else { return ControlFlow::Continue(()) };
            if l.duplicate_treatment.is_none() {
                return ControlFlow::Continue(());
            }
            match l.args.as_slice() {
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(x))] => {
                    if !self.args.iter().any(|a| render_expr(a) == render_expr(x)) {
                        self.args.push(x.clone());
                    }
                }
                _ => self.plain = false,
            }
            ControlFlow::Continue(())
        }
    }
    let mut d = Distinct { args: Vec::new(), plain: true };
    let _ = sel.projection.visit(&mut d);
    let _ = sel.having.visit(&mut d);
    d.plain.then_some(d.args)
}

/// The argument of the first list-building aggregate of the select list.
fn list_argument(sel: &Select) -> Option<Expr> {
    use sqlparser::ast::{FunctionArg, FunctionArgExpr};
    struct First(Option<Expr>);
    impl Visitor for First {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let (None, Expr::Function(f)) = (&self.0, e) {
                if let (true, FunctionArguments::List(l)) =
                    (LIST_AGGREGATES.contains(&fn_name(f).as_str()), &f.args)
                {
                    if let [FunctionArg::Unnamed(FunctionArgExpr::Expr(x))] = l.args.as_slice() {
                        self.0 = Some(x.clone());
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut first = First(None);
    let _ = sel.projection.visit(&mut first);
    first.0
}

/// The bytes a value of a column of the input takes in a list, for a fixed-width type (a
/// string's or a binary's length is not known from the footers: None).
fn list_bytes_per_value(e: &Expr, inp: &Input, ctx: &Ctx) -> Option<f64> {
    let col = column_of(e, inp)?;
    let (table, base) = inp.base.get(&lc(&col))?;
    let width = match ctx.tables[table].resolve(base).ok()?.key_type {
        KeyType::Boolean | KeyType::TinyInt => 1,
        KeyType::SmallInt => 2,
        KeyType::Int | KeyType::Float | KeyType::Date => 4,
        KeyType::BigInt | KeyType::Double | KeyType::Timestamp { .. } => 8,
        KeyType::Decimal { precision, .. } if precision <= 18 => 8,
        KeyType::Decimal { .. } => 16,
        KeyType::Void | KeyType::String | KeyType::Binary => return None,
    };
    Some(width as f64)
}

/// An aggregate of the select list or HAVING builds a list of its group's values.
/// Whether the SELECT has an aggregate that is not DISTINCT (`count(*)` included): Spark then
/// copies each row once more for them (`RewriteDistinctAggregates` keeps an aggregate whose
/// children are not all foldable, and an aggregate function never is). A function not known as
/// an aggregate, or one with OVER, is not one.
fn has_regular_aggregate(sel: &Select) -> bool {
    struct Regular(bool);
    impl Visitor for Regular {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            let Expr::Function(f) = e else { return ControlFlow::Continue(()) };
            let distinct =
                matches!(&f.args, FunctionArguments::List(l) if l.duplicate_treatment.is_some());
            self.0 |= f.over.is_none() && !distinct && AGGREGATES.contains(&fn_name(f).as_str());
            ControlFlow::Continue(())
        }
    }
    let mut r = Regular(false);
    let _ = sel.projection.visit(&mut r);
    let _ = sel.having.visit(&mut r);
    r.0
}

/// Spark's aggregate functions (lower case), for `has_regular_aggregate`.
const AGGREGATES: [&str; 40] = [
    "sum",
    "count",
    "avg",
    "mean",
    "min",
    "max",
    "first",
    "last",
    "first_value",
    "last_value",
    "any_value",
    "collect_list",
    "collect_set",
    "array_agg",
    "percentile",
    "percentile_approx",
    "approx_percentile",
    "median",
    "stddev",
    "stddev_samp",
    "stddev_pop",
    "std",
    "variance",
    "var_samp",
    "var_pop",
    "corr",
    "covar_pop",
    "covar_samp",
    "count_if",
    "bool_and",
    "bool_or",
    "every",
    "some",
    "any",
    "bit_and",
    "bit_or",
    "approx_count_distinct",
    "max_by",
    "min_by",
    "try_sum",
];

fn builds_lists(sel: &Select) -> bool {
    struct Lists(bool);
    impl Visitor for Lists {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = e {
                self.0 |= LIST_AGGREGATES.contains(&fn_name(f).as_str());
            }
            ControlFlow::Continue(())
        }
    }
    let mut l = Lists(false);
    let _ = sel.projection.visit(&mut l);
    let _ = sel.having.visit(&mut l);
    l.0
}
