//! The names of a table's files as Spark reads them: which are data (hidden `.x` and `_x` files
//! and folders are not), and the `k=v` folders above a file that give its partition values.

use std::path::Path;

/// The `k=v` folder names above a file, as (k, v).
pub type HiveParts = Vec<(String, String)>;

/// Spark skips files and folders starting with `.` or `_` (`_SUCCESS`, `.crc` files).
pub fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

/// A file name Spark's writers give a Parquet file.
pub fn looks_like_parquet(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".parquet")
        || lower.ends_with(".parq")
        || lower.ends_with(".pq")
        || (lower.starts_with("part-") && !lower.ends_with(".crc"))
}

/// The `k=v` folders between `root` and `file`, unescaped.
pub fn hive_parts(root: &Path, file: &Path) -> Vec<(String, String)> {
    let rel = file.strip_prefix(root).unwrap_or(file);
    let mut parts = Vec::new();
    if let Some(parent) = rel.parent() {
        for comp in parent.components() {
            let s = comp.as_os_str().to_string_lossy();
            if let Some((k, v)) = s.split_once('=') {
                if !k.is_empty() {
                    parts.push((unescape_path(k), unescape_path(v)));
                }
            }
        }
    }
    parts
}

/// Spark escapes special characters in partition folder names as %XX.
pub fn unescape_path(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
