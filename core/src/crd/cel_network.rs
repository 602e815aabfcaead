//! kube's CEL URL, IP and CIDR libraries: `url`/`isURL` with the URL
//! accessors (`getScheme`, `getHost`, `getHostname`, `getPort`,
//! `getEscapedPath`, `getQuery`), `ip`/`isIP`/`ip.isCanonical` with the
//! address predicates, and `cidr`/`isCIDR` with `containsIP`,
//! `containsCIDR`, `ip`, `masked` and `prefixLength`.

use cel::extractors::This;
use cel::objects::{Key, Map, Opaque};
use cel::{Context, ExecutionError, Value as Cel};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

type Add<'a> = &'a dyn Fn(&str, Result<(), cel::DeclarationError>);

pub fn register(ctx: &mut Context<'static, 'static>, add: Add<'_>) {
    add(
        "isURL",
        ctx.add_function("isURL", |s: Arc<String>| Url::parse(&s).is_ok()),
    );
    add(
        "url",
        ctx.add_function("url", |s: Arc<String>| {
            Url::parse(&s)
                .map(|u| Cel::Opaque(Arc::new(u)))
                .map_err(|e| ExecutionError::function_error("url", e))
        }),
    );
    let accessor = |name: &'static str, f: fn(&Url) -> Cel| {
        move |This(v): This<Arc<dyn Opaque>>| -> Result<Cel, ExecutionError> {
            let u = v
                .downcast_ref::<Url>()
                .ok_or_else(|| ExecutionError::function_error(name, "not a URL"))?;
            Ok(f(u))
        }
    };
    add(
        "getScheme",
        ctx.add_function("getScheme", accessor("getScheme", |u| string(&u.scheme))),
    );
    add(
        "getHost",
        ctx.add_function("getHost", accessor("getHost", |u| string(&u.host))),
    );
    add(
        "getHostname",
        ctx.add_function(
            "getHostname",
            accessor("getHostname", |u| string(u.hostname())),
        ),
    );
    add(
        "getPort",
        ctx.add_function("getPort", accessor("getPort", |u| string(u.port()))),
    );
    add(
        "getEscapedPath",
        ctx.add_function(
            "getEscapedPath",
            accessor("getEscapedPath", |u| string(&u.path)),
        ),
    );
    add(
        "getQuery",
        ctx.add_function("getQuery", accessor("getQuery", Url::query)),
    );

    add(
        "isIP",
        ctx.add_function("isIP", |s: Arc<String>| parse_ip(&s).is_ok()),
    );
    add(
        "ip.isCanonical",
        ctx.add_function("ip.isCanonical", |s: Arc<String>| {
            parse_ip(&s)
                .map(|ip| ip.to_string() == *s)
                .map_err(|e| ExecutionError::function_error("ip.isCanonical", e))
        }),
    );
    // `ip(string)` makes an address; `<cidr>.ip()` is the prefix's.
    add(
        "ip",
        ctx.add_function("ip", |This(v): This<Cel>| match v {
            Cel::String(s) => parse_ip(&s)
                .map(|ip| Cel::Opaque(Arc::new(Ip(ip))))
                .map_err(|e| ExecutionError::function_error("ip", e)),
            Cel::Opaque(o) => Ok(Cel::Opaque(Arc::new(Ip(cidr_of(&o, "ip")?.addr)))),
            _ => Err(ExecutionError::function_error(
                "ip",
                "expected a string or a CIDR",
            )),
        }),
    );
    let predicate = |name: &'static str, f: fn(&IpAddr) -> bool| {
        move |This(v): This<Arc<dyn Opaque>>| -> Result<bool, ExecutionError> {
            Ok(f(&ip_of(&v, name)?))
        }
    };
    add(
        "family",
        ctx.add_function("family", |This(v): This<Arc<dyn Opaque>>| {
            Ok::<_, ExecutionError>(if ip_of(&v, "family")?.is_ipv4() {
                4i64
            } else {
                6
            })
        }),
    );
    add(
        "isUnspecified",
        ctx.add_function(
            "isUnspecified",
            predicate("isUnspecified", IpAddr::is_unspecified),
        ),
    );
    add(
        "isLoopback",
        ctx.add_function("isLoopback", predicate("isLoopback", IpAddr::is_loopback)),
    );
    add(
        "isLinkLocalMulticast",
        ctx.add_function(
            "isLinkLocalMulticast",
            predicate("isLinkLocalMulticast", |ip| match ip {
                IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
                IpAddr::V6(a) => a.segments()[0] & 0xff0f == 0xff02,
            }),
        ),
    );
    add(
        "isLinkLocalUnicast",
        ctx.add_function(
            "isLinkLocalUnicast",
            predicate("isLinkLocalUnicast", |ip| match ip {
                IpAddr::V4(a) => a.is_link_local(),
                IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
            }),
        ),
    );
    add(
        "isGlobalUnicast",
        ctx.add_function(
            "isGlobalUnicast",
            predicate(
                "isGlobalUnicast",
                crate::registry::location::is_global_unicast,
            ),
        ),
    );

    add(
        "isCIDR",
        ctx.add_function("isCIDR", |s: Arc<String>| Cidr::parse(&s).is_ok()),
    );
    add(
        "cidr",
        ctx.add_function("cidr", |s: Arc<String>| {
            Cidr::parse(&s)
                .map(|c| Cel::Opaque(Arc::new(c)))
                .map_err(|e| ExecutionError::function_error("cidr", e))
        }),
    );
    add(
        "containsIP",
        ctx.add_function(
            "containsIP",
            |This(v): This<Arc<dyn Opaque>>, other: Cel| {
                let c = cidr_of(&v, "containsIP")?;
                let ip = match other {
                    Cel::String(s) => {
                        parse_ip(&s).map_err(|e| ExecutionError::function_error("containsIP", e))?
                    }
                    Cel::Opaque(o) => ip_of(&o, "containsIP")?,
                    _ => {
                        return Err(ExecutionError::function_error(
                            "containsIP",
                            "expected an IP",
                        ))
                    }
                };
                Ok(c.contains(&ip))
            },
        ),
    );
    add(
        "containsCIDR",
        ctx.add_function(
            "containsCIDR",
            |This(v): This<Arc<dyn Opaque>>, other: Cel| {
                let c = cidr_of(&v, "containsCIDR")?;
                let inner = match other {
                    Cel::String(s) => Cidr::parse(&s)
                        .map_err(|e| ExecutionError::function_error("containsCIDR", e))?,
                    Cel::Opaque(o) => cidr_of(&o, "containsCIDR")?.clone(),
                    _ => {
                        return Err(ExecutionError::function_error(
                            "containsCIDR",
                            "expected a CIDR",
                        ))
                    }
                };
                Ok(inner.bits >= c.bits && c.contains(&inner.addr))
            },
        ),
    );
    add(
        "masked",
        ctx.add_function("masked", |This(v): This<Arc<dyn Opaque>>| {
            let c = cidr_of(&v, "masked")?;
            Ok::<_, ExecutionError>(Cel::Opaque(Arc::new(Cidr {
                addr: mask(&c.addr, c.bits),
                bits: c.bits,
            })))
        }),
    );
    add(
        "prefixLength",
        ctx.add_function("prefixLength", |This(v): This<Arc<dyn Opaque>>| {
            Ok::<_, ExecutionError>(i64::from(cidr_of(&v, "prefixLength")?.bits))
        }),
    );
}

