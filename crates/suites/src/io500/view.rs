//! What `iolab io500 plan` shows ([`PlanView`]): the phases in IO500's order with their
//! parameters and estimates, and the capacity and time a run needs, as a table or as
//! JSON. Here and not in `report`: each row is a phase of IO500's table (compat's
//! `PhaseDef`) with this suite's plan and estimate, which `report` does not see.

use iolab_core::units::{ByteCount, Nanos, OpsPerSec};

use super::{Assumptions, Io500Estimate, Io500Spec, PhasePlan};

/// A planned run: its settings, ranks and assumed rates, its phases and their estimates.
pub struct PlanView<'a> {
    pub spec: &'a Io500Spec,
    pub ranks: u32,
    pub assumed: &'a Assumptions,
    pub plans: &'a [PhasePlan],
    pub est: &'a Io500Estimate,
}

impl PlanView<'_> {
    /// The plan as a table: a head line, a row per phase, what the run needs.
    pub fn text(&self) -> String {
        let s = self.spec;
        let mut out = format!(
            "IO500 on {} rank{}: stonewall {}{}, ior-easy transfers of {}, at most {} files per rank\n",
            self.ranks,
            if self.ranks == 1 { "" } else { "s" },
            s.stonewall,
            if s.stonewall_is_io500s() {
                ""
            } else {
                " (IO500 requires 300s: the result will be invalid for submission)"
            },
            s.ior_easy_transfer,
            s.files_per_rank
        );
        out.push_str(&format!(
            "{:>3}  {:<20} {:<6} {:>8} {:>10} {:>9}  what\n",
            "#", "phase", "score", "time", "data", "files"
        ));
        for (i, (p, e)) in self.plans.iter().zip(&self.est.phases).enumerate() {
            let unit = if p.def.scored() {
                p.def.unit().label()
            } else {
                "-"
            };
            let time = if e.stonewalled {
                duration(e.time)
            } else {
                format!("~{}", duration(e.time))
            };
            let data = if e.bytes > 0 {
                ByteCount(e.bytes).human()
            } else {
                "-".into()
            };
            out.push_str(&format!(
                "{:>3}  {:<20} {:<6} {:>8} {:>10} {:>9}  {}\n",
                i + 1,
                p.def.name,
                unit,
                time,
                data,
                count(e.files),
                p.describe()
            ));
        }
        out.push_str(&self.needs());
        out
    }

    /// The last line: what the run needs and on which assumptions.
    fn needs(&self) -> String {
        let (est, a) = (self.est, self.assumed);
        format!(
            "needs {} and {} inodes at most; takes about {} (write phases run for the stonewall plus wear-out; the rest at {}/s for ior-easy, {}/s for ior-hard, {} files/s, find at {} entries/s: --assume-* change that)\n",
            ByteCount(est.capacity).human(),
            count(est.inodes),
            duration(est.time),
            ByteCount(a.easy_bandwidth as u64).human(),
            ByteCount(a.hard_bandwidth as u64).human(),
            a.file_rate,
            a.find_rate
        )
    }

    /// The plan as JSON: the settings, every phase with its parameters, data workload
    /// and estimate, and the run's needs.
    pub fn json(&self) -> serde_json::Value {
        let phases: Vec<serde_json::Value> = self
            .plans
            .iter()
            .zip(&self.est.phases)
            .map(|(p, e)| {
                serde_json::json!({
                    "name": p.def.name,
                    "scored": p.def.scored(),
                    "group": p.def.group,
                    "unit": p.def.unit().label(),
                    "works_on": p.def.works_on,
                    "params": p.params,
                    "data_spec": p.data,
                    "estimate": e,
                })
            })
            .collect();
        serde_json::json!({
            "ranks": self.ranks,
            "spec": self.spec,
            "assumed": self.assumed,
            "phases": phases,
            "capacity": self.est.capacity,
            "inodes": self.est.inodes,
            "time": self.est.time,
        })
    }
}

/// "-", "42", "3.00M".
fn count(n: u64) -> String {
    match n {
        0 => "-".into(),
        1..1000 => n.to_string(),
        _ => OpsPerSec(n as f64).human(),
    }
}

/// "45.0s", "5m00s", "1h02m".
fn duration(t: Nanos) -> String {
    let s = t.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1}s")
    } else if s < 3600.0 {
        let s = s.round() as u64;
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        let m = (s / 60.0).round() as u64;
        format!("{}h{:02}m", m / 60, m % 60)
    }
}
