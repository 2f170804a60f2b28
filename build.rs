//! Names the commit the binary is built from, for `dlqf --version`: a bug report then says
//! which build it is. Outside a git checkout the commit is `DLQF_COMMIT` if set, else unknown.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=DLQF_COMMIT");
    let commit = std::env::var("DLQF_COMMIT").ok().filter(|c| !c.is_empty()).or_else(|| {
        watch_head();
        let hash = git(&["rev-parse", "--short=12", "HEAD"])?;
        let date = git(&["log", "-1", "--format=%cs", "HEAD"])?;
        Some(format!("{hash} {date}"))
    });
    println!("cargo:rustc-env=DLQF_COMMIT={}", commit.as_deref().unwrap_or("unknown"));
}

/// Runs again when HEAD moves: a checkout (HEAD), a commit on the branch (its ref, loose or
/// packed). Only existing files are named, since cargo reruns for a missing one every build.
fn watch_head() {
    let (Some(git_dir), Some(common)) = (git(&["rev-parse", "--git-dir"]), git(&["rev-parse", "--git-common-dir"])) else {
        // Not a checkout: nothing to follow but the manifest, so this runs once.
        println!("cargo:rerun-if-changed=Cargo.toml");
        return;
    };
    let mut watched: Vec<PathBuf> = vec![Path::new(&git_dir).join("HEAD"), Path::new(&common).join("packed-refs")];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(Path::new(&common).join(branch));
    }
    for path in watched.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    if watched.iter().all(|p| !p.exists()) {
        println!("cargo:rerun-if-changed=Cargo.toml");
    }
}

/// A git command's trimmed output, or None when git is missing or fails.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}
