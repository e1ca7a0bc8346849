//! Why a join (or a statement) is left as written: one value per reason, with the data its
//! message needs. The text report and the JSON (`unchanged_joins[].reason`) both render it
//! with `Display`.

use std::fmt;

use serde::{Serialize, Serializer};

/// Why the rewrite left a join or a statement as written.
#[derive(Clone, Debug, PartialEq)]
pub enum LeftAlone {
    /// A statement other than a query, INSERT ... SELECT or CREATE TABLE ... AS SELECT.
    NotAQuery,
    /// The SELECT's `*` covers columns the tool cannot list, so its joins are put back.
    StarUnlisted,
    /// `a JOIN b ... JOIN c USING (k)`: the later merged columns are not rewritten.
    UsingInChain,
    /// The left input cannot be traced to a table.
    LeftInput(Untraced),
    /// The right input cannot be traced to a table.
    RightInput(Untraced),
    /// The joins before this one cannot be made one input, for the reason inside.
    ChainUntraced(Box<LeftAlone>),
    /// A join before this one has an input that is not a traced table.
    InputBeforeUntraced,
    /// A FULL JOIN ... USING before this one: its merged key is an expression.
    FullUsingBefore,
    /// A NATURAL JOIN before this one.
    NaturalBefore,
    /// A CROSS JOIN has no key.
    CrossJoin,
    /// A join operator the rewrite does not handle, as sqlparser shows it.
    UnsupportedOperator(String),
    /// Both inputs answer to the same name.
    SameName,
    /// A USING column that one of the inputs does not have.
    UsingNotOnBothSides(String),
    /// NATURAL JOIN: the keys are implicit.
    Natural,
    /// A join without ON or USING.
    NoCondition,
    /// ON has no equality between a column of each side.
    NonEqui,
    /// A key of `input` is an expression, not a column of its table.
    KeyExpression { key: String, input: String },
    /// The keys of `input` come from two base tables.
    KeysFromTwoTables { input: String, first: String, second: String },
    /// The base table cannot read a key column: the table's message.
    KeyColumn(String),
    /// The key types of the two sides are hashed differently by Spark: the planner's message.
    KeyTypes(String),
    /// Nothing is hot: the planner's advice on what to do next.
    NothingHot(String),
    /// Hot keys, but none can be moved: each key as shown and why it stays.
    NoneMovable(Vec<(String, String)>),
    /// No hot key and no advice.
    NoHotKey,
    /// Spark broadcasts `input` by itself (its files are `bytes`, within `threshold`).
    /// `pruned`: `bytes` is Spark's estimate for the columns the query reads, not the files'.
    SparkBroadcasts { input: String, bytes: u64, pruned: bool, threshold: u64 },
    /// The query's hint (as written) has Spark broadcast `input`.
    HintBroadcasts { input: String, hint: String },
    /// The query's SHUFFLE_REPLICATE_NL hint (as written): a cartesian product, no key shuffle.
    HintReplicateNl(String),
    /// A comma join with LATERAL VIEW: not written as explicit joins.
    CommaLateralView,
    /// A comma join whose later FROM item has joins of its own (by its name).
    CommaItemWithJoins(String),
    /// A comma join where this FROM item has no `col = col` with the others: a cross join.
    CommaNoEquality(String),
    /// A comma join that would be reordered under `SELECT *`.
    CommaStarReordered,
    /// `x NOT IN (subquery)`: Spark's null-aware anti join, with no shuffle on the key.
    NullAwareAnti,
    /// An IN or EXISTS subquery of WHERE that stays there: why it is not written as a join.
    SubqueryNotJoined(String),
    /// Hot keys could be moved, but the rewrite is not predicted faster by the margin: AQE
    /// splits them, the hot task is short, or the rewrite reads more than it saves.
    NotFaster(crate::plan::verdict::Verdict),
    /// Rewriting it would add `added` bytes of SQL to what the rewrites before added, over the
    /// bound of `limit` (the query's SQL as written plus a few KB per hot key moved).
    SqlTooLarge { added: usize, limit: usize, branches: usize },
    /// Rewritten, its plan would read `table` `reads` times (Spark inlines each copy of a CTE),
    /// over `limit`: Spark's optimiser would take minutes over it.
    PlanTooLarge { table: String, reads: usize, limit: usize },
}

/// Why an input of a join (a FROM item) cannot be traced to a `--table`.
#[derive(Clone, Debug, PartialEq)]
pub enum Untraced {
    TooDeep,
    AliasWithColumns,
    Tablesample,
    Versioned,
    ByPartition,
    UnreadableName,
    /// A CTE that cannot be traced, by its name.
    InCte {
        name: String,
        why: Box<Untraced>,
    },
    /// A table that was not given with `--table`, as written.
    NotGiven(String),
    SubqueryColumnAliases,
    SubqueryWithoutAlias,
    /// Neither a table nor a subquery: the start of the input as written.
    NotATable(String),
    NotPlainSelect,
    NotRowsOfOneTable,
    /// A subquery that aggregates in a way the counts cannot follow: what it does.
    Aggregates(String),
    UnnamedExpression,
    UnreadableItem,
}

