//! PySpark's syntax for the fix as code: `pyspark.sql.functions as F`, Python literals for
//! booleans, integers and strings (a string as JSON writes it, which Python reads the same),
//! and Spark SQL literals through `F.expr` for the other types (the same text the SQL fix
//! uses, read alike by Spark 3.5 and 4.x). Python's `&`, `|` and `~` bind tighter than `==`:
//! every comparison and every `&`/`|` is parenthesized.

use super::Syntax;
use crate::value::{KeyType, Value};

pub(crate) struct PySpark;

const KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// A column name as `F.col` and `df[...]` read it: backquoted unless a plain identifier (a dot
/// would otherwise name a struct's field).
pub(crate) fn quoted_name(name: &str) -> String {
    let plain = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !name.is_empty();
    if plain {
        name.to_string()
    } else {
        format!("`{}`", name.replace('`', "``"))
    }
}

/// A name as an identifier: other characters become `_`, and a digit first or a keyword gets
/// one more `_`.
pub(crate) fn identifier(name: &str, keywords: &[&str]) -> String {
    let mut id: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if id.is_empty() || id.starts_with(|c: char| c.is_ascii_digit()) {
        id.insert(0, '_');
    }
    if keywords.contains(&id.as_str()) {
        id.push('_');
    }
    id
}

fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

impl Syntax for PySpark {
    fn comment(&self) -> &'static str {
        "#"
    }
    fn imports(&self) -> &'static str {
        "from pyspark.sql import DataFrame\nfrom pyspark.sql import functions as F\n\n"
    }
    fn string(&self, s: &str) -> String {
        json(s)
    }
    fn literal(&self, v: &Value, t: KeyType) -> String {
        match v {
            Value::Bool(b) => if *b { "True" } else { "False" }.into(),
            Value::Int(i) => i.to_string(),
            Value::Long(l) => l.to_string(),
            Value::Str(s) => json(s),
            other => format!("F.expr({})", json(&crate::sql::literal(other, t))),
        }
    }
    fn int(&self, i: i64) -> String {
        format!("F.lit({i})")
    }
    fn col(&self, name: &str) -> String {
        format!("F.col({})", json(&quoted_name(name)))
    }
    fn col_of(&self, df: &str, name: &str) -> String {
        format!("{df}[{}]", json(&quoted_name(name)))
    }
    fn call(&self, f: &str, args: &[String]) -> String {
        format!("F.{f}({})", args.join(", "))
    }
    fn eq(&self, a: &str, b: &str) -> String {
        format!("({a} == {b})")
    }
    fn and(&self, parts: &[String]) -> String {
        match parts {
            [one] => one.clone(),
            _ => format!("({})", parts.join(" & ")),
        }
    }
    fn or(&self, parts: &[String]) -> String {
        match parts {
            [one] => one.clone(),
            _ => format!("({})", parts.join(" | ")),
        }
    }
    fn not(&self, x: &str) -> String {
        format!("~{x}")
    }
    fn is_null(&self, x: &str) -> String {
        format!("{x}.isNull()")
    }
    fn is_not_null(&self, x: &str) -> String {
        format!("{x}.isNotNull()")
    }
    fn isin(&self, x: &str, items: &[String]) -> String {
        format!("{x}.isin({})", items.join(", "))
    }
    fn false_(&self) -> String {
        "F.lit(False)".into()
    }
    fn names(&self, items: &[String]) -> String {
        format!("[{}]", items.join(", "))
    }
    fn bind(&self, name: &str, value: &str) -> String {
        format!("{name} = {value}")
    }
    fn open(&self, f: &str, names: &[String; 2], doc: &str, on: &str) -> Vec<String> {
        vec![
            format!("def {f}({}: DataFrame, {}: DataFrame) -> DataFrame:", names[0], names[1]),
            format!("    {}", json(doc)),
            String::new(),
            "    def join(l, r, how):".into(),
            format!("        return l.join(r, {on}, how)"),
            String::new(),
        ]
    }
    fn close(&self, value: &str) -> Vec<String> {
        vec![format!("    return {value}"), String::new()]
    }
    fn function_name(&self, names: &[String; 2]) -> String {
        format!("{}_join_{}", names[0], names[1])
    }
    fn identifier(&self, name: &str) -> String {
        identifier(name, &KEYWORDS)
    }
}
