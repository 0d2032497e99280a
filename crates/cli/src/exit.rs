//! Exit codes and one-line error messages.

use iolab_engine::EngineError;

pub const OK: u8 = 0;
/// The benchmark ran but failed validation (I/O errors, verify mismatches).
pub const FAILED: u8 = 1;
/// Usage, configuration or runtime error.
pub const USAGE: u8 = 2;
/// Interrupted by Ctrl-C or a signal; partial results were kept.
pub const INTERRUPTED: u8 = 130;

/// The error and its causes on one line ("a: b: c"), without repeating a cause that
/// is already part of the message.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !out.contains(&c) {
            out.push_str(": ");
            out.push_str(&c);
        }
    }
    out.replace('\n', " ")
}

pub fn code_of(e: &anyhow::Error) -> u8 {
    match e.downcast_ref::<EngineError>() {
        Some(EngineError::Interrupted) => INTERRUPTED,
        _ => USAGE,
    }
}
