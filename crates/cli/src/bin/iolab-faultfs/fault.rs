//! What `--fault` says: the operation, the action, and when it fires.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use fuser::Errno;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Action {
    Eio,
    Enospc,
    Short,
    Stall(Duration),
}

#[derive(Debug)]
pub(crate) struct Fault {
    pub(crate) op: String,
    pub(crate) action: Action,
    pub(crate) after: u64,
    pub(crate) times: u64,
    pub(crate) matching: Option<String>,
    pub(crate) seen: AtomicU64,
    pub(crate) fired: AtomicU64,
}

pub(crate) const OPS: [&str; 10] = [
    "read", "write", "create", "mkdir", "lookup", "getattr", "unlink", "rmdir", "fsync", "open",
];

pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let (n, mult) = if let Some(ms) = text.strip_suffix("ms") {
        (ms, 1e-3)
    } else if let Some(s) = text.strip_suffix('s') {
        (s, 1.0)
    } else {
        (text, 1.0)
    };
    n.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| Duration::from_secs_f64(v * mult))
        .ok_or_else(|| format!("'{text}' is not a duration (3s, 500ms)"))
}

impl Fault {
    pub(crate) fn parse(text: &str) -> Result<Fault, String> {
        let mut parts = text.split(':');
        let op = parts.next().unwrap_or_default().to_string();
        if !OPS.contains(&op.as_str()) {
            return Err(format!(
                "--fault {text}: '{op}' is not an operation ({})",
                OPS.join(", ")
            ));
        }
        let action = match parts.next() {
            Some("eio") => Action::Eio,
            Some("enospc") => Action::Enospc,
            Some("short") if op == "write" => Action::Short,
            Some(a) if a.starts_with("stall=") => Action::Stall(
                parse_duration(&a["stall=".len()..]).map_err(|e| format!("--fault {text}: {e}"))?,
            ),
            other => {
                return Err(format!(
                    "--fault {text}: '{}' is not an action (eio, enospc, short for writes, stall=DURATION)",
                    other.unwrap_or_default()
                ));
            }
        };
        let mut fault = Fault {
            op,
            action,
            after: 0,
            times: u64::MAX,
            matching: None,
            seen: AtomicU64::new(0),
            fired: AtomicU64::new(0),
        };
        for p in parts {
            let number = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| format!("--fault {text}: '{v}' is not a whole number"))
            };
            match p.split_once('=') {
                Some(("after", v)) => fault.after = number(v)?,
                Some(("times", v)) => fault.times = number(v)?,
                Some(("match", v)) => fault.matching = Some(v.to_string()),
                _ => {
                    return Err(format!(
                        "--fault {text}: '{p}' is not after=N, times=N or match=TEXT"
                    ));
                }
            }
        }
        Ok(fault)
    }
}

pub(crate) fn fail(action: Action) -> Errno {
    match action {
        Action::Enospc => Errno::ENOSPC,
        _ => Errno::EIO,
    }
}
