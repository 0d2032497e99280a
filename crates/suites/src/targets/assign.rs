//! Which rank runs which target: [`assign`] matches each target's node against the
//! hosts of the ranks and deals a host's targets round robin to the ranks on that host.
//! A target without a node (a path on the command line) is a target on every host.
//! Every rank computes the same list from the same inputs, so no messages are needed.

use iolab_comm::Topology;
use iolab_core::SpecError;
use iolab_core::spec::TargetEntry;
use serde::{Deserialize, Serialize};

/// A target and where it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssignedTarget {
    /// The target, its node filled in for targets on every host.
    pub entry: TargetEntry,
    /// The host the target's node matched.
    pub host: String,
    pub rank: u32,
}

/// The part of a host name before the first dot.
fn short(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// Whether a targets file's node names `host` ("node006" matches "node006.cluster").
pub fn node_matches(node: &str, host: &str) -> bool {
    node == host || short(node) == short(host)
}

/// Assigns every target to a rank on its node.
pub fn assign(entries: &[TargetEntry], topo: &Topology) -> Result<Vec<AssignedTarget>, SpecError> {
    let hosts = topo.hosts();
    let mut expanded: Vec<(TargetEntry, String)> = Vec::new();
    for e in entries {
        if e.node.is_empty() {
            for h in &hosts {
                let mut e = e.clone();
                e.node = h.clone();
                expanded.push((e, h.clone()));
            }
            continue;
        }
        let host = hosts
            .iter()
            .find(|h| **h == e.node)
            .or_else(|| hosts.iter().find(|h| node_matches(&e.node, h)))
            .ok_or_else(|| {
                SpecError::new(
                    format!("target {}", e.id),
                    format!(
                        "node {} runs no rank (ranks run on {}); start a rank there (mpirun --host) or correct the node",
                        e.node,
                        hosts.join(", ")
                    ),
                )
            })?;
        expanded.push((e.clone(), host.clone()));
    }
    let mut dealt = vec![0usize; hosts.len()];
    let mut out: Vec<AssignedTarget> = Vec::with_capacity(expanded.len());
    for (entry, host) in expanded {
        if let Some(other) = out
            .iter()
            .find(|o| o.host == host && o.entry.path == entry.path)
        {
            return Err(SpecError::new(
                format!("target {}", entry.id),
                format!(
                    "{} on {host} is also target {}; list each target once",
                    entry.path.display(),
                    other.entry.id
                ),
            ));
        }
        let h = hosts.iter().position(|x| *x == host).unwrap_or(0);
        let ranks: Vec<u32> = topo
            .ranks
            .iter()
            .filter(|r| r.host == host)
            .map(|r| r.rank)
            .collect();
        let rank = ranks[dealt[h] % ranks.len()];
        dealt[h] += 1;
        out.push(AssignedTarget { entry, host, rank });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_comm::RankInfo;

    fn topo(hosts: &[&str]) -> Topology {
        Topology {
            ranks: hosts
                .iter()
                .enumerate()
                .map(|(r, h)| RankInfo {
                    rank: r as u32,
                    host: h.to_string(),
                })
                .collect(),
        }
    }

    fn entry(id: &str, node: &str, path: &str) -> TargetEntry {
        TargetEntry {
            id: id.into(),
            node: node.into(),
            path: path.into(),
            rated: None,
        }
    }

    #[test]
    fn each_rank_runs_its_own_nodes_targets_round_robin() {
        let t = topo(&["a", "a", "b.cluster"]);
        let entries = [
            entry("1", "a", "/t1"),
            entry("2", "a", "/t2"),
            entry("3", "a", "/t3"),
            entry("4", "b", "/t4"),
        ];
        let got = assign(&entries, &t).unwrap();
        let ranks: Vec<u32> = got.iter().map(|g| g.rank).collect();
        assert_eq!(ranks, vec![0, 1, 0, 2]);
        assert_eq!(got[3].host, "b.cluster");
        assert_eq!(got[3].entry.node, "b");
    }

    #[test]
    fn a_target_without_a_node_is_on_every_host() {
        let t = topo(&["a", "b", "b"]);
        let got = assign(&[entry("/x", "", "/x"), entry("/y", "", "/y")], &t).unwrap();
        let placed: Vec<(String, u32)> =
            got.iter().map(|g| (g.entry.node.clone(), g.rank)).collect();
        assert_eq!(
            placed,
            vec![
                ("a".into(), 0),
                ("b".into(), 1),
                ("a".into(), 0),
                ("b".into(), 2)
            ]
        );
    }

    #[test]
    fn unknown_nodes_and_repeated_paths_are_refused() {
        let t = topo(&["a"]);
        let e = assign(&[entry("19", "node006", "/t")], &t).unwrap_err();
        assert_eq!(
            e.to_string(),
            "target 19: node node006 runs no rank (ranks run on a); start a rank there (mpirun --host) or correct the node"
        );
        let e = assign(&[entry("1", "a", "/t"), entry("2", "", "/t")], &t).unwrap_err();
        assert_eq!(
            e.to_string(),
            "target 2: /t on a is also target 1; list each target once"
        );
    }
}
