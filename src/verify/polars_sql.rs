//! The same logical query for Polars SQL: a Spark SQL query (the original or the rewrite) is
//! parsed once and rendered again from its AST with Polars' spellings. What changes, and why:
//!
//! - `pmod(a, n)` becomes `((a % n) + n) % n`; `hash(...)` becomes `__sj_hash(...)`, a function
//!   registered with Polars that computes Spark's Murmur3 (seed 42, columns chained), so every
//!   row gets the salt that Spark would give it.
//! - `element_at(array(v1, ...), i)` becomes `CASE i WHEN 1 THEN v1 ... END`.
//! - `explode(CASE WHEN c THEN array(s, ...) ... END) AS salt` in a select list (the copies of
//!   the other side in a salted branch) becomes a cross join with a table of salt values
//!   (`__sj_salts`) kept where `CASE WHEN c THEN salt IN (s, ...) ... ELSE FALSE END`.
//! - `TIMESTAMP_MICROS(n)`, `DATE_FROM_UNIX_DATE(n)` and `TIMESTAMP_NTZ` become casts; the
//!   engine reads every timestamp as a UTC wall clock, so an instant stays the same instant.
//! - `monotonically_increasing_id()` (a salt with no other column to hash) becomes 0: every row
//!   takes the first of its salts, which changes the balance, never the rows.
//! - `CAST(x AS DECIMAL(p,s))` becomes a cast to DOUBLE: this build's Polars cannot join or
//!   group decimals, so the engine reads decimal columns as doubles (distinct up to 15 digits).
//! - A join's ON condition on one input only is moved into that input where Spark would push it
//!   down too; Polars SQL applies it after the join, wrong for the kept side of an outer join.
//!   USING, NATURAL, EXISTS and an ON condition on the kept side are refused, with the reason.
//! - skewjoin's reused subquery aliases (`__sj_t`) get unique names: Polars SQL keeps one map
//!   of aliases per query.
//! - Hints are dropped (Polars has no broadcast to ask for); backquoted names are double-quoted,
//!   and every name is lower-cased, as the engine registers tables and columns (Spark resolves
//!   names without regard to case); string literals are written with doubled quotes.

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, CastKind, DataType, Expr, FunctionArg, FunctionArgExpr, FunctionArguments,
    Ident, Join, JoinConstraint, JoinOperator, ObjectName, ObjectNamePart, Select, SelectItem,
    TableFactor, TableWithJoins, Value as SqlValue, VisitMut, VisitorMut,
};
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use crate::error::{Error, Result};
use crate::sql::{parse_query, render_query, SparkDialect};

/// The table of salt values the rendered SQL cross-joins with, and its one column.
pub const SALTS_TABLE: &str = "__sj_salts";
pub const SALTS_COLUMN: &str = "salt";
/// The function that computes Spark's `hash(...)`.
pub const HASH_FN: &str = "__sj_hash";

#[derive(Debug, Clone, Default)]
pub struct PolarsSql {
    pub sql: String,
    /// What was rendered differently from the Spark text, one line each.
    pub changes: Vec<String>,
    /// The largest salt value the query needs in `__sj_salts` (None: no salts table).
    pub max_salt: Option<i64>,
    /// Tables the SQL reads with Spark's hash of some columns already added (see `Hashed`).
    pub hashed: Vec<Hashed>,
}

/// A table registered as `name`: the base table `table` plus, for each column list, a column
/// `{name}_{i}` holding Spark's `hash()` of those columns. Polars SQL loses registered functions
/// inside a subquery in FROM (where the salted branches call `hash`), so the hash is computed
/// in the scan instead and the SQL reads the column.
#[derive(Debug, Clone)]
pub struct Hashed {
    pub name: String,
    pub table: String,
    pub columns: Vec<Vec<String>>,
    /// Where the hashed relation is not a `--table` (a CTE, a subquery in FROM): a query of
    /// its rows (with the query's CTEs), rendered for Polars, that the engine runs first.
    pub source: Option<Box<PolarsSql>>,
}

pub(crate) fn name_of(n: &ObjectName) -> String {
    n.0.iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => i.value.to_ascii_lowercase(),
            other => other.to_string().to_ascii_lowercase(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn args_of(f: &sqlparser::ast::Function) -> Option<Vec<Expr>> {
    match &f.args {
        FunctionArguments::None => Some(vec![]),
        FunctionArguments::List(l) => l
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                _ => None,
            })
            .collect(),
        FunctionArguments::Subquery(_) => None,
    }
}

fn call(name: &str, f: &sqlparser::ast::Function, args: Vec<Expr>) -> Expr {
    let mut g = f.clone();
    g.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]);
    if let FunctionArguments::List(l) = &mut g.args {
        l.args = args.into_iter().map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e))).collect();
    }
    Expr::Function(g)
}

fn nested(e: Expr) -> Expr {
    Expr::Nested(Box::new(e))
}

fn bin(l: Expr, op: BinaryOperator, r: Expr) -> Expr {
    Expr::BinaryOp { left: Box::new(l), op, right: Box::new(r) }
}

fn cast(e: Expr, t: DataType) -> Expr {
    Expr::Cast { kind: CastKind::Cast, expr: Box::new(e), data_type: t, format: None }
}

/// The elements of `array(a, b, ...)`.
fn array_items(e: &Expr) -> Option<Vec<Expr>> {
    match e {
        Expr::Function(f) if name_of(&f.name) == "array" => args_of(f),
        Expr::Array(a) => Some(a.elem.clone()),
        Expr::Nested(x) => array_items(x),
        _ => None,
    }
}

fn as_int(e: &Expr) -> Option<i64> {
    match e {
        Expr::Value(v) => match &v.value {
            SqlValue::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        Expr::UnaryOp { op: sqlparser::ast::UnaryOperator::Minus, expr } => {
            as_int(expr).map(|x| -x)
        }
        _ => None,
    }
}

/// A table's column names (lower case), for `SELECT *` over a USING join.
pub type ColumnsOf<'a> = &'a dyn Fn(&str) -> Option<Vec<String>>;

struct Render<'a> {
    columns_of: ColumnsOf<'a>,
    /// How many of skewjoin's reused aliases (`__sj_t`, ...) were made unique so far.
    renamed: usize,
    changes: Vec<&'static str>,
    error: Option<String>,
    max_salt: Option<i64>,
    hashed: Vec<Hashed>,
    /// The names of the query's CTEs (lower case): a subquery named like one hides it.
    ctes: Vec<String>,
    /// The top query's WITH, for the rows of a hashed CTE or subquery (see `Hashed`).
    with: Option<String>,
}

/// The names of every CTE of `q`, at any level (lower case).
fn cte_names(q: &sqlparser::ast::Query) -> Vec<String> {
    let mut names = CteNames(Vec::new());
    let _ = sqlparser::ast::Visit::visit(q, &mut names);
    names.0
}

/// Collects the CTE names of every query it visits (the top one and each subquery).
struct CteNames(Vec<String>);

impl sqlparser::ast::Visitor for CteNames {
    type Break = ();
    fn pre_visit_query(&mut self, q: &sqlparser::ast::Query) -> ControlFlow<()> {
        if let Some(w) = &q.with {
            self.0.extend(w.cte_tables.iter().map(|c| c.alias.name.value.to_lowercase()));
        }
        ControlFlow::Continue(())
    }
}

/// The column a `hash()` argument names, if it is a column of the table known as `qual`.
fn column_of(e: &Expr, qual: &str) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(i.value.to_lowercase()),
        Expr::CompoundIdentifier(p) if p.len() == 2 && p[0].value.eq_ignore_ascii_case(qual) => {
            Some(p[1].value.to_lowercase())
        }
        Expr::Nested(x) => column_of(x, qual),
        _ => None,
    }
}

/// The name a FROM item goes by (its alias, else its table name), lower-cased.
fn factor_name(f: &TableFactor) -> Option<String> {
    match f {
        TableFactor::Table { alias: Some(a), .. } | TableFactor::Derived { alias: Some(a), .. } => {
            Some(a.name.value.to_lowercase())
        }
        TableFactor::Table { name, alias: None, .. } => {
            name_of(name).rsplit('.').next().map(str::to_string)
        }
        _ => None,
    }
}

