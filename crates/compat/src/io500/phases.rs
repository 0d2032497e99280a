//! IO500's phases as data, in the order IO500 runs them: [`PHASES`], each a [`PhaseDef`]
//! with its score group, unit and [`Workload`] (IOR, mdtest, find or the timestamp), and
//! which write phase a read, stat or delete works on. Source: IO500's
//! `src/phase-definitions.h` and `src/phase_*.c` (io500-isc24 .. isc26, standard mode).

use serde::{Deserialize, Serialize};

use iolab_core::spec::io500::{IOR_HARD_TRANSFER, IOR_RND4K_TRANSFER, MDTEST_HARD_FILE_SIZE};

/// What a phase is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Io500PhaseKind {
    Ior,
    Mdtest,
    Find,
    /// Creates the file find's `-newer` compares against; measures nothing.
    Timestamp,
}

/// The part of the score a phase counts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScoreGroup {
    /// IOR phases, in GiB/s.
    Bandwidth,
    /// mdtest phases and find, in kIOPS.
    Metadata,
}

impl ScoreGroup {
    pub fn unit(self) -> FigureUnit {
        match self {
            ScoreGroup::Bandwidth => FigureUnit::GibPerSec,
            ScoreGroup::Metadata => FigureUnit::Kiops,
        }
    }
}

/// The unit of a phase's figure, as IO500 prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FigureUnit {
    #[serde(rename = "GiB/s")]
    GibPerSec,
    #[serde(rename = "kIOPS")]
    Kiops,
}

impl FigureUnit {
    pub fn label(self) -> &'static str {
        match self {
            FigureUnit::GibPerSec => "GiB/s",
            FigureUnit::Kiops => "kIOPS",
        }
    }
}

/// What an IOR phase does to the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IorAccess {
    Write,
    Read,
    /// Random 4 KiB reads (IOR -z).
    RandomRead,
}

/// The transfer size of an IOR phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transfer {
    /// `--ior-easy-transfer` (2 MiB by default).
    EasyTransfer,
    /// Fixed by the rules.
    Bytes(u64),
}

/// Where an IOR phase's data lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IorLayout {
    /// One file per rank (IOR -F).
    FilePerProcess,
    /// One file shared by all ranks, each transfer a segment of its own, interleaved
    /// across ranks (IOR -t 47008 -b 47008 -s N).
    SharedStrided,
}

/// What an mdtest phase does to each file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MdtestOp {
    /// Create (and write `file_size` bytes into) each file (mdtest -C).
    Create,
    /// stat each file (mdtest -T).
    Stat,
    /// Read each file back and check it (mdtest -E -X).
    Read,
    /// Remove each file (mdtest -r).
    Delete,
}

/// Where an mdtest phase's files live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MdtestTree {
    /// A private directory per rank (mdtest -u -L).
    DirPerRank,
    /// One directory shared by all ranks.
    SharedDir,
}

/// A phase's workload, in IO500's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    Ior {
        access: IorAccess,
        transfer: Transfer,
        layout: IorLayout,
    },
    Mdtest {
        op: MdtestOp,
        tree: MdtestTree,
        /// Bytes written into (and read from) each file.
        file_size: u64,
    },
    /// `find DATADIR -newer TIMESTAMP -size 3901c -name "*01*"` over everything written.
    Find,
    Timestamp,
}

/// One IO500 phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseDef {
    /// IO500's name, as in its result files ("ior-easy-write").
    pub name: &'static str,
    pub kind: Io500PhaseKind,
    /// The score group it counts in; None for phases IO500 reports but does not score.
    pub group: Option<ScoreGroup>,
    /// Runs until the stonewall, then wears out: every rank catches up with the rank that
    /// did the most. IO500 checks such a phase ran at least 300 s (write phases only).
    pub stonewalled: bool,
    /// The phase whose files or data this one reads, stats or deletes.
    pub works_on: Option<&'static str>,
    pub workload: Workload,
}

impl PhaseDef {
    pub fn scored(&self) -> bool {
        self.group.is_some()
    }

    /// The unit IO500 prints the phase's figure in (`name[0] == 'i'` ? GiB/s : kIOPS).
    pub fn unit(&self) -> FigureUnit {
        match self.kind {
            Io500PhaseKind::Ior => FigureUnit::GibPerSec,
            _ => FigureUnit::Kiops,
        }
    }

    /// A write phase IO500 requires to run at least the stonewall time.
    pub fn is_write(&self) -> bool {
        self.stonewalled && self.works_on.is_none()
    }
}

/// An IOR phase running `workload` (one of [`easy`], [`hard`] or an `Ior` of its own).
const fn ior(
    name: &'static str,
    group: Option<ScoreGroup>,
    stonewalled: bool,
    works_on: Option<&'static str>,
    workload: Workload,
) -> PhaseDef {
    PhaseDef {
        name,
        kind: Io500PhaseKind::Ior,
        group,
        stonewalled,
        works_on,
        workload,
    }
}

/// ior-easy's I/O: a file per process, IO500's easy transfer size.
const fn easy(access: IorAccess) -> Workload {
    Workload::Ior {
        access,
        transfer: EASY_T,
        layout: FPP,
    }
}

/// ior-hard's I/O: one shared file, strided, of IOR_HARD_TRANSFER pieces.
const fn hard(access: IorAccess) -> Workload {
    Workload::Ior {
        access,
        transfer: HARD_T,
        layout: SHARED,
    }
}

