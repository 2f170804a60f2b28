//! Error categories and their routing, after the seed's `ErrorClassifier` and `ERROR_ROUTING`:
//! the default rules, which a TOML file can override category by category.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// Categories in the order their rules are tried; anything unmatched is `unknown`.
pub const CATEGORIES: [&str; 5] = ["poison", "validation", "transient", "dependency", "unknown"];

/// How one category is recognised and what should happen to its messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CategoryRule {
    /// Exception type names (a module path before the name is ignored: `json.JSONDecodeError`).
    #[serde(default)]
    pub types: Vec<String>,
    /// Case-insensitive substrings of the error message.
    #[serde(default)]
    pub patterns: Vec<String>,
    /// Whether messages of this category may be replayed without an explicit clearance.
    pub retry: bool,
    /// Attempts after which a retryable message is poison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<i64>,
    pub alert: bool,
    pub page: bool,
    /// Where the pipeline sends this category (the seed's `dlq`), for the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dlq: Option<String>,
    /// The pipeline's retry backoff (the seed's `backoff`), for the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Classifier {
    /// One rule per entry of `CATEGORIES`, in that order.
    pub rules: Vec<(String, CategoryRule)>,
}

/// As a TOML override file would write it: one table per category, in rule order.
impl Serialize for Classifier {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.rules.len()))?;
        for (name, rule) in &self.rules {
            map.serialize_entry(name, rule)?;
        }
        map.end()
    }
}

fn rule(types: &[&str], patterns: &[&str], retry: bool, max_retries: Option<i64>, alert: bool, page: bool) -> CategoryRule {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    CategoryRule { types: strings(types), patterns: strings(patterns), retry, max_retries, alert, page, dlq: None, backoff: None }
}

/// The seed's exception types (Python's), then the JVM's, .NET's and Ruby's of the same kind,
/// then the brokers' own dead-letter reasons (RabbitMQ's `x-death` reason, Event Grid's
/// `deadLetterReason`, EventBridge's `ERROR_CODE`), which a profile classifies as types.
const POISON_TYPES: [&str; 11] = [
    "MemoryError", "RecursionError", "PoisonPillError",
    "OutOfMemoryError", "StackOverflowError",
    "OutOfMemoryException", "StackOverflowException", "InsufficientExecutionStackException",
    "SystemStackError", "NoMemoryError",
    // Redelivered past the queue's limit: the message keeps taking its consumer down.
    "delivery_limit",
];
const VALIDATION_TYPES: [&str; 37] = [
    "ValueError", "KeyError", "TypeError", "JSONDecodeError",
    "SerializationException", "DeserializationException", "DataException", "JsonParseException", "JsonMappingException", "MismatchedInputException",
    "InvalidFormatException", "UnrecognizedPropertyException", "NumberFormatException", "IllegalArgumentException", "NullPointerException",
    "ClassCastException", "ConstraintViolationException", "SQLIntegrityConstraintViolationException", "DataIntegrityViolationException", "BatchUpdateException",
    "MethodArgumentNotValidException", "MessageConversionException",
    "ArgumentException", "ArgumentNullException", "ArgumentOutOfRangeException", "FormatException", "JsonException", "InvalidCastException",
    "ValidationException", "KeyNotFoundException", "NullReferenceException",
    "ArgumentError", "NoMethodError", "ParserError", "RecordInvalid", "RecordNotFound",
    // A consumer refused it, without requeueing it.
    "rejected",
];
const TRANSIENT_TYPES: [&str; 23] = [
    "TimeoutError", "ConnectionError", "ConnectionResetError",
    "SocketTimeoutException", "TimeoutException", "SocketException", "QueryTimeoutException", "TransientDataAccessException",
    "CannotAcquireLockException", "DeadlockLoserDataAccessException", "PessimisticLockingFailureException", "ResourceAccessException",
    "RetriableException", "NotEnoughReplicasException", "NetworkException",
    "TaskCanceledException",
    "ReadTimeout", "OpenTimeout", "ECONNREFUSED", "ECONNRESET",
    // Expired in the queue (a TTL), or pushed out of a full one; Event Grid's event TTL.
    "expired", "maxlen", "TimeToLiveExceeded",
];
const POISON_PATTERNS: [&str; 4] = ["out of memory", "recursion", "stack overflow", "segmentation fault"];
const TRANSIENT_PATTERNS: [&str; 10] = ["timeout", "timed out", "connection refused", "temporarily unavailable", "try again", "rate limit", "throttl", "deadlock", "503", "504"];
/// A service the consumer calls, failing or refusing it (Event Grid's endpoint that never took
/// the event, EventBridge's target that could not be invoked).
const DEPENDENCY_TYPES: [&str; 7] = [
    "HttpRequestException", "WebException", "HttpServerErrorException", "RestClientException",
    "MaxDeliveryAttemptsExceeded", "SDK_CLIENT_ERROR", "NO_PERMISSIONS",
];

