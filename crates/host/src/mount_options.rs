//! The mount options that decide storage performance, pulled out of a mount's option
//! list: [`key_options`] knows, per file system family (NFS, Lustre, BeeGFS, CephFS,
//! SMB, XFS, ext4), which options matter, as a table; [`redact`] hides secrets before
//! options are stored with a run.

use std::collections::BTreeMap;

/// Which options of one file system family are kept, and under which key.
struct Family {
    fs_types: &'static [&'static str],
    /// `key=value` options kept as they are.
    values: &'static [&'static str],
    /// `alias=value` options kept under another key (nfsvers= is vers=).
    renames: &'static [(&'static str, &'static str)],
    /// Bare flags: (flag, key, value).
    flags: &'static [(&'static str, &'static str, &'static str)],
}

const NFS_TYPES: &[&str] = &["nfs", "nfs4"];

const FAMILIES: &[Family] = &[
    Family {
        fs_types: NFS_TYPES,
        values: &[
            "rsize",
            "wsize",
            "nconnect",
            "max_connect",
            "proto",
            "vers",
            "timeo",
            "retrans",
            "actimeo",
            "acregmin",
            "acregmax",
            "acdirmin",
            "acdirmax",
            "sec",
            "lookupcache",
            "local_lock",
            "port",
            "addr",
        ],
        renames: &[("nfsvers", "vers")],
        flags: &[
            ("hard", "hard", "true"),
            ("soft", "hard", "false"),
            ("softerr", "hard", "false"),
            ("noac", "noac", "true"),
            ("nocto", "cto", "false"),
            ("fsc", "fsc", "true"),
        ],
    },
    Family {
        fs_types: &["lustre"],
        values: &["max_read_ahead_mb", "max_cached_mb"],
        renames: &[],
        flags: &[
            ("flock", "flock", "flock"),
            ("localflock", "flock", "localflock"),
            ("noflock", "flock", "noflock"),
            ("user_xattr", "user_xattr", "true"),
            ("nouser_xattr", "user_xattr", "false"),
            ("lazystatfs", "lazystatfs", "true"),
            ("nolazystatfs", "lazystatfs", "false"),
            ("checksum", "checksum", "true"),
            ("nochecksum", "checksum", "false"),
        ],
    },
    Family {
        fs_types: &["beegfs"],
        values: &["cfgFile"],
        renames: &[],
        flags: &[],
    },
    Family {
        fs_types: &["ceph"],
        values: &[
            "name",
            "fs",
            "rsize",
            "wsize",
            "rasize",
            "caps_max",
            "readdir_max_entries",
            "readdir_max_bytes",
            "recover_session",
            "ms_mode",
        ],
        renames: &[("mds_namespace", "fs")],
        flags: &[
            ("noasyncreaddir", "asyncreaddir", "false"),
            ("nodcache", "dcache", "false"),
            ("dcache", "dcache", "true"),
            ("fsc", "fsc", "true"),
        ],
    },
    Family {
        fs_types: &["cifs", "smb3"],
        values: &["rsize", "wsize", "vers", "cache", "actimeo", "max_channels"],
        renames: &[],
        flags: &[("multichannel", "multichannel", "true")],
    },
    Family {
        fs_types: &["xfs"],
        values: &["logbufs", "logbsize", "sunit", "swidth", "allocsize"],
        renames: &[],
        flags: &[
            ("inode64", "inode64", "true"),
            ("largeio", "largeio", "true"),
        ],
    },
    Family {
        fs_types: &["ext4"],
        values: &["data", "commit", "stripe"],
        renames: &[],
        flags: &[
            ("nobarrier", "barrier", "false"),
            ("dioread_nolock", "dioread_nolock", "true"),
            ("discard", "discard", "true"),
        ],
    },
];

/// Flags every file system family shares: read-only or not, and how atime is kept.
const COMMON_FLAGS: &[(&str, &str, &str)] = &[
    ("ro", "access", "ro"),
    ("rw", "access", "rw"),
    ("noatime", "atime", "noatime"),
    ("relatime", "atime", "relatime"),
    ("strictatime", "atime", "strictatime"),
    ("sync", "sync", "true"),
];

/// Option names whose values are secrets and are never stored.
const SECRET_KEYS: &[&str] = &["password", "pass", "passwd", "secret", "token"];

/// True for the kernel NFS client's types.
pub fn is_nfs(fs_type: &str) -> bool {
    NFS_TYPES.contains(&fs_type)
}

