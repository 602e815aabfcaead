//! The string formats kube checks in custom resources (kube-openapi's
//! strfmt registry as the apiextensions server configures it). A format
//! kube does not know is not checked (the CRD got a warning for it).

use base64::Engine;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `text` is valid for `format` (unknown formats always are).
pub fn valid(format: &str, text: &str) -> bool {
    match format.replace('-', "").as_str() {
        "datetime" => chrono::DateTime::parse_from_rfc3339(text).is_ok(),
        "date" => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok(),
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(text)
            .is_ok(),
        "uuid" => uuid(text, None),
        "uuid3" => uuid(text, Some('3')),
        "uuid4" => uuid(text, Some('4')),
        "uuid5" => uuid(text, Some('5')),
        "ipv4" => text.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<Ipv6Addr>().is_ok(),
        "cidr" => text.split_once('/').is_some_and(|(ip, bits)| {
            let max = match ip.parse::<IpAddr>() {
                Ok(IpAddr::V4(_)) => 32,
                Ok(IpAddr::V6(_)) => 128,
                Err(_) => return false,
            };
            bits.parse::<u8>().is_ok_and(|b| b <= max) && !bits.starts_with('+')
        }),
        "email" => text.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && !host.is_empty() && !host.contains('@') && !text.contains(' ')
        }),
        "hostname" => hostname(text),
        "mac" => mac(text),
        "uri" => text.split_once(':').is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }),
        "hexcolor" => {
            let h = text.strip_prefix('#').unwrap_or("");
            (h.len() == 3 || h.len() == 6) && h.chars().all(|c| c.is_ascii_hexdigit())
        }
        "duration" => duration(text),
        "bsonobjectid" => text.len() == 24 && text.chars().all(|c| c.is_ascii_hexdigit()),
        _ => true,
    }
}

fn uuid(text: &str, version: Option<char>) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let shape = parts.len() == 5
        && [8, 4, 4, 4, 12]
            .iter()
            .zip(&parts)
            .all(|(n, p)| p.len() == *n && p.chars().all(|c| c.is_ascii_hexdigit()));
    shape && version.is_none_or(|v| parts[2].starts_with(v))
}

fn hostname(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 255
        && text.trim_end_matches('.').split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

fn mac(text: &str) -> bool {
    let sep = if text.contains(':') { ':' } else { '-' };
    let parts: Vec<&str> = text.split(sep).collect();
    (parts.len() == 6 || parts.len() == 8 || parts.len() == 20)
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Go-style durations (`1h30m`, `250ms`) and strfmt's spelled-out ones
/// (`3 days`).
fn duration(text: &str) -> bool {
    let text = text.trim();
    if text.is_empty() {
        return false;
    }
    let units = [
        "ns", "us", "µs", "ms", "s", "m", "h", "d", "w", "sec", "secs", "second", "seconds", "min",
        "mins", "minute", "minutes", "hr", "hrs", "hour", "hours", "day", "days", "wk", "wks",
        "week", "weeks",
    ];
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = rest[digits..].trim_start();
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == ' ')
            .unwrap_or(rest.len());
        if !units.contains(&&rest[..unit_len]) {
            return false;
        }
        rest = rest[unit_len..].trim_start();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn formats_accept_and_refuse_as_kube() {
        for (f, ok, bad) in [
            ("date-time", "2024-01-02T03:04:05Z", "yesterday"),
            ("date", "2024-01-02", "2024-13-02"),
            ("byte", "aGVsbG8=", "not base64!"),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123"),
            ("ipv4", "10.0.0.1", "10.0.0.256"),
            ("ipv6", "::1", "1::2::3"),
            ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
            ("email", "a@example.com", "nobody"),
            ("hostname", "a.example.com", "-bad-.com"),
            ("mac", "00:1a:2b:3c:4d:5e", "00:1a"),
            ("duration", "1h30m", "soon"),
        ] {
            assert!(valid(f, ok), "{f} {ok}");
            assert!(!valid(f, bad), "{f} {bad}");
        }
        assert!(valid("k8s-unknown", "anything"));
    }
}
