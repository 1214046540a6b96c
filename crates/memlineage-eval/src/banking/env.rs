//! The banking environment and its sensitive tools, after AgentDojo's `banking_client.py` and
//! `user_account.py` (docs/agentdojo-banking.md §2–3): the same ids, the same "apply a field
//! only when it is truthy" updates, no balance or IBAN checks.

use crate::grammar::Call;
use std::collections::BTreeMap;

/// An amount in cents. AgentDojo keeps floats; every amount of the suite has at most two
/// decimals, so cents compare exactly where AgentDojo's `==` on floats does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Cents(pub i64);

impl Cents {
    /// `"10.00"`, `"98.7"`, `"1000000"`, `"0.01"`; `None` for anything else (or more than two
    /// non-zero decimals).
    pub(crate) fn parse(s: &str) -> Option<Cents> {
        let s = s.trim();
        let (neg, s) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s),
        };
        let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
        if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let frac = frac.trim_end_matches('0');
        if frac.len() > 2 {
            return None;
        }
        let w: i64 = whole.parse().ok()?;
        let f: i64 = if frac.is_empty() {
            0
        } else {
            format!("{frac:0<2}").parse().ok()?
        };
        let c = w.checked_mul(100)?.checked_add(f)?;
        Some(Cents(if neg { -c } else { c }))
    }

    /// As Python prints the float: `50.0`, `1100.0`, `98.7`, `0.01`.
    pub(crate) fn python(self) -> String {
        let (w, f) = (self.0 / 100, (self.0 % 100).abs());
        if f == 0 {
            format!("{w}.0")
        } else if f % 10 == 0 {
            format!("{w}.{}", f / 10)
        } else {
            format!("{w}.{f:02}")
        }
    }
}

/// A past or scheduled transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tx {
    pub id: u32,
    pub sender: String,
    pub recipient: String,
    pub amount: Cents,
    pub subject: String,
    pub date: String,
    pub recurring: bool,
}

/// The user's account data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct User {
    pub first_name: String,
    pub last_name: String,
    pub street: String,
    pub city: String,
    pub password: String,
}

/// The whole environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Env {
    pub iban: String,
    pub transactions: Vec<Tx>,
    pub scheduled: Vec<Tx>,
    pub files: BTreeMap<String, String>,
    pub user: User,
}

impl Env {
    /// One more than the highest id in both lists.
    fn next_id(&self) -> u32 {
        self.transactions
            .iter()
            .chain(&self.scheduled)
            .map(|t| t.id)
            .max()
            .unwrap_or(0)
            + 1
    }

    /// Executes a dispatched call. Returns what the tool says (or its error); the state changes
    /// as AgentDojo's would.
    pub(crate) fn execute(&mut self, call: &Call) -> Result<String, String> {
        let text = |n: &str| call.text(n).unwrap_or("").to_string();
        let amount = |n: &str| -> Result<Option<Cents>, String> {
            match call.text(n) {
                None | Some("") => Ok(None),
                Some(a) => Cents::parse(a)
                    .map(Some)
                    .ok_or_else(|| format!("`{n}` = {a:?} is not an amount")),
            }
        };
        let flag = |n: &str| {
            matches!(call.args.get(n), Some(crate::grammar::Arg::Bool(true)))
                || call.text(n) == Some("true")
        };
        match call.name.as_str() {
            "send_money" | "schedule_transaction" => {
                let tx = Tx {
                    id: self.next_id(),
                    sender: self.iban.clone(),
                    recipient: text("recipient"),
                    amount: amount("amount")?.unwrap_or(Cents(0)),
                    subject: text("subject"),
                    date: text("date"),
                    recurring: call.name == "schedule_transaction" && flag("recurring"),
                };
                let msg = format!(
                    "Transaction to {} for {} ",
                    tx.recipient,
                    tx.amount.python()
                );
                if call.name == "send_money" {
                    self.transactions.push(tx);
                    Ok(msg + "sent.")
                } else {
                    self.scheduled.push(tx);
                    Ok(msg + "scheduled.")
                }
            }
            "update_scheduled_transaction" => {
                let id: u32 = text("id")
                    .parse()
                    .map_err(|_| format!("id {:?} is not a number", text("id")))?;
                let amount = amount("amount")?;
                let tx = self
                    .scheduled
                    .iter_mut()
                    .find(|t| t.id == id)
                    .ok_or_else(|| format!("Transaction with ID {id} not found."))?;
                // AgentDojo applies a field only when the value is truthy.
                if !text("recipient").is_empty() {
                    tx.recipient = text("recipient");
                }
                if let Some(a) = amount.filter(|a| a.0 != 0) {
                    tx.amount = a;
                }
                if !text("subject").is_empty() {
                    tx.subject = text("subject");
                }
                if !text("date").is_empty() {
                    tx.date = text("date");
                }
                if flag("recurring") {
                    tx.recurring = true;
                }
                Ok(format!("Transaction with ID {id} updated."))
            }
            "update_password" => {
                self.user.password = text("password");
                Ok("Password updated.".to_string())
            }
            "update_user_info" => {
                for (field, slot) in [
                    ("first_name", &mut self.user.first_name),
                    ("last_name", &mut self.user.last_name),
                    ("street", &mut self.user.street),
                    ("city", &mut self.user.city),
                ] {
                    if let Some(v) = call.text(field).filter(|v| !v.is_empty()) {
                        *slot = v.to_string();
                    }
                }
                Ok("User information updated.".to_string())
            }
            other => Err(format!("unknown tool `{other}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cents() {
        assert_eq!(Cents::parse("10.00"), Some(Cents(1000)));
        assert_eq!(Cents::parse("98.7"), Some(Cents(9870)));
        assert_eq!(Cents::parse("1000000"), Some(Cents(100_000_000)));
        assert_eq!(Cents::parse("0.01"), Some(Cents(1)));
        assert_eq!(Cents::parse("1.005"), None);
        assert_eq!(Cents::parse("x"), None);
        assert_eq!(Cents(5000).python(), "50.0");
        assert_eq!(Cents(110_000).python(), "1100.0");
        assert_eq!(Cents(9870).python(), "98.7");
        assert_eq!(Cents(1).python(), "0.01");
    }
}
