//! The ior, mdtest and pfind command line IO500 runs for each phase (the `exe = ...` line
//! of its result.txt and of `io500 --dry-run`), built the way IO500's phase files build
//! them (`src/phase_*.c` of the io500 release BENCH-NOTES names): the same flags in the
//! same order, the same paths, and the same `-G` seed (a hash of the phase's name and the
//! run's timestamp). `iolab io500 --dry-run` prints them so a user can check what iolab's
//! phases are equivalent to, and run the peer by hand on the same settings
//! ([`dry_run_text`]).

use std::path::Path;

use iolab_core::spec::io500::Io500Spec;
use iolab_core::units::{ByteCount, GIB, KIB, MIB};

/// The settings IO500's command lines depend on.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandSettings {
    /// IO500's `datadir` after its timestamp suffix (`<datadir>/<timestamp>`).
    pub datadir: String,
    /// IO500's `resultdir` after its timestamp suffix.
    pub resdir: String,
    /// The run's timestamp, `%Y.%m.%d-%H.%M.%S`: it seeds every `-G`.
    pub timestamp: String,
    pub stonewall_secs: u64,
    pub ior_easy_transfer: ByteCount,
    pub ior_easy_block: ByteCount,
    pub ior_hard_segments: u64,
    pub files_per_rank: u64,
}

impl CommandSettings {
    /// The settings of a run of `spec` in `dir` at `timestamp`, as IO500 derives them
    /// from its config.ini (`datadir = dir`, results in `./results`).
    pub fn of(spec: &Io500Spec, dir: &Path, timestamp: &str) -> CommandSettings {
        CommandSettings {
            datadir: format!("{}/{timestamp}", dir.display()),
            resdir: format!("./results/{timestamp}"),
            timestamp: timestamp.to_string(),
            stonewall_secs: spec.stonewall.nanos().0.div_ceil(1_000_000_000),
            ior_easy_transfer: spec.ior_easy_transfer,
            ior_easy_block: spec.ior_easy_block,
            ior_hard_segments: spec.ior_hard_segments,
            files_per_rank: spec.files_per_rank,
        }
    }
}

/// What `iolab io500 --dry-run` prints: the config.ini that gives `spec` in `dir`, as
/// comments, then IO500's command line of every phase that runs one, as `io500
/// config.ini --dry-run --timestamp T` prints them.
pub fn dry_run_text(spec: &Io500Spec, dir: &Path, timestamp: &str) -> String {
    let settings = CommandSettings::of(spec, dir, timestamp);
    let mut out = format!(
        "# What IO500 runs for these settings: `io500 config.ini --dry-run --timestamp {timestamp}`\n"
    );
    out.push_str("# with this config.ini (IO500's defaults elsewhere):\n");
    out.push_str("#   [global]\n");
    out.push_str(&format!("#   datadir = {}\n", dir.display()));
    if spec.drop_caches {
        out.push_str("#   drop-caches = TRUE\n");
    }
    for line in [
        "[debug]".to_string(),
        format!("stonewall-time = {}", settings.stonewall_secs),
        "[ior-easy]".to_string(),
        format!("transferSize = {}", ior_size(spec.ior_easy_transfer)),
        format!("blockSize = {}", ior_size(spec.ior_easy_block)),
        "[ior-hard]".to_string(),
        format!("segmentCount = {}", spec.ior_hard_segments),
        "[mdtest-easy]".to_string(),
        format!("n = {}", spec.files_per_rank),
        "[mdtest-hard]".to_string(),
        format!("n = {}", spec.files_per_rank),
    ] {
        out.push_str(&format!("#   {line}\n"));
    }
    for p in super::PHASES.iter() {
        if let Some(line) = command_line(p.name, &settings) {
            out.push_str(&format!("\n[{}]\n{:<15} = {line}\n", p.name, "exe"));
        }
    }
    out
}

/// IO500's `rotladd` hash over `text`, continuing from `hash`.
fn hash_update(mut hash: u32, text: &str) -> u32 {
    for c in text.bytes() {
        hash = hash.rotate_left(2).wrapping_add(u32::from(c));
    }
    hash
}

/// IO500's `u_phase_unique_random_number`: the `-G` seed of a phase family, printed with
/// `%d` (so possibly negative).
pub fn phase_seed(family: &str, timestamp: &str) -> i32 {
    let hash = hash_update(hash_update(0, family), timestamp);
    if hash == 0 || hash == u32::MAX {
        4711
    } else {
        hash as i32
    }
}

