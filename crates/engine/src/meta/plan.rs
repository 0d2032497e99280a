//! Who works on what in a metadata workload. [`MetaPlan`] is this rank's view: the tree
//! root, the resolved directories per thread, which worker's files each worker touches in
//! a phase (cache-avoidance shift), and where item i of a worker lives. [`TreeShape`] lays
//! out intermediate and leaf directories; [`NameBuf`] spells file names into a reused
//! buffer so the hot loop does not allocate.
//!
//! Names are mdtest's: below the root, `test-dir.0-0/`, then a private tree per worker
//! `mdtest_tree.<w>.0/` (mdtest -u; w = global worker) or one shared `mdtest_tree.0/`,
//! and file j of worker w `file.mdtest.<w>.<j>`. With one leaf and no depth (mdtest -n
//! with -u or alone) files lie directly in the tree; otherwise iolab's own levels follow:
//! intermediate directories `b<digit>`, leaf directories `d<k>` (mdtest's -b/-z trees
//! are not reproduced). With a shift N, as mdtest -N, worker w's files lie in the tree of
//! the worker N ranks further on, and stat, read and remove work on the files of the
//! rank N, 2N and 3N further on.

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};

use iolab_backend::meta::EntryName;
use iolab_core::spec::{MetaItems, MetaOp, MetaSpec};

/// The tree below one thread's (or the shared) top directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeShape {
    pub leaves: u32,
    pub depth: u32,
    pub branching: u32,
}

impl TreeShape {
    /// Deepest intermediate directories in use: leaves are spread round robin over them.
    pub fn buckets(&self) -> u64 {
        if self.depth == 0 {
            return 1;
        }
        let mut full: u64 = 1;
        for _ in 0..self.depth {
            full = full.saturating_mul(self.branching as u64);
        }
        full.min(self.leaves as u64).max(1)
    }

    fn digits(&self, mut value: u64, count: u32) -> Vec<u64> {
        let b = self.branching.max(1) as u64;
        let mut out = vec![0; count as usize];
        for slot in out.iter_mut().rev() {
            *slot = value % b;
            value /= b;
        }
        out
    }

    /// Intermediate directories of level `level` (1 = just below the top) in use.
    fn prefixes_at(&self, level: u32) -> u64 {
        let below = self.depth - level;
        let mut span: u64 = 1;
        for _ in 0..below {
            span = span.saturating_mul(self.branching as u64);
        }
        (self.buckets() - 1) / span + 1
    }

    fn prefix_path(&self, level: u32, prefix: u64) -> PathBuf {
        self.digits(prefix, level)
            .iter()
            .map(|d| format!("b{d}"))
            .collect()
    }

    /// The path of leaf `k` relative to the top directory.
    pub fn leaf(&self, k: u32) -> PathBuf {
        let bucket = k as u64 % self.buckets();
        self.prefix_path(self.depth, bucket).join(format!("d{k}"))
    }

    /// Intermediate directories, parents first, relative to the top directory.
    pub fn intermediate(&self) -> Vec<PathBuf> {
        (1..=self.depth)
            .flat_map(|level| (0..self.prefixes_at(level)).map(move |p| (level, p)))
            .map(|(level, p)| self.prefix_path(level, p))
            .collect()
    }
}

/// Directories to make (or remove) under one parent, opened once for all of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirGroup {
    pub parent: PathBuf,
    pub names: Vec<CString>,
}

fn cname(s: String) -> CString {
    CString::new(s).expect("iolab's directory names hold no NUL")
}

/// Groups `paths` (relative to `top`, siblings adjacent) by parent, keeping their order.
fn group(top: &Path, paths: impl IntoIterator<Item = PathBuf>) -> Vec<DirGroup> {
    let mut groups: Vec<DirGroup> = Vec::new();
    for rel in paths {
        let full = top.join(&rel);
        let parent = full.parent().unwrap_or(top).to_path_buf();
        let name = cname(
            full.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
        );
        match groups.last_mut().filter(|g| g.parent == parent) {
            Some(g) => g.names.push(name),
            None => groups.push(DirGroup {
                parent,
                names: vec![name],
            }),
        }
    }
    groups
}

