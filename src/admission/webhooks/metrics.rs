//! kube's admission webhook metrics (`apiserver_admission_webhook_*`,
//! same names, labels and buckets) and the circuit breakers' own, shared
//! by every executor: a webhook call is a network round trip, so a shared
//! counter's cost does not show beside it.

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// kube's buckets for webhook latency (seconds).
const BUCKETS: [f64; 8] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Hook {
    name: String,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Latency {
    name: String,
    r#type: &'static str,
    operation: String,
    rejected: bool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Request {
    name: String,
    r#type: &'static str,
    operation: String,
    code: u16,
    rejected: bool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Rejection {
    name: String,
    r#type: &'static str,
    operation: String,
    error_type: &'static str,
    rejection_code: u16,
}

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

#[derive(Debug)]
pub struct WebhookMetrics {
    duration: Family<Latency, Histogram, fn() -> Histogram>,
    requests: Family<Request, Counter>,
    rejections: Family<Rejection, Counter>,
    fail_open: Family<Hook, Counter>,
    circuit_open: Family<Hook, Gauge>,
    circuit_trips: Family<Hook, Counter>,
    short_circuited: Family<Hook, Counter>,
}

impl Default for WebhookMetrics {
    fn default() -> Self {
        Self {
            duration: Family::new_with_constructor(histogram),
            requests: Family::default(),
            rejections: Family::default(),
            fail_open: Family::default(),
            circuit_open: Family::default(),
            circuit_trips: Family::default(),
            short_circuited: Family::default(),
        }
    }
}

/// How a webhook call ended, for the metrics.
pub enum Called {
    Allowed,
    /// Refused with this code.
    Denied(u16),
    /// Not called or no valid answer.
    Failed,
}

/// kube's `type` label: `admit` (mutating) or `validating`.
pub fn type_label(mutating: bool) -> &'static str {
    if mutating {
        "admit"
    } else {
        "validating"
    }
}

impl WebhookMetrics {
    pub fn call(&self, name: &str, ty: &'static str, operation: &str, called: Called, secs: f64) {
        let rejected = !matches!(called, Called::Allowed);
        let code = match called {
            Called::Allowed => 200,
            Called::Denied(code) => code.min(600),
            Called::Failed => 0,
        };
        self.duration
            .get_or_create(&Latency {
                name: name.into(),
                r#type: ty,
                operation: operation.into(),
                rejected,
            })
            .observe(secs);
        self.requests
            .get_or_create(&Request {
                name: name.into(),
                r#type: ty,
                operation: operation.into(),
                code,
                rejected,
            })
            .inc();
        if let Called::Denied(code) = called {
            self.rejection(name, ty, operation, "no_error", code.min(600));
        }
    }

    /// A refusal: by the webhook (`no_error`) or for failing to call it
    /// under `failurePolicy: Fail` (`calling_webhook_error`).
    pub fn rejection(
        &self,
        name: &str,
        ty: &'static str,
        operation: &str,
        error_type: &'static str,
        code: u16,
    ) {
        self.rejections
            .get_or_create(&Rejection {
                name: name.into(),
                r#type: ty,
                operation: operation.into(),
                error_type,
                rejection_code: code,
            })
            .inc();
    }

    pub fn failed_open(&self, name: &str, ty: &'static str) {
        self.fail_open.get_or_create(&hook(name, ty)).inc();
    }

    pub fn circuit(&self, name: &str, ty: &'static str, opened: bool) {
        let key = hook(name, ty);
        if opened {
            self.circuit_open.get_or_create(&key).inc();
            self.circuit_trips.get_or_create(&key).inc();
        } else {
            self.circuit_open.get_or_create(&key).dec();
        }
    }

    pub fn short_circuited(&self, name: &str, ty: &'static str) {
        self.short_circuited.get_or_create(&hook(name, ty)).inc();
    }

    /// The families in the text format, without the end-of-exposition
    /// line (the caller appends them to the others).
    pub fn render(&self) -> String {
        let mut kube = Registry::with_prefix("apiserver_admission");
        kube.register(
            "webhook_admission_duration_seconds",
            "Admission webhook latency histogram in seconds, by webhook, operation, type (validating or admit) and whether it rejected.",
            self.duration.clone(),
        );
        kube.register(
            "webhook_request",
            "Admission webhook calls, by webhook, type, operation, HTTP code (0: no valid answer) and whether it rejected.",
            self.requests.clone(),
        );
        kube.register(
            "webhook_rejection_count",
            "Admission webhook rejections, by webhook, type, operation, error type (calling_webhook_error or no_error) and rejection code.",
            self.rejections.clone(),
        );
        kube.register(
            "webhook_fail_open_count",
            "Admission webhook calls that failed and were passed over (failurePolicy: Ignore).",
            self.fail_open.clone(),
        );
        let mut own = Registry::with_prefix("kubeshard_admission_webhook");
        own.register(
            "circuit_open",
            "Executors on which the webhook's circuit is open (its calls fail at once).",
            self.circuit_open.clone(),
        );
        own.register(
            "circuit_trips",
            "Times the webhook's circuit opened after consecutive failed calls.",
            self.circuit_trips.clone(),
        );
        own.register(
            "short_circuited",
            "Writes that met the webhook's failure policy without a call, its circuit open.",
            self.short_circuited.clone(),
        );
        let mut out = String::new();
        for r in [&kube, &own] {
            let mut text = String::new();
            encode(&mut text, r).expect("writing to a String cannot fail");
            out.push_str(text.trim_end_matches("# EOF\n"));
        }
        out
    }
}

fn hook(name: &str, ty: &'static str) -> Hook {
    Hook {
        name: name.into(),
        r#type: ty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_kubes_series_without_an_end_line() {
        let m = WebhookMetrics::default();
        m.call(
            "w.example.com",
            "admit",
            "CREATE",
            Called::Denied(403),
            0.01,
        );
        m.circuit("w.example.com", "admit", true);
        let text = m.render();
        assert!(!text.contains("# EOF"), "{text}");
        for line in [
            r#"apiserver_admission_webhook_request_total{name="w.example.com",type="admit",operation="CREATE",code="403",rejected="true"} 1"#,
            r#"apiserver_admission_webhook_rejection_count_total{name="w.example.com",type="admit",operation="CREATE",error_type="no_error",rejection_code="403"} 1"#,
            r#"apiserver_admission_webhook_admission_duration_seconds_bucket{le="0.025",name="w.example.com",type="admit",operation="CREATE",rejected="true"} 1"#,
            r#"kubeshard_admission_webhook_circuit_open{name="w.example.com",type="admit"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }
}