fn string(s: &str) -> Cel {
    Cel::String(Arc::new(s.to_string()))
}

/// A URL as kube's library splits it (Go's `net/url`: an absolute URI,
/// or an absolute path; the port as written, never a default).
#[derive(Debug, PartialEq, Eq)]
struct Url {
    scheme: String,
    /// `host[:port]`, IPv6 hosts bracketed.
    host: String,
    path: String,
    query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

impl Url {
    fn parse(s: &str) -> Result<Url, String> {
        if s.starts_with('/') {
            let (path, query) = s.split_once('?').unwrap_or((s, ""));
            return Ok(Url {
                scheme: String::new(),
                host: String::new(),
                path: path.split('#').next().unwrap_or("").to_string(),
                query: query.split('#').next().unwrap_or("").to_string(),
            });
        }
        let parsed = url::Url::parse(s)
            .map_err(|e| format!("URL parse error during conversion from string: {e}"))?;
        let rest = s.split_once("://").map_or("", |(_, r)| r);
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        Ok(Url {
            scheme: parsed.scheme().to_string(),
            host: host.to_string(),
            path: parsed.path().to_string(),
            query: parsed.query().unwrap_or("").to_string(),
        })
    }

    fn hostname(&self) -> &str {
        match self.host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => self.host.split(':').next().unwrap_or(""),
        }
    }

