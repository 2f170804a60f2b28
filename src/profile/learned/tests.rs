//! Learning finds the words that vary, leaves causes that differ by a word apart, and a
//! file applies to each message alone.

use std::collections::HashMap;

use super::{learn, render, Learned};
use crate::profile::template::template;

fn templates(messages: &[&str]) -> HashMap<String, u64> {
    let mut counts = HashMap::new();
    for m in messages {
        *counts.entry(template(m)).or_insert(0) += 1;
    }
    counts
}

#[test]
fn words_that_vary_become_values_and_causes_that_differ_by_a_word_do_not() {
    let messages = [
        "Failed to drop users", "Failed to drop orders", "Failed to drop sessions", "Failed to drop ledger",
        "SELECT is not yet supported in unquoted SQL function body", "INSERT is not yet supported in unquoted SQL function body",
        "UPDATE is not yet supported in unquoted SQL function body", "MERGE is not yet supported in unquoted SQL function body",
        "connection refused by peer", "connection refused by peer", "connection refused by peer", "connection reset by peer",
        "connection closed by peer",
    ];
    let patterns = learn(&templates(&messages));
    let learned: Vec<&str> = patterns.iter().map(|p| p.template.as_str()).collect();
    assert_eq!(learned, ["<?> is not yet supported in unquoted SQL function body", "Failed to drop <?>"]);
    let file = Learned::parse(&render(&patterns, messages.len() as u64, 1)).unwrap();
    assert_eq!(file.apply(&template("Failed to drop invoices")), Some("Failed to drop <*>"));
    assert_eq!(file.apply(&template("DELETE is not yet supported in unquoted SQL function body")), Some("<*> is not yet supported in unquoted SQL function body"));
    assert_eq!(file.apply(&template("connection reset by peer")), None);
    assert_eq!(file.apply(&template("Failed to create users")), None);
}

#[test]
fn the_same_messages_in_any_order_learn_the_same_file() {
    let mut messages = vec!["Failed to DROP PROCEDURE orders", "Failed to DROP FUNCTION users", "Failed to DROP EVENT ledger", "Failed to DROP VIEW carts"];
    messages.extend(["Failed to CREATE PROCEDURE a", "Failed to CREATE FUNCTION b", "Failed to CREATE EVENT c", "Failed to CREATE VIEW d"]);
    let first = render(&learn(&templates(&messages)), 8, 1);
    messages.reverse();
    assert_eq!(render(&learn(&templates(&messages)), 8, 1), first);
    // DROP and CREATE took two values: two causes, each with its own two varying words.
    assert!(first.contains("template = \"Failed to DROP <?> <?>\"") && first.contains("template = \"Failed to CREATE <?> <?>\""), "{first}");
}

#[test]
fn a_file_is_checked_and_its_digest_is_its_patterns() {
    assert!(Learned::parse("format = \"other\"\n").is_err());
    assert!(Learned::parse("format = \"dlqf.templates/1\"\n[[pattern]]\ntemplate = \"no wildcard\"\n").is_err());
    assert!(Learned::parse("format = \"dlqf.templates/1\"\n[[pattern]]\ntemplate = \"a <?>\"\nextra = 1\n").is_err());
    let a = Learned::parse("format = \"dlqf.templates/1\"\n[[pattern]]\ntemplate = \"a <?>\"\nmessages = 3\n").unwrap();
    let b = Learned::parse("format = \"dlqf.templates/1\"\n[[pattern]]\ntemplate = \"a <?>\"\nmessages = 9\n").unwrap();
    let c = Learned::parse("format = \"dlqf.templates/1\"\n[[pattern]]\ntemplate = \"b <?>\"\n").unwrap();
    assert_eq!(a.digest, b.digest, "counts and examples are for the reviewer");
    assert_ne!(a.digest, c.digest);
}