/// This rank's metadata workload.
#[derive(Clone, Debug)]
pub struct MetaPlan {
    pub spec: MetaSpec,
    pub rank: u32,
    pub ranks: u32,
    pub threads: u32,
    /// Workers of all ranks together.
    pub workers: u32,
    pub files_per_dir: u64,
    pub shape: TreeShape,
    pub root: PathBuf,
    /// The trees lie directly in the root, which is the work directory (mdtest's
    /// `test-dir.<iteration>-0`, the mdtest front-end's), not in `<root>/test-dir.0-0`.
    pub trees_in_root: bool,
    /// Ranks to shift stat, read and remove by (cache avoidance).
    pub shift: u32,
    /// This rank creates and removes the root and the shared directories for its host.
    pub leader: bool,
    /// False on the null backend: nothing to set up, check or clean up.
    pub touches_storage: bool,
}

impl MetaPlan {
    /// Files each worker creates.
    pub fn items_per_worker(&self) -> u64 {
        self.files_per_dir * self.shape.leaves as u64
    }

    /// The global index of thread `thread` of this rank.
    pub fn global(&self, thread: u32) -> u32 {
        self.rank * self.threads + thread
    }

    /// Whose files thread `thread` of this rank works on in phase `op`.
    pub fn owner(&self, thread: u32, op: MetaOp) -> u32 {
        self.owner_of(self.global(thread), op)
    }

    /// Whose files worker `global` (of any rank) works on in phase `op`: as mdtest -N,
    /// those of the rank shift, 2 x shift and 3 x shift further on for stat, read and
    /// remove, else its own.
    pub fn owner_of(&self, global: u32, op: MetaOp) -> u32 {
        let times = match op {
            MetaOp::Stat => 1,
            MetaOp::Read => 2,
            MetaOp::Remove => 3,
            _ => 0,
        };
        self.ranks_on(global, times * u64::from(self.shift))
    }

    /// The worker with the same thread index as `global`, `by` ranks further on.
    fn ranks_on(&self, global: u32, by: u64) -> u32 {
        if self.ranks <= 1 {
            return global;
        }
        let (rank, thread) = (global / self.threads, global % self.threads);
        let rank = ((u64::from(rank) + by) % u64::from(self.ranks)) as u32;
        rank * self.threads + thread
    }

    /// mdtest's `test-dir.0-0` below the root (the root itself when the trees lie in
    /// it): the trees' parent.
    pub fn base(&self) -> PathBuf {
        if self.trees_in_root {
            self.root.clone()
        } else {
            self.root.join(BASE)
        }
    }

    /// The parent of the trees, as a group to make or remove (the leaders').
    pub fn base_group(&self) -> DirGroup {
        DirGroup {
            parent: self.root.clone(),
            names: vec![cname(BASE.into())],
        }
    }

    fn tree_name(&self, worker: u32) -> String {
        if self.spec.shared_dir {
            "mdtest_tree.0".into()
        } else {
            format!("mdtest_tree.{worker}.0")
        }
    }

    /// The tree worker `worker` makes (shared: everyone's).
    pub fn tree_dir(&self, worker: u32) -> PathBuf {
        self.base().join(self.tree_name(worker))
    }

    /// The directory holding worker `owner`'s files: the tree of the worker one shift
    /// further on (its own without a shift), as mdtest -N places them.
    pub fn top(&self, owner: u32) -> PathBuf {
        self.tree_dir(self.ranks_on(owner, u64::from(self.shift)))
    }

    /// True when files lie directly in the tree (one leaf, no depth), as mdtest's do.
    pub fn flat(&self) -> bool {
        self.shape.leaves == 1 && self.shape.depth == 0
    }

    pub fn leaf(&self, owner: u32, k: u32) -> PathBuf {
        if self.flat() {
            self.top(owner)
        } else {
            self.top(owner).join(self.shape.leaf(k))
        }
    }

    /// Leaf directories whose files worker `owner` owns, in item order.
    pub fn leaves(&self) -> std::ops::Range<u32> {
        0..self.shape.leaves
    }

    /// Directories worker `global` makes, parents first: its whole private tree, or its
    /// round-robin share of the shared leaves (the shared tree and its intermediate
    /// directories are the leader's).
    pub fn dirs_to_make(&self, global: u32) -> Vec<DirGroup> {
        let top = self.tree_dir(global);
        if self.spec.shared_dir {
            if self.flat() {
                // The shared tree is the one directory: worker 0 makes it.
                return match global {
                    0 => vec![DirGroup {
                        parent: self.base(),
                        names: vec![cname(self.tree_name(0))],
                    }],
                    _ => Vec::new(),
                };
            }
            let mine = (global..self.shape.leaves).step_by(self.workers.max(1) as usize);
            return group(&top, self.leaves_by_parent(mine));
        }
        let mut groups = vec![DirGroup {
            parent: self.base(),
            names: vec![cname(self.tree_name(global))],
        }];
        if !self.flat() {
            groups.extend(group(&top, self.shape.intermediate()));
            groups.extend(group(&top, self.leaves_by_parent(self.leaves())));
        }
        groups
    }

