//! [`plan_phases`] resolves IO500's phases against an [`Io500Spec`] into [`PhasePlan`]s:
//! the parameters for display and storage, and the `DataSpec` one rank runs for each IOR
//! phase (IOR's flags in iolab's terms: -F file per process, -t/-b/-s, -D with wear-out,
//! -e fsync at close, -R verify on read, -z random order).

use std::collections::BTreeMap;

use iolab_core::spec::{
    BackendKind, CacheMode, DataPattern, DataSpec, Layout, Placement, RandomKind, RwKind,
};
use iolab_core::units::ByteCount;

use iolab_compat::io500::commands::phase_seed;
use iolab_compat::io500::phases::{
    IorAccess, IorLayout, MdtestOp, MdtestTree, PHASES, PhaseDef, Transfer, Workload,
};
use iolab_core::spec::io500::{FIND_NAME, FIND_SIZE, IOR_HARD_TRANSFER, Io500Spec};
use iolab_engine::FileNames;

/// One phase resolved against a configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct PhasePlan {
    pub def: &'static PhaseDef,
    /// The settings that shape the phase, for display and for `PhaseResult::params`.
    pub params: BTreeMap<String, String>,
    /// For IOR phases: the data workload one rank runs (one worker per rank, as IOR);
    /// a read phase reads exactly the blocks its write phase wrote.
    pub data: Option<DataSpec>,
}

impl PhasePlan {
    /// One line: "IOR write, file per process, 2MiB transfers, stonewall 300s + wear-out".
    pub fn describe(&self) -> String {
        let p = &self.params;
        let get = |k: &str| p.get(k).map(String::as_str).unwrap_or("");
        let mut parts: Vec<String> = Vec::new();
        match self.def.workload {
            Workload::Ior { access, .. } => {
                let what = match access {
                    IorAccess::Write => "IOR write",
                    IorAccess::Read => "IOR read",
                    IorAccess::RandomRead => "IOR random read",
                };
                parts.push(what.into());
                parts.push(get("layout").replace('-', " "));
                parts.push(format!("{} transfers", get("transfer")));
            }
            Workload::Mdtest { op, .. } => {
                let what = match op {
                    MdtestOp::Create => "mdtest create",
                    MdtestOp::Stat => "mdtest stat",
                    MdtestOp::Read => "mdtest read",
                    MdtestOp::Delete => "mdtest delete",
                };
                parts.push(what.into());
                parts.push(get("tree").replace('-', " "));
                parts.push(format!("{}-byte files", get("file-size")));
                if self.def.works_on.is_none() {
                    parts.push(format!("at most {} per rank", get("files-per-rank")));
                }
            }
            Workload::Find => parts.push(format!("find {}", get("find"))),
            Workload::Timestamp => parts.push("create the file find's -newer compares with".into()),
        }
        if let Some(w) = self.def.works_on {
            parts.push(format!("on what {w} wrote"));
        }
        if self.def.stonewalled {
            parts.push(format!("stonewall {} + wear-out", get("stonewall")));
        }
        parts.retain(|s| !s.is_empty());
        parts.join(", ")
    }
}

/// Every phase of a run with `spec`, in IO500's order.
pub fn plan_phases(spec: &Io500Spec) -> Vec<PhasePlan> {
    PHASES.iter().map(|def| plan_phase(def, spec)).collect()
}