/// Values of several words, or of a different number each time, fill one gap anchored by the
/// constant words around it; causes that differ by their wording stay apart.
#[test]
fn values_of_any_number_of_words_fill_a_gap() {
    let types = ["bigint", "double precision", "integer", "timestamp with time zone", "text", "character varying", "boolean", "numeric"];
    let mut messages: Vec<String> = Vec::new();
    for (i, a) in types.iter().enumerate() {
        let b = types[(i * 3 + 1) % types.len()];
        messages.push(format!("must be owner of type {a} or type {b}"));
    }
    let reasons = ["timeout expired", "canceling statement due to user request", "deadlock detected", "out of shared memory", "lock not available"];
    let functions = ["sp_refresh_totals", "ev_purge_sessions", "sp_rollup", "fn_archive", "sp_merge_carts"];
    for (i, reason) in reasons.iter().enumerate() {
        messages.push(format!("Underflow error: {reason} in function {}.", functions[i]));
    }
    // Two causes that share most words but differ in the one that says which.
    for _ in 0..4 {
        messages.push("connection refused by peer while sending".to_string());
        messages.push("connection reset by peer while sending".to_string());
    }
    let refs: Vec<&str> = messages.iter().map(String::as_str).collect();
    let patterns = learn(&templates(&refs));
    // The same file from the messages in any order.
    let mut reversed = refs.clone();
    reversed.reverse();
    assert_eq!(render(&learn(&templates(&reversed)), 1, 1), render(&patterns, 1, 1));
    let learned: Vec<&str> = patterns.iter().map(|p| p.template.as_str()).collect();
    assert!(learned.contains(&"must be owner of type <...> or type <...>"), "{learned:?}");
    assert!(learned.contains(&"Underflow error: <...> in function <?>"), "{learned:?}");
    let file = Learned::parse(&render(&patterns, refs.len() as u64, 1)).unwrap();
    // Unseen fills of other lengths, applied to each message alone.
    assert_eq!(file.apply(&template("must be owner of type smallint or type time without time zone")), Some("must be owner of type <*> or type <*>"));
    assert_eq!(file.apply(&template("Underflow error: could not serialize access in function sp_x.")), Some("Underflow error: <*> in function <*>"));
    assert_eq!(file.apply(&template("Underflow error: in function sp_x.")), Some("Underflow error: <*> in function <*>"));
    assert_eq!(file.apply(&template("connection refused by peer while sending")), None);
    assert_ne!(file.apply(&template("connection reset by peer while sending")), file.apply(&template("connection refused by peer while sending")).or(Some("")));
    assert_eq!(file.apply(&template("must be owner of relation orders")), None);
}

/// A gap's fills that mostly start with one word are wording of a cause, not a value: such
/// clusters split rather than merge two causes under one gap.
#[test]
fn a_gap_does_not_swallow_the_words_that_tell_causes_apart() {
    let mut messages: Vec<String> = Vec::new();
    // Names of one word and of two, so that no pattern of one word count fits them all.
    for name in ["orders", "sales users", "carts", "old ledger", "payments", "new refunds"] {
        messages.push(format!("must be owner of relation {name} in schema public"));
    }
    for name in ["idx_a", "idx b", "idx_c"] {
        messages.push(format!("must be owner of index {name} in schema public"));
    }
    let refs: Vec<&str> = messages.iter().map(String::as_str).collect();
    let patterns = learn(&templates(&refs));
    let learned: Vec<&str> = patterns.iter().map(|p| p.template.as_str()).collect();
    assert!(!learned.iter().any(|p| p.contains("of <...> in") || p.contains("of <?> <?> in")), "{learned:?}");
    let file = Learned::parse(&render(&patterns, refs.len() as u64, 1)).unwrap();
    let relation = file.apply(&template("must be owner of relation x y in schema public"));
    assert_eq!(relation, Some("must be owner of relation <*> in schema public"), "{learned:?}");
    assert_ne!(relation, file.apply(&template("must be owner of index x y in schema public")));
}

/// Files of the first format (no gaps) read as they did; a gap in one is a plain word.
#[test]
fn a_first_format_file_has_no_gaps() {
    assert!(Learned::parse("format = \"dlqf.templates/1\"\n[[pattern]]\ntemplate = \"a <...>\"\n").is_err());
    assert!(Learned::parse("format = \"dlqf.templates/2\"\n[[pattern]]\ntemplate = \"a <...>\"\n").is_ok());
    assert!(Learned::parse("format = \"dlqf.templates/2\"\n[[pattern]]\ntemplate = \"<...> <?>\"\n").is_err());
}

/// A gap at the end of a pattern, with nothing after it to anchor it, is not trusted with
/// values of several words unless an anchored gap beside it holds values too: entries that
/// share a beginning stay apart.
#[test]
fn an_open_ended_gap_alone_does_not_join_entries_that_share_a_beginning() {
    // Endings of as many words each, so that no pattern of one word count takes them.
    let endings = ["SRIDs.", "hi-lo sequences.", "value generation strategies.", "maximum lengths for columns.", "column orders in the key set."];
    let messages: Vec<String> = endings.iter().map(|e| format!("both properties are mapped to one column but are configured with different {e}")).collect();
    let refs: Vec<&str> = messages.iter().map(String::as_str).collect();
    let patterns = learn(&templates(&refs));
    assert!(patterns.is_empty(), "{patterns:?}");
    // Beside a gap anchored on both sides that holds values, the same end is trusted.
    let types = [("bigint", "double precision"), ("integer", "timestamp with time zone"), ("text", "character varying"), ("boolean", "numeric")];
    let messages: Vec<String> = types.iter().map(|(a, b)| format!("must be owner of type {a} or type {b}")).collect();
    let refs: Vec<&str> = messages.iter().map(String::as_str).collect();
    let learned: Vec<String> = learn(&templates(&refs)).into_iter().map(|p| p.template).collect();
    assert_eq!(learned, ["must be owner of type <?> or type <...>"]);
}
