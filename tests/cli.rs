//! The first hour: `--help` reads cleanly, completions and the man page come from the same
//! definitions and load in their shells, and `--version` names the build.

use std::process::Command;

use crate::util::Dir;

/// Every command's summary in `dlqf --help` is one line: a line under "Commands:" that does not
/// start with a command's name is a summary wrapped onto a second line.
#[test]
fn help_lists_each_command_on_one_line() {
    let help = Dir::new().command().arg("--help").ok();
    let commands: Vec<&str> = help.lines().skip_while(|l| *l != "Commands:").skip(1).take_while(|l| !l.is_empty()).collect();
    assert!(commands.len() >= 14, "{help}");
    for line in &commands {
        let name = line.trim_start().split(' ').next().unwrap_or("");
        assert!(line.starts_with("  ") && !line.starts_with("   "), "a summary wrapped onto its own line: {line:?}\n{help}");
        assert!(!name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase()), "{line:?}");
    }
    for name in ["rank", "plan", "execute", "completions", "man"] {
        assert!(commands.iter().any(|l| l.trim_start().starts_with(&format!("{name} "))), "{name} missing:\n{help}");
    }
    // The detail moved to the long help, not lost.
    let plan = Dir::new().command().args(["plan", "--help"]).ok();
    assert!(plan.contains("poison_uncleared") && plan.contains("manifest_sha256"), "{plan}");
}

#[test]
fn version_names_the_commit_built() {
    let version = Dir::new().command().arg("--version").ok();
    assert!(version.starts_with(&format!("dlqf {} (commit ", env!("CARGO_PKG_VERSION"))), "{version}");
    let head = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output();
    match head {
        Ok(out) if out.status.success() => {
            let hash = String::from_utf8(out.stdout).unwrap();
            assert!(version.contains(hash.trim()), "{version} does not name HEAD {hash}");
        }
        _ => assert!(version.contains("(commit unknown)"), "{version}"),
    }
}

/// Each shell's script names every command and a command's flags, and the shell itself reads
/// it without a syntax error.
#[test]
#[ignore = "needs zsh and fish: make test runs it"]
fn completions_for_every_shell() {
    let dir = Dir::new();
    for (shell, check) in [("bash", &["bash", "-n"][..]), ("zsh", &["zsh", "-n"]), ("fish", &["fish", "--no-execute"]), ("powershell", &[])] {
        let script = dir.command().args(["completions", shell]).ok();
        // (Flags without their dashes: fish writes `-l profile`.)
        for word in ["rank", "execute", "returned", "profile", "expect-digest"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
        if let [program, flags @ ..] = check {
            let path = dir.create(&format!("dlqf.{shell}"), &script);
            let out = Command::new(program).args(flags).arg(&path).output().unwrap_or_else(|e| panic!("{program}: {e} (make test installs it)"));
            assert!(out.status.success(), "{shell} rejects its completion script: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    dir.command().args(["completions", "tcsh"]).expect_code(2);
}

/// bash completes a subcommand's flags from the script: `dlqf rank --fail-on-d<TAB>`.
#[test]
fn bash_completion_completes_a_flag() {
    let dir = Dir::new();
    let script = dir.create("dlqf.bash", dir.command().args(["completions", "bash"]).ok());
    let probe = format!(
        "source {}; COMP_WORDS=(dlqf rank --fail-on-d); COMP_CWORD=2; COMP_LINE='dlqf rank --fail-on-d'; COMP_POINT=${{#COMP_LINE}}; _dlqf dlqf --fail-on-d rank; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = Command::new("bash").arg("-c").arg(probe).output().unwrap();
    let words = String::from_utf8_lossy(&out.stdout);
    assert_eq!(words.trim(), "--fail-on-dominant", "stderr: {}", String::from_utf8_lossy(&out.stderr));
}

/// The man page is roff that groff formats without a warning, and per-command pages are
/// written with --dir.
#[test]
#[ignore = "needs groff: make test runs it"]
fn man_page_formats_cleanly() {
    let dir = Dir::new();
    let page = dir.create("dlqf.1", dir.command().arg("man").ok());
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.starts_with(".ie \\n(.g .ds Aq") || text.contains(".TH dlqf 1"), "{}", &text[..200.min(text.len())]);
    let out = Command::new("groff").args(["-man", "-Tutf8", "-ww", "-z"]).arg(&page).output().expect("groff (make test installs it)");
    assert!(out.status.success() && out.stderr.is_empty(), "groff: {}", String::from_utf8_lossy(&out.stderr));
    let rendered = Command::new("groff").args(["-man", "-Tutf8"]).arg(&page).output().unwrap();
    let rendered = String::from_utf8_lossy(&rendered.stdout);
    assert!(rendered.contains("Dead") && rendered.contains("execute"), "{rendered}");

    dir.command().args(["man", "--dir", "pages"]).ok();
    for name in ["dlqf.1", "dlqf-rank.1", "dlqf-execute.1", "dlqf-completions.1"] {
        assert!(dir.join("pages").join(name).is_file(), "{name} not written");
    }
    assert!(dir.read("pages/dlqf-rank.1").contains("fail\\-on\\-dominant"));
}
