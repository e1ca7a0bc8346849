//! Byte sizes as users write them: `10MB`, `64KB`, `1.5GB`, `2GiB`, `1048576`.

pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: f64 = num.replace('_', "").parse().map_err(|_| {
        format!("bad size {s:?}: want a number with an optional unit, such as 10MB")
    })?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024f64.powi(4),
        other => {
            return Err(format!("bad size {s:?}: unknown unit {other:?} (use B, KB, MB, GB, TB)"))
        }
    };
    Ok((num * mult).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sizes() {
        assert_eq!(parse_size("10MB"), Ok(10 << 20));
        assert_eq!(parse_size("64kb"), Ok(64 << 10));
        assert_eq!(parse_size("1.5GB"), Ok(3 << 29));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert!(parse_size("ten").is_err());
        assert!(parse_size("5XB").is_err());
    }
}
