//! The join a stage runs, read from the SQL execution's physical plan in the log
//! (`sparkPlanInfo`): the join node whose metrics the stage updated, its keys and join type,
//! and the tables its scans read.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Default, Serialize)]
pub struct JoinInfo {
    /// SortMergeJoin, ShuffledHashJoin, BroadcastHashJoin, ...
    pub operator: String,
    /// Spark's name: Inner, LeftOuter, RightOuter, FullOuter, LeftSemi, LeftAnti.
    pub join_type: String,
    pub left_keys: Vec<String>,
    pub right_keys: Vec<String>,
    /// A path (or a catalog table name) each side scans, when the plan says.
    pub left_table: Option<String>,
    pub right_table: Option<String>,
    /// What feeds each side between its scan and the join.
    #[serde(skip_serializing_if = "JoinSide::is_empty")]
    pub left_side: JoinSide,
    #[serde(skip_serializing_if = "JoinSide::is_empty")]
    pub right_side: JoinSide,
}

/// What feeds one side of a join, read on the path from the join down to the scan its key
/// comes from.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct JoinSide {
    /// The conditions Spark applies on the way (its `Filter` nodes, the scan's partition
    /// filters), as the plan prints them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<String>,
    /// The operators on the way that do more than filter rows (another join, an aggregate).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub through: Vec<String>,
    /// The scan's output attributes (`name#id`) and its read schema (`struct<...>`).
    #[serde(skip)]
    pub columns: Vec<String>,
    #[serde(skip)]
    pub schema: String,
}

impl JoinSide {
    fn is_empty(&self) -> bool {
        self.filters.is_empty() && self.through.is_empty()
    }
}

/// Operators that pass a side's rows on as they are, or only drop some (`Filter`).
const PASS_THROUGH: [&str; 15] = [
    "Sort",
    "Exchange",
    "Project",
    "Filter",
    "ColumnarToRow",
    "RowToColumnar",
    "InputAdapter",
    "WholeStageCodegen",
    "AQEShuffleRead",
    "CustomShuffleReader",
    "ShuffleQueryStage",
    "BroadcastExchange",
    "BroadcastQueryStage",
    "ReusedExchange",
    "Coalesce",
];

impl JoinInfo {
    /// skewjoin's `--how` for the join type.
    pub fn how(&self) -> &'static str {
        match self.join_type.as_str() {
            "LeftOuter" => "left",
            "RightOuter" => "right",
            "FullOuter" => "full",
            "LeftSemi" => "semi",
            "LeftAnti" => "anti",
            _ => "inner",
        }
    }
}

fn children(n: &Value) -> impl Iterator<Item = &Value> {
    n.get("children").and_then(|c| c.as_array()).into_iter().flatten()
}

fn name(n: &Value) -> &str {
    n.get("nodeName").and_then(|x| x.as_str()).unwrap_or("")
}

fn simple(n: &Value) -> &str {
    n.get("simpleString").and_then(|x| x.as_str()).unwrap_or("")
}

fn metric_ids(n: &Value) -> impl Iterator<Item = i64> + '_ {
    n.get("metrics")
        .and_then(|m| m.as_array())
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("accumulatorId").and_then(|x| x.as_i64()))
}

fn walk<'a>(n: &'a Value, out: &mut Vec<&'a Value>) {
    out.push(n);
    for c in children(n) {
        walk(c, out);
    }
}

const JOINS: [&str; 3] = ["SortMergeJoin", "ShuffledHashJoin", "BroadcastHashJoin"];

/// Does the plan run a Python UDF (rows sent to Python workers)?
pub fn python_udf(plan: &Value) -> Option<String> {
    let mut all = Vec::new();
    walk(plan, &mut all);
    all.iter()
        .map(|n| name(n))
        .find(|n| {
            n.contains("EvalPython")
                || n.contains("FlatMapGroupsInPandas")
                || n.contains("MapInPandas")
                || n.contains("PythonUDF")
        })
        .map(str::to_string)
}