/// The qualifiers `e` uses (None inside: an unqualified column, whose side is unknown).
fn qualifiers(e: &Expr) -> Option<std::collections::HashSet<String>> {
    let mut q = std::collections::HashSet::new();
    let mut bare = false;
    let _ = sqlparser::ast::visit_expressions(e, |x: &Expr| {
        match x {
            Expr::Identifier(_) => bare = true,
            Expr::CompoundIdentifier(p) if p.len() >= 2 => {
                q.insert(p[p.len() - 2].value.to_lowercase());
            }
            Expr::Exists { .. } | Expr::Subquery(_) | Expr::InSubquery { .. } => bare = true,
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    (!bare).then_some(q)
}

/// `a.x = b.y` with one side in `left` and the other `right`: a key equality of the join.
fn is_key_eq(e: &Expr, left: &[String], right: &str) -> bool {
    let Expr::BinaryOp { left: a, op: BinaryOperator::Eq, right: b } = e else { return false };
    // Two unqualified names: Polars resolves them as Spark does (each is in one input only).
    if matches!((&**a, &**b), (Expr::Identifier(_), Expr::Identifier(_))) {
        return true;
    }
    let (Some(qa), Some(qb)) = (qualifiers(a), qualifiers(b)) else { return false };
    let one = |q: &std::collections::HashSet<String>| q.len() == 1;
    one(&qa) && one(&qb) && {
        let (x, y) = (
            qa.iter().next().cloned().unwrap_or_default(),
            qb.iter().next().cloned().unwrap_or_default(),
        );
        (left.contains(&x) && y == right) || (left.contains(&y) && x == right)
    }
}

fn join_on(kind: &str, c: JoinConstraint) -> JoinOperator {
    match kind {
        "inner" => JoinOperator::Join(c),
        "left" => JoinOperator::Left(c),
        "right" => JoinOperator::Right(c),
        "full" => JoinOperator::FullOuter(c),
        "semi" => JoinOperator::LeftSemi(c),
        _ => JoinOperator::LeftAnti(c),
    }
}

fn kind_of(j: &JoinOperator) -> Option<(&'static str, &JoinConstraint)> {
    Some(match j {
        JoinOperator::Join(c) | JoinOperator::Inner(c) => ("inner", c),
        JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => ("left", c),
        JoinOperator::Right(c) | JoinOperator::RightOuter(c) => ("right", c),
        JoinOperator::FullOuter(c) => ("full", c),
        JoinOperator::Semi(c) | JoinOperator::LeftSemi(c) => ("semi", c),
        JoinOperator::Anti(c) | JoinOperator::LeftAnti(c) => ("anti", c),
        _ => return None,
    })
}

/// Apply `fix` to the WHERE, HAVING, GROUP BY and ON expressions of `s` (the projection is
/// the caller's: each use treats its items differently).
fn clauses_mut(s: &mut Select, mut fix: impl FnMut(&mut Expr)) {
    if let Some(w) = s.selection.as_mut() {
        fix(w);
    }
    if let Some(h) = s.having.as_mut() {
        fix(h);
    }
    if let sqlparser::ast::GroupByExpr::Expressions(es, _) = &mut s.group_by {
        es.iter_mut().for_each(&mut fix);
    }
    for twj in s.from.iter_mut() {
        for j in twj.joins.iter_mut() {
            if let Some(e) = crate::sql::on_condition_mut(&mut j.join_operator) {
                fix(e);
            }
        }
    }
}

fn col_ref(q: &str, c: &str) -> Expr {
    Expr::CompoundIdentifier(vec![Ident::new(q), Ident::new(c)])
}

/// The key names of a USING join, lower-cased, with its kind (None: not a USING join). A NATURAL
/// join is refused.
fn using_keys(
    j: &JoinOperator,
) -> std::result::Result<Option<(&'static str, Vec<String>)>, String> {
    let Some((kind, c)) = kind_of(j) else { return Ok(None) };
    let cols = match c {
        JoinConstraint::Using(cols) => cols,
        JoinConstraint::Natural => {
            return Err("a NATURAL join (Polars SQL keeps both key columns)".into())
        }
        _ => return Ok(None),
    };
    let keys = cols
        .iter()
        .map(|c| match c.0.last() {
            Some(ObjectNamePart::Identifier(i)) => i.value.to_lowercase(),
            _ => c.to_string().to_lowercase(),
        })
        .collect();
    Ok(Some((kind, keys)))
}

/// `l.k1 = r.k1 AND l.k2 = r.k2 ...`
fn keys_equal(l: &str, r: &str, keys: &[String]) -> std::result::Result<Expr, String> {
    let on = keys
        .iter()
        .map(|k| bin(col_ref(l, k), BinaryOperator::Eq, col_ref(r, k)))
        .reduce(|a, b| bin(a, BinaryOperator::And, b));
    on.ok_or_else(|| "USING ()".into())
}

/// What an unqualified key `k` of a USING join between `l` and `r` is: the left input's, the
/// right's for a right join, either one's for a full join.
fn merged_key(kind: &str, l: &str, r: &str, k: &str) -> Expr {
    match kind {
        "right" => col_ref(r, k),
        "full" => coalesce(col_ref(l, k), col_ref(r, k)),
        _ => col_ref(l, k),
    }
}

fn coalesce(a: Expr, b: Expr) -> Expr {
    Expr::Function(sqlparser::ast::Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new("coalesce"))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(sqlparser::ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![
                FunctionArg::Unnamed(FunctionArgExpr::Expr(a)),
                FunctionArg::Unnamed(FunctionArgExpr::Expr(b)),
            ],
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// A SELECT's USING join once written with ON: what its merged keys stand for, and what `*`
/// lists.
#[derive(Default)]
struct UsingJoin {
    /// Each key, and what an unqualified reference to it reads.
    merged: Vec<(String, Expr)>,
    /// Each input of the FROM item in order, with its columns (None: a subquery's, not known).
    star: Vec<(String, Option<Vec<String>>)>,
    kind: &'static str,
}

impl UsingJoin {
    fn key(&self, name: &str) -> Option<Expr> {
        self.merged.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, e)| e.clone())
    }

    /// Every unqualified key in `e` as what it reads.
    fn replace_bare_keys(&self, e: &mut Expr) {
        let _ = sqlparser::ast::visit_expressions_mut(e, |x: &mut Expr| {
            if let Expr::Identifier(i) = x {
                if let Some(r) = self.key(&i.value) {
                    *x = r;
                }
            }
            ControlFlow::<()>::Continue(())
        });
    }

    /// The select list with a bare key named as itself, and `*` as Spark lists it.
    fn projection(&self, items: Vec<SelectItem>) -> std::result::Result<Vec<SelectItem>, String> {
        let mut out = Vec::new();
        for item in items {
            match item {
                SelectItem::UnnamedExpr(Expr::Identifier(i)) if self.key(&i.value).is_some() => {
                    let e = self.key(&i.value).ok_or("lost key")?;
                    out.push(SelectItem::ExprWithAlias { expr: e, alias: i });
                }
                SelectItem::UnnamedExpr(mut e) => {
                    self.replace_bare_keys(&mut e);
                    out.push(SelectItem::UnnamedExpr(e));
                }
                SelectItem::ExprWithAlias { mut expr, alias } => {
                    self.replace_bare_keys(&mut expr);
                    out.push(SelectItem::ExprWithAlias { expr, alias });
                }
                SelectItem::Wildcard(_) if !matches!(self.kind, "semi" | "anti") => {
                    out.extend(self.star_items()?)
                }
                // Spark lists the keys first in `*` of a SEMI/ANTI USING join and in `t.*` of
                // either input.
                SelectItem::Wildcard(_) => out.extend(self.qualified_star(0)?),
                SelectItem::QualifiedWildcard(
                    sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) if self
                    .star
                    .iter()
                    .take(2)
                    .any(|(q, _)| q.eq_ignore_ascii_case(&name_of(&n))) =>
                {
                    let i = self
                        .star
                        .iter()
                        .position(|(q, _)| q.eq_ignore_ascii_case(&name_of(&n)))
                        .unwrap_or(0);
                    out.extend(self.qualified_star(i)?)
                }
                other => out.push(other),
            }
        }
        Ok(out)
    }

    /// `q.*` of the `i`-th input of the USING join: its keys, then its other columns.
    fn qualified_star(&self, i: usize) -> std::result::Result<Vec<SelectItem>, String> {
        let (q, cols) = self.star.get(i).ok_or("a USING join without inputs")?;
        let cols = cols.as_ref().ok_or_else(|| {
            format!("{q}.* over a USING join, {q} a subquery (its columns are not listed here)")
        })?;
        let is_key = |c: &String| self.merged.iter().any(|(k, _)| k.eq_ignore_ascii_case(c));
        let keys =
            self.merged.iter().filter_map(|(k, _)| cols.iter().find(|c| c.eq_ignore_ascii_case(k)));
        Ok(keys
            .chain(cols.iter().filter(|c| !is_key(c)))
            .map(|c| SelectItem::UnnamedExpr(col_ref(q, c)))
            .collect())
    }

    /// `*` over the join: the keys, then the first two inputs' other columns, then the rest.
    fn star_items(&self) -> std::result::Result<Vec<SelectItem>, String> {
        let mut items: Vec<SelectItem> = self
            .merged
            .iter()
            .map(|(k, e)| SelectItem::ExprWithAlias {
                expr: e.clone(),
                alias: Ident::new(k.clone()),
            })
            .collect();
        for (q, cols) in &self.star {
            let cols = cols.as_ref().ok_or_else(|| format!("SELECT * over a USING join with {q}, a subquery (its columns are not listed here)"))?;
            let first_two = self.star.iter().take(2).any(|(x, _)| x == q);
            for c in
                cols.iter().filter(|c| !(first_two && self.merged.iter().any(|(k, _)| k == *c)))
            {
                items.push(SelectItem::UnnamedExpr(col_ref(q, c)));
            }
        }
        Ok(items)
    }
}

/// The conjuncts of a join's ON clause, by where each goes.
#[derive(Default)]
struct OnParts {
    /// Key equalities: they stay in ON.
    keys: Vec<Expr>,
    /// On the right input only, or on the left only: moved into that input.
    to_right: Vec<Expr>,
    to_left: Vec<Expr>,
    /// On the kept left or right side of an outer join: they make its key NULL when they fail.
    kept_left: Vec<Expr>,
    kept_right: Vec<Expr>,
    /// Of an inner join, on both inputs: a filter after the join (moved to WHERE).
    after: Vec<Expr>,
}

impl OnParts {
    /// Sort the conjuncts of `on`, a `kind` join of the inputs `left` (`first`: the first join of
    /// its FROM item) with `right`; a condition that has no place is refused.
    fn split(
        on: &Expr,
        kind: &str,
        left: &[String],
        right: &str,
        first: bool,
    ) -> std::result::Result<OnParts, String> {
        // As Spark reads ON: a conjunct every branch of an OR shares is a conjunct (the key).
        let mut conds = Vec::new();
        crate::rewrite::spark_conjuncts(on, &mut conds);
        let mut parts = OnParts::default();
        for c in conds {
            if is_key_eq(&c, left, right) {
                // A key equality written twice (skewjoin's rewrite of keys equal by the joins
                // before) is one key: Polars refuses a repeated one.
                if !parts.keys.iter().any(|k| k.to_string() == c.to_string()) {
                    parts.keys.push(c);
                }
                continue;
            }
            let q = qualifiers(&c);
            let only_right =
                q.as_ref().is_some_and(|q| !q.is_empty() && q.iter().all(|x| *x == right));
            let only_left =
                q.as_ref().is_some_and(|q| !q.is_empty() && q.iter().all(|x| left.contains(x)));
            if only_right && matches!(kind, "inner" | "left" | "semi" | "anti") {
                parts.to_right.push(c);
            } else if only_left && matches!(kind, "inner" | "right") && first {
                parts.to_left.push(c);
            } else if only_left && matches!(kind, "inner" | "left" | "semi" | "anti" | "full") {
                parts.kept_left.push(c);
            } else if only_right && matches!(kind, "right" | "full") {
                parts.kept_right.push(c);
            } else if kind == "inner" {
                parts.after.push(c);
            } else {
                return Err(format!("the ON condition {c} of a {kind} join (Polars SQL would apply it as a filter after the join)"));
            }
        }
        Ok(parts)
    }
}

/// The inputs joined so far in one FROM item, in order, with their columns (None: not known),
/// as Polars SQL names them in the joined frame: a column of a later input whose name an earlier
/// input has is `name:input`. Polars reads a qualified reference to such a column as that name
/// under an alias, and refuses an alias inside a join key expression; the name itself it takes.
#[derive(Default)]
struct ChainNames {
    inputs: Vec<(String, Option<Vec<String>>)>,
}

impl ChainNames {
    /// `q.c` as Polars names it in the joined frame, when that is not `c`.
    fn joined_name(&self, q: &str, c: &str) -> std::result::Result<Option<String>, String> {
        let Some(i) = self.inputs.iter().position(|(n, _)| n == q) else { return Ok(None) };
        if i == 0 {
            return Ok(None);
        }
        let unknown = |n: &str| {
            format!("an ON condition on the kept side of an outer join over {n}, whose columns are not listed here")
        };
        let own = self.inputs[i].1.as_ref().ok_or_else(|| unknown(q))?;
        if !own.iter().any(|x| x.eq_ignore_ascii_case(c)) {
            return Ok(None);
        }
        for (n, cols) in &self.inputs[..i] {
            if cols.as_ref().ok_or_else(|| unknown(n))?.iter().any(|x| x.eq_ignore_ascii_case(c)) {
                return Ok(Some(format!("{}:{q}", c.to_lowercase())));
            }
        }
        Ok(None)
    }

    /// Every qualified column of `e` written as its name in the joined frame.
    fn rename(&self, e: &mut Expr) -> std::result::Result<(), String> {
        let mut err = None;
        let _ = sqlparser::ast::visit_expressions_mut(e, |x: &mut Expr| {
            if let Expr::CompoundIdentifier(p) = x {
                if p.len() == 2 {
                    match self.joined_name(&p[0].value.to_lowercase(), &p[1].value) {
                        Ok(Some(n)) => *x = Expr::Identifier(Ident::with_quote('`', n)),
                        Ok(None) => {}
                        Err(e) => err = Some(e),
                    }
                }
            }
            ControlFlow::<()>::Continue(())
        });
        err.map_or(Ok(()), Err)
    }
}

/// A condition on the kept side of an outer join: the row joins nothing when it fails, so its
/// key is NULL then: the first key equality becomes `CASE WHEN cond THEN l.k END = r.k`, its
/// columns named as in the joined frame `chain`.
fn null_key_unless(
    keys: &mut [Expr],
    preds: &[Expr],
    side_left: bool,
    left: &[String],
    chain: &ChainNames,
) -> std::result::Result<(), String> {
    let mut cond = preds
        .iter()
        .cloned()
        .map(nested)
        .reduce(|a, b| bin(a, BinaryOperator::And, b))
        .ok_or("no condition")?;
    chain.rename(&mut cond)?;
    let (a, b) = keys
        .iter_mut()
        .find_map(|k| match k {
            Expr::BinaryOp { left, op: BinaryOperator::Eq, right } => Some((left, right)),
            _ => None,
        })
        .ok_or("a join with no key equality")?;
    let a_is_left =
        qualifiers(a).is_some_and(|q| q.iter().all(|x| left.contains(x)) && !q.is_empty());
    let operand = if a_is_left == side_left { a } else { b };
    let mut key = (**operand).clone();
    chain.rename(&mut key)?;
    **operand = case_when(None, vec![sqlparser::ast::CaseWhen { condition: cond, result: key }]);
    Ok(())
}

/// `CASE [operand] WHEN ... THEN ... END`, with no ELSE.
fn case_when(operand: Option<Expr>, conditions: Vec<sqlparser::ast::CaseWhen>) -> Expr {
    Expr::Case {
        case_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
        end_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
        operand: operand.map(Box::new),
        conditions,
        else_result: None,
    }
}

/// The FROM item `f` filtered by `preds`, under its own name: `(SELECT * FROM f WHERE ...) f`.
fn filtered_input(f: &TableFactor, preds: &[Expr]) -> std::result::Result<TableFactor, String> {
    let name = factor_name(f).ok_or("an ON condition on an input with no name")?;
    let mut inner = f.clone();
    if let TableFactor::Derived { alias, .. } | TableFactor::Table { alias, .. } = &mut inner {
        if alias.is_none() {
            *alias = Some(sqlparser::ast::TableAlias {
                explicit: true,
                at: None,
                name: Ident::new(name.clone()),
                columns: vec![],
            });
        }
    }
    let pred = preds
        .iter()
        .map(|p| format!("({})", crate::sql::render_expr(p)))
        .collect::<Vec<_>>()
        .join(" AND ");
    let q = parse_query(&format!(
        "SELECT * FROM (SELECT * FROM {inner} WHERE {pred}) {}",
        crate::sql::ident(&name)
    ))
    .map_err(|e| e.to_string())?;
    match *q.body {
        sqlparser::ast::SetExpr::Select(mut sel) if sel.from.len() == 1 => {
            Ok(sel.from.remove(0).relation)
        }
        _ => Err("an ON condition that cannot be moved".into()),
    }
}

impl Render<'_> {
    /// `A JOIN B USING (k)` as Spark reads it, written with ON: the join is on `A.k = B.k`, an
    /// unqualified `k` is A's key (B's for a right join, `coalesce(A.k, B.k)` for a full one),
    /// and `*` is the keys, then A's other columns, then B's (Polars SQL keeps both keys).
    fn using_to_on(&mut self, s: &mut Select) -> std::result::Result<(), String> {
        let using = self.using_join_as_on(s)?;
        if using.merged.is_empty() {
            return Ok(());
        }
        s.projection = using.projection(std::mem::take(&mut s.projection))?;
        clauses_mut(s, |e| using.replace_bare_keys(e));
        self.note("JOIN ... USING as ON, with the merged key columns as Spark gives them");
        Ok(())
    }

    /// Write the USING join of `s` with ON (one only: the first join of the only FROM item), and
    /// say what its keys and `*` stand for.
    fn using_join_as_on(&self, s: &mut Select) -> std::result::Result<UsingJoin, String> {
        let mut using = UsingJoin::default();
        let n_from = s.from.len();
        for twj in s.from.iter_mut() {
            let first = factor_name(&twj.relation);
            for j in 0..twj.joins.len() {
                let Some((kind, keys)) = using_keys(&twj.joins[j].join_operator)? else { continue };
                if j > 0 || n_from > 1 {
                    return Err("USING after the first join of a chain, or beside another FROM item (Polars SQL keeps both key columns)".into());
                }
                let (Some(l), Some(r)) = (first.clone(), factor_name(&twj.joins[j].relation))
                else {
                    return Err("USING between inputs with no name".into());
                };
                twj.joins[j].join_operator =
                    join_on(kind, JoinConstraint::On(keys_equal(&l, &r, &keys)?));
                using.merged.extend(keys.iter().map(|k| (k.clone(), merged_key(kind, &l, &r, k))));
                using.kind = kind;
                using.star.push((l, self.table_columns(&twj.relation)));
                using.star.push((r, self.table_columns(&twj.joins[j].relation)));
            }
            for jn in twj.joins.iter().skip(1) {
                using.star.push((
                    factor_name(&jn.relation).unwrap_or_default(),
                    self.table_columns(&jn.relation),
                ));
            }
        }
        Ok(using)
    }

    /// A FROM item's columns, if it is a table.
    fn table_columns(&self, f: &TableFactor) -> Option<Vec<String>> {
        match f {
            TableFactor::Table { name, .. } => (self.columns_of)(&name_of(name)),
            _ => None,
        }
    }

    /// A FROM item's columns (lower case), if known: a table's, or a subquery's that names each
    /// of its columns, or that is `SELECT *` over one such FROM item.
    fn factor_columns(&self, f: &TableFactor) -> Option<Vec<String>> {
        let TableFactor::Derived { subquery, alias, .. } = f else { return self.table_columns(f) };
        if let Some(a) = alias.as_ref().filter(|a| !a.columns.is_empty()) {
            return Some(a.columns.iter().map(|c| c.name.value.to_lowercase()).collect());
        }
        let sqlparser::ast::SetExpr::Select(sel) = &*subquery.body else { return None };
        let mut out = Vec::new();
        for item in &sel.projection {
            match item {
                SelectItem::Wildcard(_) if sel.from.len() == 1 && sel.from[0].joins.is_empty() => {
                    out.extend(self.factor_columns(&sel.from[0].relation)?)
                }
                SelectItem::ExprWithAlias { alias, .. } => out.push(alias.value.to_lowercase()),
                SelectItem::UnnamedExpr(Expr::Identifier(i)) => out.push(i.value.to_lowercase()),
                SelectItem::UnnamedExpr(Expr::CompoundIdentifier(p)) => {
                    out.push(p.last()?.value.to_lowercase())
                }
                _ => return None,
            }
        }
        Some(out)
    }

    /// The rewrite reuses the aliases `__sj_t`, `__sj_u` and `__sj_d` at every level of nesting,
    /// and names a filtered input after its table, which is valid SQL; Polars SQL keeps one map
    /// of aliases for the whole query, so an inner `__sj_t` hides an outer one and a subquery
    /// named `accounts` hides the table. Each such alias is made unique here, with the
    /// references in the same SELECT.
    fn unique_aliases(&mut self, s: &mut Select) {
        let renames = self.rename_reused_aliases(s);
        if renames.is_empty() {
            return;
        }
        let rename = |x: &mut Ident| {
            if let Some((_, new)) = renames.iter().find(|(o, _)| x.value.eq_ignore_ascii_case(o)) {
                *x = Ident::new(new.clone());
            }
        };
        let fix = |e: &mut Expr| {
            let _ = sqlparser::ast::visit_expressions_mut(e, |x: &mut Expr| {
                if let Expr::CompoundIdentifier(p) = x {
                    if p.len() >= 2 {
                        let n = p.len();
                        rename(&mut p[n - 2]);
                    }
                }
                ControlFlow::<()>::Continue(())
            });
        };
        for item in s.projection.iter_mut() {
            match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => fix(e),
                SelectItem::QualifiedWildcard(
                    sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => {
                    if let Some(ObjectNamePart::Identifier(i)) = n.0.last_mut() {
                        rename(i);
                    }
                }
                _ => {}
            }
        }
        clauses_mut(s, fix);
        self.note("skewjoin's reused subquery aliases made unique (Polars SQL keeps one alias map per query)");
    }

    /// Give each reused alias of `s`'s FROM items a unique name; the old and new names.
    fn rename_reused_aliases(&mut self, s: &mut Select) -> Vec<(String, String)> {
        let mut renames: Vec<(String, String)> = Vec::new();
        for twj in s.from.iter_mut() {
            let factors = std::iter::once(&mut twj.relation)
                .chain(twj.joins.iter_mut().map(|j| &mut j.relation));
            for f in factors {
                let derived = matches!(f, TableFactor::Derived { .. });
                if let TableFactor::Table { alias: Some(a), .. }
                | TableFactor::Derived { alias: Some(a), .. } = f
                {
                    let old = a.name.value.to_lowercase();
                    // A subquery named like a table or CTE the query reads (`(...) accounts`,
                    // as the rewrite names its inputs) hides it inside other subqueries too.
                    if crate::plan::HELPER_ALIASES.contains(&old.as_str())
                        || (derived
                            && ((self.columns_of)(&old).is_some() || self.ctes.contains(&old)))
                    {
                        self.renamed += 1;
                        let new = format!("{old}{}", self.renamed);
                        a.name = Ident::new(new.clone());
                        renames.push((old, new));
                    }
                }
            }
        }
        renames
    }

    /// Polars SQL takes an ON clause of key equalities and simple comparisons, and applies the
    /// comparisons as a filter after the join, which is wrong for the kept side of an outer join.
    /// A condition on one input only is therefore moved into that input, where that is what
    /// Spark does too (the right side of an inner, left, semi or anti join; the left of an
    /// inner or right join when it is one FROM item); any other is refused.
    fn push_on_conditions(&mut self, s: &mut Select) -> std::result::Result<(), String> {
        let mut after: Vec<Expr> = Vec::new();
        for twj in s.from.iter_mut() {
            let mut left: Vec<String> = factor_name(&twj.relation).into_iter().collect();
            let mut chain = ChainNames::default();
            chain
                .inputs
                .extend(left.first().map(|n| (n.clone(), self.factor_columns(&twj.relation))));
            for j in 0..twj.joins.len() {
                let right = factor_name(&twj.joins[j].relation).unwrap_or_default();
                let right_columns = self.factor_columns(&twj.joins[j].relation);
                let (kind, on) = match kind_of(&twj.joins[j].join_operator) {
                    Some((kind, JoinConstraint::On(e))) => (kind, e.clone()),
                    _ if matches!(twj.joins[j].join_operator, JoinOperator::CrossJoin(_)) => {
                        left.extend(factor_name(&twj.joins[j].relation));
                        chain.inputs.push((right, right_columns));
                        continue;
                    }
                    _ => {
                        let what = other_join_name(&twj.joins[j].join_operator);
                        return Err(format!("a join {what} (Polars SQL reads USING and NATURAL joins differently from Spark: it keeps both key columns)"));
                    }
                };
                let mut parts = OnParts::split(&on, kind, &left, &right, j == 0)?;
                if !parts.after.is_empty() {
                    // The same rows as a filter after every join, unless a later right or full
                    // join would keep the rows it drops.
                    let later_outer = twj.joins[j + 1..]
                        .iter()
                        .any(|x| matches!(kind_of(&x.join_operator), Some(("right" | "full", _))));
                    if later_outer {
                        return Err(format!(
                            "the ON condition {} of an inner join before a right or full join",
                            parts.after[0]
                        ));
                    }
                    after.append(&mut parts.after);
                    self.note("an ON condition of an inner join on both inputs applied in WHERE");
                }
                for (preds, side_left) in [(&parts.kept_left, true), (&parts.kept_right, false)] {
                    if !preds.is_empty() {
                        null_key_unless(&mut parts.keys, preds, side_left, &left, &chain)?;
                        self.note("an ON condition on the kept side of an outer join as a key that is NULL when it fails");
                    }
                }
                self.move_into_inputs(twj, j, kind, parts)?;
                if !matches!(kind, "semi" | "anti") {
                    chain.inputs.push((right.clone(), right_columns));
                }
                left.push(right);
            }
        }
        if let Some(c) = after.into_iter().reduce(|a, b| bin(a, BinaryOperator::And, b)) {
            s.selection = Some(match s.selection.take() {
                Some(w) => bin(nested(w), BinaryOperator::And, nested(c)),
                None => c,
            });
        }
        Ok(())
    }

    /// Join `j` of `twj` with the conditions on one input moved into it, and ON rebuilt from the
    /// key equalities when anything changed.
    fn move_into_inputs(
        &mut self,
        twj: &mut TableWithJoins,
        j: usize,
        kind: &str,
        parts: OnParts,
    ) -> std::result::Result<(), String> {
        let moved = !parts.to_right.is_empty() || !parts.to_left.is_empty();
        if !parts.to_right.is_empty() {
            twj.joins[j].relation = filtered_input(&twj.joins[j].relation, &parts.to_right)?;
        }
        if !parts.to_left.is_empty() {
            twj.relation = filtered_input(&twj.relation, &parts.to_left)?;
        }
        // ON rebuilt from its key equalities always: Polars SQL takes no parentheses around them.
        {
            let on = parts
                .keys
                .into_iter()
                .reduce(|a, b| bin(a, BinaryOperator::And, b))
                .ok_or("a join with no key equality")?;
            twj.joins[j].join_operator = join_on(kind, JoinConstraint::On(on));
            if moved {
                self.note("an ON condition on one input only moved into that input (as Spark pushes it down)");
            }
        }
        Ok(())
    }

    /// `hash(t.a, t.b)` in a SELECT over one table `tbl t`: read `__sj_hashed_N t` instead,
    /// which carries the hash as a column (see `Hashed`).
    fn prehash(&mut self, s: &mut Select) {
        if s.from.len() != 1 || !s.from[0].joins.is_empty() {
            return;
        }
        let (table, qual, rows_sql) = match &s.from[0].relation {
            TableFactor::Table { name, alias, args: None, .. } => {
                let table = name_of(name);
                let qual = alias
                    .as_ref()
                    .map(|a| a.name.value.to_lowercase())
                    .unwrap_or_else(|| table.rsplit('.').next().unwrap_or("").to_string());
                let cte = self.ctes.contains(&table).then(|| format!("SELECT * FROM {name}"));
                (table, qual, cte)
            }
            TableFactor::Derived { subquery, alias: Some(a), lateral: false, .. } => (
                format!("__sj_rows_{}", self.hashed.len()),
                a.name.value.to_lowercase(),
                Some(subquery.to_string()),
            ),
            _ => return,
        };
        let hname = format!("__sj_hashed_{}", self.hashed.len());
        let mut lists: Vec<Vec<String>> = Vec::new();
        let _ = sqlparser::ast::visit_expressions_mut(&mut s.projection, |e: &mut Expr| {
            if let Expr::Function(f) = e {
                if name_of(&f.name) == "hash" {
                    if let Some(cols) =
                        args_of(f).and_then(|a| (!a.is_empty()).then_some(a)).and_then(|a| {
                            a.iter().map(|x| column_of(x, &qual)).collect::<Option<Vec<_>>>()
                        })
                    {
                        let i = lists.iter().position(|l| *l == cols).unwrap_or_else(|| {
                            lists.push(cols);
                            lists.len() - 1
                        });
                        *e = Expr::CompoundIdentifier(vec![
                            Ident::new(qual.clone()),
                            Ident::new(format!("{hname}_{i}")),
                        ]);
                    }
                }
            }
            ControlFlow::<()>::Continue(())
        });
        if lists.is_empty() {
            return;
        }
        let source = match rows_sql {
            Some(body) => {
                let sql = match &self.with {
                    Some(w) => format!("{w} {body}"),
                    None => body,
                };
                match render_with(&sql, self.columns_of) {
                    Ok(p) => Some(Box::new(p)),
                    Err(e) => {
                        self.error.get_or_insert(format!(
                            "the rows of {qual}, whose columns a salt hashes: {e}"
                        ));
                        return;
                    }
                }
            }
            None => None,
        };
        if let Some(p) = &source {
            self.max_salt = self.max_salt.max(p.max_salt);
        }
        let alias = match &s.from[0].relation {
            TableFactor::Table { alias: Some(a), .. }
            | TableFactor::Derived { alias: Some(a), .. } => Some(a.clone()),
            _ => Some(sqlparser::ast::TableAlias {
                explicit: true,
                at: None,
                name: Ident::new(qual),
                columns: vec![],
            }),
        };
        s.from[0].relation = crate::sql::table_factor(&hname, alias);
        self.hashed.push(Hashed { name: hname, table, columns: lists, source });
        self.note("hash(...) of a table's columns computed in skewjoin as Spark's Murmur3, and read as a column");
    }

    /// Polars refuses two output columns of one name, which Spark allows: the second and later
    /// get `name:N` (the engine compares names up to the `:`, as Polars names its own).
    fn dedupe_names(&mut self, s: &mut Select) {
        let mut seen = std::collections::HashSet::new();
        for (k, item) in s.projection.iter_mut().enumerate() {
            let name = match item {
                SelectItem::ExprWithAlias { alias, .. } => alias.value.to_lowercase(),
                SelectItem::UnnamedExpr(Expr::Identifier(i)) => i.value.to_lowercase(),
                SelectItem::UnnamedExpr(Expr::CompoundIdentifier(p)) => {
                    p.last().map(|i| i.value.to_lowercase()).unwrap_or_default()
                }
                _ => continue,
            };
            if seen.insert(name.clone()) {
                continue;
            }
            let alias = Ident::with_quote('`', format!("{name}:{k}"));
            *item = match std::mem::replace(item, SelectItem::Wildcard(Default::default())) {
                SelectItem::ExprWithAlias { expr, .. } | SelectItem::UnnamedExpr(expr) => {
                    SelectItem::ExprWithAlias { expr, alias }
                }
                other => other,
            };
            self.note("a repeated output name as name:N (Polars allows one column of a name)");
        }
    }

    fn note(&mut self, what: &'static str) {
        if !self.changes.contains(&what) {
            self.changes.push(what);
        }
    }

    /// `explode(CASE WHEN c THEN array(...) ... END) AS alias` in `s`'s select list: the copies
    /// of a row, one per salt, as a cross join with the salts table.
    fn explode(&mut self, s: &mut Select) -> std::result::Result<(), String> {
        let mut conds: Vec<Expr> = Vec::new();
        for item in s.projection.iter_mut() {
            let Some((arg, alias)) = explode_call(item)? else { continue };
            conds.push(self.salts_kept(&arg)?);
            *item = SelectItem::ExprWithAlias { expr: salt_column(), alias };
        }
        if conds.is_empty() {
            return Ok(());
        }
        if s.from.len() != 1 {
            return Err("explode(...) in a SELECT with other than one FROM item".into());
        }
        s.from[0].joins.push(cross_join_salts());
        let mut pred = conds.into_iter().map(nested).reduce(|a, b| bin(a, BinaryOperator::And, b));
        if let Some(w) = s.selection.take() {
            pred = pred.map(|p| bin(nested(w), BinaryOperator::And, p));
        }
        s.selection = pred;
        self.note("explode(array of salts) as a cross join with a table of salt values");
        Ok(())
    }

    /// Which salts a row keeps, for `explode(arg)`: `CASE WHEN c THEN salt IN (s, ...) ... ELSE
    /// FALSE END` for a CASE of arrays, `salt IN (s, ...)` for one array.
    fn salts_kept(&mut self, arg: &Expr) -> std::result::Result<Expr, String> {
        let Expr::Case { case_token, end_token, operand: None, conditions, else_result } = arg
        else {
            return match array_items(arg) {
                Some(items) => self.salt_in(items),
                None => Err(format!("explode over {arg} (not an array literal)")),
            };
        };
        let mut c2 = conditions.clone();
        for w in c2.iter_mut() {
            let items = array_items(&w.result)
                .ok_or_else(|| format!("explode over {} (not an array literal)", w.result))?;
            w.result = self.salt_in(items)?;
        }
        let els = match else_result {
            None => Expr::Value(SqlValue::Boolean(false).into()),
            Some(x) => match array_items(x) {
                Some(items) => self.salt_in(items)?,
                None => return Err(format!("explode over {x} (not an array literal)")),
            },
        };
        Ok(Expr::Case {
            case_token: case_token.clone(),
            end_token: end_token.clone(),
            operand: None,
            conditions: c2,
            else_result: Some(Box::new(els)),
        })
    }

    /// `__sj_salts.salt IN (items)`; every item is an integer, and the largest so far is kept.
    fn salt_in(&mut self, items: Vec<Expr>) -> std::result::Result<Expr, String> {
        for i in &items {
            let v = as_int(i).ok_or_else(|| {
                format!("explode over an array of {i} (only integer salts are rendered)")
            })?;
            self.max_salt = Some(self.max_salt.map_or(v, |m| m.max(v)));
        }
        Ok(Expr::InList { expr: Box::new(salt_column()), list: items, negated: false })
    }

    /// A function call as Polars SQL spells it (see the module docs); an error for what has no
    /// Polars form.
    fn render_call(&mut self, e: &mut Expr) -> std::result::Result<(), String> {
        let Expr::Function(f) = &*e else { return Ok(()) };
        let Some(args) = args_of(f) else { return Ok(()) };
        let (rendered, what) = match (name_of(&f.name).as_str(), args.as_slice()) {
            ("pmod", [a, n]) => (pmod(a, n), "pmod(a, n) as ((a % n) + n) % n"),
            ("hash", args) if !args.is_empty() => (call(HASH_FN, f, args.to_vec()), "hash(...) as __sj_hash(...), Spark's Murmur3 computed in skewjoin"),
            ("element_at", [arr, i]) => (element_at(arr, i)?, "element_at(array(...), i) as CASE i WHEN 1 THEN ... END"),
            ("monotonically_increasing_id", []) => (
                Expr::value(SqlValue::Number("0".into(), false)),
                "monotonically_increasing_id() as 0 (each row takes its first salt: the balance changes, not the rows)",
            ),
            ("timestamp_micros", [x]) => (
                cast(x.clone(), DataType::Timestamp(None, sqlparser::ast::TimezoneInfo::None)),
                "TIMESTAMP_MICROS(n) as CAST(n AS TIMESTAMP) (microseconds, UTC wall clock)",
            ),
            ("date_from_unix_date", [x]) => (cast(x.clone(), DataType::Date), "DATE_FROM_UNIX_DATE(n) as CAST(n AS DATE)"),
            _ => return Ok(()),
        };
        *e = rendered;
        self.note(what);
        Ok(())
    }

    /// A cast's type as Polars SQL reads it: TIMESTAMP_NTZ as TIMESTAMP, a decimal as DOUBLE.
    fn render_cast_type(&mut self, data_type: &mut DataType) {
        let ntz = match data_type {
            DataType::TimestampNtz(_) => true,
            DataType::Custom(n, _) => name_of(n) == "timestamp_ntz",
            _ => false,
        };
        if ntz {
            *data_type = DataType::Timestamp(None, sqlparser::ast::TimezoneInfo::None);
            self.note("TIMESTAMP_NTZ as TIMESTAMP");
        }
        if matches!(data_type, DataType::Decimal(_) | DataType::Numeric(_) | DataType::Dec(_)) {
            *data_type = DataType::Double(sqlparser::ast::ExactNumberInfo::None);
            self.note("DECIMAL as DOUBLE (the engine reads decimal columns as doubles)");
        }
    }

    /// One SELECT as Polars SQL reads it, before its expressions are visited: no hints, ON for
    /// USING, unique aliases, ON conditions moved into the inputs, hashes read from the scan,
    /// unique output names, and explode as a cross join.
    fn render_select(&mut self, s: &mut Select) -> std::result::Result<(), String> {
        if !s.optimizer_hints.is_empty() {
            s.optimizer_hints.clear();
            self.note("hints dropped (Polars plans its own joins)");
        }
        if !s.lateral_views.is_empty() {
            return Err("LATERAL VIEW has no Polars SQL form".into());
        }
        self.using_to_on(s)?;
        self.unique_aliases(s);
        self.push_on_conditions(s)?;
        self.prehash(s);
        self.dedupe_names(s);
        self.explode(s)
    }

    /// Go on, or stop the visit with `r`'s error kept.
    fn go_on_unless(&mut self, r: std::result::Result<(), String>) -> ControlFlow<()> {
        match r {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                self.error = Some(e);
                ControlFlow::Break(())
            }
        }
    }
}

impl VisitorMut for Render<'_> {
    type Break = ();

    /// A qualified table name (`db.t`) is one quoted name for Polars SQL, which reads `db` as
    /// a schema it does not have: the engine registers the table under `db.t`.
    fn pre_visit_relation(&mut self, n: &mut ObjectName) -> ControlFlow<()> {
        if n.0.len() > 1 {
            let name = name_of(n);
            *n = ObjectName(vec![ObjectNamePart::Identifier(Ident::with_quote('`', name))]);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, s: &mut Select) -> ControlFlow<()> {
        let r = self.render_select(s);
        self.go_on_unless(r)
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        let r = match e {
            Expr::Exists { .. } => Err("EXISTS (subquery) has no Polars SQL form".into()),
            Expr::Function(_) => self.render_call(e),
            Expr::Cast { data_type, .. } => {
                self.render_cast_type(data_type);
                Ok(())
            }
            _ => Ok(()),
        };
        self.go_on_unless(r)
    }
}

/// The argument and the alias of `explode(arg) [AS alias]` (`col` without one), if `item` is one.
fn explode_call(item: &SelectItem) -> std::result::Result<Option<(Expr, Ident)>, String> {
    let (e, alias) = match item {
        SelectItem::ExprWithAlias { expr, alias } => (expr, alias.clone()),
        SelectItem::UnnamedExpr(e) => (e, Ident::new("col")),
        _ => return Ok(None),
    };
    let Expr::Function(f) = e else { return Ok(None) };
    if name_of(&f.name) != "explode" {
        return Ok(None);
    }
    match args_of(f).as_deref() {
        Some([a]) => Ok(Some((a.clone(), alias))),
        _ => Err("explode(...) with other than one argument".into()),
    }
}

/// `__sj_salts.salt`.
fn salt_column() -> Expr {
    Expr::CompoundIdentifier(vec![Ident::new(SALTS_TABLE), Ident::new(SALTS_COLUMN)])
}

/// `CROSS JOIN __sj_salts`.
fn cross_join_salts() -> Join {
    Join {
        relation: crate::sql::table_factor(SALTS_TABLE, None),
        global: false,
        join_operator: JoinOperator::CrossJoin(JoinConstraint::None),
    }
}

/// Spark's `pmod(a, n)`: `((a % n) + n) % n`.
fn pmod(a: &Expr, n: &Expr) -> Expr {
    let m = bin(nested(a.clone()), BinaryOperator::Modulo, nested(n.clone()));
    nested(bin(
        nested(bin(m, BinaryOperator::Plus, nested(n.clone()))),
        BinaryOperator::Modulo,
        nested(n.clone()),
    ))
}

/// `element_at(array(v1, ...), i)` as `CAST(CASE i WHEN 1 THEN v1 ... END AS BIGINT)`.
fn element_at(arr: &Expr, i: &Expr) -> std::result::Result<Expr, String> {
    let items =
        array_items(arr).ok_or_else(|| format!("element_at over {arr} (not an array literal)"))?;
    let conditions = items
        .into_iter()
        .enumerate()
        .map(|(k, v)| sqlparser::ast::CaseWhen {
            condition: Expr::value(SqlValue::Number((k + 1).to_string(), false)),
            result: v,
        })
        .collect();
    // The salts table's column is a BIGINT: so is every salt.
    Ok(cast(case_when(Some(nested(i.clone())), conditions), DataType::BigInt(None)))
}

fn other_join_name(j: &JoinOperator) -> &'static str {
    let c = match j {
        JoinOperator::Join(c)
        | JoinOperator::Inner(c)
        | JoinOperator::Left(c)
        | JoinOperator::LeftOuter(c)
        | JoinOperator::Right(c)
        | JoinOperator::RightOuter(c)
        | JoinOperator::FullOuter(c) => c,
        JoinOperator::Semi(c)
        | JoinOperator::LeftSemi(c)
        | JoinOperator::Anti(c)
        | JoinOperator::LeftAnti(c) => c,
        _ => return "of a kind Polars SQL does not take",
    };
    match c {
        JoinConstraint::Using(_) => "with USING",
        JoinConstraint::Natural => "NATURAL",
        _ => "with no ON clause",
    }
}

