//! The one error type of the library. Every message is one line that names the problem and
//! the file or column it is about; the binary prints it and exits with code 2.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}: no such file or directory")]
    NotFound(PathBuf),
    #[error("{0}: no Parquet files found (looked for *.parquet, *.parq, *.pq and part-* files)")]
    NoParquet(String),
    #[error("{path}: {msg}")]
    BadFile { path: PathBuf, msg: String },
    /// The user's input or options are wrong: the message says what to change.
    #[error("{0}")]
    Usage(String),
    /// The join keys of the two sides have types that Spark hashes differently.
    #[error("{0}")]
    KeyTypes(String),
    /// A bug in skewjoin, never the user's input: the message says what went wrong inside.
    #[error("internal error: {0}")]
    Internal(String),
    #[error("column {column}: {msg}")]
    Column { column: String, msg: String },
    /// An object store's answer: `what` is the object or table URL, `msg` one line with no
    /// secret in it.
    #[error("{what}: {msg}")]
    Store { what: String, msg: String },
    #[error("{path}: cannot read: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// Keys past the memory budget could not be written to, or read from, their temporary file.
    #[error("{dir}: cannot spill counted keys to a temporary file: {source} (free space there, set TMPDIR to another folder, or raise --memory)")]
    Spill { dir: PathBuf, source: std::io::Error },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn bad_file(path: impl Into<PathBuf>, msg: impl std::fmt::Display) -> Self {
        // Keep the message on one line whatever the underlying reader said.
        let mut msg = msg.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
        // The reader nests its own prefixes ("Parquet argument error: Parquet error: ...").
        for noise in ["Parquet argument error: ", "Parquet error: ", "External: "] {
            msg = msg.replace(noise, "");
        }
        Error::BadFile { path: path.into(), msg }
    }
}
