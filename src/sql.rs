//! Spark SQL in and out: the parser dialect, literals for key values, identifiers, and the
//! printer that writes string literals the way Spark 3.5 and 4.x both read them.
//!
//! sqlparser prints a string literal with a doubled quote (`'O''Neil'`), which Spark 4 reads as
//! O'Neil and Spark 3.5 as two adjacent literals, `ONeil`. Every string literal is therefore
//! re-printed here with backslash escapes (`'O\'Neil'`), which both read the same way.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions_mut, Expr, JoinConstraint, JoinOperator, Query, SetExpr, Statement,
    TableFactor, TableWithJoins, Value as SqlValue, VisitMut, VisitorMut,
};
use sqlparser::dialect::{DatabricksDialect, Dialect};
use sqlparser::parser::Parser;

use crate::error::{Error, Result};
use crate::value::{KeyType, Value};

/// Spark SQL as sqlparser should read it: the Databricks dialect (backquoted identifiers,
/// backslash escapes in strings, LEFT SEMI/ANTI joins), plus `/*+ ... */` hints kept in the AST.
#[derive(Debug, Default)]
pub struct SparkDialect;

impl Dialect for SparkDialect {
    fn dialect(&self) -> std::any::TypeId {
        // The parser enables some Databricks syntax by dialect type: be taken for it.
        std::any::TypeId::of::<DatabricksDialect>()
    }
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '`'
    }
    fn identifier_quote_style(&self, _identifier: &str) -> Option<char> {
        Some('`')
    }
    fn is_identifier_start(&self, ch: char) -> bool {
        ch.is_ascii_alphabetic() || ch == '_'
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        ch.is_ascii_alphanumeric() || ch == '_'
    }
    fn supports_numeric_prefix(&self) -> bool {
        true
    }
    fn supports_filter_during_aggregation(&self) -> bool {
        true
    }
    fn supports_group_by_expr(&self) -> bool {
        true
    }
    fn supports_lambda_functions(&self) -> bool {
        true
    }
    fn supports_select_wildcard_except(&self) -> bool {
        true
    }
    fn require_interval_qualifier(&self) -> bool {
        true
    }
    fn supports_struct_literal(&self) -> bool {
        true
    }
    fn supports_nested_comments(&self) -> bool {
        true
    }
    fn supports_group_by_with_modifier(&self) -> bool {
        true
    }
    fn supports_values_as_table_factor(&self) -> bool {
        true
    }
    fn supports_bang_not_operator(&self) -> bool {
        true
    }
    fn supports_cte_without_as(&self) -> bool {
        true
    }
    fn supports_select_item_multi_column_alias(&self) -> bool {
        true
    }
    fn supports_map_literal_with_angle_brackets(&self) -> bool {
        true
    }
    fn supports_string_literal_backslash_escape(&self) -> bool {
        true
    }
    fn supports_comment_optimizer_hint(&self) -> bool {
        true
    }
    /// `CROSS JOIN t ON ...`, which Spark accepts (and reads as `JOIN t ON ...`).
    fn supports_cross_join_constraint(&self) -> bool {
        true
    }
}

/// The table `name` (one identifier, printed as given) as a FROM item, under `alias` if given.
pub fn table_factor(name: &str, alias: Option<sqlparser::ast::TableAlias>) -> TableFactor {
    TableFactor::Table {
        name: sqlparser::ast::ObjectName(vec![sqlparser::ast::ObjectNamePart::Identifier(
            sqlparser::ast::Ident::new(name),
        )]),
        alias,
        args: None,
        with_hints: vec![],
        version: None,
        with_ordinality: false,
        partitions: vec![],
        json_path: None,
        sample: None,
        index_hints: vec![],
    }
}

/// The ON condition of a join, if it has one.
pub fn on_condition_mut(op: &mut sqlparser::ast::JoinOperator) -> Option<&mut Expr> {
    use sqlparser::ast::{JoinConstraint, JoinOperator};
    match op {
        JoinOperator::Join(JoinConstraint::On(e))
        | JoinOperator::Inner(JoinConstraint::On(e))
        | JoinOperator::Left(JoinConstraint::On(e))
        | JoinOperator::LeftOuter(JoinConstraint::On(e))
        | JoinOperator::Right(JoinConstraint::On(e))
        | JoinOperator::RightOuter(JoinConstraint::On(e))
        | JoinOperator::FullOuter(JoinConstraint::On(e))
        | JoinOperator::Semi(JoinConstraint::On(e))
        | JoinOperator::LeftSemi(JoinConstraint::On(e))
        | JoinOperator::Anti(JoinConstraint::On(e))
        | JoinOperator::LeftAnti(JoinConstraint::On(e)) => Some(e),
        _ => None,
    }
}