/// Write a Spark SQL text with Polars' quoting: `"name"` for backquoted names, every name in
/// lower case, `'...'` strings with doubled quotes, and no comments.
fn requote(spark_sql: &str) -> Result<String> {
    let tokens = Tokenizer::new(&SparkDialect, spark_sql)
        .tokenize()
        .map_err(|e| Error::Usage(format!("SQL does not tokenize: {e}")))?;
    let mut out = String::with_capacity(spark_sql.len());
    let lit = |s: &str| format!("'{}'", s.replace('\'', "''"));
    for t in tokens {
        match t {
            Token::Word(w) => match w.quote_style {
                Some(_) => {
                    out.push_str(&format!("\"{}\"", w.value.to_lowercase().replace('"', "\"\"")))
                }
                None => out.push_str(&w.value.to_lowercase()),
            },
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => out.push_str(&lit(&s)),
            Token::Whitespace(
                Whitespace::SingleLineComment { .. } | Whitespace::MultiLineComment(_),
            ) => out.push(' '),
            Token::SingleQuotedByteStringLiteral(_)
            | Token::DoubleQuotedByteStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::UnicodeStringLiteral(_) => {
                return Err(Error::Usage(format!("the literal {t} has no Polars SQL form")));
            }
            other => out.push_str(&other.to_string()),
        }
    }
    Ok(out)
}

