//! A command group typed without its subcommand (`iolab`, `iolab study`) shows clap's
//! help in its own layout, as `-h` does, on stderr with exit 2; real usage errors stay
//! one line.

use crate::common::{iolab, run};

/// The commands of `iolab -h`'s "Commands:" section.
fn commands_of(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        // Continuation lines of a wrapped description are indented further.
        .filter(|l| l.starts_with("  ") && !l.starts_with("    "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn a_group_without_its_subcommand_prints_the_help_as_dash_h_does() {
    let root = run(&["-h"]).expect(0).stdout;
    let mut groups = vec![vec![]];
    for c in commands_of(&root) {
        let help = run(&[&c, "-h"]).expect(0).stdout;
        // Groups whose subcommand is required: a single usage line ending in <COMMAND>
        // (`iolab targets` and `iolab io500` also run without one: no group here).
        let usage: Vec<&str> = help
            .lines()
            .skip_while(|l| !l.starts_with("Usage:"))
            .take_while(|l| !l.trim().is_empty())
            .collect();
        if usage.len() == 1 && usage[0].ends_with("<COMMAND>") {
            groups.push(vec![c]);
        }
    }
    let names: Vec<String> = groups.iter().map(|g| g.join(" ")).collect();
    for needed in ["", "study", "results"] {
        assert!(
            names.iter().any(|n| n == needed),
            "{needed:?} not in {names:?}"
        );
    }
    for g in &groups {
        let args: Vec<&str> = g.iter().map(String::as_str).collect();
        let bare = run(&args);
        assert_eq!(bare.code, 2, "`iolab {}` exit code", g.join(" "));
        assert_eq!(bare.stdout, "", "`iolab {}` printed on stdout", g.join(" "));
        let mut dash_h = args.clone();
        dash_h.push("-h");
        let help = run(&dash_h).expect(0).stdout;
        assert_eq!(bare.stderr, help, "`iolab {}` against -h", g.join(" "));
        let lines: Vec<&str> = bare.stderr.lines().collect();
        assert!(lines.len() > 5, "squashed: {:?}", bare.stderr);
        assert!(lines.iter().any(|l| l.starts_with("Usage: iolab")));
        assert!(lines.contains(&"Commands:"), "{}", bare.stderr);
        assert!(lines.contains(&"Options:"), "{}", bare.stderr);
    }
}

#[test]
fn a_real_usage_error_stays_one_line() {
    let out = iolab()
        .args(["study", "run", "--no-such-option"])
        .output()
        .expect("iolab runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--no-such-option"), "{err}");
}
