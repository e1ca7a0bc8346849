//! Progress of a long step, reported to whoever shows it. Library code prints nothing: a
//! step reports through the `Progress` its caller put in the options (`ProfileOptions`,
//! `PlanOptions`, `diagnose::Options`, `eventlog::read`'s argument). The command line gives
//! bars drawn on a terminal; a caller that shows nothing gives `ProgressRef::none()`, the
//! default.

use std::sync::Arc;

/// What a step counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Counting a table's keys, by rows read; `remote`: the table is in an object store, where
    /// the bytes fetched say more than the rows.
    CountingRows { remote: bool },
    /// Reading an event log, by bytes (its files' sizes are added as each is opened).
    ReadingLog,
}

/// Whoever shows a run's progress.
pub trait Progress: Send + Sync {
    /// A step of `total` units begins; its progress is reported to what this returns (steps
    /// may run at the same time: each has its own).
    fn start(&self, step: Step, total: u64) -> Box<dyn StepProgress>;
}

/// One step's progress.
pub trait StepProgress: Send + Sync {
    /// `n` more units done.
    fn advance(&self, n: u64);
    /// `n` more units to do: a total learnt as the step goes.
    fn grow(&self, n: u64);
    /// The step is over (a bar on a terminal is cleared).
    fn finish(&self);
}

/// Shows nothing.
struct Silent;

impl Progress for Silent {
    fn start(&self, _: Step, _: u64) -> Box<dyn StepProgress> {
        Box::new(Silent)
    }
}

impl StepProgress for Silent {
    fn advance(&self, _: u64) {}
    fn grow(&self, _: u64) {}
    fn finish(&self) {}
}

/// The progress of a run, shared by its options (cloned with them).
#[derive(Clone)]
pub struct ProgressRef(Arc<dyn Progress>);

impl ProgressRef {
    pub fn new(progress: impl Progress + 'static) -> ProgressRef {
        ProgressRef(Arc::new(progress))
    }

    /// Progress that nobody is shown.
    pub fn none() -> ProgressRef {
        ProgressRef::new(Silent)
    }
}

impl Default for ProgressRef {
    fn default() -> Self {
        ProgressRef::none()
    }
}

impl std::ops::Deref for ProgressRef {
    type Target = dyn Progress;
    fn deref(&self) -> &(dyn Progress + 'static) {
        self.0.as_ref()
    }
}

impl std::fmt::Debug for ProgressRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressRef")
    }
}

/// A reader whose bytes are reported to `progress` as they are read.
pub struct Counted<'a, R> {
    pub inner: R,
    pub progress: &'a dyn StepProgress,
}

impl<R: std::io::Read> std::io::Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.advance(n as u64);
        Ok(n)
    }
}
