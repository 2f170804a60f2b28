//! Stack traces as the runtimes print them, read into exceptions and frames: Java (with
//! `Caused by:` and `... N more`), Python (chained tracebacks), Node, Go panics, .NET and Ruby
//! (backtrace lines, as Sidekiq keeps them, or `full_message`'s `from` lines).
//! Line numbers and addresses are read past, never kept: they change with every build.

/// One frame: the code's module (class, package or file stem) and function, its file when
/// printed, and Python's source line when printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub module: String,
    pub function: String,
    pub file: &'a str,
    pub source: &'a str,
    /// The frame's line as printed, for `--explain`.
    pub raw: &'a str,
}

impl Frame<'_> {
    /// `module.function`, as a signature names the frame.
    pub fn name(&self) -> String {
        if self.module.is_empty() { self.function.clone() } else { format!("{}.{}", self.module, self.function) }
    }
}

/// One exception of a chain: its type, message and frames, nearest the raise first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exception<'a> {
    pub kind: &'a str,
    pub message: &'a str,
    pub frames: Vec<Frame<'a>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    Java,
    Python,
    Node,
    Go,
    DotNet,
    Ruby,
}

/// A trace's language and its root cause: the innermost exception (Java's last `Caused by:`,
/// .NET's last ` ---> `, Node's last `[cause]:`, Python's first traceback of a chain), or
/// None when the text holds no frame.
pub fn root_cause(trace: &str) -> Option<(Language, Exception<'_>)> {
    let lines: Vec<&str> = trace.lines().map(str::trim_end).collect();
    let first = lines.iter().find(|l| !l.trim().is_empty())?.trim_start();
    let python_frames = || lines.iter().any(|l| l.trim_start().starts_with("File \"") && l.contains("\", line "));
    let found = if lines.iter().any(|l| l.trim_start().starts_with("Traceback (most recent call last):")) || python_frames() {
        python(&lines).map(|e| (Language::Python, e))
    } else if first.starts_with("panic: ") || lines.iter().any(|l| l.starts_with("goroutine ") && l.ends_with("]:")) {
        go(&lines).map(|e| (Language::Go, e))
    } else if ruby_frame(first.strip_prefix("from ").unwrap_or(first)).is_some() {
        ruby(&lines).map(|e| (Language::Ruby, e))
    } else {
        at_frames(&lines)
    };
    found.filter(|(_, e)| !e.frames.is_empty())
}

/// `Type: message` (or a bare `Type`), when the text before `:` is a type name.
fn exception_line(line: &str) -> Option<(&str, &str)> {
    let line = line.trim();
    let line = line.strip_prefix("Exception in thread ").and_then(|rest| rest.split_once("\" ").map(|(_, after)| after)).unwrap_or(line);
    let (kind, message) = line.split_once(": ").map_or((line.trim_end_matches(':'), ""), |(k, m)| (k, m.trim()));
    // Node's coded errors: `TypeError [ERR_INVALID_ARG_TYPE]: …` is a TypeError.
    let kind = match kind.split_once(" [") {
        Some((name, code)) if code.ends_with(']') && !code.contains(' ') => name,
        _ => kind,
    };
    is_type_name(kind).then_some((kind, message))
}

