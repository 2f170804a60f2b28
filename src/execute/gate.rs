//! The poison gate at execute time, in one place for a run and a dry run: an entry's sealed
//! decision and its key's state in the ledger decide what happens to it.

use super::ledger::{Claim, Purpose};
use crate::manifest::{Decision, Entry};

/// What happens to one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Fate {
    /// Done or quarantined already (by this executor or another): nothing to do.
    Finished,
    /// Another live executor holds the key.
    Busy,
    /// To the quarantine, never the target: the decision and why.
    Hold(Decision, String),
    Replay,
}

/// What an entry's key is claimed for.
pub(super) fn purpose(entry: &Entry) -> Purpose {
    if entry.decision == Decision::Replay { Purpose::Replay } else { Purpose::Quarantine }
}

/// The gate: poison decided at plan time is held; a replay whose key has failed its
/// `max_attempts` times is held as poison instead of looping; the rest replays.
pub(super) fn fate(entry: &Entry, claim: &Claim) -> Fate {
    let failures = match claim {
        Claim::Done | Claim::Quarantined => return Fate::Finished,
        Claim::Busy => return Fate::Busy,
        Claim::Granted { failures } => *failures,
    };
    match entry.decision {
        Decision::PoisonAttempts => Fate::Hold(Decision::PoisonAttempts, format!("attempts {} >= max {}", entry.attempts, entry.max_attempts)),
        Decision::PoisonUncleared => Fate::Hold(Decision::PoisonUncleared, "signature not cleared for replay".into()),
        Decision::Replay if failures >= entry.max_attempts => {
            Fate::Hold(Decision::PoisonAttempts, format!("replay failed {failures} times (max {})", entry.max_attempts))
        }
        Decision::Replay => Fate::Replay,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::Signature;

    fn entry(decision: Decision, attempts: i64) -> Entry {
        Entry { key: "k".into(), decision, signature: Signature(Vec::new()), id: "i".into(), attempts, max_attempts: 3, record: serde_json::json!({}), origin: None }
    }

    #[test]
    fn sealed_decisions_first_then_failures_counted_in_the_ledger() {
        let granted = |failures| Claim::Granted { failures };
        assert_eq!(fate(&entry(Decision::Replay, 0), &granted(0)), Fate::Replay);
        assert_eq!(fate(&entry(Decision::Replay, 0), &granted(2)), Fate::Replay);
        assert_eq!(fate(&entry(Decision::Replay, 0), &granted(3)), Fate::Hold(Decision::PoisonAttempts, "replay failed 3 times (max 3)".into()));
        assert_eq!(fate(&entry(Decision::PoisonAttempts, 5), &granted(0)), Fate::Hold(Decision::PoisonAttempts, "attempts 5 >= max 3".into()));
        assert!(matches!(fate(&entry(Decision::PoisonUncleared, 0), &granted(0)), Fate::Hold(Decision::PoisonUncleared, _)));
        for decision in Decision::ALL {
            assert_eq!(fate(&entry(decision, 0), &Claim::Done), Fate::Finished);
            assert_eq!(fate(&entry(decision, 0), &Claim::Quarantined), Fate::Finished);
            assert_eq!(fate(&entry(decision, 0), &Claim::Busy), Fate::Busy);
        }
        assert_eq!(purpose(&entry(Decision::Replay, 0)), Purpose::Replay);
        assert_eq!(purpose(&entry(Decision::PoisonUncleared, 0)), Purpose::Quarantine);
    }
}
