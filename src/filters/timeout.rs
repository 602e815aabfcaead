//! `--request-timeout`: a non-long-running request that takes longer is
//! answered 504 (its handler future is dropped, see
//! [`crate::serving::timer`]). `?timeout=` may ask for less, never more.

use std::time::Duration;

/// The budget of one request: the server's limit, or less when the
/// client asked for less with `?timeout=` (Go duration syntax).
pub fn budget(server: Duration, query: Option<&str>) -> Duration {
    match query.and_then(|q| kubeshard_core::units::parse_duration(q).ok()) {
        Some(d) if !d.is_zero() && d < server => d,
        _ => server,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_may_ask_for_less_only() {
        let server = Duration::from_secs(60);
        assert_eq!(budget(server, Some("5s")), Duration::from_secs(5));
        assert_eq!(budget(server, Some("5m")), server);
        assert_eq!(budget(server, Some("0s")), server);
        assert_eq!(budget(server, Some("bogus")), server);
        assert_eq!(budget(server, None), server);
    }
}
