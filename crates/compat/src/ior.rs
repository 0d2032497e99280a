//! IOR's command line read into [`IorOptions`]: the POSIX backend's options as IOR 4
//! reads them (short options, `--posix.odirect`, `--dataPacketType=`, and `-O key=value`
//! option strings such as `stoneWallingWearOut=1`), including every option of the command
//! lines IO500 writes into its result.txt. Sizes take k, m, g, t (powers of 1024), as
//! IOR's `string_to_bytes` reads them. An option iolab does not run is an error naming it.

use crate::args::{ArgError, Args};

/// What an IOR command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IorOptions {
    /// -a: only POSIX runs on iolab.
    pub api: String,
    /// -b: bytes per rank per segment.
    pub block_size: u64,
    /// -t: bytes per I/O.
    pub transfer_size: u64,
    /// -s: segments.
    pub segments: u64,
    /// -F: one file per process (N-N); otherwise one shared file (N-1).
    pub file_per_proc: bool,
    /// -w, -r: write and read phases.
    pub write: bool,
    pub read: bool,
    /// -W, -R: check what was written / read (IOR's data verification).
    pub check_write: bool,
    pub check_read: bool,
    /// -e: fsync at close of the write phase.
    pub fsync: bool,
    /// -Y: fsync after every write.
    pub fsync_per_write: bool,
    /// -C: read the data of another node's task; -Q: by this many tasks.
    pub reorder_tasks: bool,
    pub task_per_node_offset: u32,
    /// -Z: random task reordering (given twice: a shuffle of the tasks); -X: its seed.
    pub reorder_random: u32,
    pub reorder_random_seed: Option<i64>,
    /// -z: random offsets within the file (count of -z kept: IO500 passes it twice).
    pub random_offset: u32,
    /// -g: barriers between open, I/O and close.
    pub intra_test_barriers: bool,
    /// -k: keep the file.
    pub keep_file: bool,
    /// -o: the test file (a path; IOR appends `.00000001` per process with -F).
    pub test_file: String,
    /// -D: stonewall deadline, seconds (0: none).
    pub deadline: u64,
    /// -O stoneWallingWearOut=1 / stoneWallingStatusFile=PATH.
    pub wear_out: bool,
    pub stonewall_status_file: Option<String>,
    /// -i: repetitions.
    pub repetitions: u32,
    /// -d: delay between repetitions, seconds.
    pub inter_test_delay: u64,
    /// -v, counted.
    pub verbose: u32,
    /// --posix.odirect.
    pub direct: bool,
    /// -G: the time stamp signature of the data written.
    pub timestamp_signature: Option<i64>,
    /// --dataPacketType=timestamp|offset|incompressible|random.
    pub data_packet_type: Option<String>,
    /// -u: a directory per task.
    pub unique_dir: bool,
    /// -O saveRankPerformanceDetailsCSV=PATH.
    pub rank_details_csv: Option<String>,
    /// -m: multiple files (one per repetition).
    pub multi_file: bool,
    /// -N: number of tasks to use (0: all).
    pub num_tasks: u32,
}

impl Default for IorOptions {
    fn default() -> Self {
        IorOptions {
            api: "POSIX".into(),
            block_size: 1 << 20,
            transfer_size: 256 << 10,
            segments: 1,
            file_per_proc: false,
            write: false,
            read: false,
            check_write: false,
            check_read: false,
            fsync: false,
            fsync_per_write: false,
            reorder_tasks: false,
            task_per_node_offset: 1,
            reorder_random: 0,
            reorder_random_seed: None,
            random_offset: 0,
            intra_test_barriers: false,
            keep_file: false,
            test_file: "testFile".into(),
            deadline: 0,
            wear_out: false,
            stonewall_status_file: None,
            repetitions: 1,
            inter_test_delay: 0,
            verbose: 0,
            direct: false,
            timestamp_signature: None,
            data_packet_type: None,
            unique_dir: false,
            rank_details_csv: None,
            multi_file: false,
            num_tasks: 0,
        }
    }
}