impl LeftAlone {
    /// The stable code of the reason in the JSON (`unchanged_joins[].code`, `joins[].code`): the
    /// variant's name, with the untraced input's own code after `left_input_`/`right_input_`,
    /// and a margin's verdict code (`aqe_splits_it`, `not_material`, ...) for `NotFaster`.
    pub fn code(&self) -> String {
        use LeftAlone::*;
        let code = match self {
            NotAQuery => "not_a_query",
            StarUnlisted => "star_unlisted",
            UsingInChain => "using_in_chain",
            LeftInput(why) => return format!("left_input_{}", why.code()),
            RightInput(why) => return format!("right_input_{}", why.code()),
            ChainUntraced(_) => "chain_untraced",
            InputBeforeUntraced => "input_before_untraced",
            FullUsingBefore => "full_using_before",
            NaturalBefore => "natural_before",
            CrossJoin => "cross_join",
            UnsupportedOperator(_) => "unsupported_operator",
            SameName => "same_name",
            UsingNotOnBothSides(_) => "using_not_on_both_sides",
            Natural => "natural_join",
            NoCondition => "no_condition",
            NonEqui => "non_equi",
            KeyExpression { .. } => "key_expression",
            KeysFromTwoTables { .. } => "keys_from_two_tables",
            KeyColumn(_) => "key_column",
            KeyTypes(_) => "key_types",
            NothingHot(_) => "nothing_hot",
            NoneMovable(_) => "none_movable",
            NoHotKey => "no_hot_key",
            SparkBroadcasts { .. } => "spark_broadcasts_side",
            HintBroadcasts { .. } => "hint_broadcasts_side",
            HintReplicateNl(_) => "hint_replicate_nl",
            CommaLateralView => "comma_lateral_view",
            CommaItemWithJoins(_) => "comma_item_with_joins",
            CommaNoEquality(_) => "comma_no_equality",
            CommaStarReordered => "comma_star_reordered",
            NullAwareAnti => "null_aware_anti",
            SubqueryNotJoined(_) => "subquery_not_joined",
            NotFaster(v) => v.code(),
            SqlTooLarge { .. } => "sql_too_large",
            PlanTooLarge { .. } => "plan_too_large",
        };
        code.to_string()
    }
}

impl Untraced {
    /// The stable code of why an input is not traced (see `LeftAlone::code`).
    pub fn code(&self) -> &'static str {
        use Untraced::*;
        match self {
            TooDeep => "too_deep",
            AliasWithColumns => "alias_with_columns",
            Tablesample => "tablesample",
            Versioned => "versioned",
            ByPartition => "by_partition",
            UnreadableName => "unreadable_name",
            InCte { .. } => "in_cte",
            NotGiven(_) => "not_given",
            SubqueryColumnAliases => "subquery_column_aliases",
            SubqueryWithoutAlias => "subquery_without_alias",
            NotATable(_) => "not_a_table",
            NotPlainSelect => "not_plain_select",
            NotRowsOfOneTable => "not_rows_of_one_table",
            Aggregates(_) => "aggregates",
            UnnamedExpression => "unnamed_expression",
            UnreadableItem => "unreadable_item",
        }
    }
}

