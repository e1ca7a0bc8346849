//! A condition as Spark prints it in a physical plan (a `Filter` node, a scan's partition
//! filters), read back as Spark SQL, for the query `fix` rebuilds from the log. Spark prints
//! literals bare (`(kind#3 = play)`, `(day#4 >= 2026-10-15)`), so each literal is quoted by
//! the type of the column it is compared with, from the scan's read schema. What cannot be read
//! back exactly (a cast, a function, a timestamp, a literal that could be cut wrongly) gives
//! None: the rebuilt query then leaves that condition out, and says so.

use std::collections::HashMap;

/// The conjuncts of a condition: `(a AND b) AND c` -> [a, b, c].
pub fn conjuncts(cond: &str) -> Vec<String> {
    let cond = cond.trim();
    match binary(cond) {
        Some((l, "AND", r)) => {
            let mut out = conjuncts(l);
            out.extend(conjuncts(r));
            out
        }
        _ => vec![cond.to_string()],
    }
}

/// Column name -> Spark type name, from a scan's `ReadSchema: struct<a:int,b:string>`.
pub fn read_schema(schema: &str) -> HashMap<String, String> {
    let inner =
        schema.trim().strip_prefix("struct<").and_then(|s| s.strip_suffix('>')).unwrap_or("");
    fields(inner)
        .into_iter()
        .filter_map(|f| f.split_once(':'))
        .map(|(n, t)| {
            (n.trim().trim_matches('`').to_ascii_lowercase(), t.trim().to_ascii_lowercase())
        })
        .collect()
}

/// `a:int,b:decimal(10,2),c:struct<x:int,y:int>` -> its three fields.
fn fields(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// The condition as Spark SQL over the scan's columns (`columns`: each `name#id` the scan
/// outputs; `types`: its read schema), or None when it cannot be read back exactly.
pub fn to_sql(cond: &str, columns: &[String], types: &HashMap<String, String>) -> Option<String> {
    let e = cond.trim();
    if let Some(rest) = e.strip_prefix("NOT ") {
        return Some(format!("NOT ({})", to_sql(rest, columns, types)?));
    }
    if let Some(arg) = call(e, "isnotnull") {
        return Some(format!("{} IS NOT NULL", column(arg, columns)?.1));
    }
    if let Some(arg) = call(e, "isnull") {
        return Some(format!("{} IS NULL", column(arg, columns)?.1));
    }
    let (l, op, r) = binary(e)?;
    match op {
        "AND" | "OR" => {
            Some(format!("({} {op} {})", to_sql(l, columns, types)?, to_sql(r, columns, types)?))
        }
        _ => comparison(l, op, r, columns, types),
    }
}

fn comparison(
    l: &str,
    op: &str,
    r: &str,
    columns: &[String],
    types: &HashMap<String, String>,
) -> Option<String> {
    match (column(l, columns), column(r, columns)) {
        (Some((_, a)), Some((_, b))) => Some(format!("({a} {op} {b})")),
        (Some((name, a)), None) => {
            Some(format!("({a} {op} {})", literal(r, types.get(&name).map(String::as_str))?))
        }
        (None, Some((name, b))) => {
            Some(format!("({} {op} {b})", literal(l, types.get(&name).map(String::as_str))?))
        }
        (None, None) => None,
    }
}

/// `f(x)` -> x, for the function `f`.
fn call<'a>(e: &'a str, f: &str) -> Option<&'a str> {
    let rest = e.strip_prefix(f)?.strip_prefix('(')?.strip_suffix(')')?;
    (!rest.contains(['(', ')'])).then_some(rest)
}

/// `(l op r)` with one operator at the top level: (l, op, r).
fn binary(e: &str) -> Option<(&str, &'static str, &str)> {
    let inner = e.strip_prefix('(')?.strip_suffix(')')?;
    if !balanced(inner) {
        return None;
    }
    // Logical operators first: `(a = b AND c = d)` is never printed without inner parentheses.
    const OPS: [&str; 8] = [" AND ", " OR ", " <=> ", " <= ", " >= ", " = ", " < ", " > "];
    for op in OPS {
        if let Some(i) = top_level_find(inner, op) {
            return Some((&inner[..i], op.trim(), &inner[i + op.len()..]));
        }
    }
    None
}

fn balanced(s: &str) -> bool {
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

fn top_level_find(s: &str, pat: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 && s[i..].starts_with(pat) => return Some(i),
            _ => {}
        }
    }
    None
}

