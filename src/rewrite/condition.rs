//! A join's type and condition read against its two inputs: which equalities are keys (a
//! column of each side), and which predicates of ON are the others.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions_mut, BinaryOperator, Expr, Ident, JoinConstraint, JoinOperator, ObjectName,
};

use super::filters::JoinScope;
use super::input::Input;
use super::names::last_ident;
use super::reason::LeftAlone;
use crate::plan::{JoinType, Side};

/// A join's condition against its inputs.
pub(super) struct Condition {
    pub how: JoinType,
    /// (left column, right column) of each key equality.
    pub keys: Vec<(String, String)>,
    /// Each key equality as written, for the report.
    pub key_text: Vec<String>,
    /// The other predicates of ON, named as the branches name the inputs.
    pub extras: Vec<Expr>,
    /// USING: each key is one merged column in the output.
    pub using: bool,
    /// The type each key equality casts its left and right column to, as written (`CAST(a AS
    /// INT) = b`): planned as the column only where Spark hashes the cast value alike (see
    /// `cast_hashes_alike`).
    pub casts: Vec<[Option<String>; 2]>,
}

impl Condition {
    pub fn left_keys(&self) -> Vec<String> {
        self.keys.iter().map(|k| k.0.clone()).collect()
    }

    pub fn right_keys(&self) -> Vec<String> {
        self.keys.iter().map(|k| k.1.clone()).collect()
    }
}

/// The join type and constraint of a join operator the rewrite handles.
pub(super) fn join_type(op: &JoinOperator) -> Result<(JoinType, &JoinConstraint), LeftAlone> {
    Ok(match op {
        JoinOperator::Join(c) | JoinOperator::Inner(c) => (JoinType::Inner, c),
        JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (JoinType::Left, c),
        JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (JoinType::Right, c),
        JoinOperator::FullOuter(c) => (JoinType::Full, c),
        JoinOperator::Semi(c) | JoinOperator::LeftSemi(c) => (JoinType::Semi, c),
        JoinOperator::Anti(c) | JoinOperator::LeftAnti(c) => (JoinType::Anti, c),
        JoinOperator::CrossJoin(_) => return Err(LeftAlone::CrossJoin),
        other => return Err(LeftAlone::UnsupportedOperator(format!("{other:?}"))),
    })
}

/// The condition of a join of `l` and `r`, or why it has no keys to plan on.
pub(super) fn condition_of(
    op: &JoinOperator,
    l: &Input,
    r: &Input,
) -> Result<Condition, LeftAlone> {
    let (how, constraint) = join_type(op)?;
    if l.alias.eq_ignore_ascii_case(&r.alias)
        || l.quals.iter().any(|(a, _)| a.eq_ignore_ascii_case(&r.alias))
    {
        return Err(LeftAlone::SameName);
    }
    let mut c = Condition {
        how,
        keys: Vec::new(),
        key_text: Vec::new(),
        extras: Vec::new(),
        using: false,
        casts: Vec::new(),
    };
    match constraint {
        JoinConstraint::On(e) => on_keys(e, l, r, &mut c),
        JoinConstraint::Using(cols) => using_keys(cols, l, r, &mut c)?,
        JoinConstraint::Natural => return Err(LeftAlone::Natural),
        JoinConstraint::None => return Err(LeftAlone::NoCondition),
    }
    if c.keys.is_empty() {
        return Err(LeftAlone::NonEqui);
    }
    keys_on_one_input(&mut c, l);
    Ok(c)
}

/// Where the left keys are columns of several inputs of the joins before, each replaced by a
/// column equal to it on every row (`Input::equal`) of one input where that exists: as Spark
/// reads them (its constraint propagation), so that the key is one table's. The first key's
/// input is tried first, then the others in order.
fn keys_on_one_input(c: &mut Condition, l: &Input) {
    let members: Vec<Option<usize>> = c.keys.iter().map(|(k, _)| l.member_of(k)).collect();
    if l.equal.is_empty() || members.windows(2).all(|w| w[0] == w[1]) {
        return;
    }
    let classes: Vec<Vec<String>> = c.keys.iter().map(|(k, _)| l.equal_to(k)).collect();
    let mut order: Vec<usize> = members.iter().flatten().copied().collect();
    order.dedup();
    for m in order {
        let picks: Option<Vec<String>> = classes
            .iter()
            .map(|class| class.iter().find(|x| l.member_of(x) == Some(m)).cloned())
            .collect();
        if let Some(picks) = picks {
            for (key, pick) in c.keys.iter_mut().zip(picks) {
                key.0 = pick;
            }
            return;
        }
    }
}

