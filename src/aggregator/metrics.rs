//! kube-aggregator's series on `/metrics`: whether each service-backed
//! APIService is unavailable (what alerts on a broken metrics-server or
//! custom metrics adapter watch).

use crate::aggregated::Routes;
use std::fmt::Write;

pub fn render(routes: &Routes) -> String {
    let mut out = String::from(
        "# HELP aggregator_unavailable_apiservice [STABLE] Gauge of APIServices which are marked as unavailable broken down by APIService name.\n\
         # TYPE aggregator_unavailable_apiservice gauge\n",
    );
    for r in routes.remotes() {
        // Names are validated `<version>.<group>`: nothing to escape.
        let _ = writeln!(
            out,
            "aggregator_unavailable_apiservice{{name=\"{}\"}} {}",
            r.name,
            u8::from(!r.available)
        );
    }
    out
}