impl Default for Classifier {
    /// The seed's rules: poison (types and patterns), validation (types), transient (types and
    /// patterns, which in the seed's production classifier include 503 and rate limits), with
    /// the JVM's, .NET's, Ruby's and the brokers' names of the same kinds; dependency by the
    /// exceptions of calls to other services. One deliberate change to the seed's routing:
    /// `unknown` is held (the seed retries it 3 times), because replaying what nobody has
    /// classified is the blind re-submission dlqf prevents.
    fn default() -> Classifier {
        let rules = vec![
            rule(&POISON_TYPES, &POISON_PATTERNS, false, None, true, true),
            rule(&VALIDATION_TYPES, &[], false, None, false, false),
            rule(&TRANSIENT_TYPES, &TRANSIENT_PATTERNS, true, Some(5), true, false),
            rule(&DEPENDENCY_TYPES, &[], true, Some(10), true, false),
            rule(&[], &[], false, Some(3), true, false),
        ];
        Classifier { rules: CATEGORIES.iter().map(|c| c.to_string()).zip(rules).collect() }
    }
}

/// A category's table in an override file: every key optional, unset keys keep the default.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleOverride {
    #[serde(alias = "error_types")]
    types: Option<Vec<String>>,
    #[serde(alias = "message_patterns")]
    patterns: Option<Vec<String>>,
    retry: Option<bool>,
    max_retries: Option<i64>,
    alert: Option<bool>,
    /// `page_oncall` as the seed's routing table spells it.
    #[serde(alias = "page_oncall")]
    page: Option<bool>,
    dlq: Option<String>,
    backoff: Option<String>,
}

/// Tables that may wrap the category tables (`[categories.poison]`, `[routing.transient]`).
const WRAPPERS: [&str; 3] = ["categories", "routing", "rules"];

impl Classifier {
    /// The default rules with a TOML file's `[poison]`, `[validation]`, … tables laid over them.
    pub fn load(path: &Path) -> Result<Classifier> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read classification", path.display()))?;
        Self::parse(&text).with_context(|| format!("classification {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Classifier> {
        let top: toml::Table = toml::from_str(text)?;
        let mut tables = Vec::new();
        for (name, value) in top {
            match value {
                toml::Value::Table(inner) if WRAPPERS.contains(&name.as_str()) => tables.extend(inner),
                value => tables.push((name, value)),
            }
        }
        let mut classifier = Classifier::default();
        for (name, value) in tables {
            let Some(slot) = classifier.rules.iter_mut().find(|(n, _)| *n == name) else {
                bail!("unknown category `{name}` (categories: {})", CATEGORIES.join(", "));
            };
            let o: RuleOverride = value.try_into().with_context(|| format!("[{name}]"))?;
            let rule = &mut slot.1;
            if name == "unknown" && (o.types.is_some() || o.patterns.is_some()) {
                bail!("[unknown] takes routing only: it is what no rule matches");
            }
            if o.types.iter().chain(o.patterns.iter()).flatten().any(|t| t.trim().is_empty()) {
                bail!("[{name}] an empty type or pattern would match every message");
            }
            // Types match by their last path segment, as the message's type does.
            rule.types = o.types.map_or(std::mem::take(&mut rule.types), |t| t.iter().map(|t| short_type(t).to_string()).collect());
            rule.patterns = o.patterns.unwrap_or(std::mem::take(&mut rule.patterns)).iter().map(|p| p.to_lowercase()).collect();
            rule.retry = o.retry.unwrap_or(rule.retry);
            rule.max_retries = o.max_retries.or(rule.max_retries);
            if rule.max_retries.is_some_and(|m| m < 1) {
                bail!("[{name}] max_retries must be at least 1");
            }
            rule.alert = o.alert.unwrap_or(rule.alert);
            rule.page = o.page.unwrap_or(rule.page);
            rule.dlq = o.dlq.or(rule.dlq.take());
            rule.backoff = o.backoff.or(rule.backoff.take());
        }
        Ok(classifier)
    }

    /// What the rules look for in a message (lower case), every category's: a value replaced
    /// in a message must neither add one nor take one away, or its record changes category.
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().flat_map(|(_, rule)| rule.patterns.iter().map(String::as_str))
    }

    /// The first category (in `CATEGORIES` order) whose type names or message patterns match.
    /// A stack signature's type (`Type at frame, …`) and a root cause's (`Type: message`) are
    /// their types.
    pub fn classify(&self, error_type: &str, message: &str) -> &str {
        let error_type = error_type.split(" at ").next().unwrap_or_default();
        let short = short_type(error_type.split(": ").next().unwrap_or_default());
        let message = message.to_lowercase();
        for (name, rule) in &self.rules {
            if rule.types.iter().any(|t| t == short) || rule.patterns.iter().any(|p| message.contains(p.as_str())) {
                return name;
            }
        }
        "unknown"
    }

    /// The routing of a category; a name that is not a category routes as `unknown`.
    pub fn routing(&self, category: &str) -> &CategoryRule {
        let unknown = &self.rules.last().expect("five categories").1;
        self.rules.iter().find(|(n, _)| n == category).map_or(unknown, |(_, r)| r)
    }
}