const fn mdtest(
    name: &'static str,
    works_on: Option<&'static str>,
    op: MdtestOp,
    tree: MdtestTree,
) -> PhaseDef {
    let file_size = match tree {
        MdtestTree::DirPerRank => 0,
        MdtestTree::SharedDir => MDTEST_HARD_FILE_SIZE,
    };
    PhaseDef {
        name,
        kind: Io500PhaseKind::Mdtest,
        group: Some(ScoreGroup::Metadata),
        stonewalled: works_on.is_none(),
        works_on,
        workload: Workload::Mdtest {
            op,
            tree,
            file_size,
        },
    }
}

const BW: Option<ScoreGroup> = Some(ScoreGroup::Bandwidth);
const EASY: Option<&str> = Some("ior-easy-write");
const HARD: Option<&str> = Some("ior-hard-write");
const MD_EASY: Option<&str> = Some("mdtest-easy-write");
const MD_HARD: Option<&str> = Some("mdtest-hard-write");
const EASY_T: Transfer = Transfer::EasyTransfer;
const HARD_T: Transfer = Transfer::Bytes(IOR_HARD_TRANSFER);
const FPP: IorLayout = IorLayout::FilePerProcess;
const SHARED: IorLayout = IorLayout::SharedStrided;
const PER_RANK: MdtestTree = MdtestTree::DirPerRank;
const ONE_DIR: MdtestTree = MdtestTree::SharedDir;

/// IO500's phases in the order it runs them (standard mode).
pub const PHASES: [PhaseDef; 14] = [
    ior("ior-easy-write", BW, true, None, easy(IorAccess::Write)),
    mdtest("mdtest-easy-write", None, MdtestOp::Create, PER_RANK),
    PhaseDef {
        name: "timestamp",
        kind: Io500PhaseKind::Timestamp,
        group: None,
        stonewalled: false,
        works_on: None,
        workload: Workload::Timestamp,
    },
    ior("ior-hard-write", BW, true, None, hard(IorAccess::Write)),
    mdtest("mdtest-hard-write", None, MdtestOp::Create, ONE_DIR),
    PhaseDef {
        name: "find",
        kind: Io500PhaseKind::Find,
        group: Some(ScoreGroup::Metadata),
        stonewalled: false,
        works_on: None,
        workload: Workload::Find,
    },
    ior("ior-easy-read", BW, false, EASY, easy(IorAccess::Read)),
    mdtest("mdtest-easy-stat", MD_EASY, MdtestOp::Stat, PER_RANK),
    ior("ior-hard-read", BW, false, HARD, hard(IorAccess::Read)),
    mdtest("mdtest-hard-stat", MD_HARD, MdtestOp::Stat, ONE_DIR),
    mdtest("mdtest-easy-delete", MD_EASY, MdtestOp::Delete, PER_RANK),
    mdtest("mdtest-hard-read", MD_HARD, MdtestOp::Read, ONE_DIR),
    mdtest("mdtest-hard-delete", MD_HARD, MdtestOp::Delete, ONE_DIR),
    // Reported, not scored; runs for the stonewall time like a write phase.
    ior(
        "ior-rnd4K-easy-read",
        None,
        true,
        EASY,
        Workload::Ior {
            access: IorAccess::RandomRead,
            transfer: Transfer::Bytes(IOR_RND4K_TRANSFER),
            layout: FPP,
        },
    ),
];

/// Phases of IO500's extended mode (isc21 .. isc26): reported in its output, never in the
/// standard score.
pub const EXTENDED_PHASES: [&str; 9] = [
    "ior-rnd4K-write",
    "ior-rnd1MB-write",
    "mdworkbench-create",
    "find-easy",
    "ior-rnd4K-read",
    "ior-rnd1MB-read",
    "find-hard",
    "mdworkbench-bench",
    "mdworkbench-delete",
];

/// The definition of the IO500 phase called `name`.
pub fn phase(name: &str) -> Option<&'static PhaseDef> {
    PHASES.iter().find(|p| p.name == name)
}

/// The scored phases of `group`, in IO500's order.
pub fn scored(group: ScoreGroup) -> impl Iterator<Item = &'static PhaseDef> {
    PHASES.iter().filter(move |p| p.group == Some(group))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_in_io500s_order() {
        let names: Vec<&str> = PHASES.iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "ior-easy-write",
                "mdtest-easy-write",
                "timestamp",
                "ior-hard-write",
                "mdtest-hard-write",
                "find",
                "ior-easy-read",
                "mdtest-easy-stat",
                "ior-hard-read",
                "mdtest-hard-stat",
                "mdtest-easy-delete",
                "mdtest-hard-read",
                "mdtest-hard-delete",
                "ior-rnd4K-easy-read",
            ]
        );
        assert_eq!(scored(ScoreGroup::Bandwidth).count(), 4);
        assert_eq!(scored(ScoreGroup::Metadata).count(), 8);
        assert!(!phase("ior-rnd4K-easy-read").unwrap().scored());
        assert!(!phase("timestamp").unwrap().scored());
        let writes: Vec<&str> = PHASES
            .iter()
            .filter(|p| p.is_write())
            .map(|p| p.name)
            .collect();
        assert_eq!(
            writes,
            [
                "ior-easy-write",
                "mdtest-easy-write",
                "ior-hard-write",
                "mdtest-hard-write"
            ]
        );
    }

    #[test]
    fn every_phase_works_on_an_earlier_write() {
        for (i, p) in PHASES.iter().enumerate() {
            if let Some(w) = p.works_on {
                let at = PHASES.iter().position(|q| q.name == w).unwrap();
                assert!(at < i, "{} works on the later {w}", p.name);
                assert!(PHASES[at].is_write());
                assert_eq!(PHASES[at].kind, p.kind);
            }
        }
    }
}
