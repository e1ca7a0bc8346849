//! The numbers as the tool prints them, for every command: counts with thousands separators,
//! shares, byte sizes (powers of 1024, as Spark's UI writes them) and durations.

/// 1234567 -> "1,234,567".
/// `s` on one line (whitespace runs as one space), cut to `max_chars` characters with "...".
pub fn one_line(s: &str, max_chars: usize) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}...", &line[..i]),
        None => line,
    }
}

pub fn fmt_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// 0.25 -> "25.0%"; shares under 0.1% keep three decimals.
pub fn fmt_share(s: f64) -> String {
    if s >= 0.001 || s == 0.0 {
        format!("{:.1}%", s * 100.0)
    } else {
        format!("{:.3}%", s * 100.0)
    }
}

/// 1536 -> "1.5 KB", as Spark's UI writes sizes (powers of 1024).
pub fn human(bytes: u64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", units[i])
    }
}

/// A byte count that may be negative (an event log's): below 0 is 0 B.
pub fn human_i64(v: i64) -> String {
    human(v.max(0) as u64)
}

/// "1 row", "2,000 rows".
pub fn rows_n(n: u64) -> String {
    format!("{} row{}", fmt_count(n), if n == 1 { "" } else { "s" })
}

/// Milliseconds as "850 ms", "12.5 s", "3 min 20 s" or "2 h 5 min".
pub fn fmt_ms(v: i64) -> String {
    let v = v.max(0);
    if v < 1000 {
        format!("{v} ms")
    } else if v < 60_000 {
        format!("{:.1} s", v as f64 / 1000.0)
    } else if v < 3_600_000 {
        format!("{} min {} s", v / 60_000, (v % 60_000) / 1000)
    } else {
        format!("{} h {} min", v / 3_600_000, (v % 3_600_000) / 60_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn numbers() {
        assert_eq!(fmt_count(1234567), "1,234,567");
        assert_eq!(fmt_share(0.25), "25.0%");
        assert_eq!(fmt_share(0.0004), "0.040%");
        assert_eq!(human(1536), "1.5 KB");
        assert_eq!(human_i64(-5), "0 B");
        assert_eq!(rows_n(1), "1 row");
        assert_eq!(fmt_ms(200_000), "3 min 20 s");
    }
}