    /// The same directories, children first, for removal.
    pub fn dirs_to_remove(&self, global: u32) -> Vec<DirGroup> {
        let mut groups = self.dirs_to_make(global);
        groups.reverse();
        groups
    }

    /// The shared tree and its intermediate directories, parents first (the leader's;
    /// none when the tree is flat: then it is worker 0's one directory).
    pub fn shared_skeleton(&self) -> Vec<DirGroup> {
        if self.flat() {
            return Vec::new();
        }
        let mut groups = vec![DirGroup {
            parent: self.base(),
            names: vec![cname(self.tree_name(0))],
        }];
        groups.extend(group(&self.tree_dir(0), self.shape.intermediate()));
        groups
    }

    /// Leaf paths ordered so that leaves under one parent are adjacent.
    fn leaves_by_parent(&self, leaves: impl Iterator<Item = u32>) -> Vec<PathBuf> {
        let buckets = self.shape.buckets();
        let mut ks: Vec<u32> = leaves.collect();
        ks.sort_by_key(|k| (*k as u64 % buckets, *k));
        ks.into_iter().map(|k| self.shape.leaf(k)).collect()
    }
}

/// mdtest's directory between the root and the trees (its `-d` directory's
/// `test-dir.<iteration>-<0>`; iolab runs one iteration).
pub const BASE: &str = "test-dir.0-0";

/// What every file name starts with: mdtest's, so that paths, name lengths (which change
/// the cost of every operation on file systems that scan directory blocks, ext4) and
/// find's name matches are the same as mdtest's.
pub const FILE_PREFIX: &[u8] = b"file.mdtest.";
/// What every directory item's name starts with (mdtest -D).
pub const DIR_PREFIX: &[u8] = b"dir.mdtest.";

/// The name prefix of `items`.
pub fn item_prefix(items: MetaItems) -> &'static [u8] {
    match items {
        MetaItems::Files => FILE_PREFIX,
        MetaItems::Dirs => DIR_PREFIX,
    }
}

/// A file name: the prefix and owner once, then the index per file (counted on from the
/// last one, see [`EntryName`]).
pub struct NameBuf {
    name: EntryName,
}

impl NameBuf {
    pub fn new(owner: u32, items: MetaItems) -> NameBuf {
        let mut prefix = item_prefix(items).to_vec();
        prefix.extend_from_slice(format!("{owner}.").as_bytes());
        NameBuf {
            name: EntryName::new(&prefix).expect("a short prefix of letters, digits and dots"),
        }
    }

    /// The name of file `index` of this owner in its leaf directory.
    #[inline]
    pub fn file(&mut self, index: u64) -> &CStr {
        self.name.of(index)
    }
}