    fn port(&self) -> &str {
        let after_host = match self.host.strip_prefix('[') {
            Some(v6) => v6.split_once(']').map_or("", |(_, r)| r),
            None => self.host.split_once(':').map_or("", |(_, p)| p),
        };
        after_host.strip_prefix(':').unwrap_or(after_host)
    }

    fn query(&self) -> Cel {
        let mut values: HashMap<Key, Vec<Cel>> = HashMap::new();
        for (k, v) in form_pairs(&self.query) {
            values
                .entry(Key::String(Arc::new(k)))
                .or_default()
                .push(Cel::String(Arc::new(v)));
        }
        let map: HashMap<Key, Cel> = values
            .into_iter()
            .map(|(k, v)| (k, Cel::List(Arc::new(v))))
            .collect();
        Cel::Map(Map { map: Arc::new(map) })
    }
}

fn form_pairs(query: &str) -> Vec<(String, String)> {
    url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// An address, as kube's `ip()` accepts it: no IPv4-mapped IPv6 forms
/// and no zones.
#[derive(Debug, PartialEq, Eq)]
struct Ip(IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        "net.IP"
    }
}

fn parse_ip(s: &str) -> Result<IpAddr, String> {
    let ip: IpAddr = s
        .parse()
        .map_err(|_| format!("IP Address {s:?} parse error during conversion from string"))?;
    if let IpAddr::V6(v6) = ip {
        if v6.to_ipv4_mapped().is_some() {
            return Err("IPv4-mapped IPv6 address is not allowed".into());
        }
    }
    Ok(ip)
}

fn ip_of(v: &Arc<dyn Opaque>, func: &str) -> Result<IpAddr, ExecutionError> {
    v.downcast_ref::<Ip>()
        .map(|ip| ip.0)
        .ok_or_else(|| ExecutionError::function_error(func, "not an IP address"))
}

/// A prefix as written (`ip()` answers its address unmasked).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        "net.IPPrefix"
    }
}

impl Cidr {
    fn parse(s: &str) -> Result<Cidr, String> {
        let bad = || format!("network address {s:?} parse error during conversion from string");
        let (ip, bits) = s.split_once('/').ok_or_else(bad)?;
        let addr = parse_ip(ip).map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits: u8 = bits
            .parse()
            .ok()
            .filter(|b| *b <= max && !bits.starts_with(['+', '0']) || bits == "0")
            .ok_or_else(bad)?;
        Ok(Cidr { addr, bits })
    }

    fn contains(&self, ip: &IpAddr) -> bool {
        ip.is_ipv4() == self.addr.is_ipv4() && mask(ip, self.bits) == mask(&self.addr, self.bits)
    }
}

fn cidr_of<'a>(v: &'a Arc<dyn Opaque>, func: &str) -> Result<&'a Cidr, ExecutionError> {
    v.downcast_ref::<Cidr>()
        .ok_or_else(|| ExecutionError::function_error(func, "not a CIDR"))
}

fn mask(ip: &IpAddr, bits: u8) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let m = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4((u32::from(*a) & m).into())
        }
        IpAddr::V6(a) => {
            let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6((u128::from(*a) & m).into())
        }
    }
}