/// The condition of a join of `l` and `r`, with the join type Spark runs it as under the WHERE
/// of `scope` (`filters::spark_join_type`); and, where that differs from the type as written,
/// the type as written and the condition that made the difference.
pub(super) fn condition_in_scope(
    op: &JoinOperator,
    l: &Input,
    r: &Input,
    scope: &JoinScope,
) -> Result<(Condition, Option<(JoinType, String)>), LeftAlone> {
    let mut c = condition_of(op, l, r)?;
    let written = c.how;
    let (how, by) = super::filters::spark_join_type(c.how, scope, l, r);
    c.how = how;
    Ok((c, by.map(|by| (written, by))))
}

/// ON: each conjunct that equates a column of each side is a key; the rest are extras.
fn on_keys(e: &Expr, l: &Input, r: &Input, c: &mut Condition) {
    let mut cs = Vec::new();
    conjuncts(e, &mut cs);
    for mut x in cs {
        if let Expr::BinaryOp { left, op: BinaryOperator::Eq, right } = &x {
            let ((le, lcast), (re, rcast)) = (uncast(left), uncast(right));
            let (lk, rk) = (side_of(le, l, r), side_of(re, l, r));
            let casts = match (&lk, &rk) {
                (Some((Side::Left, _)), _) => [lcast, rcast],
                _ => [rcast, lcast],
            };
            match (lk, rk) {
                (Some((Side::Left, a)), Some((Side::Right, b)))
                | (Some((Side::Right, b)), Some((Side::Left, a))) => {
                    c.keys.push((a, b));
                    c.casts.push(casts);
                    c.key_text.push(format!(
                        "{} = {}",
                        crate::sql::render_expr(left),
                        crate::sql::render_expr(right)
                    ));
                    continue;
                }
                _ => {}
            }
        }
        to_branch_names(&mut x, l, r);
        c.extras.push(x);
    }
}

/// `CAST(e AS t)` as `e` and the type it is cast to, as written.
fn uncast(e: &Expr) -> (&Expr, Option<String>) {
    match e {
        Expr::Cast { expr, data_type, format: None, .. } => {
            (expr.as_ref(), Some(data_type.to_string()))
        }
        Expr::Nested(inner) if matches!(inner.as_ref(), Expr::Cast { .. }) => uncast(inner),
        other => (other, None),
    }
}

/// Whether Spark hashes a column of type `column` cast to the type written `cast` as it
/// hashes the column itself: the same type (the cast is removed), or one of tinyint, smallint
/// and int to another (all hashed as an int). `CAST(int AS BIGINT)` is hashed as a long.
pub(super) fn cast_hashes_alike(column: crate::value::KeyType, cast: &str) -> bool {
    let family = |t: &str| -> String {
        let t = t.trim().to_ascii_lowercase().replace(' ', "");
        match t.as_str() {
            "tinyint" | "byte" | "smallint" | "short" | "int" | "integer" => "int".into(),
            "bigint" | "long" => "bigint".into(),
            "float" | "real" => "float".into(),
            "double" | "doubleprecision" => "double".into(),
            _ => t,
        }
    };
    family(&column.spark_name()) == family(cast)
}

/// USING: every column must be on both sides.
fn using_keys(
    cols: &[ObjectName],
    l: &Input,
    r: &Input,
    c: &mut Condition,
) -> Result<(), LeftAlone> {
    for col in cols {
        let name = last_ident(col).map(|i| i.value.clone()).unwrap_or_default();
        match (l.column(&name), r.column(&name)) {
            (Some(a), Some(b)) => {
                c.key_text.push(format!("{}.{a} = {}.{b}", l.alias, r.alias));
                c.keys.push((a, b));
                c.casts.push([None, None]);
            }
            _ => return Err(LeftAlone::UsingNotOnBothSides(name)),
        }
    }
    c.using = true;
    Ok(())
}

/// Split `a AND b AND c`, in any nesting of parentheses: `(a = b)`, `((a = b) AND (c = d))`.
pub(crate) fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        // `(a AND b)`, `((a = b))`: the parentheses group nothing a conjunct needs.
        Expr::Nested(inner)
            if matches!(
                inner.as_ref(),
                Expr::BinaryOp { op: BinaryOperator::And | BinaryOperator::Eq, .. }
                    | Expr::Nested(_)
            ) =>
        {
            conjuncts(inner, out)
        }
        // `(x AND a) OR (x AND b)`: x, then `(a OR b)`, as Spark's BooleanSimplification
        // reads it; so an equality in every branch is a join key.
        e if or_common(e, out) => {}
        // `(a OR b)` keeps its parentheses: it is printed again inside an AND.
        other => out.push(other.clone()),
    }
}

/// The branches of `a OR b OR c`, in any nesting of parentheses.
fn disjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::Or, right } => {
            disjuncts(left, out);
            disjuncts(right, out);
        }
        Expr::Nested(inner)
            if matches!(
                inner.as_ref(),
                Expr::BinaryOp { op: BinaryOperator::Or, .. } | Expr::Nested(_)
            ) =>
        {
            disjuncts(inner, out)
        }
        other => out.push(other),
    }
}

