//! Scala's syntax for the fix as code: `org.apache.spark.sql.functions._`, `lit` for
//! booleans, integers (`5L` for a long) and strings, and Spark SQL literals through `expr` for
//! the other types. A string escapes `"` and `\` with a backslash, never as `\u0022`: Scala
//! 2.12 (Spark 3.5's) turns a unicode escape into its character before it reads the string.

use super::pyspark::{identifier, quoted_name};
use super::Syntax;
use crate::value::{KeyType, Value};

pub(crate) struct Scala;

const KEYWORDS: [&str; 40] = [
    "abstract",
    "case",
    "catch",
    "class",
    "def",
    "do",
    "else",
    "extends",
    "false",
    "final",
    "finally",
    "for",
    "forSome",
    "if",
    "implicit",
    "import",
    "lazy",
    "match",
    "new",
    "null",
    "object",
    "override",
    "package",
    "private",
    "protected",
    "return",
    "sealed",
    "super",
    "this",
    "throw",
    "trait",
    "try",
    "true",
    "type",
    "val",
    "var",
    "while",
    "with",
    "yield",
    "given",
];

/// A Scala string literal of `s`: printable ASCII as is, the usual escapes, every other
/// character as `\uXXXX` (UTF-16 units), so that the file is ASCII whatever the JVM's charset.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{:04x}", u));
                }
            }
        }
    }
    out.push('"');
    out
}

impl Syntax for Scala {
    fn comment(&self) -> &'static str {
        "//"
    }
    fn imports(&self) -> &'static str {
        "import org.apache.spark.sql.DataFrame\nimport org.apache.spark.sql.functions._\n"
    }
    fn string(&self, s: &str) -> String {
        string(s)
    }
    fn literal(&self, v: &Value, t: KeyType) -> String {
        match v {
            Value::Bool(b) => format!("lit({b})"),
            Value::Int(i) => format!("lit({i})"),
            Value::Long(l) => format!("lit({l}L)"),
            Value::Str(s) => format!("lit({})", string(s)),
            other => format!("expr({})", string(&crate::sql::literal(other, t))),
        }
    }
    fn int(&self, i: i64) -> String {
        format!("lit({i})")
    }
    fn col(&self, name: &str) -> String {
        format!("col({})", string(&quoted_name(name)))
    }
    fn col_of(&self, df: &str, name: &str) -> String {
        format!("{df}({})", string(&quoted_name(name)))
    }
    fn call(&self, f: &str, args: &[String]) -> String {
        format!("{f}({})", args.join(", "))
    }
    fn eq(&self, a: &str, b: &str) -> String {
        format!("({a} === {b})")
    }
    fn and(&self, parts: &[String]) -> String {
        match parts {
            [one] => one.clone(),
            _ => format!("({})", parts.join(" && ")),
        }
    }
    fn or(&self, parts: &[String]) -> String {
        match parts {
            [one] => one.clone(),
            _ => format!("({})", parts.join(" || ")),
        }
    }
    fn not(&self, x: &str) -> String {
        format!("!{x}")
    }
    fn is_null(&self, x: &str) -> String {
        format!("{x}.isNull")
    }
    fn is_not_null(&self, x: &str) -> String {
        format!("{x}.isNotNull")
    }
    fn isin(&self, x: &str, items: &[String]) -> String {
        format!("{x}.isin({})", items.join(", "))
    }
    fn false_(&self) -> String {
        "lit(false)".into()
    }
    fn names(&self, items: &[String]) -> String {
        format!("Seq({})", items.join(", "))
    }
    fn bind(&self, name: &str, value: &str) -> String {
        format!("val {name} = {value}")
    }
    fn open(&self, f: &str, names: &[String; 2], doc: &str, on: &str) -> Vec<String> {
        vec![
            format!("def {f}({}: DataFrame, {}: DataFrame): DataFrame = {{", names[0], names[1]),
            format!("    // {}", doc.replace(['\n', '\r'], " ")),
            format!("    def join(l: DataFrame, r: DataFrame, how: String): DataFrame = l.join(r, {on}, how)"),
        ]
    }
    fn close(&self, value: &str) -> Vec<String> {
        vec![format!("    {value}"), "}".into()]
    }
    fn function_name(&self, names: &[String; 2]) -> String {
        let mut out = String::new();
        for (i, part) in [names[0].as_str(), "join", names[1].as_str()].iter().enumerate() {
            for (j, w) in part.split('_').filter(|w| !w.is_empty()).enumerate() {
                let mut c = w.chars();
                if i == 0 && j == 0 {
                    out.push_str(w);
                } else if let Some(first) = c.next() {
                    out.push(first.to_ascii_uppercase());
                    out.push_str(c.as_str());
                }
            }
        }
        identifier(&out, &KEYWORDS)
    }
    fn identifier(&self, name: &str) -> String {
        identifier(name, &KEYWORDS)
    }
}
