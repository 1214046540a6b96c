//! The trust lattice, principal trust classes, fixed-point weights and fallback modes (paper §M4).
//!
//! No floats appear in signed data (DESIGN.md): weights and τ are basis points, 0..=10000, so
//! every comparison is exact and reproducible on every machine.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The trust lattice `TRUSTED < DERIVED_TRUSTED < DERIVED_UNTRUSTED < EXTERNAL`.
///
/// Higher is less trusted; the label of a derived entry is a join (max) over its strong parents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TrustLabel {
    /// Written directly by a trusted principal, derived from nothing.
    Trusted,
    /// Derived, and every strong parent is trusted.
    DerivedTrusted,
    /// Derived, and some strong parent (or, under the strict fallback, weak parents) is untrusted.
    DerivedUntrusted,
    /// Written by an external (untrusted) principal: a web page, an e-mail, a tool's output.
    External,
}

impl TrustLabel {
    /// All labels, in lattice order.
    pub const ALL: [TrustLabel; 4] = [
        TrustLabel::Trusted,
        TrustLabel::DerivedTrusted,
        TrustLabel::DerivedUntrusted,
        TrustLabel::External,
    ];

    /// The exact name used in JSON, on screen and in the signed encoding.
    pub fn as_str(self) -> &'static str {
        match self {
            TrustLabel::Trusted => "TRUSTED",
            TrustLabel::DerivedTrusted => "DERIVED_TRUSTED",
            TrustLabel::DerivedUntrusted => "DERIVED_UNTRUSTED",
            TrustLabel::External => "EXTERNAL",
        }
    }

    /// `DERIVED_UNTRUSTED` or `EXTERNAL`.
    pub fn is_untrusted(self) -> bool {
        self >= TrustLabel::DerivedUntrusted
    }

    /// The label an entry derived from a parent with this label inherits.
    pub fn derived(self) -> TrustLabel {
        if self.is_untrusted() {
            TrustLabel::DerivedUntrusted
        } else {
            TrustLabel::DerivedTrusted
        }
    }
}

impl fmt::Display for TrustLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for an unknown label, class, fallback or malformed weight.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} `{input}`: expected {expected}")]
pub struct ParseLabelError {
    /// What was being parsed.
    pub what: &'static str,
    /// The offending input (truncated).
    pub input: String,
    /// What would have been accepted.
    pub expected: &'static str,
}

fn parse_err(what: &'static str, input: &str, expected: &'static str) -> ParseLabelError {
    ParseLabelError {
        what,
        input: input.chars().take(80).collect(),
        expected,
    }
}

impl FromStr for TrustLabel {
    type Err = ParseLabelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TrustLabel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| {
                parse_err(
                    "trust label",
                    s,
                    "TRUSTED, DERIVED_TRUSTED, DERIVED_UNTRUSTED or EXTERNAL",
                )
            })
    }
}

/// The trust class of a principal: the label its root entries take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrustClass {
    /// The user, the agent itself, the operator.
    Trusted,
    /// Any source the attacker may control: web, e-mail, files, third-party tools.
    External,
}

impl TrustClass {
    /// `trusted` or `external`.
    pub fn as_str(self) -> &'static str {
        match self {
            TrustClass::Trusted => "trusted",
            TrustClass::External => "external",
        }
    }

    /// The label of a root entry written by a principal of this class.
    pub fn root_label(self) -> TrustLabel {
        match self {
            TrustClass::Trusted => TrustLabel::Trusted,
            TrustClass::External => TrustLabel::External,
        }
    }
}

impl fmt::Display for TrustClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TrustClass {
    type Err = ParseLabelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "trusted" => Ok(TrustClass::Trusted),
            "external" => Ok(TrustClass::External),
            _ => Err(parse_err("trust class", s, "`trusted` or `external`")),
        }
    }
}

/// What a derived entry with no strong parent is labelled (DESIGN.md, M4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Fallback {
    /// The paper's rule: no strong parent → `DERIVED_TRUSTED`.
    Permissive,
    /// Ours, the default: taint is kept when untrusted parents are present but weak, alone or in
    /// sum. Closes the paper's admitted hole (an attacker who pushes every edge under τ).
    #[default]
    Strict,
}

impl Fallback {
    /// `permissive` or `strict`.
    pub fn as_str(self) -> &'static str {
        match self {
            Fallback::Permissive => "permissive",
            Fallback::Strict => "strict",
        }
    }
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Fallback {
    type Err = ParseLabelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "permissive" => Ok(Fallback::Permissive),
            "strict" => Ok(Fallback::Strict),
            _ => Err(parse_err("fallback", s, "`strict` or `permissive`")),
        }
    }
}

/// A fixed-point number in [0, 1] with four decimals: basis points, 0..=10000.
///
/// Used for attribution weights and for τ. Parsing is exact (`"0.5"` is 5000 bp); more than four
/// decimals, negatives, and values above 1 are rejected rather than rounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Weight(u16);

impl Weight {
    /// The scale: 1.0 is 10000 basis points.
    pub const SCALE: u16 = 10_000;
    /// Weight 0.
    pub const ZERO: Weight = Weight(0);
    /// Weight 1.
    pub const ONE: Weight = Weight(Self::SCALE);

