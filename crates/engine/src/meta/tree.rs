//! The tree on storage outside the timed phases. [`tree_state`] finds what is at the root
//! (nothing, or a tree an earlier run kept, with its [`KeptTree`] record); [`make_tree`]
//! builds the directories untimed; [`remove_tree`] removes exactly what iolab names
//! (files `file.mdtest.<w>.<j>`, the directories of its plan, its record) and leaves
//! anything else in place with a warning; [`keep_tree`] records what a kept tree holds so
//! a later run can use it.

use std::ffi::CString;
use std::io;
use std::path::Path;

use iolab_backend::BackendError;
use iolab_backend::meta::{DirBuffer, MetaBackend};
use iolab_comm::Comm;
use iolab_core::spec::MetaOp;
use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::meta::plan::{DirGroup, MetaPlan, file_owner};
use crate::meta_error::MetaError;
use crate::target::agree;

/// The record a kept tree carries at its root.
pub const RECORD: &str = ".iolab-meta.json";

/// What decides where every file of a tree is and what it holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeLayout {
    pub ranks: u32,
    pub threads: u32,
    pub files_per_dir: u64,
    pub dirs_per_thread: u32,
    pub shared_dir: bool,
    pub depth: u32,
    pub branching: u32,
    pub file_size: u64,
    pub seed: u64,
    /// Ranks on from its creator whose tree holds a file (mdtest -N).
    #[serde(default)]
    pub shift: u32,
    /// What the items are (files, or directories: mdtest -D).
    #[serde(default)]
    pub items: iolab_core::spec::MetaItems,
}

impl TreeLayout {
    pub fn of(plan: &MetaPlan) -> TreeLayout {
        TreeLayout {
            ranks: plan.ranks,
            threads: plan.threads,
            files_per_dir: plan.files_per_dir,
            dirs_per_thread: plan.shape.leaves,
            shared_dir: plan.spec.shared_dir,
            depth: plan.shape.depth,
            branching: plan.shape.branching,
            file_size: plan.spec.file_size.get(),
            seed: plan.spec.seed,
            shift: plan.shift,
            items: plan.spec.items,
        }
    }

