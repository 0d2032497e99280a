//! What fio reports one entry for: [`report_units`] follows fio's rule (stat.c's
//! `__show_run_stats`): every clone of every job is an entry of its own, unless it has
//! `group_reporting` and belongs to the same group as the entry before it, which it then
//! joins. So `numjobs=4` prints four entries, `numjobs=4` with `group_reporting` one,
//! and jobs of one group with `group_reporting` one for the whole group.

use super::plan::FioPlan;

/// One entry of fio's report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportUnit {
    /// The job of its first member (its name and options head the entry).
    pub plan: usize,
    pub group: u32,
    /// (job index, clone index) of every clone it covers.
    pub members: Vec<(usize, u32)>,
}

/// The entries of `plans`, in fio's order, with `ranks` ranks each running every job's
/// `numjobs` clones (a clone is one worker).
pub fn report_units(plans: &[FioPlan], ranks: u32) -> Vec<ReportUnit> {
    let mut units: Vec<ReportUnit> = Vec::new();
    for (j, p) in plans.iter().enumerate() {
        let clones = p.spec.threads * ranks.max(1);
        for c in 0..clones {
            match units.last_mut() {
                Some(u) if p.job.group_reporting && u.group == p.group => u.members.push((j, c)),
                _ => units.push(ReportUnit {
                    plan: j,
                    group: p.group,
                    members: vec![(j, c)],
                }),
            }
        }
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::jobfile::{RawOption, Section};
    use crate::fio::{FioJob, plan_jobs};

    fn job(name: &str, opts: &[(&str, &str)]) -> FioJob {
        let mut options: Vec<RawOption> = vec![RawOption {
            key: "size".into(),
            value: Some("1m".into()),
            at: "t".into(),
        }];
        options.extend(opts.iter().map(|(k, v)| RawOption {
            key: k.to_string(),
            value: (!v.is_empty()).then(|| v.to_string()),
            at: "t".into(),
        }));
        FioJob::from_section(&Section {
            globals: 0,
            name: name.into(),
            at: "t".into(),
            options,
        })
        .unwrap()
    }

    #[test]
    fn clones_are_entries_unless_group_reporting_joins_them() {
        let plans = plan_jobs(
            &[
                job("a", &[("numjobs", "2")]),
                job("b", &[("numjobs", "2"), ("group_reporting", "")]),
                job(
                    "c",
                    &[("numjobs", "3"), ("group_reporting", ""), ("stonewall", "")],
                ),
                job("d", &[("group_reporting", "")]),
                job("e", &[("new_group", ""), ("group_reporting", "")]),
            ],
            0,
        )
        .unwrap();
        let units = report_units(&plans, 1);
        let members: Vec<Vec<(usize, u32)>> = units.iter().map(|u| u.members.clone()).collect();
        assert_eq!(
            members,
            vec![
                vec![(0, 0)],
                // b's clones join a's last entry: same group, group_reporting on b.
                vec![(0, 1), (1, 0), (1, 1)],
                // c and d: one group (c's stonewall), group_reporting on both.
                vec![(2, 0), (2, 1), (2, 2), (3, 0)],
                vec![(4, 0)],
            ]
        );
        assert_eq!(
            units.iter().map(|u| u.plan).collect::<Vec<_>>(),
            [0, 0, 2, 4]
        );
        // Two ranks: twice the clones.
        assert_eq!(report_units(&plans[..1], 2).len(), 4);
    }
}