/// How deep the parser may nest.
const RECURSION_LIMIT: usize = 400;

/// Parse one or more statements; the error names line and column. A `CROSS JOIN t ON ...` (or
/// USING) comes back as the inner join Spark reads it as.
pub fn parse(sql: &str) -> Result<Vec<Statement>> {
    // Deeper than sqlparser's default of 50: Spark reads nested subqueries hundreds deep, and
    // the parser grows its stack as it recurses (the `recursive` crate), so depth is safe.
    let mut stmts = Parser::new(&SparkDialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| {
            Error::Usage(format!(
                "SQL does not parse: {}",
                crate::format::one_line(&e.to_string(), 200)
            ))
        })?;
    for s in &mut stmts {
        let _ = s.visit(&mut CrossWithConditionAsInner);
    }
    Ok(stmts)
}

/// Spark reads `CROSS JOIN t ON c` (or USING) as `JOIN t ON c`; sqlparser keeps it a cross join
/// with a constraint. Each query's FROM items (its nested queries are visited in turn) get the
/// inner join.
struct CrossWithConditionAsInner;

impl VisitorMut for CrossWithConditionAsInner {
    type Break = ();
    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        fn set(b: &mut SetExpr) {
            match b {
                SetExpr::Select(s) => s.from.iter_mut().for_each(item),
                SetExpr::SetOperation { left, right, .. } => {
                    set(left);
                    set(right);
                }
                _ => {}
            }
        }
        fn item(t: &mut TableWithJoins) {
            if let TableFactor::NestedJoin { table_with_joins, .. } = &mut t.relation {
                item(table_with_joins);
            }
            for j in &mut t.joins {
                if let JoinOperator::CrossJoin(
                    c @ (JoinConstraint::On(_) | JoinConstraint::Using(_)),
                ) = &j.join_operator
                {
                    j.join_operator = JoinOperator::Join(c.clone());
                }
                if let TableFactor::NestedJoin { table_with_joins, .. } = &mut j.relation {
                    item(table_with_joins);
                }
            }
        }
        set(&mut q.body);
        ControlFlow::Continue(())
    }
}

/// Parse exactly one query (SELECT, WITH ..., set operations).
pub fn parse_query(sql: &str) -> Result<Query> {
    let mut stmts = parse(sql)?;
    match (stmts.len(), stmts.pop()) {
        (1, Some(Statement::Query(q))) => Ok(*q),
        (1, Some(_)) => Err(Error::Usage("the SQL is not a query (SELECT ...)".into())),
        (n, _) => Err(Error::Usage(format!("expected one query, found {n} statements"))),
    }
}

/// Print a statement as Spark SQL: one clause a line, string literals with backslash escapes.
pub fn render(stmt: &Statement) -> String {
    format!("{:#}", spark_literals(stmt))
}

/// A query on one line, string literals with backslash escapes (to embed in generated SQL).
pub fn render_inline(q: &Query) -> String {
    spark_literals(&Statement::Query(Box::new(q.clone()))).to_string()
}

/// The statement with every string literal re-printed as Spark reads it on 3.5 and 4.x.
fn spark_literals(stmt: &Statement) -> Statement {
    let mut stmt = stmt.clone();
    fix_literals(&mut stmt);
    stmt
}