/// The owner of an item iolab named `file.mdtest.<owner>.<index>` (or
/// `dir.mdtest.<owner>.<index>`), or None for any other name.
pub fn file_owner(name: &[u8]) -> Option<u32> {
    let rest = name
        .strip_prefix(FILE_PREFIX)
        .or_else(|| name.strip_prefix(DIR_PREFIX))?;
    let dot = rest.iter().position(|b| *b == b'.')?;
    let (owner, index) = (&rest[..dot], &rest[dot + 1..]);
    let digits = |s: &[u8]| !s.is_empty() && s.len() <= 20 && s.iter().all(u8::is_ascii_digit);
    if !digits(owner) || !digits(index) {
        return None;
    }
    std::str::from_utf8(owner).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(leaves: u32, depth: u32, branching: u32) -> TreeShape {
        TreeShape {
            leaves,
            depth,
            branching,
        }
    }

    #[test]
    fn flat_trees_hold_leaves_directly() {
        let s = shape(3, 0, 10);
        assert_eq!(s.leaf(2), PathBuf::from("d2"));
        assert!(s.intermediate().is_empty());
    }

    #[test]
    fn deep_trees_spread_leaves_over_the_deepest_level() {
        let s = shape(5, 2, 2);
        assert_eq!(s.buckets(), 4);
        assert_eq!(s.leaf(0), PathBuf::from("b0/b0/d0"));
        assert_eq!(s.leaf(3), PathBuf::from("b1/b1/d3"));
        assert_eq!(s.leaf(4), PathBuf::from("b0/b0/d4"));
        let dirs: Vec<String> = s
            .intermediate()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(dirs, ["b0", "b1", "b0/b0", "b0/b1", "b1/b0", "b1/b1"]);
        // Fewer leaves than buckets: only the branches in use exist.
        let thin = shape(2, 2, 10);
        assert_eq!(thin.buckets(), 2);
        let dirs: Vec<String> = thin
            .intermediate()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(dirs, ["b0", "b0/b0", "b0/b1"]);
        assert_eq!(thin.leaf(1), PathBuf::from("b0/b1/d1"));
    }

    #[test]
    fn stat_read_and_remove_are_shifted_by_whole_ranks() {
        let plan = MetaPlan {
            spec: MetaSpec::default(),
            rank: 1,
            ranks: 4,
            threads: 2,
            workers: 8,
            files_per_dir: 1,
            shape: shape(1, 0, 1),
            root: PathBuf::from("/r"),
            trees_in_root: false,
            shift: 2,
            leader: false,
            touches_storage: false,
        };
        assert_eq!(plan.global(1), 3);
        assert_eq!(plan.owner(1, MetaOp::Stat), 7);
        assert_eq!(plan.owner(0, MetaOp::Create), 2);
        assert_eq!(plan.owner_of(7, MetaOp::Remove), 3);
        // mdtest -N: read goes two shifts on, remove three.
        assert_eq!(plan.owner_of(5, MetaOp::Read), 5);
        assert_eq!(plan.owner_of(3, MetaOp::Remove), 7);
        assert_eq!(plan.owner_of(5, MetaOp::Mkdir), 5);
        // Worker 3 (rank 1) keeps its files in the tree of rank 3's thread 1: worker 7.
        assert_eq!(
            plan.top(3),
            PathBuf::from("/r/test-dir.0-0/mdtest_tree.7.0")
        );
        assert_eq!(plan.leaf(3, 0), plan.top(3));
        assert_eq!(
            plan.dirs_to_make(3),
            vec![DirGroup {
                parent: PathBuf::from("/r/test-dir.0-0"),
                names: vec![CString::new("mdtest_tree.3.0").unwrap()],
            }]
        );
        // Stat of worker 3 looks where worker 7's creates put its files: worker 3's tree.
        let statted = plan.owner_of(3, MetaOp::Stat);
        assert_eq!(
            plan.top(statted),
            PathBuf::from("/r/test-dir.0-0/mdtest_tree.3.0")
        );
        let deep = MetaPlan {
            shape: shape(2, 1, 2),
            shift: 0,
            ..plan
        };
        assert_eq!(
            deep.leaf(3, 1),
            PathBuf::from("/r/test-dir.0-0/mdtest_tree.3.0/b1/d1")
        );
        // The mdtest front-end's root is mdtest's test-dir.0-0 itself: the same paths as
        // mdtest -d /d, one level less than below a root of its own.
        let in_root = MetaPlan {
            root: PathBuf::from("/d/test-dir.0-0"),
            trees_in_root: true,
            ..deep.clone()
        };
        assert_eq!(
            in_root.leaf(3, 1),
            PathBuf::from("/d/test-dir.0-0/mdtest_tree.3.0/b1/d1")
        );
        assert_eq!(in_root.dirs_to_make(3)[0].parent, in_root.root);
        let shared = MetaPlan {
            spec: MetaSpec {
                shared_dir: true,
                ..MetaSpec::default()
            },
            shape: shape(1, 0, 1),
            ..in_root
        };
        assert_eq!(
            shared.leaf(3, 0),
            PathBuf::from("/d/test-dir.0-0/mdtest_tree.0")
        );
    }

    #[test]
    fn names_are_spelled_without_allocating_and_parse_back() {
        let mut n = NameBuf::new(12, MetaItems::Files);
        assert_eq!(n.file(0), c"file.mdtest.12.0");
        assert_eq!(n.file(3999), c"file.mdtest.12.3999");
        assert_eq!(n.file(7), c"file.mdtest.12.7");
        let mut big = NameBuf::new(u32::MAX, MetaItems::Files);
        assert_eq!(
            big.file(u64::MAX),
            c"file.mdtest.4294967295.18446744073709551615"
        );
        assert_eq!(file_owner(b"file.mdtest.12.3999"), Some(12));
        assert_eq!(file_owner(b"dir.mdtest.7.0"), Some(7));
        assert_eq!(
            NameBuf::new(3, MetaItems::Dirs).file(41).to_bytes(),
            b"dir.mdtest.3.41"
        );
        assert_eq!(file_owner(b"file.mdtest.12."), None);
        assert_eq!(file_owner(b"notes.txt"), None);
        assert_eq!(file_owner(b"file.mdtest.1x.2"), None);
        assert_eq!(file_owner(b"file.iolab.0.1"), None);
    }
}