/// An OR whose every branch has some of the same conjuncts: those conjuncts, then the OR of
/// what is left of each branch (nothing when a branch is left empty: `x OR (x AND b)` is
/// `x`), pushed to `out`. Both forms are equal in SQL's three-valued logic. False, and nothing
/// pushed, when `e` is not such an OR.
fn or_common(e: &Expr, out: &mut Vec<Expr>) -> bool {
    let mut ds = Vec::new();
    disjuncts(e, &mut ds);
    if ds.len() < 2 {
        return false;
    }
    let parts: Vec<Vec<Expr>> = ds
        .iter()
        .map(|d| {
            let mut v = Vec::new();
            conjuncts(d, &mut v);
            v
        })
        .collect();
    let mut common: Vec<Expr> = Vec::new();
    for c in &parts[0] {
        if parts[1..].iter().all(|p| p.iter().any(|x| same_predicate(x, c)))
            && !common.iter().any(|x| same_predicate(x, c))
        {
            common.push(c.clone());
        }
    }
    if common.is_empty() {
        return false;
    }
    let rests: Vec<Vec<Expr>> = parts
        .into_iter()
        .map(|p| p.into_iter().filter(|x| !common.iter().any(|c| same_predicate(x, c))).collect())
        .collect();
    out.extend(common);
    if rests.iter().all(|r| !r.is_empty()) {
        let branch = |r: Vec<Expr>| Expr::Nested(Box::new(join_with(r, BinaryOperator::And)));
        out.push(Expr::Nested(Box::new(join_with(
            rests.into_iter().map(branch).collect(),
            BinaryOperator::Or,
        ))));
    }
    true
}

/// The same predicate as written, or an equality with its sides swapped.
fn same_predicate(a: &Expr, b: &Expr) -> bool {
    let text = |e: &Expr| crate::sql::render_expr(e);
    if text(a) == text(b) {
        return true;
    }
    match (a, b) {
        (
            Expr::BinaryOp { left: l1, op: BinaryOperator::Eq, right: r1 },
            Expr::BinaryOp { left: l2, op: BinaryOperator::Eq, right: r2 },
        ) => text(l1) == text(r2) && text(r1) == text(l2),
        _ => false,
    }
}

/// `a op b op c`, left to right (`es` not empty).
pub(super) fn join_with(mut es: Vec<Expr>, op: BinaryOperator) -> Expr {
    let first = es.remove(0);
    es.into_iter().fold(first, |acc, e| Expr::BinaryOp {
        left: Box::new(acc),
        op: op.clone(),
        right: Box::new(e),
    })
}

/// Which input a column reference belongs to, and its name there.
fn side_of(e: &Expr, l: &Input, r: &Input) -> Option<(Side, String)> {
    match e {
        Expr::CompoundIdentifier(p) if p.len() == 2 => {
            if p[0].value.eq_ignore_ascii_case(&r.alias) {
                r.column(&p[1].value).map(|c| (Side::Right, c))
            } else {
                l.resolve(Some(&p[0].value), &p[1].value).map(|c| (Side::Left, c))
            }
        }
        Expr::Identifier(i) => match (l.resolve(None, &i.value), r.column(&i.value)) {
            (Some(c), None) => Some((Side::Left, c)),
            (None, Some(c)) => Some((Side::Right, c)),
            _ => None,
        },
        Expr::Nested(inner) => side_of(inner, l, r),
        _ => None,
    }
}