/// The options of interest for this file system type, by key. NFS: `hard` is "true" or
/// "false"; `actimeo` is derived when the four attribute-cache timeouts agree. Lustre:
/// the file system name from the source (`mgs@tcp:/fsname`).
pub fn key_options(fs_type: &str, source: &str, options: &[String]) -> BTreeMap<String, String> {
    let mut keys = BTreeMap::new();
    let family = FAMILIES.iter().find(|f| f.fs_types.contains(&fs_type));
    for option in options {
        match option.split_once('=') {
            Some((name, value)) => {
                let Some(family) = family else { continue };
                if family.values.contains(&name) {
                    keys.insert(name.to_string(), value.to_string());
                } else if let Some((_, key)) =
                    family.renames.iter().find(|(alias, _)| *alias == name)
                {
                    keys.insert(key.to_string(), value.to_string());
                }
            }
            None => {
                let family_flags = family.map(|f| f.flags).unwrap_or_default();
                if let Some((_, key, value)) = COMMON_FLAGS
                    .iter()
                    .chain(family_flags)
                    .find(|(flag, _, _)| flag == option)
                {
                    keys.insert(key.to_string(), value.to_string());
                }
            }
        }
    }
    if is_nfs(fs_type) && !keys.contains_key("actimeo") {
        let timeouts: Vec<Option<&String>> = ["acregmin", "acregmax", "acdirmin", "acdirmax"]
            .iter()
            .map(|k| keys.get(*k))
            .collect();
        if let Some(Some(first)) = timeouts.first()
            && timeouts.iter().all(|t| *t == Some(*first))
        {
            let first = (*first).clone();
            keys.insert("actimeo".to_string(), first);
        }
    }
    if fs_type == "lustre"
        && let Some((_, fsname)) = source.rsplit_once(":/")
        && !fsname.is_empty()
    {
        keys.insert("fsname".to_string(), fsname.to_string());
    }
    keys
}

/// The options with secret values replaced by `<redacted>`.
pub fn redact(options: Vec<String>) -> Vec<String> {
    options
        .into_iter()
        .map(|option| match option.split_once('=') {
            Some((name, _)) if SECRET_KEYS.contains(&name.to_ascii_lowercase().as_str()) => {
                format!("{name}=<redacted>")
            }
            _ => option,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(s: &str) -> Vec<String> {
        s.split(',').map(String::from).collect()
    }

    #[test]
    fn nfs_key_options() {
        let o = opts(
            "rw,relatime,vers=4.2,rsize=1048576,wsize=524288,namlen=255,hard,proto=tcp,nconnect=8,\
             timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.5,local_lock=none,addr=10.0.0.1",
        );
        let k = key_options("nfs4", "nfs1:/export", &o);
        assert_eq!(k["rsize"], "1048576");
        assert_eq!(k["wsize"], "524288");
        assert_eq!(k["nconnect"], "8");
        assert_eq!(k["proto"], "tcp");
        assert_eq!(k["vers"], "4.2");
        assert_eq!(k["timeo"], "600");
        assert_eq!(k["hard"], "true");
        assert_eq!(k["access"], "rw");
        assert_eq!(k["atime"], "relatime");
        assert!(!k.contains_key("namlen"), "not of interest");
        assert!(!k.contains_key("clientaddr"));
        assert!(
            !k.contains_key("actimeo"),
            "no timeouts shown, none derived"
        );
    }

    #[test]
    fn nfs_soft_nfsvers_and_actimeo() {
        let o = opts("ro,soft,nfsvers=3,acregmin=5,acregmax=5,acdirmin=5,acdirmax=5,noac");
        let k = key_options("nfs", "srv:/x", &o);
        assert_eq!(k["hard"], "false");
        assert_eq!(k["vers"], "3");
        assert_eq!(k["actimeo"], "5", "derived: all four timeouts agree");
        assert_eq!(k["noac"], "true");
        assert_eq!(k["access"], "ro");

        let uneven = opts("acregmin=3,acregmax=60,acdirmin=30,acdirmax=60");
        assert!(!key_options("nfs", "s:/x", &uneven).contains_key("actimeo"));
        let explicit = opts("actimeo=0,acregmin=3");
        assert_eq!(key_options("nfs", "s:/x", &explicit)["actimeo"], "0");
    }

    #[test]
    fn parallel_file_systems() {
        let lustre = key_options(
            "lustre",
            "10.0.0.1@o2ib:/scratch",
            &opts("rw,flock,lazystatfs"),
        );
        assert_eq!(lustre["fsname"], "scratch");
        assert_eq!(lustre["flock"], "flock");
        assert_eq!(lustre["lazystatfs"], "true");

        let beegfs = key_options(
            "beegfs",
            "beegfs_nodev",
            &opts("rw,cfgFile=/etc/beegfs/beegfs-client.conf"),
        );
        assert_eq!(beegfs["cfgFile"], "/etc/beegfs/beegfs-client.conf");

        let ceph = key_options(
            "ceph",
            "10.0.0.1:6789:/",
            &opts("rw,name=admin,secret=<hidden>,mds_namespace=cephfs,rasize=8388608,acl"),
        );
        assert_eq!(ceph["name"], "admin");
        assert_eq!(ceph["fs"], "cephfs");
        assert_eq!(ceph["rasize"], "8388608");
        assert!(!ceph.contains_key("secret"));
    }

    #[test]
    fn local_and_unknown_file_systems() {
        let xfs = key_options(
            "xfs",
            "/dev/md0",
            &opts("rw,noatime,sunit=1024,swidth=4096,inode64"),
        );
        assert_eq!(xfs["sunit"], "1024");
        assert_eq!(xfs["inode64"], "true");
        assert_eq!(xfs["atime"], "noatime");
        let other = key_options("tmpfs", "tmpfs", &opts("rw,size=4k,mode=755"));
        assert_eq!(other.len(), 1, "only the common flags: {other:?}");
        assert_eq!(other["access"], "rw");
    }

    #[test]
    fn secrets_are_redacted() {
        let o = redact(opts("rw,username=bob,password=hunter2,Secret=abc,sec=krb5"));
        assert_eq!(
            o,
            [
                "rw",
                "username=bob",
                "password=<redacted>",
                "Secret=<redacted>",
                "sec=krb5"
            ]
        );
    }
}