/// A type name: a letter or `_` first, then letters, digits, `.`, `_`, `$`, `+` or a backquote.
pub(super) fn is_type_name(kind: &str) -> bool {
    kind.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_') && kind.chars().all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '$' | '+' | '`'))
}

/// Java, .NET and Node: frames written `at …`. The exception lines between them say which
/// exception the frames that follow belong to.
fn at_frames<'a>(lines: &[&'a str]) -> Option<(Language, Exception<'a>)> {
    let mut chain: Vec<Exception<'a>> = Vec::new();
    let mut language = None;
    // .NET prints the innermost exception's frames first, each outer one's after a marker.
    let mut dotnet_blocks: Vec<Vec<Frame<'a>>> = vec![Vec::new()];
    let mut suppressed = false;
    for line in lines {
        let t = line.trim_start();
        // Lambda's lists may hold frames without `at `: `example.Handler.handle(Handler.java:34)`,
        // `exports.handler (/var/task/index.js:18:18)`.
        let bare_java = || {
            let one_name = t.split_once(" (").map_or(!t.contains(' '), |(name, rest)| !name.contains(' ') && !rest.contains(' '));
            one_name.then(|| at_frame(t, line)).flatten().filter(|(lang, _)| matches!(lang, Language::Java | Language::Node))
        };
        let frame = t.strip_prefix("at ").and_then(|frame| at_frame(frame, line)).or_else(bare_java);
        if let Some((lang, frame)) = frame {
            if chain.is_empty() {
                // Frames with no exception line before them (Lambda's stackTrace): the type is elsewhere.
                chain.push(Exception::default());
            }
            language.get_or_insert(lang);
            if suppressed {
                continue;
            }
            if lang == Language::DotNet {
                dotnet_blocks.last_mut().expect("one block at least").push(frame);
            } else if let Some(current) = chain.last_mut() {
                current.frames.push(frame);
            }
            continue;
        }
        if t.starts_with("--- End of inner exception stack trace ---") {
            dotnet_blocks.push(Vec::new());
        } else if t.starts_with("--- End of stack trace from previous location") || (t.starts_with("...") && t.ends_with("more")) {
            continue;
        } else if let Some(rest) = line.strip_prefix("Caused by: ").or_else(|| t.strip_prefix("[cause]: ")) {
            // (An indented `Caused by:` is a suppressed exception's, inside its block.)
            suppressed = false;
            let (kind, message) = exception_line(rest)?;
            chain.push(Exception { kind, message, frames: Vec::new() });
        } else if let Some(rest) = t.strip_prefix("---> ") {
            // .NET Core writes an inner exception on a line of its own.
            let (kind, message) = exception_line(rest).unwrap_or(("", rest.trim()));
            chain.push(Exception { kind, message, frames: Vec::new() });
        } else if t.starts_with("Suppressed: ") {
            suppressed = true;
        } else if chain.is_empty() && !t.is_empty() {
            // The first line: `Outer: message ---> Inner: message` in .NET.
            for part in t.split(" ---> ") {
                let (kind, message) = exception_line(part).unwrap_or(("", part.trim()));
                chain.push(Exception { kind, message, frames: Vec::new() });
            }
        }
    }
    let language = language?;
    let mut root = chain.pop()?;
    if language == Language::DotNet {
        root.frames = std::mem::take(&mut dotnet_blocks[0]);
    }
    Some((language, root))
}

/// One `at …` frame (the text after `at `): its language and parts.
fn at_frame<'a>(text: &'a str, raw: &'a str) -> Option<(Language, Frame<'a>)> {
    let text = text.trim();
    // Node: `name (file:line:col)`, `file:line:col`, `name (<anonymous>)`, `async name (index 0)`.
    if let Some(file) = node_location(text) {
        return Some((Language::Node, node_frame("<anonymous>", file, raw)));
    }
    if let Some((name, location)) = text.strip_suffix(')').and_then(|t| t.rsplit_once(" (")) {
        let file = node_location(location);
        if file.is_some() || matches!(location, "<anonymous>" | "native") || location.starts_with("index ") {
            let name = name.trim_start_matches("async ").trim_start_matches("new ");
            return Some((Language::Node, node_frame(name, file.unwrap_or(""), raw)));
        }
    }
    // Java and .NET: `package.Class.method(…)`; Java's parentheses hold a file and line.
    let (name, rest) = text.split_once('(')?;
    let inside = rest.rsplit_once(')').map_or(rest, |(inside, _)| inside);
    let java = inside == "Unknown Source"
        || inside == "Native Method"
        || inside.starts_with("Unknown Source")
        || [".java", ".kt", ".scala", ".groovy", ".clj"].iter().any(|ext| inside.split(':').next().is_some_and(|f| f.ends_with(ext)));
    let dotnet = !java && (text.contains(" in ") || inside.contains(' ') || inside.is_empty());
    let language = if java { Language::Java } else if dotnet { Language::DotNet } else { return None };
    // Java 9+: `java.base/java.lang.Thread.run`; a class loader first: `app//com.x.Y.m`.
    let name = name.rsplit('/').next().unwrap_or(name);
    let name = clean_generated(name);
    let (module, function) = match name.rsplit_once('.') {
        Some((module, function)) => (module.to_string(), function.to_string()),
        None => (String::new(), name),
    };
    let (module, function) = dotnet_async(module, function);
    let file = if java { inside.split(':').next().unwrap_or("") } else { text.split_once(" in ").map_or("", |(_, f)| f.rsplit_once(":line ").map_or(f, |(f, _)| f)) };
    Some((language, Frame { module, function, file, source: "", raw: raw.trim() }))
}

