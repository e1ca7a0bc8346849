//! The plan as DataFrame code, PySpark or Scala, to paste in place of the user's join
//! (`--emit pyspark|scala`). Built from the `Plan`, the value the SQL of `emit` is written
//! from, not from that SQL's text: `branches` lists the same parts of the split, in the same
//! order (`strategy::BRANCH_ORDER`): the rest, the hot keys' joins, the salted pieces, the
//! unmatched rows of decomposed keys, the NULL keys that skip the join. Each part is the join
//! as the user wrote it (one `join(l, r, how)` helper: `on` as a list of names, or as
//! equalities) over the two inputs filtered by key, so every part has the join's own columns
//! in its own order, and `union` (by position, as UNION ALL) puts them together. The hot
//! values go in as literals, under a header that says when they were counted and their shares.
//! `branches.rs` lists the parts, `write.rs` writes them, `pyspark.rs` and `scala.rs` hold each
//! language's syntax; this file the entry points and the syntax each language gives.

mod branches;
mod pyspark;
mod scala;
mod write;

use super::model::{JoinType, Plan};
use crate::value::{KeyType, Value};
use write::render;

/// The language of the fix as code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    PySpark,
    Scala,
}

/// What the code needs beside the plan: what the inputs are called in the user's code, how
/// the user wrote the keys, when the counts were made, and where the join is.
pub struct CodeJoin<'a> {
    pub plan: &'a Plan,
    /// The DataFrames' names (made identifiers where they are not).
    pub names: [String; 2],
    /// `on` as a list of column names (a USING join: one merged column per key) rather than as
    /// equalities of the two sides' columns.
    pub using: bool,
    /// The date the keys were counted, `YYYY-MM-DD`.
    pub counted_on: String,
    /// Where the join is in the user's code (`job.py:42`), when known.
    pub call_site: Option<String>,
}

impl CodeJoin<'_> {
    /// The usual case: `on` as names when both sides' keys have the same names.
    pub fn new(plan: &Plan, names: [String; 2], counted_on: String) -> CodeJoin<'_> {
        let using =
            plan.left.keys.iter().zip(&plan.right.keys).all(|(a, b)| a.eq_ignore_ascii_case(b));
        CodeJoin { plan, names, using, counted_on, call_site: None }
    }
}

/// What a join's fix as code needs, kept to be written later (by `rewrite` and `fix`, for each
/// join they rewrite): the plan with the keys as the query names them, the inputs' names, the
/// way the keys were written; or why the join cannot be written as DataFrame code.
#[derive(Debug, Clone)]
pub struct CodeParts {
    pub plan: Plan,
    pub names: [String; 2],
    pub using: bool,
    /// Why the code is not written (predicates in ON beyond the key equalities).
    pub unsupported: Option<String>,
}

impl CodeParts {
    /// The join as code in `lang`, or a comment saying why there is none; `call_site` where the
    /// join is in the user's code.
    pub fn emit(&self, lang: Language, counted_on: &str, call_site: Option<&str>) -> String {
        if let Some(why) = &self.unsupported {
            let c = match lang {
                Language::PySpark => "#",
                Language::Scala => "//",
            };
            return format!(
                "{c} skewjoin: {} JOIN {}: not written as DataFrame code: {why}\n",
                self.names[0], self.names[1]
            );
        }
        let j = CodeJoin {
            plan: &self.plan,
            names: self.names.clone(),
            using: self.using,
            counted_on: counted_on.to_string(),
            call_site: call_site.map(str::to_string),
        };
        emit(&j, lang)
    }
}

/// The join as code in `lang`: imports, a function of the two inputs, and the line that calls
/// it in place of the join.
pub fn emit(j: &CodeJoin, lang: Language) -> String {
    match lang {
        Language::PySpark => render(j, &pyspark::PySpark),
        Language::Scala => render(j, &scala::Scala),
    }
}

/// Today's date (UTC), as the code's header gives the counts'.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Value::date_string((secs / 86_400) as i32)
}

/// The pieces of a language: its expressions, statements and the function around them.
pub(crate) trait Syntax {
    /// The start of a line comment.
    fn comment(&self) -> &'static str;
    /// The imports the code needs.
    fn imports(&self) -> &'static str;
    /// A string literal.
    fn string(&self, s: &str) -> String;
    /// A key value as a literal of its column's type.
    fn literal(&self, v: &Value, t: KeyType) -> String;
    /// An integer literal column.
    fn int(&self, i: i64) -> String;
    /// A column of the one DataFrame an expression reads.
    fn col(&self, name: &str) -> String;
    /// A column of a named DataFrame (in a join condition).
    fn col_of(&self, df: &str, name: &str) -> String;
    /// A function of `functions`.
    fn call(&self, f: &str, args: &[String]) -> String;
    fn eq(&self, a: &str, b: &str) -> String;
    fn and(&self, parts: &[String]) -> String;
    fn or(&self, parts: &[String]) -> String;
    fn not(&self, x: &str) -> String;
    fn is_null(&self, x: &str) -> String;
    fn is_not_null(&self, x: &str) -> String;
    fn isin(&self, x: &str, items: &[String]) -> String;
    fn false_(&self) -> String;
    /// A list of strings (the names `on` takes).
    fn names(&self, items: &[String]) -> String;
    /// `name = value` as a statement.
    fn bind(&self, name: &str, value: &str) -> String;
    /// The function's first line and the join helper; `on` is the helper's join condition
    /// over `l` and `r`.
    fn open(&self, f: &str, names: &[String; 2], doc: &str, on: &str) -> Vec<String>;
    /// The function's last lines (indented as they go): the value it returns, and its end.
    fn close(&self, value: &str) -> Vec<String>;
    /// The function's name for two inputs.
    fn function_name(&self, names: &[String; 2]) -> String;
    /// An identifier made of `name`.
    fn identifier(&self, name: &str) -> String;
}

/// `how` as `DataFrame.join` spells it.
pub fn join_how(how: JoinType) -> &'static str {
    match how {
        JoinType::Inner => "inner",
        JoinType::Left => "left",
        JoinType::Right => "right",
        JoinType::Full => "full",
        JoinType::Semi => "left_semi",
        JoinType::Anti => "left_anti",
    }
}

#[cfg(test)]
mod tests;