/// Reads IOR's arguments (without the program name). With neither -w nor -r, IOR does
/// both, and so does this.
pub fn parse_ior_args(argv: &[String]) -> Result<IorOptions, ArgError> {
    let mut o = IorOptions::default();
    let mut args = Args::new("ior", argv);
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
            "-b" => o.block_size = args.size(&flag)?,
            "-t" => o.transfer_size = args.size(&flag)?,
            "-s" => o.segments = args.number(&flag)?,
            "-F" => o.file_per_proc = true,
            "-w" => o.write = true,
            "-r" => o.read = true,
            "-W" => o.check_write = true,
            "-R" => o.check_read = true,
            "-e" => o.fsync = true,
            "-Y" => o.fsync_per_write = true,
            "-C" => o.reorder_tasks = true,
            "-Q" => o.task_per_node_offset = args.number(&flag)?,
            "-Z" => o.reorder_random += 1,
            "-X" => o.reorder_random_seed = Some(args.signed(&flag)?),
            "-z" => o.random_offset += 1,
            "-g" => o.intra_test_barriers = true,
            "-k" => o.keep_file = true,
            "-o" => o.test_file = args.value(&flag)?,
            "-D" => o.deadline = args.seconds(&flag)?,
            "-i" => o.repetitions = args.number(&flag)?,
            "-d" => o.inter_test_delay = args.seconds(&flag)?,
            "-v" => o.verbose += 1 + args.repeats('v'),
            "-G" => o.timestamp_signature = Some(args.signed(&flag)?),
            "-u" => o.unique_dir = true,
            "-m" => o.multi_file = true,
            "-N" => o.num_tasks = args.number(&flag)?,
            "--posix.odirect" => o.direct = true,
            "--dataPacketType" => o.data_packet_type = Some(args.value(&flag)?),
            "-O" => {
                let text = args.value(&flag)?;
                option_string(&mut o, &text).map_err(|other| {
                    args.error(
                        &flag,
                        format!("'{other}': not an IOR option string iolab runs"),
                    )
                })?;
            }
            other => {
                return Err(args.error(
                    other,
                    "not an IOR option iolab runs (nothing was run)".into(),
                ));
            }
        }
    }
    if !o.write && !o.read {
        o.write = true;
        o.read = true;
    }
    if o.transfer_size == 0 || o.block_size % o.transfer_size != 0 {
        return Err(args.error(
            "-b",
            format!(
                "{} is not a multiple of the transfer size -t {}",
                o.block_size, o.transfer_size
            ),
        ));
    }
    Ok(o)
}

/// -O's comma-separated settings (`key=value`, a key alone is 1); a key iolab does not
/// run is returned.
fn option_string(o: &mut IorOptions, text: &str) -> Result<(), String> {
    for part in text.split(',') {
        let (k, v) = part.split_once('=').unwrap_or((part, "1"));
        match k.trim() {
            "stoneWallingWearOut" => o.wear_out = v.trim() != "0",
            "stoneWallingStatusFile" => o.stonewall_status_file = Some(v.trim().to_string()),
            "saveRankPerformanceDetailsCSV" => o.rank_details_csv = Some(v.trim().to_string()),
            other => return Err(other.to_string()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<IorOptions, ArgError> {
        let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        parse_ior_args(&argv)
    }

    #[test]
    fn io500s_ior_easy_write_line_reads() {
        let o = parse("-C -Q 1 -g -G 271 -k -e -o /mnt/x/datadir/ior-easy/ior_file_easy -O stoneWallingStatusFile=/mnt/x/datadir/ior-easy/stonewall -O stoneWallingWearOut=1 -t 2m -b 9920000m -F -w -D 300 -a POSIX --dataPacketType=timestamp").unwrap();
        assert!(
            o.reorder_tasks && o.intra_test_barriers && o.keep_file && o.fsync && o.file_per_proc
        );
        assert!(o.write && !o.read && o.wear_out);
        assert_eq!((o.transfer_size, o.block_size), (2 << 20, 9_920_000 << 20));
        assert_eq!((o.task_per_node_offset, o.deadline), (1, 300));
        assert_eq!(o.timestamp_signature, Some(271));
        assert_eq!(
            o.stonewall_status_file.as_deref(),
            Some("/mnt/x/datadir/ior-easy/stonewall")
        );
        assert_eq!(o.data_packet_type.as_deref(), Some("timestamp"));
    }

    #[test]
    fn io500s_ior_hard_and_rnd4k_lines_read() {
        // As IO500 writes them: `-G=` for ior-hard, `-t=` `-b=` `-s=` for rnd4K.
        let o = parse("-C -Q 1 -g -G=1837305614 -k -e -t 47008 -b 47008 -s 10000000 -r -R -a POSIX -o /d/ior-hard/file").unwrap();
        assert_eq!(o.timestamp_signature, Some(1_837_305_614));
        assert_eq!(
            (o.transfer_size, o.block_size, o.segments),
            (47008, 47008, 10_000_000)
        );
        assert!(o.read && o.check_read && !o.write && !o.file_per_proc);
        let o = parse("-Q 2 -C -g -z -z -t=4096 -b=4096 -s=1000 -r -a POSIX -o f").unwrap();
        assert_eq!((o.random_offset, o.task_per_node_offset), (2, 2));
        assert_eq!((o.transfer_size, o.segments), (4096, 1000));
    }

    #[test]
    fn refused_options_name_themselves() {
        assert_eq!(
            parse("-a MPIIO").unwrap_err().to_string(),
            "ior -a: 'MPIIO': only the POSIX API runs on iolab"
        );
        assert_eq!(
            parse("-w -J 4").unwrap_err().to_string(),
            "ior -J: not an IOR option iolab runs (nothing was run)"
        );
        assert_eq!(
            parse("-t 3m -b 4m").unwrap_err().to_string(),
            "ior -b: 4194304 is not a multiple of the transfer size -t 3145728"
        );
        assert_eq!(
            parse("-t").unwrap_err().to_string(),
            "ior -t: needs a value"
        );
        assert_eq!(
            parse("-t 2q").unwrap_err().to_string(),
            "ior -t: '2q' is not a size: use a number with k, m, g or t"
        );
        assert_eq!(
            parse("-O foo=1").unwrap_err().to_string(),
            "ior -O: 'foo': not an IOR option string iolab runs"
        );
        // Neither -w nor -r: both, as IOR does.
        let o = parse("-t 1m -b 4m").unwrap();
        assert!(o.write && o.read);
    }
}
