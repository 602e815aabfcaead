//! IP ranges written as CIDRs (`10.0.0.0/24`, `fd00::/108`): the Service
//! cluster-IP ranges addresses are drawn from. Both families are one
//! 128-bit integer underneath, so the arithmetic is shared.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// The network address (host bits zero).
    network: IpAddr,
    bits: u8,
}

impl Cidr {
    fn width(&self) -> u8 {
        if self.network.is_ipv4() {
            32
        } else {
            128
        }
    }

    /// kube's family names: `IPv4` or `IPv6`.
    pub fn family(&self) -> &'static str {
        family_of(&self.network)
    }

    /// How many addresses the range holds (saturating at u128::MAX).
    pub fn size(&self) -> u128 {
        1u128
            .checked_shl(u32::from(self.width() - self.bits))
            .unwrap_or(u128::MAX)
    }

    /// The address `offset` places after the network address.
    pub fn nth(&self, offset: u128) -> IpAddr {
        let base = to_int(&self.network);
        from_int(base.wrapping_add(offset), self.network.is_ipv4())
    }

    /// Where `ip` sits in the range, if it is in it.
    pub fn offset_of(&self, ip: &IpAddr) -> Option<u128> {
        if ip.is_ipv4() != self.network.is_ipv4() {
            return None;
        }
        let off = to_int(ip).wrapping_sub(to_int(&self.network));
        (off < self.size()).then_some(off)
    }

    /// The offsets a Service may be given: not the network address, and
    /// for IPv4 not the broadcast address either.
    pub fn usable(&self) -> std::ops::Range<u128> {
        let end = if self.network.is_ipv4() {
            self.size().saturating_sub(1)
        } else {
            self.size()
        };
        1..end.max(1)
    }
}

/// kube's family name of an address.
pub fn family_of(ip: &IpAddr) -> &'static str {
    if ip.is_ipv4() {
        "IPv4"
    } else {
        "IPv6"
    }
}

fn to_int(ip: &IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(*v4)),
        IpAddr::V6(v6) => u128::from(*v6),
    }
}

fn from_int(n: u128, v4: bool) -> IpAddr {
    if v4 {
        IpAddr::V4(Ipv4Addr::from(n as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(n))
    }
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (net, bits) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not a CIDR (address/bits)"))?;
        let addr: IpAddr = net.parse().map_err(|e| format!("{s:?}: {e}"))?;
        let bits: u8 = bits.parse().map_err(|e| format!("{s:?}: {e}"))?;
        let width = if addr.is_ipv4() { 32 } else { 128 };
        if bits > width {
            return Err(format!("{s:?}: a prefix longer than the address"));
        }
        let host_bits = u32::from(width - bits);
        let mask = u128::MAX.checked_shl(host_bits).unwrap_or(0);
        let network = from_int(to_int(&addr) & mask, addr.is_ipv4());
        Ok(Cidr { network, bits })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_ranges() {
        let c: Cidr = "10.0.0.7/24".parse().unwrap();
        assert_eq!(c.to_string(), "10.0.0.0/24");
        assert_eq!(c.size(), 256);
        assert_eq!(c.usable(), 1..255);
        assert_eq!(c.nth(1).to_string(), "10.0.0.1");
        assert_eq!(c.offset_of(&"10.0.0.9".parse().unwrap()), Some(9));
        assert_eq!(c.offset_of(&"10.0.1.9".parse().unwrap()), None);
        assert_eq!(c.offset_of(&"fd00::1".parse().unwrap()), None);
        assert_eq!(c.family(), "IPv4");
    }

    #[test]
    fn ipv6_ranges() {
        let c: Cidr = "fd00::/108".parse().unwrap();
        assert_eq!(c.size(), 1 << 20);
        assert_eq!(c.nth(1).to_string(), "fd00::1");
        assert_eq!(c.usable().end, 1 << 20);
        assert_eq!(c.family(), "IPv6");
        assert!("fd00::/129".parse::<Cidr>().is_err());
        assert!("10.0.0.0".parse::<Cidr>().is_err());
    }
}
