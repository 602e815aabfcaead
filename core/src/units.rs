//! Durations and sizes as flags and query parameters spell them (Go's
//! duration form, Kubernetes' binary size suffixes).

use std::time::Duration;

/// "300ms", "10s", "5m", "1h" or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num.parse().map_err(|_| format!("invalid duration: {s}"))?;
    let secs = match unit {
        "us" | "µs" => n / 1_000_000.0,
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("invalid duration unit in {s}")),
    };
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(format!("invalid duration: {s}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// "512Ki", "64Mi", "1Gi" or a bare number of bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s {
        _ if s.ends_with("Ki") => (&s[..s.len() - 2], 1u64 << 10),
        _ if s.ends_with("Mi") => (&s[..s.len() - 2], 1 << 20),
        _ if s.ends_with("Gi") => (&s[..s.len() - 2], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("invalid size: {s} (use bytes or a Ki, Mi or Gi suffix)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("7").unwrap(), Duration::from_secs(7));
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64Mi").unwrap(), 64 << 20);
        assert_eq!(parse_size("16Ki").unwrap(), 16 << 10);
        assert_eq!(parse_size("100").unwrap(), 100);
        assert!(parse_size("1Ti").is_err());
        assert!(parse_size("99999999999999Gi").is_err());
    }
}
