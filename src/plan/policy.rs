//! The replay policy an operator writes: which causes are fixed (cleared) and how many
//! attempts make a message poison. An empty allow-list clears nothing.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::manifest::{Decision, DEFAULT_MAX_ATTEMPTS};
use crate::profile::classify::CategoryRule;
use crate::signature::Signature;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Attempts that make a message poison (default 3). Under routing a category's
    /// `max_retries` applies instead, but never above a `max_attempts` the file sets.
    #[serde(default)]
    pub max_attempts: Option<i64>,
    /// Reasons (the profile's reason field, compared trimmed and lowercased) whose root cause
    /// is fixed.
    #[serde(default)]
    pub cleared_reasons: Vec<String>,
    /// Signatures whose root cause is fixed; a listed field must equal the normalised value,
    /// unlisted fields match anything.
    #[serde(default)]
    pub cleared_signatures: Vec<toml::Table>,
    /// Replay everything that is not poisoned by attempts. Must be said explicitly.
    #[serde(default)]
    pub clear_all: bool,
    /// Let each message's error category decide what the allow-lists leave open: categories
    /// whose routing retries replay (and are poison after their `max_retries`), the others are
    /// held. `plan` without `--policy` uses exactly this.
    #[serde(default)]
    pub routing: bool,
    /// The revision the work will be reprocessed under; it replaces the message's revision in
    /// the idempotency key.
    #[serde(default)]
    pub replay_revision: Option<String>,
    #[serde(default)]
    pub filter: Filter,
}

/// Which messages the manifest covers at all.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    pub since: Option<String>,
    pub until: Option<String>,
    /// Only messages whose signature has these normalised values.
    pub signature: Option<toml::Table>,
}

impl Policy {
    /// The default policy: the classification's routing, nothing cleared explicitly.
    pub fn routing_default() -> Policy {
        Policy { routing: true, ..Policy::default() }
    }

