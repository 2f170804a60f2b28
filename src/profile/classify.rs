//! Error categories from an error's type name and message, after the seed's `ErrorClassifier`:
//! poison first, then validation, then transient; anything else is unknown.

const POISON_TYPES: &[&str] = &["MemoryError", "RecursionError", "PoisonPillError"];
const POISON_PATTERNS: &[&str] = &["out of memory", "recursion", "stack overflow", "segmentation fault"];
const VALIDATION_TYPES: &[&str] = &["ValueError", "KeyError", "TypeError", "JSONDecodeError"];
const TRANSIENT_TYPES: &[&str] = &["TimeoutError", "ConnectionError", "ConnectionResetError"];
const TRANSIENT_PATTERNS: &[&str] =
    &["timeout", "connection refused", "temporarily unavailable", "try again", "rate limit", "503", "504"];

/// Matches a type name with or without a module path (`json.decoder.JSONDecodeError`).
fn type_is(error_type: &str, names: &[&str]) -> bool {
    let short = error_type.trim().rsplit('.').next().unwrap_or("");
    names.contains(&short)
}

pub fn classify(error_type: &str, message: &str) -> &'static str {
    let message = message.to_lowercase();
    if type_is(error_type, POISON_TYPES) || POISON_PATTERNS.iter().any(|p| message.contains(p)) {
        return "poison";
    }
    if type_is(error_type, VALIDATION_TYPES) {
        return "validation";
    }
    if type_is(error_type, TRANSIENT_TYPES) || TRANSIENT_PATTERNS.iter().any(|p| message.contains(p)) {
        return "transient";
    }
    "unknown"
}

#[cfg(test)]
mod tests {
    use super::classify;

    #[test]
    fn follows_the_seed_rules_in_order() {
        assert_eq!(classify("MemoryError", ""), "poison");
        assert_eq!(classify("ValueError", "maximum recursion depth exceeded"), "poison");
        assert_eq!(classify("ValueError", "Invalid item quantity"), "validation");
        assert_eq!(classify("json.decoder.JSONDecodeError", "Expecting value"), "validation");
        assert_eq!(classify("TimeoutError", ""), "transient");
        assert_eq!(classify("HTTPError", "503 Service Unavailable"), "transient");
        assert_eq!(classify("RuntimeError", "Rate Limit exceeded"), "transient");
        assert_eq!(classify("RuntimeError", "boom"), "unknown");
    }
}
