//! [`RunId`]: how a stored run is named. The store's row id 42 is shown as "r42" (the form
//! `RunRecord::id` carries); "r42", "R42" and "42" all parse back to it.

use std::fmt;

/// A run's id in the store: the `runs.id` row id, displayed as "r42".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(pub i64);

impl RunId {
    /// Reads "r42", "R42" or "42" (surrounding spaces ignored); `None` for anything else,
    /// including zero and negative numbers, which no stored run has.
    pub fn parse(text: &str) -> Option<RunId> {
        let text = text.trim();
        let digits = text
            .strip_prefix('r')
            .or_else(|| text.strip_prefix('R'))
            .unwrap_or(text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        match digits.parse::<i64>() {
            Ok(n) if n > 0 => Some(RunId(n)),
            _ => None,
        }
    }

    /// The row id, as the `runs.id` column holds it.
    pub fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_with_an_r() {
        assert_eq!(RunId(42).to_string(), "r42");
    }

    #[test]
    fn parses_both_forms() {
        assert_eq!(RunId::parse("r42"), Some(RunId(42)));
        assert_eq!(RunId::parse("R42"), Some(RunId(42)));
        assert_eq!(RunId::parse("42"), Some(RunId(42)));
        assert_eq!(RunId::parse(" r7 "), Some(RunId(7)));
        assert_eq!("r42".parse::<RunId>().unwrap(), RunId(42));
    }

    #[test]
    fn rejects_what_is_not_an_id() {
        for text in [
            "",
            "r",
            "r0",
            "0",
            "-3",
            "r-3",
            "v7.4",
            "42a",
            "r 42",
            "+4",
            "99999999999999999999",
        ] {
            assert_eq!(RunId::parse(text), None, "{text:?}");
        }
        let err = "v7.4".parse::<RunId>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "'v7.4' is not a run id: use the form r42 or 42"
        );
    }
}
