//! The one error type of the library. Every message is one line that names the problem and
//! the file or column it is about. Each error has a kind (whose fault, and so who can fix it)
//! and a stable code a script can match; the binary prints the message (or, with
//! `--format json`, `{"error": {"code", "kind", "message"}}`) on stderr and exits with
//! [`Error::exit_code`].

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
    /// A column the user named is not in the table.
    #[error("column {column}: {msg}")]
    NoColumn { column: String, msg: String },
    /// A column of the data that cannot be read as a key (a type, a clash between files).
    #[error("column {column}: {msg}")]
    Column { column: String, msg: String },
    /// An object store's or History Server's answer: `what` is the object, table or server
    /// URL, `msg` one line with no secret in it, `code` what the answer means (`not_found`,
    /// `access_denied`, `credentials`, or `store` for a server that failed).
    #[error("{what}: {msg}")]
    Store { what: String, msg: String, code: &'static str },
    /// A server or process the tool runs its work on failed or stopped answering: the Spark
    /// engine's Python process, a Spark master, a Spark Connect server.
    #[error("{0}")]
    Server(String),
    /// This machine cannot give what the tool needs to run: threads, a TLS setup.
    #[error("{0}")]
    System(String),
    #[error("{path}: cannot read: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// Keys past the memory budget could not be written to, or read from, their temporary file.
    #[error("{dir}: cannot spill counted keys to a temporary file: {source} (free space there, set TMPDIR to another folder, or raise --memory)")]
    Spill { dir: PathBuf, source: std::io::Error },
}

/// Whose fault an error is, which says who can fix it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The command line, the query or a name in it: the user changes them.
    Usage,
    /// The data read is corrupt, unreadable or of a type that cannot be used.
    Data,
    /// A server or process the tool talks to failed, refused or stopped answering.
    Server,
    /// This machine: a disk full, a temporary folder not writable.
    System,
    /// A bug in skewjoin.
    Internal,
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

    /// A server's failure about `what` (an object store, a History Server).
    pub fn store(what: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Store { what: what.into(), msg: msg.into(), code: "store" }
    }

    /// A failure the Spark engine reported, with whose fault it says it is (`usage`: the
    /// user's query or path; anything else: the engine's own).
    pub fn from_engine(kind: Option<&str>, msg: String) -> Self {
        if kind == Some("usage") {
            Error::Usage(msg)
        } else {
            Error::Server(msg)
        }
    }

    /// The error's stable code: scripts and tests match it, never the message's words.
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound(_) => "not_found",
            Error::NoParquet(_) => "no_parquet",
            Error::BadFile { .. } => "bad_file",
            Error::Usage(_) => "usage",
            Error::KeyTypes(_) => "key_types",
            Error::Internal(_) => "internal",
            Error::NoColumn { .. } => "no_column",
            Error::Column { .. } => "bad_column",
            Error::Store { code, .. } => code,
            Error::Server(_) => "server",
            Error::Io { .. } => "io",
            Error::Spill { .. } => "spill",
            Error::System(_) => "system",
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Error::NotFound(_) | Error::NoParquet(_) | Error::Usage(_) | Error::NoColumn { .. } => {
                Kind::Usage
            }
            Error::Io { source, .. } => match source.kind() {
                // A path the user gave that is not there, or not theirs to read or write.
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => Kind::Usage,
                std::io::ErrorKind::StorageFull => Kind::System,
                _ => Kind::Data,
            },
            Error::BadFile { .. } | Error::KeyTypes(_) | Error::Column { .. } => Kind::Data,
            Error::Store { code: "not_found" | "access_denied" | "credentials", .. } => Kind::Usage,
            Error::Store { .. } | Error::Server(_) => Kind::Server,
            Error::Spill { .. } | Error::System(_) => Kind::System,
            Error::Internal(_) => Kind::Internal,
        }
    }

    /// The process's exit code: 3 for a bug in skewjoin, 2 for every other failure (1 is
    /// verify's "the rows differ", 0 success).
    pub fn exit_code(&self) -> u8 {
        if self.kind() == Kind::Internal {
            3
        } else {
            2
        }
    }
}

/// The JSON of a failure, one line: `{"error": {"code", "kind", "message"}}`. `message` is
/// the text as printed (already on one line and without secrets).
pub fn failure_json(code: &str, kind: Kind, message: &str) -> String {
    serde_json::json!({ "error": { "code": code, "kind": kind, "message": message } }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_exit_code_and_a_bug_its_own() {
        let io = || std::io::Error::other("disk full");
        let cases = [
            (Error::NotFound("x".into()), "not_found", Kind::Usage, 2),
            (Error::bad_file("x", "corrupt"), "bad_file", Kind::Data, 2),
            (Error::Server("gone".into()), "server", Kind::Server, 2),
            (Error::store("s3://b/k", "the server answered 503"), "store", Kind::Server, 2),
            (
                Error::Store {
                    what: "s3://b".into(),
                    msg: "no such bucket".into(),
                    code: "not_found",
                },
                "not_found",
                Kind::Usage,
                2,
            ),
            (Error::Spill { dir: "/tmp".into(), source: io() }, "spill", Kind::System, 2),
            (Error::System("no threads".into()), "system", Kind::System, 2),
            (
                Error::Io { path: "q.sql".into(), source: std::io::ErrorKind::NotFound.into() },
                "io",
                Kind::Usage,
                2,
            ),
            (Error::Io { path: "x".into(), source: io() }, "io", Kind::Data, 2),
            (Error::Internal("a bug".into()), "internal", Kind::Internal, 3),
        ];
        for (e, code, kind, exit) in cases {
            assert_eq!((e.code(), e.kind(), e.exit_code()), (code, kind, exit), "{e}");
        }
    }

    #[test]
    fn the_json_of_a_failure_is_one_line_with_code_kind_and_message() {
        let j = failure_json("no_column", Kind::Usage, "column \"x\": no such column");
        assert!(!j.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"error": {"code": "no_column", "kind": "usage", "message": "column \"x\": no such column"}})
        );
    }
}
