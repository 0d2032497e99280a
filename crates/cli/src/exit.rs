//! Exit codes and one-line error messages.

use iolab_engine::EngineError;

pub const OK: u8 = 0;
/// The benchmark ran but failed validation (I/O errors, verify mismatches).
pub const FAILED: u8 = 1;
/// Usage, configuration or runtime error.
pub const USAGE: u8 = 2;
/// Standard output could not be written (full, closed): the run was stored first.
pub const OUTPUT: u8 = 74;
/// Interrupted by Ctrl-C or a signal; partial results were kept.
pub const INTERRUPTED: u8 = 130;

/// The error and its causes on one line ("a: b: c"), without repeating a cause that
/// is already part of the message.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        let c = match text.find(" (os error") {
            Some(i) => &text[..i],
            None => text.as_str(),
        };
        if !out.contains(c) {
            out.push_str(": ");
            out.push_str(c);
        }
    }
    out.replace('\n', " ")
}

/// clap's usage error on one line: the message and the possible values, without the
/// usage block and the "For more information" footer.
pub fn one_line_usage(e: &clap::Error, args: &[String]) -> String {
    if let Some(msg) = negative_value(e, args) {
        return msg;
    }
    let text = e.render().to_string();
    let kept: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("For more information") && !l.starts_with("Usage:")
        })
        .collect();
    kept.join(" ")
}

/// clap reads `--size -10` as unknown short options (`-1`...); name the option the
/// negative number was given to.
fn negative_value(e: &clap::Error, args: &[String]) -> Option<String> {
    if e.kind() != clap::error::ErrorKind::UnknownArgument {
        return None;
    }
    let negative = |a: &str| {
        a.strip_prefix('-')
            .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
    };
    // The first negative number that follows an option (`--size` or `-t`).
    let i = (1..args.len()).find(|&i| negative(&args[i]) && args[i - 1].starts_with('-'))?;
    let (option, bad) = (&args[i - 1], &args[i]);
    if negative(option) {
        return None;
    }
    Some(format!(
        "error: {option}: {bad}: negative values are not accepted"
    ))
}

pub fn code_of(e: &anyhow::Error) -> u8 {
    match e.downcast_ref::<EngineError>() {
        Some(EngineError::Interrupted) => INTERRUPTED,
        Some(EngineError::KeptFileChanged { .. }) => FAILED,
        _ => USAGE,
    }
}

/// Prints an error the way this rank should (a failure every rank shares is printed by
/// rank 0 alone) and returns its exit code.
pub fn report(e: &anyhow::Error) -> u8 {
    let shared = matches!(
        e.downcast_ref::<EngineError>(),
        Some(EngineError::Rank { .. } | EngineError::RankMismatch { .. })
    );
    if crate::runtime::rank() == 0 || !shared {
        eprintln!("iolab: error: {}", one_line(e));
    }
    code_of(e)
}
