//! Which frames are the application's own: a profile's patterns, else each language's
//! standard library and common frameworks (Ruby's gems) are not (Sentry's in-app rule).

use super::{Frame, Language};

/// Glob patterns (`*` any text) matched against a frame's `module.function` and its file.
/// With `in_app` given, only frames matching it are the application's; `not_in_app` adds to
/// the defaults of what is not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InApp {
    pub in_app: Vec<String>,
    pub not_in_app: Vec<String>,
}

/// Module prefixes that are never the application's, per language.
const JVM: [&str; 22] = [
    "java.", "javax.", "jdk.", "sun.", "com.sun.", "kotlin.", "kotlinx.", "scala.", "org.apache.", "org.springframework.",
    "io.confluent.", "com.fasterxml.", "org.slf4j.", "io.netty.", "reactor.", "org.junit.", "com.google.", "org.hibernate.", "akka.",
    "okhttp3.", "software.amazon.", "lambdainternal.",
];
const DOTNET: [&str; 5] = ["System.", "Microsoft.", "Newtonsoft.", "Npgsql.", "Polly."];
// `/var/runtime/` is AWS Lambda's runtime, in every language.
const PYTHON_PATHS: [&str; 7] = ["site-packages", "dist-packages", "/lib/python", "\\lib\\", "<frozen", "importlib", "/var/runtime/"];
const NODE_PATHS: [&str; 4] = ["node_modules", "node:", "internal/", "/var/runtime/"];
// Gems (bundled or not) and Ruby's own library.
const RUBY_PATHS: [&str; 6] = ["/gems/", "/bundle/", "/rubygems", "/lib/ruby/", "<internal:", "/vendor/ruby/"];

impl InApp {
    pub fn contains(&self, language: Language, frame: &Frame) -> bool {
        let name = frame.name();
        let matches = |pattern: &String| glob(pattern, &name) || (!frame.file.is_empty() && glob(pattern, frame.file));
        if !self.in_app.is_empty() {
            return self.in_app.iter().any(matches);
        }
        if self.not_in_app.iter().any(matches) {
            return false;
        }
        match language {
            Language::Java => !JVM.iter().any(|p| name.starts_with(p)),
            Language::DotNet => !DOTNET.iter().any(|p| name.starts_with(p)),
            Language::Python => !PYTHON_PATHS.iter().any(|p| frame.file.contains(p)),
            Language::Node => !frame.file.is_empty() && !NODE_PATHS.iter().any(|p| frame.file.contains(p)),
            Language::Ruby => !RUBY_PATHS.iter().any(|p| frame.file.contains(p)),
            // The standard library's packages have no dot in their first path element
            // (`runtime`, `net/http`); the application's are `main` or a module path.
            Language::Go => {
                let package = frame.module.split('/').next().unwrap_or("");
                frame.module.starts_with("main") || package.contains('.')
            }
        }
    }
}

/// Whether `text` matches `pattern`, where `*` stands for any text (none included).
pub fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}