    pub fn load(path: &Path) -> Result<Policy> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read policy", path.display()))?;
        Self::parse(&text).with_context(|| format!("policy {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Policy> {
        let mut policy: Policy = toml::from_str(text)?;
        if policy.max_attempts.is_some_and(|m| m < 1) {
            bail!("max_attempts must be at least 1");
        }
        policy.cleared_reasons = policy.cleared_reasons.iter().map(|r| r.trim().to_lowercase()).collect();
        for table in policy.cleared_signatures.iter().chain(policy.filter.signature.iter()) {
            for (field, value) in table {
                if !value.is_str() {
                    bail!("signature field `{field}` must be a string");
                }
            }
        }
        Ok(policy)
    }

    /// The gate, in order: attempts (the category's `max_retries` under routing, else
    /// `max_attempts`), then the allow-lists, then (under routing) the category's `retry`.
    /// `route` is the message's category routing, needed only when `self.routing`.
    pub fn decide(&self, attempts: i64, reason: Option<&str>, signature: &Signature, route: Option<&CategoryRule>) -> Decision {
        let route = route.filter(|_| self.routing);
        if attempts >= self.cap(route) {
            return Decision::PoisonAttempts;
        }
        let reason_cleared = reason.is_some_and(|r| self.cleared_reasons.iter().any(|c| *c == r.trim().to_lowercase()));
        let signature_cleared = self.cleared_signatures.iter().any(|t| matches(t, signature));
        if self.clear_all || reason_cleared || signature_cleared || route.is_some_and(|r| r.retry) {
            Decision::Replay
        } else {
            Decision::PoisonUncleared
        }
    }

    /// Attempts that make a message poison: the category's `max_retries` under routing, never
    /// above a `max_attempts` the file sets; else `max_attempts` (default 3). Execute uses the
    /// same cap, sealed in each entry, for replays that fail.
    pub fn cap(&self, route: Option<&CategoryRule>) -> i64 {
        match (self.max_attempts, route.filter(|_| self.routing).and_then(|r| r.max_retries)) {
            (Some(set), Some(category)) => set.min(category),
            (set, category) => set.or(category).unwrap_or(DEFAULT_MAX_ATTEMPTS),
        }
    }

    pub fn selects(&self, signature: &Signature) -> bool {
        self.filter.signature.as_ref().is_none_or(|t| matches(t, signature))
    }

    /// Checks that every field the policy names is a signature field, so a typo cannot
    /// silently clear nothing (or everything).
    pub fn check_fields(&self, signature_fields: &[String]) -> Result<()> {
        for table in self.cleared_signatures.iter().chain(self.filter.signature.iter()) {
            for field in table.keys() {
                if !signature_fields.contains(field) {
                    bail!("policy names signature field `{field}`, which the profile does not have (fields: {})", signature_fields.join(", "));
                }
            }
        }
        Ok(())
    }
}

fn matches(table: &toml::Table, signature: &Signature) -> bool {
    table.iter().all(|(field, want)| signature.get(field).is_some_and(|have| Some(have) == want.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::classify::Classifier;

    fn held() -> CategoryRule {
        Classifier::default().routing("validation").clone()
    }

    fn sig(stage: &str, reason: &str) -> Signature {
        Signature(vec![("stage".into(), stage.into()), ("reject_reason".into(), reason.into()), ("registry_revision".into(), "det-v8".into())])
    }

    #[test]
    fn an_empty_allow_list_clears_nothing() {
        let p = Policy::parse("").unwrap();
        assert_eq!(p.max_attempts, None);
        assert_eq!(p.decide(3, Some("timeout"), &sig("inference", "timeout"), None), Decision::PoisonAttempts);
        assert_eq!(p.decide(0, Some("timeout"), &sig("inference", "timeout"), Some(&held())), Decision::PoisonUncleared);
        let all = Policy::parse("clear_all = true").unwrap();
        assert_eq!(all.decide(0, Some("timeout"), &sig("inference", "timeout"), Some(&held())), Decision::Replay);
        assert_eq!(all.decide(3, Some("timeout"), &sig("inference", "timeout"), Some(&held())), Decision::PoisonAttempts);
    }

    #[test]
    fn attempts_come_first_then_reasons_or_signatures() {
        let p = Policy::parse(
            "max_attempts = 2\ncleared_reasons = [' Timeout ']\ncleared_signatures = [{stage = 'ingestion', reject_reason = 'schema_invalid'}]",
        )
        .unwrap();
        assert_eq!(p.decide(2, Some("timeout"), &sig("inference", "timeout"), Some(&held())), Decision::PoisonAttempts);
        assert_eq!(p.decide(1, Some("Timeout"), &sig("inference", "timeout"), Some(&held())), Decision::Replay);
        assert_eq!(p.decide(0, Some("schema_invalid"), &sig("ingestion", "schema_invalid"), Some(&held())), Decision::Replay);
        assert_eq!(p.decide(0, Some("schema_invalid"), &sig("inference", "schema_invalid"), Some(&held())), Decision::PoisonUncleared);
    }

    #[test]
    fn routing_replays_retryable_categories_up_to_their_cap_and_holds_the_rest() {
        let c = Classifier::default();
        let p = Policy::routing_default();
        let s = sig("inference", "timeout");
        assert_eq!(p.decide(4, None, &s, Some(c.routing("transient"))), Decision::Replay);
        assert_eq!(p.decide(5, None, &s, Some(c.routing("transient"))), Decision::PoisonAttempts);
        assert_eq!(p.decide(9, None, &s, Some(c.routing("dependency"))), Decision::Replay);
        assert_eq!(p.decide(0, None, &s, Some(c.routing("validation"))), Decision::PoisonUncleared);
        assert_eq!(p.decide(0, None, &s, Some(c.routing("poison"))), Decision::PoisonUncleared);
        assert_eq!(p.decide(3, None, &s, Some(c.routing("poison"))), Decision::PoisonAttempts);
        let cleared = Policy::parse("routing = true\ncleared_reasons = ['timeout']").unwrap();
        assert_eq!(cleared.decide(0, Some("timeout"), &s, Some(c.routing("validation"))), Decision::Replay);
        // A cap the operator sets is never raised by a category's.
        let strict = Policy::parse("routing = true\nmax_attempts = 1").unwrap();
        assert_eq!(strict.decide(1, None, &s, Some(c.routing("transient"))), Decision::PoisonAttempts);
        assert_eq!(Policy::parse("routing = true\nmax_attempts = 9").unwrap().decide(5, None, &s, Some(c.routing("transient"))), Decision::PoisonAttempts);
        // Without routing a file's empty allow-list still clears nothing.
        assert_eq!(Policy::parse("").unwrap().decide(0, None, &s, Some(c.routing("transient"))), Decision::PoisonUncleared);
    }

    #[test]
    fn unknown_fields_are_refused() {
        assert!(Policy::parse("max_atempts = 3").is_err());
        let p = Policy::parse("cleared_signatures = [{reason = 'x'}]").unwrap();
        let err = p.check_fields(&["stage".into(), "reject_reason".into()]).unwrap_err();
        assert!(err.to_string().contains("`reason`"), "{err}");
    }
}
