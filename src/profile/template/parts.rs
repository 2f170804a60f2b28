//! Which parts of a token are values: digits, bare hex, paths, hosts and file names, and the
//! device names that look like values but belong to the message's wording.

/// A network interface or device name: a short lowercase word and a one-digit index (`eth0`,
/// `en0`, `wl0`, `lo0`), part of the message's wording rather than a value.
pub(crate) fn is_device_name(part: &str) -> bool {
    let letters = part.bytes().take_while(u8::is_ascii_lowercase).count();
    (2..=5).contains(&letters) && part.len() == letters + 1 && part.as_bytes()[letters].is_ascii_digit()
}

/// Why a part of a token is a value, if it is one: digits (numbers, ids, versions), a long bare
/// hex string, a file path, a host name or a file name.
pub(super) fn part_rule(part: &str) -> Option<&'static str> {
    let trimmed = part.trim_end_matches('.');
    if is_device_name(trimmed) {
        return None;
    }
    if trimmed.bytes().any(|b| b.is_ascii_digit()) {
        return Some("number");
    }
    let core = trimmed.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if core.len() >= 8 && core.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Some("hex");
    }
    if is_random_id(core) {
        return Some("id");
    }
    let path = (trimmed.len() > 1 && trimmed.starts_with('/')) || ["./", "../", "~/"].iter().any(|p| trimmed.starts_with(p));
    if path {
        return Some("path");
    }
    if is_host(trimmed) {
        return Some("host");
    }
    is_file_name(trimmed).then_some("file")
}

/// A file name with a well-known extension (`chrome.exe`, `settings.py`, `app.log`).
fn is_file_name(part: &str) -> bool {
    const EXTENSIONS: [&str; 24] = [
        "exe", "dll", "so", "dylib", "jar", "class", "py", "js", "rb", "sh", "bat", "log", "txt", "json", "xml", "yaml", "yml", "conf",
        "cfg", "ini", "csv", "gz", "zip", "tmp",
    ];
    let Some((stem, extension)) = part.rsplit_once('.') else { return false };
    EXTENSIONS.contains(&extension) && !stem.is_empty() && stem.chars().all(|c| c.is_alphanumeric() || "_-.".contains(c))
}

/// A host name: lowercase labels joined by dots, ending in a top-level domain
/// (`proxy.example.com`); not a dotted code name (`org.apache.hadoop`, `json.decoder`).
fn is_host(part: &str) -> bool {
    const TOP_LEVEL: [&str; 30] = [
        "com", "net", "org", "edu", "gov", "mil", "int", "io", "co", "uk", "de", "fr", "jp", "cn", "hk", "kr", "ru", "br", "in", "au",
        "ca", "nl", "se", "ch", "it", "es", "eu", "us", "local", "internal",
    ];
    let mut labels = part.split('.');
    let last = labels.next_back().unwrap_or("");
    // Any short top-level domain when the name has three labels or more (`host-9.example.tw`,
    // `bx.example.asia`), unless it starts like a reverse-domain code name (`org.apache.hadoop`).
    let first = part.split('.').next().unwrap_or("");
    let long = (2..=6).contains(&last.len())
        && last.bytes().all(|b| b.is_ascii_lowercase())
        && part.matches('.').count() >= 2
        && !TOP_LEVEL.contains(&first)
        && !["java", "javax", "sun", "android", "kotlin", "scala"].contains(&first);
    part.contains('.')
        && (TOP_LEVEL.contains(&last) || long)
        && labels.all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
}

/// An id of random letters (`ch_QkzXbTrWmPaLsDeRtYuIoPnM`, base64 without digits): after an
/// optional short `prefix_`, twelve letters or more whose case changes between most
/// neighbours (`NullPointerException` changes 5 times in 20) and with few vowels, as random
/// letters have (one in five) and names of short words do not (`GetUserByIdQuery`: 6 in 16).
/// After a prefix (Stripe's `ch_`, `cus_`, `pi_`) random letters often hold a vowel in four
/// (`ch_nwIBMGPnEiGkEfGJBhierxHY`: 6 in 24): fewer than two in five will do there when
/// capitals also stand side by side, as in random letters and not in names of words
/// (`cmd_GetUserByIdQuery`: none).
pub(super) fn is_random_id(part: &str) -> bool {
    let (body, prefixed) = match part.split_once('_') {
        Some((prefix, body)) if (1..=5).contains(&prefix.len()) && prefix.bytes().all(|b| b.is_ascii_lowercase()) => (body, true),
        _ => (part, false),
    };
    if body.len() < 12 || !body.bytes().all(|b| b.is_ascii_alphabetic()) {
        return false;
    }
    let changes = body.as_bytes().windows(2).filter(|w| w[0].is_ascii_uppercase() != w[1].is_ascii_uppercase()).count();
    let vowels = body.bytes().filter(|b| b"aeiouAEIOU".contains(b)).count();
    let capitals_together = body.as_bytes().windows(2).filter(|w| w[0].is_ascii_uppercase() && w[1].is_ascii_uppercase()).count();
    let few_vowels = vowels * 4 < body.len() || (prefixed && vowels * 5 < body.len() * 2 && capitals_together >= 2);
    changes * 5 >= (body.len() - 1) * 2 && few_vowels
}