/// The join of `plan` that the stage with accumulators `accums` ran (its metrics were
/// updated there); if none is found that way, the plan's only shuffled join.
pub fn join_of_stage(plan: &Value, accums: &HashSet<i64>) -> Option<JoinInfo> {
    let mut all = Vec::new();
    walk(plan, &mut all);
    let joins: Vec<&Value> =
        all.into_iter().filter(|n| JOINS.iter().any(|j| name(n).starts_with(j))).collect();
    let hit = joins.iter().find(|n| metric_ids(n).any(|id| accums.contains(&id))).copied();
    let node = match hit {
        Some(n) => n,
        None => {
            let shuffled: Vec<&&Value> =
                joins.iter().filter(|n| !name(n).starts_with("Broadcast")).collect();
            if shuffled.len() == 1 {
                shuffled[0]
            } else {
                return None;
            }
        }
    };
    parse_join(node)
}

/// `[a#1, b#2L]` -> ["a#1", "b#2L"]
fn bracket_list(s: &str) -> Option<(Vec<String>, &str)> {
    let s = s.trim_start();
    let s = s.strip_prefix('[')?;
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '(' => depth += 1,
            ')' => depth -= 1,
            ']' if depth == 0 => {
                let inner = &s[..i];
                let items = split_top(inner);
                return Some((items, &s[i + 1..]));
            }
            ']' => depth -= 1,
            _ => {}
        }
    }
    None
}

fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// `title_id#12` -> `title_id`
pub fn attr_name(a: &str) -> String {
    match a.rfind('#') {
        Some(i) if a[i + 1..].chars().all(|c| c.is_ascii_alphanumeric()) => a[..i].to_string(),
        _ => a.to_string(),
    }
}

fn parse_join(node: &Value) -> Option<JoinInfo> {
    let s = simple(node);
    let op = name(node).split_whitespace().next().unwrap_or("").to_string();
    let rest = s.strip_prefix(op.as_str()).unwrap_or(s);
    let (left_keys, rest) = bracket_list(rest)?;
    let rest = rest.trim_start().strip_prefix(',').unwrap_or(rest);
    let (right_keys, rest) = bracket_list(rest)?;
    let join_type = rest
        .trim_start()
        .trim_start_matches(',')
        .split(|c: char| c == ',' || c.is_whitespace())
        .find(|x| !x.is_empty())
        .unwrap_or("Inner")
        .to_string();
    let kids: Vec<&Value> = children(node).collect();
    let scan =
        |side: usize, keys: &[String]| kids.get(side).and_then(|c| Some((*c, scan_for(c, keys)?)));
    let (l, r) = (scan(0, &left_keys), scan(1, &right_keys));
    Some(JoinInfo {
        left_table: l.and_then(|(_, s)| table_of_scan(s)),
        right_table: r.and_then(|(_, s)| table_of_scan(s)),
        left_side: l.map(|(side, s)| side_path(side, s)).unwrap_or_default(),
        right_side: r.map(|(side, s)| side_path(side, s)).unwrap_or_default(),
        operator: op,
        join_type,
        left_keys,
        right_keys,
    })
}

/// The scan a join side reads its key from: the scan that outputs the key attribute, or the
/// only scan under that side.
fn scan_for<'a>(side: &'a Value, keys: &[String]) -> Option<&'a Value> {
    let mut all = Vec::new();
    walk(side, &mut all);
    let scans: Vec<&Value> = all.into_iter().filter(|n| is_scan(n)).collect();
    let first = keys.first()?;
    scans
        .iter()
        .find(|n| scan_output(n).iter().any(|o| o == first))
        .or_else(|| {
            scans.iter().find(|n| scan_output(n).iter().any(|o| attr_name(o) == attr_name(first)))
        })
        .or(if scans.len() == 1 { scans.first() } else { None })
        .copied()
}

fn is_scan(n: &Value) -> bool {
    name(n).starts_with("Scan") || simple(n).starts_with("FileScan")
}