/// Rewrite references of an ON predicate to the inputs as the branches name them (the
/// joins before a chained join are one subquery there).
fn to_branch_names(e: &mut Expr, l: &Input, r: &Input) {
    if l.quals.is_empty() {
        return;
    }
    let _ = visit_expressions_mut(e, |x: &mut Expr| {
        let to = match &*x {
            Expr::CompoundIdentifier(p)
                if p.len() == 2 && !p[0].value.eq_ignore_ascii_case(&r.alias) =>
            {
                l.resolve(Some(&p[0].value), &p[1].value)
            }
            Expr::Identifier(i) if r.column(&i.value).is_none() => l.resolve(None, &i.value),
            _ => None,
        };
        if let Some(c) = to {
            *x = Expr::CompoundIdentifier(vec![
                Ident::with_quote('`', l.alias.clone()),
                Ident::with_quote('`', c),
            ]);
        }
        ControlFlow::<()>::Continue(())
    });
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::sql::render_expr;

    fn expr(text: &str) -> Expr {
        let q = crate::sql::parse_query(&format!("SELECT 1 FROM t WHERE {text}")).unwrap();
        let sqlparser::ast::SetExpr::Select(s) = *q.body else { panic!("not a select") };
        s.selection.unwrap()
    }

    fn split(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        conjuncts(&expr(text), &mut out);
        out.iter().map(render_expr).collect()
    }

    #[test]
    fn an_equality_in_every_branch_of_an_or_is_a_conjunct() {
        assert_eq!(
            split("(p.id = l.pid AND l.q > 1) OR (l.pid = p.id AND p.b = 'x')"),
            ["p.id = l.pid", "((l.q > 1) OR (p.b = 'x'))"]
        );
        // Three branches, one with two more conjuncts, the OR inside an AND.
        assert_eq!(
            split("l.v < 9 AND ((a.k = b.k AND a.x = 1) OR (a.k = b.k AND a.x = 2) OR (a.k = b.k AND a.y = 3 AND b.z = 4))"),
            ["l.v < 9", "a.k = b.k", "((a.x = 1) OR (a.x = 2) OR (a.y = 3 AND b.z = 4))"]
        );
        // A branch with nothing else: `x OR (x AND b)` is x.
        assert_eq!(split("(a.k = b.k) OR (a.k = b.k AND a.x = 1)"), ["a.k = b.k"]);
    }

    #[test]
    fn an_or_without_a_shared_conjunct_stays_whole() {
        assert_eq!(
            split("(a.k = b.k AND a.x = 1) OR (a.k = b.j AND a.x = 1 AND a.y = 2) OR a.z = 3"),
            ["(a.k = b.k AND a.x = 1) OR (a.k = b.j AND a.x = 1 AND a.y = 2) OR a.z = 3"]
        );
        assert_eq!(split("a.k = b.k OR a.k = b.j"), ["a.k = b.k OR a.k = b.j"]);
    }

    /// The joins before, made one input: members s (s_item, qty) and r (r_item).
    fn prefix(equal: &[(&str, &str)]) -> Input {
        let quals = vec![
            (
                "s".to_string(),
                HashMap::from([
                    ("s_item".to_string(), "s_item".to_string()),
                    ("qty".to_string(), "qty".to_string()),
                ]),
            ),
            ("r".to_string(), HashMap::from([("r_item".to_string(), "r_item".to_string())])),
        ];
        let columns = vec!["s_item".to_string(), "qty".to_string(), "r_item".to_string()];
        let mut inp = Input::of_columns(columns, HashMap::new(), false);
        inp.alias = "__sjp1".into();
        inp.quals = quals;
        inp.equal = equal.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        inp
    }

    fn keys_after(l: &Input, keys: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut c = Condition {
            how: JoinType::Inner,
            keys: keys.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
            key_text: vec![],
            extras: vec![],
            using: false,
            casts: vec![],
        };
        keys_on_one_input(&mut c, l);
        c.keys
    }

    #[test]
    fn a_cast_spark_removes_or_hashes_alike_keeps_the_column_as_key() {
        use crate::value::KeyType;
        assert!(cast_hashes_alike(KeyType::BigInt, "BIGINT"));
        assert!(cast_hashes_alike(KeyType::BigInt, "long"));
        assert!(cast_hashes_alike(KeyType::SmallInt, "INT"));
        assert!(cast_hashes_alike(KeyType::Decimal { precision: 10, scale: 2 }, "DECIMAL(10, 2)"));
        assert!(cast_hashes_alike(KeyType::String, "STRING"));
        // Spark hashes an int cast to bigint as a long, and a bigint cast to int as an int.
        assert!(!cast_hashes_alike(KeyType::Int, "BIGINT"));
        assert!(!cast_hashes_alike(KeyType::BigInt, "INT"));
        assert!(!cast_hashes_alike(KeyType::Int, "STRING"));
        assert!(!cast_hashes_alike(KeyType::Decimal { precision: 10, scale: 2 }, "DECIMAL(12,2)"));
    }

    #[test]
    fn keys_of_two_inputs_equal_on_every_row_become_one_inputs() {
        let l = prefix(&[("s_item", "r_item")]);
        let k = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            keys_after(&l, &[("s_item", "i_id"), ("r_item", "i_id")]),
            [k("s_item", "i_id"), k("s_item", "i_id")]
        );
        // The first key's input is tried first.
        assert_eq!(
            keys_after(&l, &[("r_item", "i_id"), ("s_item", "i_id")]),
            [k("r_item", "i_id"), k("r_item", "i_id")]
        );
        // qty has no equal in r, but r_item has one in s.
        assert_eq!(
            keys_after(&l, &[("qty", "i_id"), ("r_item", "i_x")]),
            [k("qty", "i_id"), k("s_item", "i_x")]
        );
        // Without the equality the keys stay as written (the join is then left with the reason).
        assert_eq!(
            keys_after(&prefix(&[]), &[("s_item", "i_id"), ("r_item", "i_id")]),
            [k("s_item", "i_id"), k("r_item", "i_id")]
        );
    }
}
