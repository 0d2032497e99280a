//! What `iolab fio --parse-only` prints ([`describe_plans`]): each job as the iolab
//! workload it runs; and fio's lines for the failed I/Os of a phase
//! ([`io_u_error_lines`]).

use iolab_core::result::{OpKind, PhaseResult};

use super::plan::FioPlan;

/// Each job as the iolab workload it runs: its group, phase and target, its files, the
/// settings that differ from their defaults, its spec and its notes.
pub fn describe_plans(plans: &[FioPlan]) -> String {
    let mut out = String::new();
    for p in plans {
        let target = match (&p.target.dir, &p.target.device) {
            (_, Some(d)) => format!("device {}", d.display()),
            (Some(d), None) => format!("dir {}", d.display()),
            (None, None) => String::new(),
        };
        out.push_str(&format!(
            "[{}] group {} phase {} on {target}\n",
            p.job.name, p.group, p.phase
        ));
        if let Some(a) = p.after {
            out.push_str(&format!("  after = [{}]\n", plans[a].job.name));
        }
        let files = match &p.target.dir {
            Some(d) => format!(
                "{}/iolab-work/{}",
                d.display(),
                p.file_names
                    .replace("{worker}", "<jobnum>")
                    .replace("{file}", "<filenum>")
            ),
            None => String::from("(the device)"),
        };
        out.push_str(&format!("  files = {files}\n"));
        for (key, v) in settings_of(p) {
            out.push_str(&format!("  {key} = {v}\n"));
        }
        let spec = serde_json::to_value(&p.spec).unwrap_or_default();
        if let Some(m) = spec.as_object() {
            for (k, v) in m {
                if !v.is_null() {
                    out.push_str(&format!("  {k} = {v}\n"));
                }
            }
        }
        for n in &p.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
    }
    out
}

/// The plan's settings outside its spec that differ from their defaults.
fn settings_of(p: &FioPlan) -> Vec<(&'static str, String)> {
    let m = &p.settings.modifier;
    [
        (
            "files_per_job",
            (p.settings.files_per_worker > 1).then(|| p.settings.files_per_worker.to_string()),
        ),
        ("offset", Some(p.offset.to_string()).filter(|o| o != "0")),
        (
            "offset_increment",
            Some(p.offset_increment.to_string()).filter(|o| o != "0"),
        ),
        (
            "loops",
            (p.settings.loops > 1).then(|| p.settings.loops.to_string()),
        ),
        ("seq_skip_blocks", (m.skip != 0).then(|| m.skip.to_string())),
        ("seq_run", (m.run > 1).then(|| m.run.to_string())),
        ("start_delay", p.settings.start_delay.map(|d| d.to_string())),
        ("ramp", p.settings.ramp.map(|d| d.to_string())),
    ]
    .into_iter()
    .filter_map(|(key, value)| value.map(|v| (key, v)))
    .collect()
}

/// fio's line for a failed I/O (`fio: io_u error on file F: strerror: write offset=O,
/// buflen=B`), for each error the phase kept, then iolab's own count of the rest
/// (`iolab fio: ...`). An error that is not an I/O's (a minimum rate not kept, as fio's
/// check_min_rate, or a latency target missed at a depth of one: ETIMEDOUT, as fio's)
/// is its message.
pub fn io_u_error_lines(phase: &PhaseResult, block_size: u64) -> Vec<String> {
    let mut lines = Vec::new();
    for e in &phase.errors {
        if e.offset.is_none() && (e.errno.is_none() || e.errno == Some(110)) {
            lines.push(format!("iolab fio: {}", e.message));
            continue;
        }
        let what = e
            .errno
            .map(|n| iolab_core::error::describe(&std::io::Error::from_raw_os_error(n)))
            .unwrap_or_else(|| e.message.clone());
        let dir = match e.op {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Trim => "trim",
            _ => "sync",
        };
        lines.push(format!(
            "fio: io_u error on file {}: {what}: {dir} offset={}, buflen={block_size}",
            e.path,
            e.offset.unwrap_or(0)
        ));
    }
    let kept = phase.errors.len() as u64;
    if phase.error_count > kept {
        lines.push(format!(
            "iolab fio: and {} more I/O errors",
            phase.error_count - kept
        ));
    }
    lines
}