    /// From basis points; `None` above 10000.
    pub const fn from_bp(bp: u16) -> Option<Weight> {
        if bp <= Self::SCALE {
            Some(Weight(bp))
        } else {
            None
        }
    }

    /// From a float in [0, 1] (attribution algorithms produce floats; they are rounded to the
    /// nearest basis point *before* anything is signed). NaN and out-of-range values clamp.
    pub fn from_unit_f64(x: f64) -> Weight {
        if x.is_nan() || x <= 0.0 {
            return Weight(0);
        }
        if x >= 1.0 {
            return Weight::ONE;
        }
        // In range (0,1): the product is in (0, 10000), so the cast cannot truncate.
        Weight((x * f64::from(Self::SCALE)).round() as u16)
    }

    /// Basis points.
    pub const fn bp(self) -> u16 {
        self.0
    }

    /// As a float, for display and plots only (never for decisions).
    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / f64::from(Self::SCALE)
    }
}

impl fmt::Display for Weight {
    /// Shortest exact decimal: `1`, `0.5`, `0.0625`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / Self::SCALE;
        let frac = self.0 % Self::SCALE;
        if frac == 0 {
            return write!(f, "{whole}");
        }
        let digits = format!("{frac:04}");
        write!(f, "{whole}.{}", digits.trim_end_matches('0'))
    }
}

impl FromStr for Weight {
    type Err = ParseLabelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            parse_err(
                "weight",
                s,
                "a decimal in [0, 1] with at most four decimals, such as 0.5 or 0.0625",
            )
        };
        let (whole, frac) = match s.split_once('.') {
            Some((w, f)) => (w, f),
            None => (s, ""),
        };
        if whole.is_empty() && frac.is_empty() {
            return Err(bad());
        }
        if !whole.chars().all(|c| c.is_ascii_digit())
            || !frac.chars().all(|c| c.is_ascii_digit())
            || frac.len() > 4
            || whole.len() > 1
            || (s.contains('.') && frac.is_empty())
        {
            return Err(bad());
        }
        let whole: u16 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| bad())?
        };
        let mut frac_bp: u16 = 0;
        for (i, c) in frac.chars().enumerate() {
            let d = c.to_digit(10).ok_or_else(bad)? as u16;
            frac_bp += d * 10u16.pow(3 - i as u32);
        }
        let bp = whole
            .checked_mul(Self::SCALE)
            .and_then(|w| w.checked_add(frac_bp))
            .ok_or_else(bad)?;
        Weight::from_bp(bp).ok_or_else(bad)
    }
}

impl Serialize for Weight {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Weight {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lattice_order() {
        assert!(TrustLabel::Trusted < TrustLabel::DerivedTrusted);
        assert!(TrustLabel::DerivedTrusted < TrustLabel::DerivedUntrusted);
        assert!(TrustLabel::DerivedUntrusted < TrustLabel::External);
        assert_eq!(TrustLabel::External.derived(), TrustLabel::DerivedUntrusted);
        assert_eq!(TrustLabel::Trusted.derived(), TrustLabel::DerivedTrusted);
    }

    #[test]
    fn label_names_round_trip() {
        for l in TrustLabel::ALL {
            assert_eq!(l.as_str().parse::<TrustLabel>().unwrap(), l);
            assert_eq!(
                serde_json::to_string(&l).unwrap(),
                format!("\"{}\"", l.as_str())
            );
        }
        assert!("trusted".parse::<TrustLabel>().is_err());
    }

    #[test]
    fn weight_parsing_is_exact() {
        assert_eq!("0.5".parse::<Weight>().unwrap().bp(), 5000);
        assert_eq!("1".parse::<Weight>().unwrap().bp(), 10000);
        assert_eq!("1.0".parse::<Weight>().unwrap().bp(), 10000);
        assert_eq!("0".parse::<Weight>().unwrap().bp(), 0);
        assert_eq!(".25".parse::<Weight>().unwrap().bp(), 2500);
        assert_eq!("0.0625".parse::<Weight>().unwrap().bp(), 625);
        for bad in [
            "", ".", "1.5", "2", "-0.1", "0.12345", "0.5x", "1.", "01", "nan",
        ] {
            assert!(bad.parse::<Weight>().is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn weight_display_round_trips() {
        for bp in [0u16, 1, 10, 625, 5000, 9999, 10000] {
            let w = Weight::from_bp(bp).unwrap();
            assert_eq!(w.to_string().parse::<Weight>().unwrap(), w);
        }
        assert_eq!(Weight::from_bp(5000).unwrap().to_string(), "0.5");
        assert!(Weight::from_bp(10001).is_none());
    }

    #[test]
    fn from_float_rounds_and_clamps() {
        assert_eq!(Weight::from_unit_f64(0.123456).bp(), 1235);
        assert_eq!(Weight::from_unit_f64(-1.0).bp(), 0);
        assert_eq!(Weight::from_unit_f64(7.0).bp(), 10000);
        assert_eq!(Weight::from_unit_f64(f64::NAN).bp(), 0);
    }
}