/// A type name without its module path: `json.decoder.JSONDecodeError`, Ruby's
/// `Net::ReadTimeout`, .NET's nested `Outer+Inner` → the last name.
fn short_type(name: &str) -> &str {
    name.trim().rsplit(['.', ':', '+']).next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_seed_rules_in_order() {
        let c = Classifier::default();
        assert_eq!(c.classify("MemoryError", ""), "poison");
        assert_eq!(c.classify("ValueError", "maximum recursion depth exceeded"), "poison");
        assert_eq!(c.classify("ValueError", "Invalid item quantity"), "validation");
        assert_eq!(c.classify("json.decoder.JSONDecodeError", "Expecting value"), "validation");
        assert_eq!(c.classify("TimeoutError", ""), "transient");
        assert_eq!(c.classify("HTTPError", "503 Service Unavailable"), "transient");
        assert_eq!(c.classify("RuntimeError", "Rate Limit exceeded"), "transient");
        assert_eq!(c.classify("RuntimeError", "boom"), "unknown");
        // The JVM's, .NET's and Ruby's names of the same kinds, and brokers' reasons.
        for (error_type, message, category) in [
            ("org.apache.kafka.common.errors.SerializationException", "Unknown magic byte!", "validation"),
            ("java.net.SocketTimeoutException at com.shop.PaymentClient.charge", "Read timed out", "transient"),
            ("java.sql.SQLIntegrityConstraintViolationException", "Duplicate entry", "validation"),
            ("io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException: Schema <*> not found; error code: <*>", "", "dependency"),
            // Kafka Connect's own ConnectException is a wrapper, not java.net's refused connection.
            ("org.apache.kafka.connect.errors.ConnectException", "Exiting WorkerSinkTask due to unrecoverable exception.", "unknown"),
            ("java.lang.OutOfMemoryError", "Java heap space", "poison"),
            ("System.Data.SqlClient.SqlException", "Transaction (Process ID 51) was deadlocked on lock resources", "transient"),
            ("System.Net.Http.HttpRequestException", "Response status code does not indicate success: 500", "dependency"),
            ("System.ArgumentNullException", "Value cannot be null", "validation"),
            ("Net::ReadTimeout", "Net::ReadTimeout with #<TCPSocket:(closed)>", "transient"),
            ("ActiveRecord::RecordNotFound", "Couldn't find Order", "validation"),
            ("rejected", "", "validation"),
            ("expired", "", "transient"),
            ("delivery_limit", "", "poison"),
            ("TimeToLiveExceeded", "", "transient"),
            ("MaxDeliveryAttemptsExceeded", "", "dependency"),
            ("THROTTLING", "Throttling exception from the target.", "transient"),
            ("Stripe::CardError", "Your card was declined.", "unknown"),
        ] {
            assert_eq!(c.classify(error_type, message), category, "{error_type}: {message}");
        }
        assert!(!c.routing("validation").retry && !c.routing("poison").retry && c.routing("poison").page);
        assert_eq!(c.routing("transient").max_retries, Some(5));
        assert_eq!(c.routing("no-such").max_retries, Some(3));
        assert!(!c.routing("unknown").retry, "what nobody classified is held");
    }

    #[test]
    fn a_file_overrides_only_what_it_names() {
        let c = Classifier::parse("[dependency]\npatterns = ['Service Unavailable', 'registry_unreachable']\n[transient]\nmax_retries = 2\n").unwrap();
        assert_eq!(c.classify("HTTPError", "503 Service Unavailable"), "transient"); // transient is tried first
        assert_eq!(c.classify("", "registry_unreachable"), "dependency");
        assert_eq!(c.routing("transient").max_retries, Some(2));
        assert_eq!(c.routing("transient").patterns, Classifier::default().routing("transient").patterns);
        assert!(Classifier::parse("[fatal]\nretry = false").unwrap_err().to_string().contains("unknown category `fatal`"));
        assert!(Classifier::parse("[poison]\nretyr = false").is_err());
        assert!(Classifier::parse("[unknown]\npatterns = ['x']").is_err());
        assert!(Classifier::parse("[poison]\npatterns = ['']").is_err());
        // The seed's ERROR_ROUTING written as TOML reads as it is.
        let seed = Classifier::parse("[routing.poison]\nretry = false\ndlq = 'orders.dlq.poison'\nalert = true\npage_oncall = true\n[categories.transient]\nbackoff = 'exponential'\nmax_retries = 4\n").unwrap();
        assert_eq!(seed.routing("poison").dlq.as_deref(), Some("orders.dlq.poison"));
        assert_eq!(seed.routing("transient").max_retries, Some(4));
        let typed = Classifier::parse("[validation]\ntypes = ['json.JSONDecodeError']").unwrap();
        assert_eq!(typed.classify("simplejson.errors.JSONDecodeError", "x"), "validation");
    }
}