/// The file of a Node location `file:line:column`, if `l` is one.
fn node_location(l: &str) -> Option<&str> {
    let mut parts = l.rsplitn(3, ':');
    let (col, line) = (parts.next()?, parts.next()?);
    let numbers = !col.is_empty() && !line.is_empty() && col.bytes().all(|b| b.is_ascii_digit()) && line.bytes().all(|b| b.is_ascii_digit());
    numbers.then(|| parts.next()).flatten()
}

fn node_frame<'a>(name: &str, file: &'a str, raw: &'a str) -> Frame<'a> {
    let stem = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let stem = stem.split_once('.').map_or(stem, |(s, _)| s);
    Frame { module: stem.to_string(), function: clean_generated(name), file, source: "", raw: raw.trim() }
}

/// A compiler's generated names made stable: lambda and anonymous class numbers (`$1`,
/// `lambda$run$0`, `$$Lambda$14/0x…`) and .NET's `<>c__DisplayClass5_0`, `b__0` numbers.
fn clean_generated(name: &str) -> String {
    let name = name.split("$$Lambda").next().unwrap_or(name);
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        let numbered = c == '$' || (c == '_' && out.ends_with("__")) || (c == '_' && out.ends_with("Class_"));
        if numbered {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
        }
    }
    let out = out.trim_end_matches('$');
    // `DisplayClass5_0`: the numbers after a generated class name.
    match out.find("DisplayClass") {
        Some(at) => {
            let (head, tail) = out.split_at(at + "DisplayClass".len());
            format!("{head}{}", tail.trim_start_matches(|c: char| c.is_ascii_digit() || c == '_'))
        }
        None => out.to_string(),
    }
}

/// .NET's async state machines (`Orders.<Process>d__5.MoveNext`) named as the method.
fn dotnet_async(module: String, function: String) -> (String, String) {
    if function == "MoveNext" {
        if let Some((outer, machine)) = module.rsplit_once('.') {
            if let Some(method) = machine.strip_prefix('<').and_then(|m| m.split_once('>')).map(|(m, _)| m) {
                return (outer.to_string(), method.to_string());
            }
        }
    }
    (module, function)
}

/// Python: the first traceback of a chain is the original error (the later ones were raised
/// while handling it); its frames are printed outermost first, so they are reversed.
fn python<'a>(lines: &[&'a str]) -> Option<Exception<'a>> {
    // Lambda's stackTrace holds the frames alone, with no header and no exception line.
    let start = lines.iter().position(|l| l.trim_start().starts_with("Traceback (most recent call last):")).map_or(0, |at| at + 1);
    let mut frames = Vec::new();
    let mut i = start;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("File \"") {
            let (file, rest) = rest.split_once('"')?;
            let function = rest.rsplit_once(", in ").map_or("", |(_, f)| f.trim());
            // The source line follows, indented deeper; `^^^^` markers below it are skipped.
            let source = lines.get(i + 1).map(|s| s.trim()).filter(|s| !s.is_empty() && !s.starts_with("File \"") && lines[i + 1].starts_with("    ")).unwrap_or("");
            let stem = file.rsplit(['/', '\\']).next().unwrap_or(file);
            let module = match stem.strip_suffix(".py") {
                Some("__init__") => file.rsplit(['/', '\\']).nth(1).unwrap_or("__init__"),
                Some(stem) => stem,
                None => stem,
            };
            frames.push(Frame { module: module.to_string(), function: function.to_string(), file, source, raw: t });
        } else if !line.is_empty() && !line.starts_with([' ', '\t']) {
            let (kind, message) = exception_line(t).unwrap_or(("", t));
            frames.reverse();
            return Some(Exception { kind, message, frames });
        }
        i += 1;
    }
    frames.reverse();
    Some(Exception { kind: "", message: "", frames })
}

