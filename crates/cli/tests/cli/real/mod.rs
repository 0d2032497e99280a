//! iolab on real distributed storage: a single-node SeaweedFS and Ceph brought up by the
//! project's own scripts (scripts/seaweedfs.sh, scripts/ceph.sh) for each test and taken
//! down after it, with a check that nothing is left behind. `Cluster` is the handle; an
//! nbdkit export (scripts/nbd.sh) has its own in `nbd.rs`.

mod ceph;
mod cluster;
mod nbd;
mod s3;
mod s3_endpoints;
mod s3_rgw;
mod seaweedfs;

pub use cluster::Cluster;
