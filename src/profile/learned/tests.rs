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
