//! The tables a run names, opened where they are counted: their files read here, or as views
//! of the user's Spark session (`--engine spark`, `fix --count-on-spark`); and the counting
//! engine that goes with them.

use std::collections::HashMap;
use std::sync::Arc;

use crate::count::EngineRef;
use crate::error::Result;
use crate::spark::{Session, SparkEngine};
use crate::stats::RunStats;
use crate::table::Table;

/// The named tables, opened (a name given twice keeps its last table): read here, or by the
/// Spark session.
pub fn tables(
    named: &[(String, String)],
    session: Option<&Arc<Session>>,
    stats: &Arc<RunStats>,
) -> Result<HashMap<String, Table>> {
    let mut tables = HashMap::new();
    for (name, path) in named {
        let t = match session {
            Some(s) => crate::spark::open(s, path)?,
            None => Table::open_in(std::slice::from_ref(path), None, stats)?,
        };
        tables.insert(name.clone(), t);
    }
    Ok(tables)
}

/// Where the counts are made: by the Spark session that opened the tables, or here.
pub fn engine(session: Option<&Arc<Session>>) -> EngineRef {
    match session {
        Some(s) => EngineRef::new(SparkEngine::new(s.clone())),
        None => Default::default(),
    }
}
