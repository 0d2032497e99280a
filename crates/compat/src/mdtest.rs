//! mdtest's command line read into [`MdtestOptions`], as mdtest 4 (in IOR's tree) reads
//! it, including every option of the command lines IO500 writes into its result.txt.
//! An option iolab does not run is an error naming it.

use crate::args::{ArgError, Args};

/// What an mdtest command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MdtestOptions {
    /// -a: only POSIX runs on iolab.
    pub api: String,
    /// -n: items per process; -I: items per directory.
    pub items: u64,
    pub items_per_dir: u64,
    /// -z: tree depth; -b: branching factor.
    pub depth: u32,
    pub branch: u32,
    /// -u: a tree per task; -L: files only in the leaf directories.
    pub unique_dir: bool,
    pub leaf_only: bool,
    /// -F: files only; -D: directories only.
    pub files_only: bool,
    pub dirs_only: bool,
    /// -C, -T, -E, -r: create, stat, read, remove only (none: all four).
    pub create: bool,
    pub stat: bool,
    pub read: bool,
    pub remove: bool,
    /// -w, -e: bytes written at create, read at read.
    pub write_bytes: u64,
    pub read_bytes: u64,
    /// -X: check the bytes read; -Y: sync after each create phase; -y: sync each file.
    pub verify_read: bool,
    pub sync_after_phase: bool,
    pub sync_file: bool,
    /// -N: stride between the task that creates and the task that stats/reads/removes.
    pub stride: u32,
    /// -d: the test directory.
    pub test_dir: String,
    /// -i: iterations.
    pub iterations: u32,
    /// -W: stonewall seconds; -x: the stonewall status file.
    pub stonewall: u64,
    pub stonewall_status_file: Option<String>,
    /// -t: time the unique working directory's creation.
    pub time_unique_dir: bool,
    /// -P: print rate and time; -G: a seed (IO500's random name seed).
    pub print_both: bool,
    pub seed: Option<i64>,
    /// -v, counted.
    pub verbose: u32,
    /// --saveRankPerformanceDetails=PATH.
    pub rank_details: Option<String>,
    /// -k: IO500's "keep the directories" (leave the tree for a later call).
    pub keep_dirs: bool,
    /// --dataPacketType=timestamp|offset|incompressible|random: the -w data's pattern.
    pub data_packet_type: Option<String>,
}

impl Default for MdtestOptions {
    fn default() -> Self {
        MdtestOptions {
            api: "POSIX".into(),
            items: 0,
            items_per_dir: 0,
            depth: 0,
            branch: 1,
            unique_dir: false,
            leaf_only: false,
            files_only: false,
            dirs_only: false,
            create: false,
            stat: false,
            read: false,
            remove: false,
            write_bytes: 0,
            read_bytes: 0,
            verify_read: false,
            sync_after_phase: false,
            sync_file: false,
            stride: 0,
            test_dir: "./out".into(),
            iterations: 1,
            stonewall: 0,
            stonewall_status_file: None,
            time_unique_dir: false,
            print_both: false,
            seed: None,
            verbose: 0,
            rank_details: None,
            keep_dirs: false,
            data_packet_type: None,
        }
    }
}

