//! Rates as exact fractions, printed with a fixed number of decimals. No float decides anything.

use crate::json::Json;
use std::fmt;

/// `successes / total`, kept as integers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rate {
    /// Numerator: episodes where the event happened (attack succeeded, legitimate call
    /// dispatched).
    pub successes: u64,
    /// Denominator: episodes run.
    pub total: u64,
}

impl Rate {
    /// Adds one episode.
    pub fn add(&mut self, success: bool) {
        self.total += 1;
        if success {
            self.successes += 1;
        }
    }

    /// The rate in basis points (0..=10000), rounded half up; 0 for an empty rate.
    pub fn bp(&self) -> u64 {
        if self.total == 0 {
            return 0;
        }
        (self.successes * 10_000 + self.total / 2) / self.total
    }

    /// The rate with four decimals: `0.0000` … `1.0000`.
    pub fn decimal(&self) -> String {
        let bp = self.bp();
        format!("{}.{:04}", bp / 10_000, bp % 10_000)
    }

    /// The rate with two decimals (for tables): `0.00` … `1.00`, rounded half up.
    pub fn short(&self) -> String {
        let cents = (self.bp() + 50) / 100;
        format!("{}.{:02}", cents / 100, cents % 100)
    }

    /// The rate as a JSON number with four decimals.
    pub fn json(&self) -> Json {
        Json::Num(self.decimal())
    }

    /// `{"rate": 0.5000, "successes": n, "episodes": m}`.
    pub fn json_counts(&self) -> Json {
        Json::obj()
            .with("episodes", Json::int(self.total))
            .with("rate", self.json())
            .with("successes", Json::int(self.successes))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.decimal())
    }
}

/// Basis points as a decimal with `decimals` digits (2 or 4), truncating nothing: the grid and
/// the weights are multiples of the unit shown.
pub fn bp_decimal(bp: u16, decimals: usize) -> String {
    let whole = bp / 10_000;
    let frac = format!("{:04}", bp % 10_000);
    format!("{whole}.{}", &frac[..decimals.min(4)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_decimals() {
        let r = Rate {
            successes: 1,
            total: 3,
        };
        assert_eq!(r.decimal(), "0.3333");
        assert_eq!(r.short(), "0.33");
        let r = Rate {
            successes: 2,
            total: 3,
        };
        assert_eq!(r.decimal(), "0.6667");
        assert_eq!(r.short(), "0.67");
        assert_eq!(Rate::default().decimal(), "0.0000");
        let r = Rate {
            successes: 50,
            total: 50,
        };
        assert_eq!(r.decimal(), "1.0000");
        assert_eq!(r.short(), "1.00");
        assert_eq!(bp_decimal(4500, 2), "0.45");
        assert_eq!(bp_decimal(10_000, 2), "1.00");
        assert_eq!(bp_decimal(741, 4), "0.0741");
    }
}