fn plan_phase(def: &'static PhaseDef, spec: &Io500Spec) -> PhasePlan {
    let mut params = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        params.insert(k.to_string(), v);
    };
    if def.workload != Workload::Timestamp {
        put(
            "cache",
            if spec.drop_caches {
                "dropped before the phase (--drop-caches)"
            } else {
                "kept"
            }
            .into(),
        );
    }
    if def.stonewalled {
        put("stonewall", spec.stonewall.to_string());
        put("wear-out", "true".into());
    }
    if let Some(w) = def.works_on {
        put("works-on", w.into());
    }
    let data = match def.workload {
        Workload::Ior {
            access,
            transfer,
            layout,
        } => {
            let transfer = match transfer {
                Transfer::EasyTransfer => spec.ior_easy_transfer,
                Transfer::Bytes(b) => ByteCount(b),
            };
            put("transfer", transfer.to_string());
            let layout_name = match layout {
                IorLayout::FilePerProcess => "file-per-process",
                IorLayout::SharedStrided => "shared-strided",
            };
            put("layout", layout_name.into());
            Some(ior_spec(def, spec, access, transfer, layout))
        }
        Workload::Mdtest {
            tree, file_size, ..
        } => {
            let tree_name = match tree {
                MdtestTree::DirPerRank => "dir-per-rank",
                MdtestTree::SharedDir => "shared-dir",
            };
            put("tree", tree_name.into());
            put("file-size", file_size.to_string());
            put("files-per-rank", spec.files_per_rank.to_string());
            None
        }
        Workload::Find => {
            put(
                "find",
                format!("-newer timestamp -size {FIND_SIZE}c -name \"{FIND_NAME}\""),
            );
            None
        }
        Workload::Timestamp => None,
    };
    PhasePlan { def, params, data }
}

/// The data workload of an IOR phase for one rank: one worker, as an IOR process.
fn ior_spec(
    def: &PhaseDef,
    spec: &Io500Spec,
    access: IorAccess,
    transfer: ByteCount,
    layout: IorLayout,
) -> DataSpec {
    let mut d = DataSpec {
        rw: match access {
            IorAccess::Write => RwKind::Write,
            IorAccess::Read => RwKind::Read,
            IorAccess::RandomRead => RwKind::Randread,
        },
        block_size: transfer,
        threads: 1,
        // IO500's cache policy: IOR leaves the page cache alone; the suite empties the
        // whole of it before every phase only with --drop-caches (run.rs).
        cache: CacheMode::Keep,
        ..DataSpec::default()
    };
    match layout {
        IorLayout::FilePerProcess => {
            d.layout = Layout::FilePerThread;
            d.size = Some(spec.ior_easy_block);
        }
        IorLayout::SharedStrided => {
            d.layout = Layout::Shared;
            d.placement = Placement::Strided;
            d.size = Some(ByteCount(spec.ior_hard_segments * IOR_HARD_TRANSFER));
        }
    }
    if def.stonewalled {
        d.stonewall = Some(spec.stonewall);
        d.wear_out = true;
    }
    // IOR's --dataPacketType=timestamp with IO500's -G of the phase family: the same
    // buffer written for every transfer, every word of it checked by -R.
    d.pattern = DataPattern::IorTimestamp;
    // IOR's POSIX backend: lseek, then read or write.
    d.backend = BackendKind::Sync;
    d.seed = u64::from(phase_seed(ior_family(layout), "") as u32);
    match access {
        // IOR -e: fsync when the file is closed, inside the timed phase (no -W: the
        // write is not checked).
        IorAccess::Write => d.fsync_at_end = true,
        // IOR -R: check what was read.
        IorAccess::Read => d.verify = true,
        // IOR -z -z: independent uniform draws over the file, no check.
        IorAccess::RandomRead => d.random = RandomKind::Uniform,
    }
    d
}

/// The IO500 phase family whose IOR files a layout is (its directory and -G seed).
fn ior_family(layout: IorLayout) -> &'static str {
    match layout {
        IorLayout::FilePerProcess => "ior-easy",
        IorLayout::SharedStrided => "ior-hard",
    }
}