/// Reads mdtest's arguments (without the program name).
pub fn parse_mdtest_args(argv: &[String]) -> Result<MdtestOptions, ArgError> {
    let mut o = MdtestOptions::default();
    let mut args = Args::new("mdtest", argv);
    while let Some(flag) = args.next_flag()? {
        match flag.as_str() {
            "-a" => {
                o.api = args.value(&flag)?;
                if !o.api.eq_ignore_ascii_case("POSIX") {
                    return Err(args.error(
                        &flag,
                        format!("'{}': only the POSIX API runs on iolab", o.api),
                    ));
                }
            }
            "-n" => o.items = args.number(&flag)?,
            "-I" => o.items_per_dir = args.number(&flag)?,
            "-z" => o.depth = args.number(&flag)?,
            "-b" => o.branch = args.number(&flag)?,
            "-u" => o.unique_dir = true,
            "-L" => o.leaf_only = true,
            "-F" => o.files_only = true,
            "-D" => o.dirs_only = true,
            "-C" => o.create = true,
            "-T" => o.stat = true,
            "-E" => o.read = true,
            "-r" => o.remove = true,
            "-w" => o.write_bytes = args.size(&flag)?,
            "-e" => o.read_bytes = args.size(&flag)?,
            "-X" => o.verify_read = true,
            "-Y" => o.sync_after_phase = true,
            "-y" => o.sync_file = true,
            "-N" => o.stride = args.number(&flag)?,
            "-d" => o.test_dir = args.value(&flag)?,
            "-i" => o.iterations = args.number(&flag)?,
            "-W" => o.stonewall = args.seconds(&flag)?,
            "-x" => o.stonewall_status_file = Some(args.value(&flag)?),
            "-t" => o.time_unique_dir = true,
            "-P" => o.print_both = true,
            "-G" => o.seed = Some(args.signed(&flag)?),
            "-v" => o.verbose += 1 + args.repeats('v'),
            "-k" => o.keep_dirs = true,
            "--saveRankPerformanceDetails" => o.rank_details = Some(args.value(&flag)?),
            "--dataPacketType" => o.data_packet_type = Some(args.value(&flag)?),
            other => {
                return Err(args.error(
                    other,
                    "not an mdtest option iolab runs (nothing was run)".into(),
                ));
            }
        }
    }
    if !(o.create || o.stat || o.read || o.remove) {
        (o.create, o.stat, o.read, o.remove) = (true, true, true, true);
    }
    if o.items == 0 && o.items_per_dir == 0 {
        return Err(args.error(
            "-n",
            "give the items per process (-n) or per directory (-I)".into(),
        ));
    }
    if o.branch == 0 {
        return Err(args.error("-b", "must be at least 1".into()));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<MdtestOptions, ArgError> {
        let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        parse_mdtest_args(&argv)
    }

    #[test]
    fn io500s_mdtest_lines_read() {
        let o = parse("-n 1000000 -u -L -F -P -G 27 -N 1 -d /d/mdtest-easy -x /d/mdtest-easy-stonewall -C -Y -W 300 -a POSIX").unwrap();
        assert_eq!(
            (o.items, o.stride, o.stonewall, o.seed),
            (1_000_000, 1, 300, Some(27))
        );
        assert!(
            o.unique_dir
                && o.leaf_only
                && o.files_only
                && o.print_both
                && o.create
                && o.sync_after_phase
        );
        assert!(!o.stat && !o.read && !o.remove);
        // mdtest-hard's seed as IO500 writes it: `-G=` and negative.
        let o = parse("-n 1000000 -t -w 3901 -e 3901 -P -G=-1571483888 -N 1 -F -d /d/mdtest-hard -x /d/sw -E -X -a POSIX").unwrap();
        assert_eq!((o.write_bytes, o.read_bytes), (3901, 3901));
        assert_eq!(o.seed, Some(-1_571_483_888));
        assert!(o.read && o.verify_read && o.time_unique_dir && !o.unique_dir);
    }

    #[test]
    fn s1s_form_and_defaults() {
        let o = parse("-n 3000 -i 3 -u -F -z 1 -b 10 -d /mnt/nfs/md").unwrap();
        assert!(
            o.create && o.stat && o.read && o.remove,
            "no phase flag: all four"
        );
        assert_eq!((o.depth, o.branch, o.iterations), (1, 10, 3));
        let o = parse("-vvv -n 10").unwrap();
        assert_eq!(o.verbose, 3);
    }

    #[test]
    fn refused_options_name_themselves() {
        assert_eq!(
            parse("-n 10 -R").unwrap_err().to_string(),
            "mdtest -R: not an mdtest option iolab runs (nothing was run)"
        );
        assert_eq!(
            parse("-C").unwrap_err().to_string(),
            "mdtest -n: give the items per process (-n) or per directory (-I)"
        );
        assert_eq!(
            parse("-n ten").unwrap_err().to_string(),
            "mdtest -n: 'ten' is not a whole number in range"
        );
        // Both, as mdtest takes them: the directory and the file tests.
        let both = parse("-n 10 -F -D").unwrap();
        assert!(both.files_only && both.dirs_only);
        assert_eq!(
            parse("-n 10 -a DFS").unwrap_err().to_string(),
            "mdtest -a: 'DFS': only the POSIX API runs on iolab"
        );
    }
}