/// A scan's output attributes: `FileScan parquet db.t[a#1,b#2] ...` -> [a#1, b#2].
fn scan_output(n: &Value) -> Vec<String> {
    let s = simple(n);
    s.find('[').and_then(|i| bracket_list(&s[i..])).map(|x| x.0).unwrap_or_default()
}

/// The filters and row-changing operators on the way from a join's `side` down to `scan`.
fn side_path(side: &Value, scan: &Value) -> JoinSide {
    let mut path = Vec::new();
    if !path_to(side, scan, &mut path) {
        return JoinSide::default();
    }
    let mut out = JoinSide { columns: scan_output(scan), ..JoinSide::default() };
    for n in path {
        let op = name(n).split_whitespace().next().unwrap_or("");
        if std::ptr::eq(n, scan) {
            let meta = |k: &str| n.get("metadata").and_then(|m| m.get(k)).and_then(|x| x.as_str());
            out.schema = meta("ReadSchema").unwrap_or("").to_string();
            if let Some((parts, _)) = meta("PartitionFilters").and_then(bracket_list) {
                out.filters.extend(parts);
            }
        } else if op == "Filter" {
            out.filters.push(simple(n).strip_prefix("Filter").unwrap_or("").trim().to_string());
        } else if !PASS_THROUGH.contains(&op) {
            out.through.push(op.to_string());
        }
    }
    out
}

/// Pushes the nodes from `n` down to `target` onto `path`; false when `target` is not under `n`.
fn path_to<'a>(n: &'a Value, target: &Value, path: &mut Vec<&'a Value>) -> bool {
    path.push(n);
    if std::ptr::eq(n, target) || children(n).any(|c| path_to(c, target, path)) {
        return true;
    }
    path.pop();
    false
}

/// A scan of a plan: the catalog table it reads (`spark_catalog.db.t`, when the plan names
/// one) and the files' location.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScanInfo {
    pub name: Option<String>,
    pub location: Option<String>,
    /// The accumulators of its `number of files read` and `size of files read` metrics.
    pub files_metric: Option<i64>,
    pub bytes_metric: Option<i64>,
    /// It reads only some partitions (partition filters), or not: then it reads every file.
    pub pruned: bool,
}

/// Every file scan of `plan`.
pub fn scans(plan: &Value) -> Vec<ScanInfo> {
    let mut all = Vec::new();
    walk(plan, &mut all);
    all.into_iter()
        .filter(|n| is_scan(n))
        .map(|n| {
            let parts: Vec<&str> = name(n).split_whitespace().collect();
            let location =
                table_of_scan(n).filter(|t| parts.len() < 3 || *t != parts[2..].join(" "));
            let metric = |m: &str| {
                n.get("metrics")
                    .and_then(|x| x.as_array())?
                    .iter()
                    .find(|x| x.get("name").and_then(|v| v.as_str()) == Some(m))?
                    .get("accumulatorId")?
                    .as_i64()
            };
            let filters = n
                .get("metadata")
                .and_then(|m| m.get("PartitionFilters"))
                .and_then(|x| x.as_str())
                .unwrap_or("[]");
            ScanInfo {
                name: (parts.len() >= 3).then(|| parts[2..].join(" ")),
                location,
                files_metric: metric("number of files read"),
                bytes_metric: metric("size of files read"),
                pruned: filters.trim() != "[]",
            }
        })
        .collect()
}

