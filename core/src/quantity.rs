//! Quantities in kube's canonical form (`resource.Quantity`'s String):
//! what kube-apiserver stores for every quantity it decodes, so
//! `1024Mi` reads back as `1Gi`, `0.5` as `500m`, `1000` as `1k`. Clients
//! that compare what they wrote with what they read (GitOps diffs,
//! `kubectl apply`) see kube's form.
//!
//! A quantity is a decimal number times a power of ten, rounded up to
//! nano units as kube parses it; its suffix family (binary `Ki`…`Ei`,
//! decimal `n`…`E`, or an `e` exponent) picks the form it is written back
//! in, except that a binary quantity that is small or fractional is
//! written in decimal, as kube does.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    BinarySI,
    DecimalSI,
    DecimalExponent,
}

/// The canonical form of `s`, or None when it is not a quantity kubeshard
/// can represent exactly (it is then left as written).
pub fn canonical(s: &str) -> Option<String> {
    let (negative, mantissa, exponent, format) = parse(s.trim())?;
    render(negative, mantissa, exponent, format)
}

/// A JSON number given where a quantity belongs, in canonical form.
pub fn canonical_number(n: &serde_json::Number) -> Option<String> {
    canonical(&n.to_string())
}

/// A quantity in billionths of its unit (`500m` → 500 000 000), rounded
/// up below that as kube parses it (saturating far past any real
/// amount); None when it does not parse. For comparing and adding
/// quantities (QoS classes, sizes).
pub fn nanos(q: &serde_json::Value) -> Option<i128> {
    let text = match q {
        serde_json::Value::String(s) => s.trim().to_string(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let (negative, mantissa, exponent, _) = parse(&text)?;
    let scale = 10i128.checked_pow(u32::try_from(exponent + 9).ok()?);
    let amount = scale
        .and_then(|s| i128::try_from(mantissa).ok()?.checked_mul(s))
        .unwrap_or(i128::MAX);
    Some(if negative { -amount } else { amount })
}

/// sign, |value| = mantissa × 10^exponent (exponent ≥ -9), format.
fn parse(s: &str) -> Option<(bool, u128, i32, Format)> {
    let (negative, unsigned) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let split = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(split);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let (format, mut exponent, binary_power) = match suffix {
        "" => (Format::DecimalSI, 0, 0),
        "n" => (Format::DecimalSI, -9, 0),
        "u" => (Format::DecimalSI, -6, 0),
        "m" => (Format::DecimalSI, -3, 0),
        "k" => (Format::DecimalSI, 3, 0),
        "M" => (Format::DecimalSI, 6, 0),
        "G" => (Format::DecimalSI, 9, 0),
        "T" => (Format::DecimalSI, 12, 0),
        "P" => (Format::DecimalSI, 15, 0),
        "E" => (Format::DecimalSI, 18, 0),
        "Ki" => (Format::BinarySI, 0, 10),
        "Mi" => (Format::BinarySI, 0, 20),
        "Gi" => (Format::BinarySI, 0, 30),
        "Ti" => (Format::BinarySI, 0, 40),
        "Pi" => (Format::BinarySI, 0, 50),
        "Ei" => (Format::BinarySI, 0, 60),
        e => {
            let digits = e.strip_prefix(['e', 'E'])?;
            (Format::DecimalExponent, digits.parse::<i32>().ok()?, 0)
        }
    };
    let digits = format!("{whole}{fraction}");
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = digits.trim_start_matches('0');
    let mut mantissa: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    exponent = exponent.checked_sub(i32::try_from(fraction.len()).ok()?)?;
    // Beyond this the value is rounding noise or out of any range kube
    // stores; such a quantity is left as written.
    if !(-60..=60).contains(&exponent) {
        return None;
    }
    mantissa = mantissa.checked_mul(1u128.checked_shl(binary_power)?)?;
    // Below nano units, kube rounds away from zero.
    while exponent < -9 {
        let (q, r) = (mantissa / 10, mantissa % 10);
        mantissa = q + u128::from(r != 0);
        exponent += 1;
    }
    Some((negative && mantissa != 0, mantissa, exponent, format))
}

fn render(negative: bool, mantissa: u128, exponent: i32, format: Format) -> Option<String> {
    if mantissa == 0 {
        return Some("0".into());
    }
    let sign = if negative { "-" } else { "" };
    if format == Format::BinarySI {
        if let Some(whole) = whole_value(mantissa, exponent).filter(|w| *w >= 1024) {
            let (mut n, mut power) = (whole, 0);
            while n % 1024 == 0 && power < 60 {
                n /= 1024;
                power += 10;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power as usize / 10];
            return Some(format!("{sign}{n}{suffix}"));
        }
    }
    // Decimal: trailing zeros into the exponent, then the exponent down to
    // a multiple of three.
    let (mut n, mut e) = (mantissa, exponent);
    while n % 10 == 0 {
        n /= 10;
        e += 1;
    }
    match e.rem_euclid(3) {
        1 => {
            n = n.checked_mul(10)?;
            e -= 1;
        }
        2 => {
            n = n.checked_mul(100)?;
            e -= 2;
        }
        _ => {}
    }
    let suffix = match (format, e) {
        (_, 0) => String::new(),
        (Format::DecimalExponent, e) => format!("e{e}"),
        (_, -9) => "n".into(),
        (_, -6) => "u".into(),
        (_, -3) => "m".into(),
        (_, 3) => "k".into(),
        (_, 6) => "M".into(),
        (_, 9) => "G".into(),
        (_, 12) => "T".into(),
        (_, 15) => "P".into(),
        (_, 18) => "E".into(),
        (_, e) => format!("e{e}"),
    };
    Some(format!("{sign}{n}{suffix}"))
}

/// mantissa × 10^exponent when that is a whole number that fits.
fn whole_value(mantissa: u128, exponent: i32) -> Option<u128> {
    if exponent >= 0 {
        return mantissa.checked_mul(10u128.checked_pow(exponent as u32)?);
    }
    let div = 10u128.checked_pow(exponent.unsigned_abs())?;
    mantissa.is_multiple_of(div).then_some(mantissa / div)
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn kubes_canonical_forms() {
        for (written, kube) in [
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("100Ki", "100Ki"),
            ("512Ki", "512Ki"),
            ("1Ki", "1Ki"),
            ("0.5Ki", "512"),
            ("1023", "1023"),
            ("0.5", "500m"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("1.5k", "1500"),
            ("1000m", "1"),
            ("1200m", "1200m"),
            ("100m", "100m"),
            ("0.1", "100m"),
            ("1e3", "1e3"),
            ("1000e0", "1e3"),
            ("1E6", "1e6"),
            ("0", "0"),
            ("0Mi", "0"),
            ("-0.5", "-500m"),
            ("+2", "2"),
            ("0.0000000001", "1n"),
            ("1.0001Ki", "1024102400u"),
            ("2Gi", "2Gi"),
            ("1000Mi", "1000Mi"),
            ("128974848", "128974848"),
            ("129e6", "129e6"),
            ("129M", "129M"),
            ("123Mi", "123Mi"),
        ] {
            assert_eq!(canonical(written).as_deref(), Some(kube), "{written}");
        }
        assert_eq!(canonical("lots"), None);
        assert_eq!(canonical("1.2.3"), None);
        assert_eq!(canonical(""), None);
        // Absurd exponents are left as written, not looped over.
        assert_eq!(canonical("1e-2000000000"), None);
        assert_eq!(canonical("1e2147483647"), None);
        assert_eq!(canonical(&"9".repeat(39)), None, "past u128 after scaling");
    }

    /// The value a parse stands for, as (sign, mantissa, exponent) with
    /// no trailing zeros, for comparing two spellings.
    fn value(s: &str) -> (bool, u128, i32) {
        let (neg, mut m, mut e, _) = super::parse(s).unwrap();
        while m != 0 && m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        (neg, m, if m == 0 { 0 } else { e })
    }

    proptest::proptest! {
        /// The canonical form is a fixed point and keeps the value (these
        /// spellings stay above nano units, where kube rounds).
        #[test]
        fn canonical_forms_keep_the_value(
            whole in 0u64..10_000_000,
            fraction in proptest::option::of(0u32..1000),
            suffix in proptest::sample::select(vec!["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "e3", "e-2", "E6"]),
            negative in proptest::bool::ANY,
        ) {
            let written = format!(
                "{}{whole}{}{suffix}",
                if negative { "-" } else { "" },
                fraction.map(|f| format!(".{f:03}")).unwrap_or_default()
            );
            let c = canonical(&written).unwrap();
            let again = canonical(&c);
            proptest::prop_assert_eq!(again.as_deref(), Some(c.as_str()), "{}", written);
            proptest::prop_assert_eq!(value(&c), value(&written), "{} -> {}", written, c);
        }
    }
}