/// Render one Spark SQL query for Polars SQL (see the module docs).
pub fn render(spark_sql: &str) -> Result<PolarsSql> {
    render_with(spark_sql, &|_: &str| None)
}

/// `render`, with the columns of the query's tables (to list `SELECT *` over a USING join).
pub fn render_with(spark_sql: &str, columns_of: ColumnsOf<'_>) -> Result<PolarsSql> {
    let mut q = parse_query(spark_sql)?;
    // A salted input is hashed from its own scan here, which a CTE read by name does not have.
    let inlined = crate::rewrite::inline_lifted(&mut q);
    let ctes = cte_names(&q);
    let with = q.with.as_ref().map(ToString::to_string);
    let mut r = Render {
        columns_of,
        renamed: 0,
        changes: Vec::new(),
        error: None,
        max_salt: None,
        hashed: Vec::new(),
        ctes,
        with,
    };
    let _ = q.visit(&mut r);
    if let Some(e) = r.error {
        return Err(Error::Usage(format!("cannot render the query for Polars SQL: {e}")));
    }
    let sql = requote(&render_query(&q))?;
    let mut changes: Vec<String> = r.changes.iter().map(|s| s.to_string()).collect();
    if !inlined.is_empty() {
        changes.push(format!(
            "the rewrite's CTEs {} read as the derived tables they name, where each is read",
            inlined.join(", ")
        ));
    }
    Ok(PolarsSql { sql, changes, max_salt: r.max_salt, hashed: r.hashed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spark_spellings_become_polars_ones() {
        let p = render(
            "SELECT /*+ BROADCAST(r) */ `E`.`Event_Id`, r.name FROM events E LEFT SEMI JOIN titles r ON E.k = r.k \
             WHERE E.k <> 'O\\'Neil' AND d = DATE_FROM_UNIX_DATE(3) AND ts IN (TIMESTAMP_MICROS(5), CAST('2020-01-01 00:00:00' AS TIMESTAMP_NTZ))",
        )
        .unwrap();
        let sql = p.sql.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(!sql.contains("broadcast"), "{sql}");
        assert!(sql.contains("\"e\".\"event_id\""), "{sql}");
        assert!(sql.contains("'O''Neil'"), "{sql}");
        assert!(sql.contains("cast(3 as date)"), "{sql}");
        assert!(sql.contains("cast(5 as timestamp)"), "{sql}");
        assert!(sql.contains("cast('2020-01-01 00:00:00' as timestamp)"), "{sql}");
        assert!(sql.contains("left semi join titles r"), "{sql}");
        assert_eq!(p.changes.len(), 4, "{:?}", p.changes);
    }

    #[test]
    fn a_qualified_table_is_one_quoted_name() {
        let p = render("SELECT e.k FROM sj.Events e JOIN `sj`.`titles` t ON e.k = t.k").unwrap();
        let sql = p.sql.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(sql.contains("from \"sj.events\" e join \"sj.titles\" t"), "{sql}");
    }

    #[test]
    fn salted_branch_renders_with_a_salts_table() {
        let p = render(
            "SELECT * FROM (SELECT t.*, CASE WHEN t.k = 'a' THEN element_at(array(0, 1, 2), pmod(hash(t.v, t.w), 3) + 1) END AS s FROM l t WHERE t.k IN ('a')) a \
             JOIN (SELECT t.*, explode(CASE WHEN t.k = 'a' THEN array(0, 1, 2) END) AS s FROM r t WHERE t.k IN ('a')) b ON a.k = b.k AND a.s = b.s",
        )
        .unwrap();
        let sql = p.sql.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(p.max_salt, Some(2));
        // hash() of the scanned table's columns is a column the engine adds to the scan.
        assert!(sql.contains("cast(case ((((t.__sj_hashed_0_0) % (3) + (3)) % (3)) + 1) when 1 then 0 when 2 then 1 when 3 then 2 end as bigint)"), "{sql}");
        assert!(sql.contains("from __sj_hashed_0 t where"), "{sql}");
        assert_eq!(p.hashed.len(), 1);
        assert_eq!(
            (p.hashed[0].table.as_str(), &p.hashed[0].columns),
            ("l", &vec![vec!["v".to_string(), "w".to_string()]])
        );
        assert!(
            sql.contains("from r t cross join __sj_salts where (t.k in ('a')) and (case when t.k = 'a' then __sj_salts.salt in (0, 1, 2) else false end)"),
            "{sql}"
        );
        assert!(sql.contains("select t.*, __sj_salts.salt as s"), "{sql}");
        assert!(
            !sql.contains("explode") && !sql.contains("element_at") && !sql.contains("pmod"),
            "{sql}"
        );
    }

    #[test]
    fn a_salted_cte_or_subquery_is_hashed_from_its_rows() {
        let salted = |from: &str| {
            format!(
                "WITH c AS (SELECT * FROM l WHERE v > 1) SELECT * FROM (SELECT t.*, CASE WHEN t.k = 'a' THEN element_at(array(0, 1), pmod(hash(t.v), 2) + 1) END AS s FROM {from} t WHERE t.k IN ('a')) a"
            )
        };
        // A CTE: its rows are the query's WITH and a SELECT of it, run before the hash is added.
        let p = render(&salted("c")).unwrap();
        assert_eq!(p.hashed.len(), 1);
        let rows = p.hashed[0].source.as_ref().expect("the CTE's rows");
        let text = rows.sql.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.starts_with("with c as ( select * from l where v > 1 )")
                && text.ends_with(") select * from c"),
            "{text}"
        );
        assert!(
            p.sql
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains("from __sj_hashed_0 t where"),
            "{}",
            p.sql
        );
        // A subquery in FROM (the joins before a salted join): its own SQL, rendered for Polars.
        let p = render(&salted("(SELECT l.v, l.k FROM l JOIN c ON l.k = c.k)")).unwrap();
        let rows = p.hashed[0].source.as_ref().expect("the subquery's rows");
        assert!(
            rows.sql
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .ends_with("select l.v, l.k from l join c on l.k = c.k"),
            "{}",
            rows.sql
        );
        assert!(!p.sql.contains("__sj_hash("), "{}", p.sql);
    }

    #[test]
    fn using_becomes_on_with_spark_s_columns() {
        let cols = |t: &str| match t {
            "a" => Some(vec!["k".to_string(), "x".to_string()]),
            "b" => Some(vec!["y".to_string(), "k".to_string()]),
            _ => None,
        };
        let p = render_with("SELECT * FROM a FULL JOIN b USING (k) WHERE k <> 'z'", &cols).unwrap();
        let sql = p.sql.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(sql.contains("select coalesce(a.k, b.k) as k, a.x, b.y from a full join b on a.k = b.k where coalesce(a.k, b.k) <> 'z'"), "{sql}");
        let p = render_with("SELECT k, x FROM a RIGHT JOIN b USING (k)", &cols).unwrap();
        assert!(
            p.sql
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains("select b.k as k, x from a right join b on a.k = b.k"),
            "{}",
            p.sql
        );
        // A subquery's columns are not known: SELECT * over it is refused.
        let e = render_with("SELECT * FROM a JOIN (SELECT k FROM b) s USING (k)", &cols)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a subquery"), "{e}");
    }

    #[test]
    fn on_conditions_move_into_the_input_or_null_the_kept_key() {
        let p = render("SELECT * FROM a LEFT JOIN b ON a.k = b.k AND b.n LIKE 'x%' AND a.v > 1")
            .unwrap();
        let sql = p.sql.split_whitespace().collect::<Vec<_>>().join(" ");
        // b's condition goes into b; a's (the kept side) makes a's key NULL when it fails.
        assert!(sql.contains("left join (select * from b as b where (b.n like 'x%')) \"b\" on case when (a.v > 1) then a.k end = b.k"), "{sql}");
        let p = render("SELECT * FROM a FULL JOIN b ON a.k = b.k AND b.n = 'x'").unwrap();
        let sql = p.sql.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(sql.contains("full join b on a.k = case when (b.n = 'x') then b.k end"), "{sql}");
        let e = render("SELECT * FROM a LEFT JOIN b ON a.k = b.k AND a.v > b.w")
            .unwrap_err()
            .to_string();
        assert!(e.contains("filter after the join"), "{e}");
    }

    #[test]
    fn an_inner_joins_condition_on_both_inputs_is_a_filter_after_the_joins() {
        // The OR's shared equality is the key; the rest of the OR reads both inputs.
        let p = render("SELECT * FROM a JOIN b ON (a.k = b.k AND a.v > 1) OR (b.k = a.k AND b.w = 2) WHERE a.v < 9").unwrap();
        let sql = p.sql.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            sql.contains("join b on a.k = b.k where (a.v < 9) and (((a.v > 1) or (b.w = 2)))"),
            "{sql}"
        );
        // Not before a right or full join, which would keep the rows the filter drops.
        let e =
            render("SELECT * FROM a JOIN b ON a.k = b.k AND a.v > b.w FULL JOIN c ON c.k = a.k")
                .unwrap_err()
                .to_string();
        assert!(e.contains("before a right or full join"), "{e}");
    }

    #[test]
    fn a_kept_side_condition_later_in_a_chain_names_columns_as_the_joined_frame() {
        let cols = |t: &str| match t {
            "a" | "b" => Some(vec!["k".to_string(), "v".to_string()]),
            "c" => Some(vec!["k".to_string()]),
            _ => None,
        };
        let q = "SELECT * FROM a LEFT JOIN b ON a.k = b.k FULL JOIN c ON c.k = a.k AND b.v > 1 AND b.k <> a.v";
        let sql =
            render_with(q, &cols).unwrap().sql.split_whitespace().collect::<Vec<_>>().join(" ");
        // b's `v` and `k` are `v:b` and `k:b` after the first join; a's keep their names.
        assert!(
            sql.contains(
                "full join c on c.k = case when (\"v:b\" > 1) and (\"k:b\" <> a.v) then a.k end"
            ),
            "{sql}"
        );
        let q = "SELECT * FROM a LEFT JOIN (SELECT * FROM b WHERE v > 0) b2 ON a.k = b2.k FULL JOIN c ON c.k = b2.k AND b2.v > 1";
        let sql =
            render_with(q, &cols).unwrap().sql.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            sql.contains("full join c on c.k = case when (\"v:b2\" > 1) then \"k:b2\" end"),
            "{sql}"
        );
        let e = render_with(
            "SELECT * FROM a LEFT JOIN x ON a.k = x.k FULL JOIN c ON c.k = a.k AND x.v > 1",
            &cols,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("over x, whose columns are not listed here"), "{e}");
    }

    #[test]
    fn what_cannot_be_rendered_says_so() {
        let e = render("SELECT explode(x) FROM t").unwrap_err().to_string();
        assert!(e.contains("not an array literal"), "{e}");
    }
}