/// A size the way an IO500 configuration writes it for IOR (`2m`, `9920000m`).
pub fn ior_size(b: ByteCount) -> String {
    let n = b.get();
    for (unit, suffix) in [(GIB, "g"), (MIB, "m"), (KIB, "k")] {
        if n >= unit && n.is_multiple_of(unit) {
            return format!("{}{suffix}", n / unit);
        }
    }
    n.to_string()
}

/// The command line of IO500 phase `phase`, or None for a phase that runs none
/// (timestamp).
pub fn command_line(phase: &str, s: &CommandSettings) -> Option<String> {
    let d = &s.datadir;
    let r = &s.resdir;
    let sw = s.stonewall_secs.to_string();
    let csv = |flag: &str| format!("{flag}{r}/{phase}.csv");
    let ior_easy = |std_flags: bool| {
        let mut a = vec![
            "./ior".to_string(),
            "--dataPacketType=timestamp".into(),
            "-g".into(),
            "-G".into(),
            phase_seed("ior-easy", &s.timestamp).to_string(),
            "-k".into(),
            "-e".into(),
            "-o".into(),
            format!("{d}/ior-easy/ior_file_easy"),
        ];
        if std_flags {
            a.extend([
                "-C".into(),
                "-Q".into(),
                "1".into(),
                "-O".into(),
                format!("stoneWallingStatusFile={r}/ior-easy.stonewall"),
                "-t".into(),
                ior_size(s.ior_easy_transfer),
                "-b".into(),
                ior_size(s.ior_easy_block),
            ]);
        }
        a.push("-F".into());
        a
    };
    let ior_hard = || {
        vec![
            "./ior".to_string(),
            "--dataPacketType=timestamp".into(),
            "-C".into(),
            "-Q".into(),
            "1".into(),
            "-g".into(),
            format!("-G={}", phase_seed("ior-hard", &s.timestamp)),
            "-k".into(),
            "-e".into(),
            "-o".into(),
            format!("{d}/ior-hard/file"),
            "-O".into(),
            format!("stoneWallingStatusFile={r}/ior-hard.stonewall"),
            "-t".into(),
            "47008".into(),
            "-b".into(),
            "47008".into(),
            "-s".into(),
            s.ior_hard_segments.to_string(),
        ]
    };
    let mdtest_easy = || {
        vec![
            "./mdtest".to_string(),
            "--dataPacketType=timestamp".into(),
            "-n".into(),
            s.files_per_rank.to_string(),
            "-u".into(),
            "-L".into(),
            "-F".into(),
            "-P".into(),
            "-G".into(),
            phase_seed("mdtest-easy", &s.timestamp).to_string(),
            "-N".into(),
            "1".into(),
            "-d".into(),
            format!("{d}/mdtest-easy"),
            "-x".into(),
            format!("{r}/mdtest-easy.stonewall"),
        ]
    };
    let mdtest_hard = || {
        vec![
            "./mdtest".to_string(),
            "--dataPacketType=timestamp".into(),
            "-n".into(),
            s.files_per_rank.to_string(),
            "-t".into(),
            "-w".into(),
            "3901".into(),
            "-e".into(),
            "3901".into(),
            "-P".into(),
            format!("-G={}", phase_seed("mdtest-hard", &s.timestamp)),
            "-N".into(),
            "1".into(),
            "-F".into(),
            "-d".into(),
            format!("{d}/mdtest-hard"),
            "-x".into(),
            format!("{r}/mdtest-hard.stonewall"),
        ]
    };
    let posix = ["-a".to_string(), "POSIX".into()];
    let words: Vec<String> = match phase {
        "ior-easy-write" => {
            let mut a = ior_easy(true);
            a.extend(["-w".into(), "-D".into(), sw]);
            a.extend(["-O".into(), "stoneWallingWearOut=1".into()]);
            a.extend(posix);
            a.extend(["-O".into(), csv("saveRankPerformanceDetailsCSV=")]);
            a
        }
        "ior-easy-read" => {
            let mut a = ior_easy(true);
            a.extend(["-r".into(), "-R".into()]);
            a.extend(posix);
            a.extend(["-O".into(), csv("saveRankPerformanceDetailsCSV=")]);
            a
        }
        "ior-rnd4K-easy-read" => {
            let mut a = ior_easy(false);
            a.extend(["-r".into(), "-D".into(), sw, "-z".into(), "-z".into()]);
            a.extend(posix);
            a.extend(["-O".into(), csv("saveRankPerformanceDetailsCSV=")]);
            a.extend(["-t=4096".into(), "-b=4096".into(), "-s=10000000".into()]);
            a.extend(["-O".into(), "stoneWallingWearOut=1".into()]);
            a.extend(["-C".into(), "-Q".into(), "2".into()]);
            a
        }
        "ior-hard-write" => {
            let mut a = ior_hard();
            a.extend(["-w".into(), "-D".into(), sw]);
            a.extend(posix);
            a.extend(["-O".into(), csv("saveRankPerformanceDetailsCSV=")]);
            a.extend(["-O".into(), "stoneWallingWearOut=1".into()]);
            a
        }
        "ior-hard-read" => {
            let mut a = ior_hard();
            a.extend(["-r".into(), "-R".into()]);
            a.extend(posix);
            a.extend(["-O".into(), csv("saveRankPerformanceDetailsCSV=")]);
            a
        }
        "mdtest-easy-write" | "mdtest-hard-write" => {
            let mut a = if phase == "mdtest-easy-write" {
                mdtest_easy()
            } else {
                mdtest_hard()
            };
            a.extend(["-C".into(), "-Y".into(), "-W".into(), sw]);
            a.push(csv("--saveRankPerformanceDetails="));
            a.extend(posix);
            a
        }
        "mdtest-easy-stat" | "mdtest-easy-delete" | "mdtest-hard-stat" | "mdtest-hard-read"
        | "mdtest-hard-delete" => {
            let mut a = if phase.starts_with("mdtest-easy") {
                mdtest_easy()
            } else {
                mdtest_hard()
            };
            match phase.rsplit('-').next() {
                Some("stat") => a.push("-T".into()),
                Some("read") => a.extend(["-E".into(), "-X".into()]),
                _ => a.push("-r".into()),
            }
            a.push(csv("--saveRankPerformanceDetails="));
            a.extend(posix);
            a
        }
        "find" => vec![
            "./pfind".to_string(),
            d.clone(),
            "-newer".into(),
            format!("{r}/timestampfile"),
            "-size".into(),
            "3901c".into(),
            "-name".into(),
            "*01*".into(),
            "-C".into(),
            "-q".into(),
            "10000".into(),
        ],
        _ => return None,
    };
    Some(words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> CommandSettings {
        CommandSettings {
            datadir: "/scratch/io500/2026.11.25-06.19.26".into(),
            resdir: "./results/2026.11.25-06.19.26".into(),
            timestamp: "2026.11.25-06.19.26".into(),
            stonewall_secs: 300,
            ior_easy_transfer: ByteCount::mib(2),
            ior_easy_block: ByteCount::mib(9_920_000),
            ior_hard_segments: 10_000_000,
            files_per_rank: 1_000_000,
        }
    }

    #[test]
    fn the_seed_is_io500s_rotate_and_add_hash() {
        // By hand: rotl2 then add, over "ab": ((0<<2)+97)<<2 ... = 97*4 + 98 = 486.
        assert_eq!(hash_update(0, "ab"), 486);
        // Rotation carries the top bits round, and %d prints the result signed.
        assert_eq!(hash_update(0xC000_0000, ""), 0xC000_0000);
        assert_eq!(hash_update(0xC000_0000, "\0"), 3);
        assert_eq!(phase_seed("", ""), 4711);
        let seed = phase_seed("ior-easy", "2026.11.25-06.19.26");
        assert_eq!(
            seed,
            hash_update(hash_update(0, "ior-easy"), "2026.11.25-06.19.26") as i32
        );
    }

    #[test]
    fn sizes_are_written_as_io500_configurations_write_them() {
        assert_eq!(ior_size(ByteCount::mib(2)), "2m");
        assert_eq!(ior_size(ByteCount::mib(9_920_000)), "9920000m");
        assert_eq!(ior_size(ByteCount::gib(4)), "4g");
        assert_eq!(ior_size(ByteCount(47008)), "47008");
        assert_eq!(ior_size(ByteCount(3 * 1024)), "3k");
    }

    #[test]
    fn command_lines_follow_io500s_phase_files() {
        let s = settings();
        let g = |f: &str| phase_seed(f, &s.timestamp);
        let d = &s.datadir;
        let r = &s.resdir;
        assert_eq!(
            command_line("ior-easy-write", &s).unwrap(),
            format!(
                "./ior --dataPacketType=timestamp -g -G {} -k -e -o {d}/ior-easy/ior_file_easy -C -Q 1 -O stoneWallingStatusFile={r}/ior-easy.stonewall -t 2m -b 9920000m -F -w -D 300 -O stoneWallingWearOut=1 -a POSIX -O saveRankPerformanceDetailsCSV={r}/ior-easy-write.csv",
                g("ior-easy")
            )
        );
        assert_eq!(
            command_line("ior-rnd4K-easy-read", &s).unwrap(),
            format!(
                "./ior --dataPacketType=timestamp -g -G {} -k -e -o {d}/ior-easy/ior_file_easy -F -r -D 300 -z -z -a POSIX -O saveRankPerformanceDetailsCSV={r}/ior-rnd4K-easy-read.csv -t=4096 -b=4096 -s=10000000 -O stoneWallingWearOut=1 -C -Q 2",
                g("ior-easy")
            )
        );
        assert_eq!(
            command_line("ior-hard-read", &s).unwrap(),
            format!(
                "./ior --dataPacketType=timestamp -C -Q 1 -g -G={} -k -e -o {d}/ior-hard/file -O stoneWallingStatusFile={r}/ior-hard.stonewall -t 47008 -b 47008 -s 10000000 -r -R -a POSIX -O saveRankPerformanceDetailsCSV={r}/ior-hard-read.csv",
                g("ior-hard")
            )
        );
        assert_eq!(
            command_line("mdtest-easy-write", &s).unwrap(),
            format!(
                "./mdtest --dataPacketType=timestamp -n 1000000 -u -L -F -P -G {} -N 1 -d {d}/mdtest-easy -x {r}/mdtest-easy.stonewall -C -Y -W 300 --saveRankPerformanceDetails={r}/mdtest-easy-write.csv -a POSIX",
                g("mdtest-easy")
            )
        );
        assert_eq!(
            command_line("mdtest-hard-read", &s).unwrap(),
            format!(
                "./mdtest --dataPacketType=timestamp -n 1000000 -t -w 3901 -e 3901 -P -G={} -N 1 -F -d {d}/mdtest-hard -x {r}/mdtest-hard.stonewall -E -X --saveRankPerformanceDetails={r}/mdtest-hard-read.csv -a POSIX",
                g("mdtest-hard")
            )
        );
        assert!(
            command_line("mdtest-easy-delete", &s)
                .unwrap()
                .contains(" -r --save")
        );
        assert!(
            command_line("mdtest-hard-stat", &s)
                .unwrap()
                .contains(" -T --save")
        );
        assert_eq!(
            command_line("find", &s).unwrap(),
            format!("./pfind {d} -newer {r}/timestampfile -size 3901c -name *01* -C -q 10000")
        );
        assert_eq!(command_line("timestamp", &s), None);
        // Every phase IO500 runs has one.
        for p in crate::io500::PHASES
            .iter()
            .filter(|p| p.name != "timestamp")
        {
            assert!(command_line(p.name, &s).is_some(), "{}", p.name);
        }
    }
}

#[cfg(test)]
mod against_io500 {
    use super::*;

    /// The `exe = ...` lines of a real `io500 config.ini --dry-run --timestamp
    /// 2026.11.25-06.19.26` (io500 isc26, datadir /scratch, stonewall-time 3, defaults
    /// elsewhere), recorded from its result.txt: every line must come out identical.
    #[test]
    fn every_line_equals_io500s_own_dry_run() {
        let recorded = include_str!("../../tests/fixtures/io500/io500-isc26-dry-run-exe.txt");
        let s = CommandSettings {
            datadir: "/scratch/2026.11.25-06.19.26".into(),
            resdir: "./results/2026.11.25-06.19.26".into(),
            timestamp: "2026.11.25-06.19.26".into(),
            stonewall_secs: 3,
            ior_easy_transfer: ByteCount::mib(2),
            ior_easy_block: ByteCount::mib(9_920_000),
            ior_hard_segments: 10_000_000,
            files_per_rank: 1_000_000,
        };
        let ours: Vec<String> = crate::io500::PHASES
            .iter()
            .filter_map(|p| command_line(p.name, &s))
            .map(|l| format!("exe             = {l}"))
            .collect();
        let theirs: Vec<&str> = recorded.lines().collect();
        assert_eq!(ours.len(), theirs.len());
        for (o, t) in ours.iter().zip(theirs) {
            assert_eq!(o, t);
        }
    }
}
