//! The README is the front door and docs/ holds the depth: every relative link between them
//! must reach a file and a heading that exist, so a section that moves leaves no dead link.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use regex::Regex;

const README_MAX_LINES: usize = 400;

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let broken = broken_links(&root(), &pages());
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_short_and_links_every_docs_page() {
    let pages = pages();
    let (readme, text) = &pages[0];
    let lines = text.lines().count();
    assert!(lines <= README_MAX_LINES, "{}: {lines} lines, at most {README_MAX_LINES}", readme.display());
    let targets: HashSet<String> = links(text).into_iter().map(|l| l.target.split('#').next().unwrap_or("").to_string()).collect();
    for (page, _) in &pages[1..] {
        let target = page.to_string_lossy().replace('\\', "/");
        assert!(targets.contains(&target), "{} does not link to {target}", readme.display());
    }
}

/// The checker itself can fail: a missing anchor, a heading that is only a shell comment in a
/// fenced block, a missing file and a repeated heading's missing suffix are each reported with
/// file and line; good links, links in code and web links are not.
#[test]
fn the_checker_reports_broken_links_and_only_those() {
    let guide = "# Guide\n\
                 \n\
                 See [setup](#setup), [again](#setup-1), [gone](#gone) and [details](other.md#détails-à-voir).\n\
                 \n\
                 ```sh\n\
                 # Not a heading\n\
                 ```\n\
                 \n\
                 ## Setup\n\
                 \n\
                 ## Setup\n\
                 \n\
                 Also `[code](#nowhere)`, ``[`code`](#nowhere)`` and [web](https://example.com/#x).\n\
                 [across\n\
                 lines](#not-a-heading), [missing](nope.md), [up](../README.md).\n";
    let other = "# Other\n\n## Détails à voir\n\n[back](guide.md#setup-2)\n";
    let pages = vec![(PathBuf::from("docs/guide.md"), guide.to_string()), (PathBuf::from("docs/other.md"), other.to_string())];
    let expected = [
        "docs/guide.md:3: [gone](#gone): no heading `gone` in docs/guide.md",
        "docs/guide.md:14: [across lines](#not-a-heading): no heading `not-a-heading` in docs/guide.md",
        "docs/guide.md:15: [missing](nope.md): no file docs/nope.md",
        "docs/other.md:5: [back](guide.md#setup-2): no heading `setup-2` in docs/guide.md",
    ];
    assert_eq!(broken_links(&root(), &pages), expected);
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, then every docs/*.md in name order, as (path from the package root, text).
fn pages() -> Vec<(PathBuf, String)> {
    let root = root();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|entry| PathBuf::from("docs").join(entry.expect("docs/ entry").file_name()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    std::iter::once(PathBuf::from("README.md"))
        .chain(docs)
        .map(|path| {
            let text = std::fs::read_to_string(root.join(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, text)
        })
        .collect()
}

/// Each relative link of `pages` that does not resolve, as `file:line: [text](target): why`.
/// A target is looked up among `pages` first, then on disk under `root`.
fn broken_links(root: &Path, pages: &[(PathBuf, String)]) -> Vec<String> {
    let texts: HashMap<&Path, &str> = pages.iter().map(|(path, text)| (path.as_path(), text.as_str())).collect();
    let mut broken = Vec::new();
    for (from, text) in pages {
        for link in links(text) {
            if ["http://", "https://", "mailto:"].iter().any(|scheme| link.target.starts_with(scheme)) {
                continue;
            }
            let (file, anchor) = link.target.split_once('#').unwrap_or((&link.target, ""));
            let to = if file.is_empty() { from.clone() } else { normalize(&from.parent().unwrap_or(Path::new("")).join(file)) };
            let link_at = format!("{}:{}: [{}]({})", from.display(), link.line, link.text, link.target);
            if !texts.contains_key(to.as_path()) && !root.join(&to).exists() {
                broken.push(format!("{link_at}: no file {}", to.display()));
            } else if !anchor.is_empty() {
                let target_text = match texts.get(to.as_path()) {
                    Some(text) => text.to_string(),
                    None => std::fs::read_to_string(root.join(&to)).unwrap_or_default(),
                };
                if !heading_slugs(&target_text).contains(anchor) {
                    broken.push(format!("{link_at}: no heading `{anchor}` in {}", to.display()));
                }
            }
        }
    }
    broken
}

struct Link {
    line: usize,
    text: String,
    target: String,
}

/// Inline links `[text](target)` (images too), outside fenced code blocks and code spans; the
/// text may run over lines.
fn links(markdown: &str) -> Vec<Link> {
    let prose = without_code(markdown);
    let link = Regex::new(r"\[([^\[\]]*)\]\(([^()\s]*)\)").expect("link pattern");
    link.captures_iter(&prose)
        .map(|c| {
            let text = &markdown[c.get(1).unwrap().range()];
            Link {
                line: prose[..c.get(0).unwrap().start()].matches('\n').count() + 1,
                text: text.split_whitespace().collect::<Vec<_>>().join(" "),
                target: c[2].to_string(),
            }
        })
        .collect()
}

/// The GitHub anchors of a page's headings (fenced blocks are not headings): lowercase, only
/// letters, digits, spaces, hyphens and underscores kept, spaces as hyphens; a repeated
/// heading gets -1, -2, ….
fn heading_slugs(markdown: &str) -> HashSet<String> {
    let heading = Regex::new(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$").expect("heading pattern");
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut slugs = HashSet::new();
    for (line, in_fence) in markdown.split_inclusive('\n').zip(fenced(markdown)) {
        let Some(c) = heading.captures(line.trim_end_matches(['\n', '\r'])).filter(|_| !in_fence) else { continue };
        let slug: String = c[1]
            .to_lowercase()
            .chars()
            .filter(|ch| ch.is_alphanumeric() || matches!(ch, ' ' | '-' | '_'))
            .map(|ch| if ch == ' ' { '-' } else { ch })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        slugs.insert(if *n == 0 { slug } else { format!("{slug}-{n}") });
        *n += 1;
    }
    slugs
}

/// For each line (`split_inclusive('\n')`), whether it belongs to a fenced code block, its
/// fence lines included. A fence closes with a run of the same character at least as long.
fn fenced(markdown: &str) -> Vec<bool> {
    let mut open: Option<String> = None;
    markdown
        .split_inclusive('\n')
        .map(|line| {
            let line = line.trim_end_matches(['\n', '\r']);
            let trimmed = line.trim_start_matches(' ');
            let first = trimmed.chars().next().filter(|&ch| ch == '`' || ch == '~');
            let marker: String = trimmed.chars().take_while(|&ch| Some(ch) == first).collect();
            let is_fence = line.len() - trimmed.len() <= 3 && marker.len() >= 3;
            match &open {
                Some(fence) => {
                    if is_fence && marker.starts_with(fence.as_str()) && trimmed[marker.len()..].trim().is_empty() {
                        open = None;
                    }
                    true
                }
                None => {
                    if is_fence {
                        open = Some(marker);
                    }
                    is_fence
                }
            }
        })
        .collect()
}

/// The text with fenced blocks and code spans (a run of backticks to the next run of the same
/// length within the paragraph) blanked byte for byte, line breaks kept: every offset, and so
/// every line number, is the original's.
fn without_code(markdown: &str) -> String {
    fn blank(bytes: &mut [u8]) {
        bytes.iter_mut().filter(|b| **b != b'\n').for_each(|b| *b = b' ');
    }
    let ticks_at = |bytes: &[u8], at: usize| bytes[at..].iter().take_while(|&&b| b == b'`').count();
    let mut bytes = markdown.as_bytes().to_vec();
    let mut at = 0;
    for (line, in_fence) in markdown.split_inclusive('\n').zip(fenced(markdown)) {
        if in_fence {
            blank(&mut bytes[at..at + line.len()]);
        }
        at += line.len();
    }
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let ticks = ticks_at(&bytes, i);
        let body = i + ticks;
        let paragraph_end = bytes[body..].windows(2).position(|w| w == b"\n\n").map_or(bytes.len(), |p| body + p);
        match (body..paragraph_end).find(|&j| bytes[j - 1] != b'`' && ticks_at(&bytes, j) == ticks) {
            Some(close) => {
                blank(&mut bytes[i..close + ticks]);
                i = close + ticks;
            }
            None => i = body,
        }
    }
    // Only whole characters were blanked (spans start and end at backticks, lines at newlines).
    String::from_utf8(bytes).expect("blanked markdown is UTF-8")
}

/// `docs/../profiles/` as `profiles/`: the path from the package root, without `.` or `..`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
