//! The decoded columns a run keeps: a chain of joins reads the same key columns many times (a
//! join's key counts, its rows per Spark partition, the weights of every later join), and
//! each row group's column is decoded once while the run's budget holds it. The cache belongs
//! to the run: `RunStats` holds it, sized by the command (a quarter of the planner's
//! `--memory`; 0, `keys`' case, keeps nothing), and every table the run opens reaches it
//! through the run's `RunStats`. `table::columns` reads through it.

use std::path::PathBuf;
use std::sync::Mutex;

use arrow_array::ArrayRef;
use arrow_schema::DataType;

/// One column chunk as read: the file (with its rows, so that a file rewritten under the same
/// name is not mistaken for it), the row group, the column and the type it was read as.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChunkKey {
    pub path: PathBuf,
    pub file_rows: i64,
    pub row_group: usize,
    pub field: usize,
    pub data_type: DataType,
}

/// A column chunk's arrays, one per batch.
pub type Chunk = std::sync::Arc<Vec<ArrayRef>>;

#[derive(Default, Debug)]
struct Kept {
    columns: hashbrown::HashMap<ChunkKey, Chunk>,
    bytes: usize,
    /// Every chunk decoded this run, kept or not: a second decode of one is counted.
    decoded: hashbrown::HashSet<ChunkKey>,
}

/// The run's decoded columns, within its budget in bytes.
#[derive(Default, Debug)]
pub struct ColumnCache {
    budget: usize,
    kept: Mutex<Kept>,
}

impl ColumnCache {
    /// A cache of at most `budget` bytes (0: nothing is kept).
    pub fn new(budget: usize) -> ColumnCache {
        ColumnCache { budget, kept: Mutex::default() }
    }

    /// Whether the run keeps columns at all.
    pub fn keeps(&self) -> bool {
        self.budget > 0
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The chunk of `key`, if kept.
    pub fn get(&self, key: &ChunkKey) -> Option<Chunk> {
        self.kept().columns.get(key).cloned()
    }

    /// Keep `chunk` if it fits what the budget leaves; true when `key` was decoded before in
    /// this run (a chunk read again that was not kept).
    pub fn keep(&self, key: ChunkKey, chunk: &Chunk) -> bool {
        let mut k = self.kept();
        let again = !k.decoded.insert(key.clone());
        let bytes: usize = chunk.iter().map(|a| a.get_array_memory_size()).sum();
        if k.bytes + bytes <= self.budget {
            k.bytes += bytes;
            k.columns.insert(key, chunk.clone());
        }
        again
    }

    /// Bytes kept now.
    pub fn kept_bytes(&self) -> u64 {
        self.kept().bytes as u64
    }
}