/// Ruby: backtrace lines, nearest the raise first (`app/jobs/hard_job.rb:12:in 'perform'`, before
/// Ruby 3.4 with a backquote; from 3.4 with the class: `'HardJob#perform'`), as Sidekiq keeps
/// them; or `full_message`: the first line ends `: message (Class)`, the rest start `from `.
fn ruby<'a>(lines: &[&'a str]) -> Option<Exception<'a>> {
    let mut exception = Exception::default();
    for line in lines.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
        let line = line.strip_prefix("from ").unwrap_or(line);
        let (frame, rest) = ruby_frame(line)?;
        if exception.frames.is_empty() {
            // `…:in 'perform': boom (RuntimeError)`
            if let Some((message, kind)) = rest.strip_prefix(": ").and_then(|r| r.strip_suffix(')')).and_then(|r| r.rsplit_once(" (")) {
                exception.kind = kind;
                exception.message = message;
            }
        }
        exception.frames.push(frame);
    }
    Some(exception)
}

/// One Ruby frame `file:line:in 'label'` and what follows it on the line, as `file_stem.method`
/// (a label's class, which Ruby 3.4 adds, `'HardJob#perform'`, is left out, so a frame is named
/// alike before and after the upgrade); `block in`, `rescue in` and `ensure in` are read past.
fn ruby_frame(line: &str) -> Option<(Frame<'_>, &str)> {
    let (location, label) = line.split_once(":in ")?;
    let (file, number) = location.rsplit_once(':')?;
    if file.is_empty() || number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let quote = label.chars().next().filter(|c| matches!(c, '`' | '\''))?;
    let (label, rest) = label[quote.len_utf8()..].split_once('\'')?;
    let mut name = label;
    while let Some((_, inner)) = ["block (", "block in ", "rescue in ", "ensure in "].iter().find(|p| name.starts_with(**p)).and_then(|_| name.split_once(" in ")) {
        name = inner;
    }
    let stem = file.rsplit('/').next().unwrap_or(file).trim_end_matches(".rb");
    let method = name.rsplit_once(['#', '.']).map_or(name, |(_, method)| method);
    Some((Frame { module: stem.to_string(), function: method.to_string(), file, source: "", raw: line }, rest))
}

/// Go: `panic: message`, then the panicking goroutine's frames (a function line, then its file
/// line); `created by` lines and other goroutines are not the panic's.
fn go<'a>(lines: &[&'a str]) -> Option<Exception<'a>> {
    let first = lines.iter().map(|l| l.trim()).find(|l| !l.is_empty())?;
    let message = first.strip_prefix("panic: ").unwrap_or(first);
    let message = message.strip_suffix(" [recovered]").unwrap_or(message);
    let start = lines.iter().position(|l| l.starts_with("goroutine ") && l.ends_with("]:"))?;
    let mut frames = Vec::new();
    let mut i = start + 1;
    while i + 1 < lines.len() {
        let (function_line, file_line) = (lines[i], lines[i + 1]);
        if function_line.trim().is_empty() || function_line.starts_with("goroutine ") {
            break;
        }
        if function_line.starts_with("created by ") || !file_line.starts_with('\t') {
            i += 1;
            continue;
        }
        let name = without_type_parameters(go_function(function_line.trim()));
        let file = file_line.trim().rsplit_once(':').map_or(file_line.trim(), |(f, _)| f);
        let (module, function) = match name.rsplit_once('.') {
            Some((m, f)) => (m.to_string(), f.to_string()),
            None => (String::new(), name.clone()),
        };
        frames.push(Frame { module, function, file, source: "", raw: function_line.trim() });
        i += 2;
    }
    Some(Exception { kind: "panic", message, frames })
}

/// A Go frame's function without its arguments (`main.(*Server).handle(0x0, {…})`) or type
/// parameters (`pkg.Map[...]`).
fn go_function(line: &str) -> &str {
    let mut name = line;
    if name.ends_with(')') {
        let mut depth = 0;
        for (at, c) in name.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        name = &name[..at];
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    name
}

/// A Go function name without its type parameters, wherever they stand
/// (`store.(*Box[...]).Get`, `pkg.Map[...]`).
fn without_type_parameters(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}