fn table_of_scan(n: &Value) -> Option<String> {
    let loc = n
        .get("metadata")
        .and_then(|m| m.get("Location"))
        .and_then(|x| x.as_str())
        .map(str::to_string)
        .or_else(|| {
            let s = simple(n);
            s.find("Location: ").map(|i| s[i + 10..].to_string())
        });
    if let Some(loc) = loc {
        if let Some(i) = loc.find('[') {
            let inner = &loc[i + 1..];
            let end = inner.find([']', ',']).unwrap_or(inner.len());
            let p = inner[..end].trim();
            let p = p.strip_prefix("file://").or_else(|| p.strip_prefix("file:")).unwrap_or(p);
            if !p.is_empty() {
                return Some(p.to_string());
            }
        }
    }
    // `Scan parquet spark_catalog.db.table`
    let nm = name(n);
    let parts: Vec<&str> = nm.split_whitespace().collect();
    (parts.len() >= 3).then(|| parts[2..].join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_keys_type_and_tables() {
        let plan = serde_json::json!({
        "nodeName": "SortMergeJoin", "simpleString": "SortMergeJoin [title_id#1], [title_id#5], LeftOuter",
        "metrics": [{"name": "number of output rows", "accumulatorId": 77}],
        "children": [
            {"nodeName": "Sort", "simpleString": "Sort [title_id#1 ASC NULLS FIRST], false, 0", "children": [
                {"nodeName": "Scan parquet ", "simpleString": "FileScan parquet [event_id#0L,title_id#1] Batched: true, Location: InMemoryFileIndex(1 paths)[file:/data/events.parquet], ReadSchema: struct<>",
                 "metadata": {"Location": "InMemoryFileIndex(1 paths)[file:/data/events.parquet]"}, "children": []}]},
            {"nodeName": "Scan parquet spark_catalog.default.titles", "simpleString": "FileScan parquet spark_catalog.default.titles[title_id#5,name#6] Batched: true", "children": []}
        ]});
        let j = join_of_stage(&plan, &HashSet::from([77])).unwrap();
        assert_eq!(
            (j.operator.as_str(), j.join_type.as_str(), j.how()),
            ("SortMergeJoin", "LeftOuter", "left")
        );
        assert_eq!(j.left_keys, vec!["title_id#1"]);
        assert_eq!(j.left_table.as_deref(), Some("/data/events.parquet"));
        assert_eq!(j.right_table.as_deref(), Some("spark_catalog.default.titles"));
        assert_eq!(attr_name("event_id#0L"), "event_id");
        assert_eq!(
            j.left_side,
            JoinSide {
                columns: vec!["event_id#0L".into(), "title_id#1".into()],
                ..JoinSide::default()
            }
        );
    }

    #[test]
    fn each_side_carries_the_filters_and_operators_between_its_scan_and_the_join() {
        let scan = |name: &str, out: &str, parts: &str| {
            serde_json::json!({"nodeName": format!("Scan parquet {name}"), "simpleString": format!("FileScan parquet {name}[{out}] Batched: true"),
                "metadata": {"Location": "InMemoryFileIndex(1 paths)[file:/d/t]", "ReadSchema": "struct<k:string,v:int>", "PartitionFilters": parts}, "children": []})
        };
        let plan = serde_json::json!({
        "nodeName": "SortMergeJoin", "simpleString": "SortMergeJoin [k#1], [k#5], Inner",
        "children": [
            {"nodeName": "Sort", "simpleString": "Sort [k#1 ASC NULLS FIRST], false, 0", "children": [
                {"nodeName": "Filter", "simpleString": "Filter (isnotnull(k#1) AND (v#2 >= 100))", "children": [
                    {"nodeName": "ColumnarToRow", "simpleString": "ColumnarToRow", "children": [scan("db.a", "k#1,v#2", "[(dt#3 = 2026-10-01)]")]}]}]},
            {"nodeName": "HashAggregate", "simpleString": "HashAggregate(keys=[k#5], functions=[])", "children": [scan("db.b", "k#5", "[]")]}
        ]});
        let j = join_of_stage(&plan, &HashSet::new()).unwrap();
        assert_eq!(
            j.left_side.filters,
            vec!["(isnotnull(k#1) AND (v#2 >= 100))", "(dt#3 = 2026-10-01)"]
        );
        assert_eq!(
            (j.left_side.schema.as_str(), j.left_side.through.len()),
            ("struct<k:string,v:int>", 0)
        );
        assert_eq!(
            (j.right_side.filters.len(), j.right_side.through.clone()),
            (0, vec!["HashAggregate".to_string()])
        );
        assert_eq!(j.right_table.as_deref(), Some("/d/t"));
    }
}
