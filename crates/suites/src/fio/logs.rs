//! fio's log files, written by rank 0 when each phase ends, from the clones' timelines
//! (iolab_compat's [`render_logs`]): fio's names and columns, relative to the current
//! directory as fio's. Every log's directory was checked before anything ran
//! ([`check_log_dirs`]); a file a job writes replaces what was there (as fio's), except
//! that with `per_job_logs=0` the later clones and jobs append to it. fio's histogram
//! logs (`write_hist_log`) come from each clone's own samples of fio's latency bins.

use std::io::Write;
use std::sync::Mutex;

use iolab_compat::fio::logs::{CloneLog, LogOptions, render_logs};
use iolab_compat::fio::{FioError, FioPlan};
use iolab_engine::HistSample;
use iolab_engine::WorkerRow;

use super::FioRunError;

/// Refuses a job whose log would go to a directory that does not exist (fio runs it
/// and loses the log).
pub fn check_log_dirs(plans: &[FioPlan]) -> Result<(), FioError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    for p in plans {
        // A clone's epoch is its phase's start plus its delay and ramp: not known for a
        // job that starts when another ends.
        if p.job.logs.unix_epoch && p.after.is_some() {
            let key = "log_unix_epoch";
            return Err(p.job.refusal(
                key,
                "with wait_for is not supported: iolab dates a clone's log from its phase's start (nothing was run)",
            ));
        }
        if let Err((key, why)) = p.job.logs.check_dirs(&cwd) {
            return Err(p.job.refusal(key, why));
        }
    }
    Ok(())
}

/// fio's thread number of each plan's first clone, less one: clones are counted over
/// all jobs in order, every rank's clones of a job together.
pub(super) fn first_numbers(plans: &[FioPlan], ranks: u32) -> Vec<u32> {
    let mut next = 0;
    plans
        .iter()
        .map(|p| {
            let first = next;
            next += p.spec.threads * ranks;
            first
        })
        .collect()
}

/// Writes the logs of plan `plan` from its clones' rows (the first numbered one more
/// than `first`). `written` holds the files this run wrote before: they are appended to, the
/// others replaced. `started_ms`: when its phase started, in ms since the Unix epoch.
pub(super) fn write_logs(
    plan: &FioPlan,
    first: u32,
    rows: &[WorkerRow],
    written: &Mutex<Vec<String>>,
    started_ms: i64,
) -> Result<(), FioRunError> {
    let opts = &plan.job.logs;
    if !opts.any() && opts.hist.is_none() {
        return Ok(());
    }
    let epoch_ms = epoch_of(plan, started_ms);
    let mut rows: Vec<&WorkerRow> = rows.iter().collect();
    rows.sort_by_key(|r| r.worker);
    let hist: Vec<(u32, Vec<HistSample>)> = rows
        .iter()
        .map(|r| {
            let mut samples = r.measure.hist_log.clone();
            for s in &mut samples {
                s.at_ms += epoch_ms;
            }
            (first + r.worker + 1, samples)
        })
        .collect();
    let clones: Vec<CloneLog<'_>> = rows
        .iter()
        .map(|r| CloneLog {
            number: first + r.worker + 1,
            timeline: &r.measure.timeline,
            latency_max: &r.measure.latency_max,
            elapsed: r.elapsed,
            epoch_ms,
        })
        .collect();
    let mut written = written.lock().unwrap_or_else(|p| p.into_inner());
    let files = if opts.any() {
        render_logs(opts, &clones)
    } else {
        Vec::new()
    };
    for (name, text) in files.into_iter().chain(render_hist_logs(opts, &hist)) {
        let append = written.contains(&name);
        write_log(&name, &text, append).map_err(|source| FioRunError::Log {
            job: plan.job.name.clone(),
            name: name.clone(),
            source,
        })?;
        if !append {
            written.push(name);
        }
    }
    Ok(())
}

/// fio's log_unix_epoch: times from the wall clock when the clone's measured time
/// started (fio's alternate_epoch, set again when a ramp ends); 0 without it.
fn epoch_of(plan: &FioPlan, started_ms: i64) -> u64 {
    if !plan.job.logs.unix_epoch {
        return 0;
    }
    let lead = [plan.settings.start_delay, plan.settings.ramp]
        .iter()
        .flatten()
        .map(|t| t.nanos().0 / 1_000_000)
        .sum::<u64>();
    u64::try_from(started_ms).unwrap_or(0) + lead
}

/// Writes one log file: appended to, or replacing what was there.
fn write_log(name: &str, text: &str, append: bool) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .append(append)
        .truncate(!append)
        .open(name)?;
    file.write_all(text.as_bytes())
}

/// fio's histogram log file of each clone (`PREFIX_clat_hist.N.log`, or one
/// `PREFIX_clat_hist.log` the clones append to with `per_job_logs=0`): (clone number,
/// its samples). Empty without `log_hist_msec`, as fio's.
pub fn render_hist_logs(
    opts: &LogOptions,
    clones: &[(u32, Vec<HistSample>)],
) -> Vec<(String, String)> {
    let Some(prefix) = &opts.hist else {
        return Vec::new();
    };
    let mut files: Vec<(String, String)> = Vec::new();
    for (number, samples) in clones {
        let name = if opts.shared_file {
            format!("{prefix}_clat_hist.log")
        } else {
            format!("{prefix}_clat_hist.{number}.log")
        };
        let text: String = samples.iter().map(|s| s.line()).collect();
        match files.iter_mut().find(|f| f.0 == name) {
            Some(f) => f.1.push_str(&text),
            None => files.push((name, text)),
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hist_logs_are_one_per_clone_or_one_shared_file() {
        let sample = |at_ms| HistSample {
            at_ms,
            ..HistSample::default()
        };
        let clones = vec![(1, vec![sample(100)]), (2, vec![sample(200)])];
        let mut opts = LogOptions {
            hist: Some("lat".into()),
            ..LogOptions::default()
        };
        let files = render_hist_logs(&opts, &clones);
        let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(names, ["lat_clat_hist.1.log", "lat_clat_hist.2.log"]);
        opts.shared_file = true;
        let files = render_hist_logs(&opts, &clones);
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].0, "lat_clat_hist.log");
        assert_eq!(
            files[0].1,
            format!("{}{}", sample(100).line(), sample(200).line())
        );
        opts.hist = None;
        assert!(render_hist_logs(&opts, &clones).is_empty());
    }
}