/// Re-print every string literal in `x` with backslash escapes (see the module docs).
pub fn fix_literals<T: sqlparser::ast::VisitMut>(x: &mut T) {
    let _ = visit_expressions_mut(x, |e: &mut Expr| {
        if let Expr::Value(v) = e {
            if let SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) = &v.value {
                v.value = SqlValue::Placeholder(string_literal(s));
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

/// One expression as Spark SQL text (string literals with backslash escapes).
pub fn render_expr(e: &Expr) -> String {
    let mut e = e.clone();
    fix_literals(&mut e);
    e.to_string()
}

/// One SELECT as Spark SQL text on one line (string literals with backslash escapes).
pub fn render_select(sel: &sqlparser::ast::Select) -> String {
    let mut sel = sel.clone();
    fix_literals(&mut sel);
    sel.to_string()
}

pub fn render_query(q: &Query) -> String {
    render(&Statement::Query(Box::new(q.clone())))
}

/// A Spark string literal that Spark 3.5 and 4.x read as exactly `s`.
pub fn string_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A backquoted Spark identifier (a backquote inside is doubled, as Spark reads it).
pub fn ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

fn float_text(x: f64, nan: bool, inf: Option<bool>) -> String {
    if nan {
        return "NaN".into();
    }
    match inf {
        Some(true) => return "Infinity".into(),
        Some(false) => return "-Infinity".into(),
        None => {}
    }
    let a = x.abs();
    if a != 0.0 && !(1e-5..1e16).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// A Spark SQL literal for a key value of type `t`, read the same by Spark 3.5 and 4.x and
/// independent of the session time zone. The value can never change the query's structure:
/// strings are escaped, everything else is digits or hex.
pub fn literal(v: &Value, t: KeyType) -> String {
    match v {
        Value::Null => match t {
            KeyType::Void => "NULL".into(),
            t => format!("CAST(NULL AS {})", t.spark_name().to_uppercase()),
        },
        Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        // Plain digits: Spark widens them to the column's type (2147483648 and up read as BIGINT).
        Value::Int(i) => i.to_string(),
        Value::Long(l) => l.to_string(),
        Value::Float(f) => {
            let f = crate::value::canonical_f32(*f);
            let inf = f.is_infinite().then_some(f > 0.0);
            // The shortest text that reads back as this f32.
            let text = if f.is_nan() || inf.is_some() {
                float_text(0.0, f.is_nan(), inf)
            } else {
                format!("{f}")
            };
            format!("CAST({} AS FLOAT)", string_literal(&text))
        }
        Value::Double(d) => {
            let d = crate::value::canonical_f64(*d);
            let inf = d.is_infinite().then_some(d > 0.0);
            format!("CAST({} AS DOUBLE)", string_literal(&float_text(d, d.is_nan(), inf)))
        }
        Value::Str(s) => string_literal(s),
        Value::Binary(b) => format!("X'{}'", Value::hex(b).to_uppercase()),
        Value::Date(d) => {
            let s = Value::date_string(*d);
            if s.len() == 10 && !s.starts_with('-') && !s.starts_with('+') {
                format!("DATE '{s}'")
            } else {
                format!("DATE_FROM_UNIX_DATE({d})")
            }
        }
        Value::Timestamp(us) => match t {
            // An instant: microseconds since the epoch, whatever the session time zone.
            KeyType::Timestamp { utc: false } => format!(
                "CAST({} AS TIMESTAMP_NTZ)",
                string_literal(&Value::timestamp_string(*us, false).replace('T', " "))
            ),
            _ => format!("TIMESTAMP_MICROS({us})"),
        },
        Value::Decimal { unscaled, precision, scale } => {
            format!(
                "CAST({} AS DECIMAL({precision},{scale}))",
                Value::decimal_string(*unscaled, *scale)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_through_the_parser() {
        for s in [
            "plain",
            "O'Neil",
            "a\\b",
            "\\'",
            "x'); DROP TABLE t; --",
            "tab\there\nnew",
            "ünï €",
            "",
            "'",
            "\\",
        ] {
            let q = parse_query(&format!("SELECT {} AS v", string_literal(s))).unwrap();
            let printed = render_query(&q);
            assert!(printed.contains(&string_literal(s)), "{printed}");
            // One literal, parsed back to the same string.
            let again = parse_query(&printed).unwrap();
            let mut found = Vec::new();
            let _ = sqlparser::ast::visit_expressions(&again, |e: &Expr| {
                if let Expr::Value(v) = e {
                    if let SqlValue::SingleQuotedString(x) = &v.value {
                        found.push(x.clone());
                    }
                }
                ControlFlow::<()>::Continue(())
            });
            assert_eq!(found, vec![s.to_string()]);
        }
    }

    #[test]
    fn hints_are_kept() {
        let q = parse_query("SELECT /*+ BROADCAST(r) */ * FROM a l JOIN b r ON l.k = r.k").unwrap();
        assert!(render_query(&q).contains("/*+ BROADCAST(r) */"), "{}", render_query(&q));
    }

    #[test]
    fn literals_of_every_type_parse() {
        let cases = [
            (Value::Int(-5), KeyType::Int),
            (Value::Long(1 << 40), KeyType::BigInt),
            (Value::Long(i64::MIN), KeyType::BigInt),
            (Value::Double(f64::NAN), KeyType::Double),
            (Value::Double(1e300), KeyType::Double),
            (Value::Float(1.1), KeyType::Float),
            (Value::Date(20000), KeyType::Date),
            (Value::Date(-800_000), KeyType::Date),
            (Value::Timestamp(1_767_607_200_123_456), KeyType::Timestamp { utc: true }),
            (Value::Timestamp(1_767_607_200_123_456), KeyType::Timestamp { utc: false }),
            (
                Value::Decimal { unscaled: -1250, precision: 10, scale: 2 },
                KeyType::Decimal { precision: 10, scale: 2 },
            ),
            (Value::Binary(vec![0, 0xab]), KeyType::Binary),
            (Value::Bool(true), KeyType::Boolean),
        ];
        for (v, t) in cases {
            let sql = format!("SELECT * FROM t WHERE k IN ({})", literal(&v, t));
            parse_query(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }
}