/// `views#19` -> (`views`, the backquoted identifier), when the scan outputs that attribute.
fn column(e: &str, columns: &[String]) -> Option<(String, String)> {
    let e = e.trim();
    columns.iter().any(|c| c == e).then(|| {
        let name = super::plan::attr_name(e);
        (name.to_ascii_lowercase(), crate::sql::ident(&name))
    })
}

/// A bare literal as SQL, by the column type it is compared with; None for what could be read
/// two ways or that Spark prints inexactly (timestamps, binary, nested types).
fn literal(text: &str, column_type: Option<&str>) -> Option<String> {
    let t = column_type?;
    let number = || {
        text.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && !text.contains(['e', 'E', '+']))
            .map(|_| text.to_string())
    };
    match t {
        "string" => plausible_string(text).then(|| crate::sql::string_literal(text)),
        "tinyint" | "smallint" | "int" | "bigint" | "byte" | "short" | "integer" | "long" => {
            text.parse::<i64>().ok().map(|_| text.to_string())
        }
        "double" => number().map(|n| format!("CAST({} AS DOUBLE)", crate::sql::string_literal(&n))),
        "float" => number().map(|n| format!("CAST({} AS FLOAT)", crate::sql::string_literal(&n))),
        t if t.starts_with("decimal") => number(),
        "boolean" => matches!(text, "true" | "false").then(|| text.to_ascii_uppercase()),
        "date" => is_date(text).then(|| format!("DATE '{text}'")),
        _ => None,
    }
}

/// A string as Spark prints it can hold what the plan's own syntax uses: refuse the texts that
/// could be a cut-off piece of a longer condition.
fn plausible_string(text: &str) -> bool {
    !text.starts_with(' ')
        && !text.ends_with(' ')
        && !text.contains(['(', ')', '#'])
        && !text.contains(" AND ")
        && !text.contains(" OR ")
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && s.chars().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> (Vec<String>, HashMap<String, String>) {
        let columns = ["title_id#18", "views#19", "kind#20", "day#21", "score#22", "ts#23"]
            .map(String::from)
            .to_vec();
        (
            columns,
            read_schema(
                "struct<title_id:string,views:int,kind:string,day:date,score:double,ts:timestamp>",
            ),
        )
    }

    #[test]
    fn printed_conditions_read_back_as_sql_with_literals_typed_by_their_column() {
        let (c, t) = cols();
        let cond = "((isnotnull(views#19) AND (views#19 >= 100)) AND (kind#20 = play))";
        let parts = conjuncts(cond);
        assert_eq!(parts, vec!["isnotnull(views#19)", "(views#19 >= 100)", "(kind#20 = play)"]);
        let sql: Vec<String> = parts.iter().map(|p| to_sql(p, &c, &t).unwrap()).collect();
        assert_eq!(sql, vec!["`views` IS NOT NULL", "(`views` >= 100)", "(`kind` = 'play')"]);
        assert_eq!(
            to_sql("(day#21 >= 2026-10-15)", &c, &t).unwrap(),
            "(`day` >= DATE '2026-10-15')"
        );
        assert_eq!(to_sql("NOT (kind#20 = it's)", &c, &t).unwrap(), "NOT ((`kind` = 'it\\'s'))");
        assert_eq!(
            to_sql("((views#19 < 5) OR (score#22 > 0.5))", &c, &t).unwrap(),
            "((`views` < 5) OR (`score` > CAST('0.5' AS DOUBLE)))"
        );
        assert_eq!(to_sql("(100 < views#19)", &c, &t).unwrap(), "(100 < `views`)");
    }

    #[test]
    fn what_cannot_be_read_back_exactly_is_none() {
        let (c, t) = cols();
        for cond in [
            "(ts#23 >= 2026-10-15 00:00:00)", // a timestamp: printed in the session's zone
            "(cast(views#19 as bigint) > 5)", // a cast
            "(other#99 = 1)",                 // not a column of the scan
            "(views#19 = x)",                 // not a number for a number column
            "StartsWith(kind#20, pl)",        // a function
            "(kind#20 = rock AND roll)",      // a string that could be two conditions
            "(score#22 = NaN)",               // not a finite number
        ] {
            assert_eq!(to_sql(cond, &c, &t), None, "{cond}");
        }
    }
}