    fn describe(&self) -> String {
        format!(
            "{} rank(s) x {} thread(s), {} {} per dir, {} dirs per thread, {}, depth {}, branching {}, {}-byte files, seed {}, shift {}",
            self.ranks,
            self.threads,
            self.files_per_dir,
            match self.items {
                iolab_core::spec::MetaItems::Files => "files",
                iolab_core::spec::MetaItems::Dirs => "directory items",
            },
            self.dirs_per_thread,
            if self.shared_dir {
                "shared dir"
            } else {
                "private trees"
            },
            self.depth,
            self.branching,
            self.file_size,
            self.seed,
            self.shift
        )
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KeptTree {
    pub layout: TreeLayout,
    /// Files of each worker (global index) in the tree.
    pub created: Vec<u64>,
}

/// What a run finds at the tree root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeState {
    /// Nothing yet: this run makes the tree.
    New,
    /// A tree kept by an earlier run, with the files each worker has in it.
    Kept(Vec<u64>),
}

/// What this rank finds at the root, checked against what the run will do.
pub fn tree_state(plan: &MetaPlan) -> Result<TreeState, EngineError> {
    let spec = &plan.spec;
    let makes = spec.has(MetaOp::Create) || spec.has(MetaOp::Mkdir);
    let root = plan.root.clone();
    if !plan.touches_storage {
        return Ok(if makes {
            TreeState::New
        } else {
            TreeState::Kept(vec![plan.items_per_worker(); plan.workers as usize])
        });
    }
    // A root of its own exists once a tree is there; a work directory that is the root
    // always does, and holds a tree once it holds more than its marker and lock.
    let occupied = if plan.trees_in_root {
        holds_more_than_its_marks(&root)
    } else {
        iolab_backend::vfs::exists(&root)
    };
    if !occupied {
        return if makes {
            Ok(TreeState::New)
        } else {
            Err(MetaError::NoTree { root }.into())
        };
    }
    let Some(kept) = read_record(&root) else {
        return Err(MetaError::TreeUnknown { root }.into());
    };
    if makes {
        return Err(MetaError::TreeKept { root }.into());
    }
    let asked = TreeLayout::of(plan);
    if kept.layout != asked || kept.created.len() != plan.workers as usize {
        return Err(MetaError::LayoutMismatch {
            root,
            kept: kept.layout.describe(),
            asked: asked.describe(),
        }
        .into());
    }
    let files: u64 = kept.created.iter().sum();
    if spec.has(MetaOp::Rmdir) && !spec.has(MetaOp::Remove) && files > 0 {
        return Err(MetaError::TreeNotEmpty { root, files }.into());
    }
    Ok(TreeState::Kept(kept.created))
}

/// Whether the work directory `dir` holds anything but its marker and lock.
fn holds_more_than_its_marks(dir: &Path) -> bool {
    iolab_backend::vfs::read_dir(dir).is_ok_and(|d| {
        d.iter()
            .any(|e| e.name != crate::workdir::MARKER && e.name != crate::workdir::LOCK)
    })
}

fn read_record(root: &Path) -> Option<KeptTree> {
    let text = iolab_backend::vfs::read_to_string(&root.join(RECORD)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Records what a kept tree holds (on the leaders).
pub fn keep_tree(comm: &dyn Comm, plan: &MetaPlan, created: &[u64]) -> Result<(), EngineError> {
    let result = if plan.leader && plan.touches_storage {
        let record = KeptTree {
            layout: TreeLayout::of(plan),
            created: created.to_vec(),
        };
        let text = serde_json::to_string_pretty(&record).expect("KeptTree serializes");
        let path = plan.root.join(RECORD);
        iolab_backend::vfs::write(&path, (text + "\n").as_bytes()).map_err(|e| {
            EngineError::WorkDirIo {
                op: "cannot write",
                path,
                source: e,
            }
        })
    } else {
        Ok(())
    };
    agree(comm, result)
}

/// Runs `f` for each worker of this rank on its own thread; the first error wins.
fn per_worker<T: Send>(
    plan: &MetaPlan,
    f: impl Fn(u32) -> Result<T, BackendError> + Sync,
) -> Result<Vec<T>, EngineError> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..plan.threads)
            .map(|t| {
                let f = &f;
                s.spawn(move || f(plan.global(t)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r.map_err(EngineError::from),
                Err(_) => Err(EngineError::Setup("a tree worker panicked".into())),
            })
            .collect()
    })
}

fn errno_is(e: &BackendError, errno: i32) -> bool {
    e.errno() == Some(errno)
}

/// Makes the directories of `groups`; with `existing_ok` a directory already there is
/// fine (another host's leader on a shared file system made it).
fn make_groups(
    backend: &dyn MetaBackend,
    groups: &[DirGroup],
    existing_ok: bool,
) -> Result<(), BackendError> {
    for g in groups {
        let parent = backend.open_dir(&g.parent)?;
        for name in &g.names {
            match backend.mkdir(&parent, name) {
                Err(e) if !(existing_ok && errno_is(&e, libc::EEXIST)) => return Err(e),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Builds the tree untimed: the root and shared skeleton on the leaders, then (unless
/// `leaves_too` is false because an mkdir phase will time them) every worker's
/// directories.
pub fn make_tree(
    comm: &dyn Comm,
    plan: &MetaPlan,
    backend: &dyn MetaBackend,
    leaves_too: bool,
) -> Result<(), EngineError> {
    if !plan.touches_storage {
        return Ok(());
    }
    let skeleton = if plan.leader {
        make_root(plan, backend).map_err(EngineError::from)
    } else {
        Ok(())
    };
    agree(comm, skeleton)?;
    comm.barrier();
    if leaves_too {
        let made = per_worker(plan, |g| make_groups(backend, &plan.dirs_to_make(g), false));
        agree(comm, made.map(|_| ()))?;
        comm.barrier();
    }
    Ok(())
}

fn make_root(plan: &MetaPlan, backend: &dyn MetaBackend) -> Result<(), BackendError> {
    let parent = plan.root.parent().unwrap_or(&plan.root);
    let name = plan.root.file_name().unwrap_or_default().to_string_lossy();
    let root = DirGroup {
        parent: parent.to_path_buf(),
        names: vec![CString::new(name.as_bytes()).unwrap_or_default()],
    };
    if !plan.trees_in_root {
        make_groups(backend, &[root, plan.base_group()], true)?;
    }
    if plan.spec.shared_dir {
        make_groups(backend, &plan.shared_skeleton(), true)?;
    }
    Ok(())
}

/// Removes the tree: each worker its own files and directories, then the leaders the
/// shared skeleton, the record and the root. Returns warnings for what was left.
pub fn remove_tree(
    comm: &dyn Comm,
    plan: &MetaPlan,
    backend: &dyn MetaBackend,
) -> Result<Vec<String>, EngineError> {
    if !plan.touches_storage {
        return Ok(Vec::new());
    }
    let files = per_worker(plan, |g| remove_files(plan, backend, g));
    agree(comm, files)?;
    comm.barrier();
    let dirs = per_worker(plan, |g| remove_groups(backend, &plan.dirs_to_remove(g)));
    let mut left: Vec<String> = agree(comm, dirs)?.into_iter().flatten().collect();
    comm.barrier();
    let rest = if plan.leader {
        remove_root(plan, backend).map_err(EngineError::from)
    } else {
        Ok(Vec::new())
    };
    left.extend(agree(comm, rest)?);
    Ok(match left.first() {
        None => Vec::new(),
        Some(first) => vec![format!(
            "left {} director{} that hold entries iolab did not create, e.g. {first}",
            left.len(),
            if left.len() == 1 { "y" } else { "ies" }
        )],
    })
}

/// Removes the files named for worker `global` from every leaf it put files in.
fn remove_files(
    plan: &MetaPlan,
    backend: &dyn MetaBackend,
    global: u32,
) -> Result<(), BackendError> {
    let mut buf = DirBuffer::new();
    let mut mine: Vec<CString> = Vec::new();
    for k in plan.leaves() {
        let dir = match backend.open_dir(&plan.leaf(global, k)) {
            Ok(d) => d,
            Err(e) if errno_is(&e, libc::ENOENT) => continue,
            Err(e) => return Err(e),
        };
        mine.clear();
        backend.read_dir(&dir, &mut buf, &mut |name, _| {
            if file_owner(name.to_bytes()) == Some(global) {
                mine.push(name.to_owned());
            }
        })?;
        for name in &mine {
            // Directory items (mdtest -D) are the empty directories iolab made, known by
            // their name (a file system may not report an entry's type).
            let removed = if name.to_bytes().starts_with(super::plan::DIR_PREFIX) {
                backend.rmdir(&dir, name)
            } else {
                backend.remove(&dir, name)
            };
            match removed {
                Err(e) if !errno_is(&e, libc::ENOENT) => return Err(e),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Removes the directories of `groups`; returns those left because they hold entries
/// iolab did not create.
fn remove_groups(
    backend: &dyn MetaBackend,
    groups: &[DirGroup],
) -> Result<Vec<String>, BackendError> {
    let mut left = Vec::new();
    for g in groups {
        let parent = match backend.open_dir(&g.parent) {
            Ok(d) => d,
            Err(e) if errno_is(&e, libc::ENOENT) => continue,
            Err(e) => return Err(e),
        };
        for name in &g.names {
            match backend.rmdir(&parent, name) {
                Ok(()) => {}
                Err(e) if errno_is(&e, libc::ENOENT) => {}
                Err(e) if errno_is(&e, libc::ENOTEMPTY) || errno_is(&e, libc::EEXIST) => {
                    left.push(parent.entry(name).display().to_string());
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(left)
}

fn remove_root(plan: &MetaPlan, backend: &dyn MetaBackend) -> Result<Vec<String>, BackendError> {
    let mut left = Vec::new();
    if plan.spec.shared_dir {
        let mut skeleton = plan.shared_skeleton();
        skeleton.reverse();
        for g in &mut skeleton {
            g.names.reverse();
        }
        left.extend(remove_groups(backend, &skeleton)?);
    }
    if !plan.trees_in_root {
        left.extend(remove_groups(backend, &[plan.base_group()])?);
    }
    let record = plan.root.join(RECORD);
    match iolab_backend::vfs::remove_file(&record) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            return Err(iolab_backend::meta::meta_error("remove", record, e));
        }
        _ => {}
    }
    // A root that is the work directory goes with it (its marker and lock are there).
    if plan.trees_in_root {
        return Ok(left);
    }
    let parent = plan.root.parent().unwrap_or(&plan.root);
    let name = plan.root.file_name().unwrap_or_default().to_string_lossy();
    let root = DirGroup {
        parent: parent.to_path_buf(),
        names: vec![CString::new(name.as_bytes()).unwrap_or_default()],
    };
    left.extend(remove_groups(backend, &[root])?);
    Ok(left)
}