/// IOR's `-o` of a phase, relative to the directory IO500 runs in: its files are named
/// as IOR names them (`ior-easy/ior_file_easy.00000000` per rank, `ior-hard/file`).
pub fn ior_file_names(layout: IorLayout) -> FileNames {
    FileNames::Ior(match layout {
        IorLayout::FilePerProcess => "ior-easy/ior_file_easy".into(),
        IorLayout::SharedStrided => "ior-hard/file".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::units::TimeSpan;

    #[test]
    fn parameters_are_io500s_and_follow_the_spec() {
        let spec = Io500Spec::default();
        let plans = plan_phases(&spec);
        let get = |name: &str| plans.iter().find(|p| p.def.name == name).unwrap();

        let easy = get("ior-easy-write").data.clone().unwrap();
        assert_eq!(easy.block_size, ByteCount::mib(2));
        // IOR's POSIX calls and its timestamp data with IO500's -G of the family; the
        // write is not checked (no -W), both reads of what it wrote are (-R).
        assert_eq!(
            (easy.backend, easy.pattern, easy.verify),
            (BackendKind::Sync, DataPattern::IorTimestamp, false)
        );
        assert_eq!(easy.seed, u64::from(phase_seed("ior-easy", "") as u32));
        assert!(get("ior-easy-read").data.clone().unwrap().verify);
        assert!(get("ior-hard-read").data.clone().unwrap().verify);
        assert_eq!(
            ior_file_names(IorLayout::FilePerProcess),
            FileNames::Ior("ior-easy/ior_file_easy".into())
        );
        assert_eq!(
            ior_file_names(IorLayout::SharedStrided),
            FileNames::Ior("ior-hard/file".into())
        );
        assert_eq!(easy.layout, Layout::FilePerThread);
        assert_eq!(easy.stonewall, Some(TimeSpan::from_secs(300)));
        assert!(easy.wear_out && easy.fsync_at_end);
        // IO500 drops no cache unless asked, and then the whole of it (not per file).
        assert_eq!((easy.cache, easy.drop_caches), (CacheMode::Keep, false));
        assert_eq!(get("ior-easy-read").params["cache"], "kept");
        assert!(easy.validate().is_ok());

        let hard = get("ior-hard-write").data.clone().unwrap();
        assert_eq!(hard.block_size, ByteCount(47008));
        assert_eq!(
            (hard.layout, hard.placement),
            (Layout::Shared, Placement::Strided)
        );
        assert_eq!(hard.size, Some(ByteCount(10_000_000 * 47008)));
        assert!(hard.validate().is_ok());

        let read = get("ior-hard-read").data.clone().unwrap();
        assert_eq!(read.rw, RwKind::Read);
        assert_eq!(read.stonewall, None);
        assert!(read.validate().is_ok());

        let rnd = get("ior-rnd4K-easy-read").data.clone().unwrap();
        assert_eq!(
            (rnd.rw, rnd.block_size),
            (RwKind::Randread, ByteCount(4096))
        );
        // -z -z: independent draws (IOR's rand64() % blocks), not checked.
        assert_eq!((rnd.random, rnd.verify), (RandomKind::Uniform, false));
        assert!(rnd.validate().is_ok());

        let md = get("mdtest-hard-write");
        assert_eq!(md.params["file-size"], "3901");
        assert_eq!(md.params["tree"], "shared-dir");
        assert_eq!(md.params["files-per-rank"], "1000000");
        assert_eq!(get("mdtest-easy-write").params["file-size"], "0");
        assert!(get("find").params["find"].contains("-size 3901c -name \"*01*\""));

        let custom = Io500Spec {
            stonewall: TimeSpan::from_secs(5),
            ior_easy_transfer: ByteCount::mib(1),
            files_per_rank: 100,
            ..spec
        };
        let plans = plan_phases(&custom);
        let easy = plans[0].data.clone().unwrap();
        assert_eq!(easy.block_size, ByteCount::mib(1));
        assert_eq!(easy.stonewall, Some(TimeSpan::from_secs(5)));
        assert_eq!(plans[1].params["files-per-rank"], "100");
        assert_eq!(
            plans[0].describe(),
            "IOR write, file per process, 1MiB transfers, stonewall 5s + wear-out"
        );
        assert_eq!(
            plans[9].describe(),
            "mdtest stat, shared dir, 3901-byte files, on what mdtest-hard-write wrote"
        );
    }
}
