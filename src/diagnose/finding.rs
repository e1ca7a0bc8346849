//! What a check says: a suspect confirmed or ruled out with its numbers (`Check`), and for a
//! confirmed one the finding (`Finding`: evidence, the one fix, its cost, the measurement that
//! proves it), each with its stable `Kind` (the JSON's `kind`).

use serde::Serialize;

use super::plan::JoinInfo;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    InputGrowth,
    HotKey,
    TooFewPartitions,
    TinyTasks,
    ShuffleVolume,
    MemoryPressure,
    SlowCode,
    PlanningGap,
    DriverTime,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::InputGrowth => "input_growth",
            Kind::HotKey => "hot_key",
            Kind::TooFewPartitions => "too_few_partitions",
            Kind::TinyTasks => "tiny_tasks",
            Kind::ShuffleVolume => "shuffle_volume",
            Kind::MemoryPressure => "memory_pressure",
            Kind::SlowCode => "slow_code",
            Kind::PlanningGap => "planning_gap",
            Kind::DriverTime => "driver_time",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub stage_id: Option<i64>,
    pub evidence: String,
    pub fix: String,
    /// What the fix costs.
    pub cost: String,
    /// The measurement that will prove it.
    pub verify: String,
    /// For a hot key: the join, and the skewjoin commands to run next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub join: Option<JoinInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub next_commands: Vec<String>,
}

impl Finding {
    /// A finding without a join (every kind but a hot key found in a plan).
    pub(crate) fn new(
        kind: Kind,
        stage_id: Option<i64>,
        evidence: String,
        fix: String,
        cost: String,
        verify: String,
    ) -> Finding {
        Finding { kind, stage_id, evidence, fix, cost, verify, join: None, next_commands: vec![] }
    }
}

/// A suspect checked: confirmed or ruled out, with its numbers.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub kind: Kind,
    pub stage_id: Option<i64>,
    pub confirmed: bool,
    pub numbers: String,
}
