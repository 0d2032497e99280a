//! iolab on real storage: a single-node SeaweedFS and Ceph, a ZFS pool (zfs-fuse) and a
//! compressing btrfs, brought up by the project's own scripts (scripts/seaweedfs.sh,
//! ceph.sh, zfs.sh, btrfs.sh) for each test and taken down after it, with a check that
//! nothing is left behind (and NFS-Ganesha, scripts/nfs.sh, reached through libnfs, failing over under load in
//! failover.rs). `Cluster` is the handle; an nbdkit export (scripts/nbd.sh) has
//! its own in `nbd.rs`.

mod btrfs;
mod ceph;
mod cluster;
mod compressing;
mod failover;
mod kvcache_s3;
mod nbd;
mod nfs;
mod s3;
mod s3_endpoints;
mod s3_rgw;
mod seaweedfs;
mod zfs;

pub use cluster::Cluster;