impl fmt::Display for LeftAlone {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        use LeftAlone::*;
        match self {
            NotAQuery => f.write_str("not a query, an INSERT ... SELECT or a CREATE TABLE ... AS SELECT"),
            StarUnlisted => f.write_str(
                "the SELECT's `*` covers an input or a USING/NATURAL join whose columns the tool cannot list: left as written (name the columns to have it rewritten)",
            ),
            UsingInChain => f.write_str("a chain of joins with USING or NATURAL after its first join: the merged columns of the later joins are not rewritten"),
            LeftInput(why) => write!(f, "left input: {why}"),
            RightInput(why) => write!(f, "right input: {why}"),
            ChainUntraced(why) => write!(f, "its left input, the joins before it, cannot be traced: {why}"),
            InputBeforeUntraced => f.write_str("an input before it is not a traced table"),
            FullUsingBefore => f.write_str("a FULL JOIN ... USING before it (its merged key is an expression)"),
            NaturalBefore => f.write_str("a NATURAL JOIN before it"),
            CrossJoin => f.write_str("a CROSS JOIN has no key to skew on: left alone"),
            UnsupportedOperator(op) => f.write_str(&format!("join operator {op} is not supported").chars().take(120).collect::<String>()),
            SameName => f.write_str("both inputs go by the same name"),
            UsingNotOnBothSides(name) => write!(f, "USING column {name} is not on both sides"),
            Natural => f.write_str("NATURAL JOIN: the keys are implicit; write them out with USING or ON"),
            NoCondition => f.write_str("no join condition"),
            NonEqui => f.write_str("no equality between a column of each side in ON (a non-equi join)"),
            KeyExpression { key, input } => write!(f, "key {key} of {input} is an expression the tool cannot trace to a table column"),
            KeysFromTwoTables { input, first, second } => write!(f, "the keys of {input} come from two tables ({first} and {second})"),
            KeyColumn(message) | KeyTypes(message) | NothingHot(message) => f.write_str(message),
            NoneMovable(keys) => {
                let keys: Vec<String> = keys.iter().map(|(key, why)| format!("{key}: {why}")).collect();
                write!(f, "hot keys, but none can be moved safely: {}", keys.join("; "))
            }
            NoHotKey => f.write_str("no hot key"),
            SparkBroadcasts { input, bytes, pruned, threshold } => write!(
                f,
                "Spark broadcasts {input} by itself ({} {}, within the {} broadcast threshold): a broadcast hash join, no shuffle, nothing to fix",
                crate::format::human(*bytes),
                if *pruned { "as Spark estimates it for the columns the query reads" } else { "on disk" },
                crate::format::human(*threshold)
            ),
            HintBroadcasts { input, hint } => {
                write!(f, "the query's hint {hint} has Spark broadcast {input}: a broadcast hash join, no shuffle, nothing to fix")
            }
            HintReplicateNl(hint) => {
                write!(f, "the query's hint {hint} has Spark join every pair of rows (a cartesian product), with no shuffle on the key: nothing to fix")
            }
            CommaLateralView => f.write_str("a comma join with LATERAL VIEW is not written as explicit joins"),
            CommaItemWithJoins(name) => write!(f, "a comma join whose item {name} has joins of its own: not written as explicit joins"),
            CommaNoEquality(name) => write!(f, "a comma join: {name} has no equality between its columns and another item's in WHERE (a cross join)"),
            CommaStarReordered => f.write_str("a comma join whose items would be joined out of order under SELECT * (its columns follow the FROM order)"),
            NullAwareAnti => f.write_str(
                "NOT IN (subquery): Spark runs it as a null-aware anti join, which broadcasts the subquery (or loops over it): no shuffle on the key, nothing to fix",
            ),
            SubqueryNotJoined(why) => write!(f, "a subquery of WHERE that Spark runs as a join, left in WHERE: {why}"),
            NotFaster(v) => write!(f, "{v}"),
            SqlTooLarge { added, limit, branches } => write!(
                f,
                "rewriting it would repeat its inputs (the joins before it among them) in each of its {branches} branches: {} more SQL, over the bound of {} (16 KB and 8 KB a hot key moved); rewrite the joins before it into a view or a CTE",
                crate::format::human(*added as u64),
                crate::format::human(*limit as u64)
            ),
            PlanTooLarge { table, reads, limit } => write!(
                f,
                "rewritten, its plan would read {table} {reads} times (Spark inlines every copy of the joins before it in each branch), over the bound of {limit}: Spark's optimiser takes minutes over such a plan"
            ),
        }
    }
}

impl fmt::Display for Untraced {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        use Untraced::*;
        match self {
            TooDeep => f.write_str("too many nested subqueries to trace"),
            AliasWithColumns => f.write_str("a table alias with column names"),
            Tablesample => f.write_str("a TABLESAMPLE input"),
            Versioned => f.write_str("a table read at a version or time"),
            ByPartition => f.write_str("a table read by partition"),
            UnreadableName => f.write_str("a table name the tool cannot read"),
            InCte { name, why } => write!(f, "CTE {name}: {why}"),
            NotGiven(name) => write!(f, "table {name} was not given with --table"),
            SubqueryColumnAliases => f.write_str("a subquery with column aliases"),
            SubqueryWithoutAlias => f.write_str("a subquery without an alias"),
            NotATable(input) => write!(f, "the input {input} is not a table or a subquery of one"),
            NotPlainSelect => f.write_str("a subquery that is not a plain SELECT"),
            NotRowsOfOneTable => f.write_str("a subquery that joins, limits or has LATERAL VIEW: its key values are not a base table's"),
            Aggregates(what) => write!(f, "a subquery that aggregates ({what}): its groups cannot be counted from the table's columns"),
            UnnamedExpression => f.write_str("a subquery with an unnamed expression in its select list"),
            UnreadableItem => f.write_str("a subquery with a select item the tool cannot read"),
        }
    }
}

/// In JSON, a reason is its message.
impl Serialize for LeftAlone {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Why a window or aggregate stage was not planned or not rewritten: a stable code (the JSON's
/// `windows[].code`) and the sentence the reports give.
#[derive(Clone, Debug, PartialEq)]
pub struct StageWhy {
    pub code: &'static str,
    pub text: String,
}

impl StageWhy {
    pub fn new(code: &'static str, text: impl Into<String>) -> StageWhy {
        StageWhy { code, text: text.into() }
    }
}

impl fmt::Display for StageWhy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
