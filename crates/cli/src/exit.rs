//! Exit codes and one-line error messages.

use std::ffi::OsString;

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
pub fn one_line_usage(e: &clap::Error, args: &[OsString]) -> String {
    if let Some(msg) = invalid_utf8(e, args) {
        return msg;
    }
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Some(msg) = negative_value(e, &args) {
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

/// clap says only "invalid UTF-8 was detected in one or more arguments": name the
/// argument, and the option it was given to, with its bad bytes escaped (`\xFF`).
fn invalid_utf8(e: &clap::Error, args: &[OsString]) -> Option<String> {
    if e.kind() != clap::error::ErrorKind::InvalidUtf8 {
        return None;
    }
    let i = (1..args.len()).find(|&i| args[i].to_str().is_none())?;
    let bytes = args[i].as_encoded_bytes();
    let escaped = |b: &[u8]| b.escape_ascii().to_string();
    // `--label=\xFF`: the option is the part before `=`.
    if bytes.starts_with(b"--")
        && let Some(eq) = bytes.iter().position(|&b| b == b'=')
        && std::str::from_utf8(&bytes[..eq]).is_ok()
    {
        let (option, value) = (escaped(&bytes[..eq]), escaped(&bytes[eq + 1..]));
        return Some(format!("error: {option}: '{value}' is not valid UTF-8"));
    }
    let value = escaped(bytes);
    match args[i - 1].to_str() {
        Some(option) if i > 1 && option.starts_with('-') && !option.contains('=') => {
            Some(format!("error: {option}: '{value}' is not valid UTF-8"))
        }
        _ => Some(format!("error: argument {i} '{value}' is not valid UTF-8")),
    }
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
