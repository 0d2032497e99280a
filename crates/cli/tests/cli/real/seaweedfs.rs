//! SeaweedFS from scripts/seaweedfs.sh: the S3 gateway and the FUSE mount serve the same
//! data, iolab runs on the mount, and `down` leaves nothing behind.

use std::process::Command;

use super::Cluster;
use crate::common::{path, run};

fn ports(c: &Cluster) -> Vec<u16> {
    c.var("SEAWEEDFS_PORTS")
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// An S3 request signed with the cluster's keys (curl's SigV4); returns the body.
fn s3(c: &Cluster, method: &str, key: &str, upload: Option<&std::path::Path>) -> String {
    let mut cmd = Command::new("curl");
    cmd.args([
        "-sS",
        "-f",
        "-X",
        method,
        "--aws-sigv4",
        "aws:amz:us-east-1:s3",
    ])
    .arg("--user")
    .arg(format!(
        "{}:{}",
        c.var("AWS_ACCESS_KEY_ID"),
        c.var("AWS_SECRET_ACCESS_KEY")
    ));
    if let Some(f) = upload {
        cmd.arg("-T").arg(f);
    }
    let out = cmd
        .arg(format!("{}/{key}", c.var("SEAWEEDFS_S3_ENDPOINT")))
        .output()
        .expect("curl runs");
    assert!(
        out.status.success(),
        "S3 {method} {key}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn seaweedfs_serves_s3_and_posix_and_down_leaves_nothing() {
    let c = Cluster::up("seaweedfs", &[]);
    let mnt = std::path::PathBuf::from(c.var("SEAWEEDFS_MOUNT"));
    let ports = ports(&c);
    assert_eq!(ports.len(), 8, "{:?}", c.env);
    // A second `up` changes nothing and prints the same endpoint.
    let again =
        Command::new(env!("CARGO_MANIFEST_DIR").to_string() + "/../../scripts/seaweedfs.sh")
            .args(["up", "--state"])
            .arg(c.state())
            .output()
            .unwrap();
    assert!(again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stdout).contains(c.var("SEAWEEDFS_S3_ENDPOINT")),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );

    // Written over S3, read through the mount, and the other way round.
    s3(&c, "PUT", "iolab-bucket", None);
    let obj = c.state().join("obj.txt");
    std::fs::write(&obj, b"over s3\n").unwrap();
    s3(&c, "PUT", "iolab-bucket/a.txt", Some(&obj));
    let via_mount = mnt.join("buckets/iolab-bucket/a.txt");
    assert_eq!(std::fs::read(&via_mount).unwrap(), b"over s3\n");
    std::fs::write(mnt.join("buckets/iolab-bucket/b.txt"), b"over fuse\n").unwrap();
    assert_eq!(s3(&c, "GET", "iolab-bucket/b.txt", None), "over fuse\n");

    // iolab on the mount: every byte written and read, its files gone afterwards.
    let json = c.state().join("r.json");
    let work = mnt.join("bench");
    std::fs::create_dir(&work).unwrap();
    run(&[
        "run",
        "--dir",
        path(&work),
        "--rw",
        "read",
        "--block-size",
        "1MiB",
        "--size",
        "8MiB",
        "--threads",
        "2",
        "--json",
        path(&json),
    ])
    .expect(0);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let read = j["phases"][0]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "read")
        .expect("a read op");
    assert_eq!(read["bytes"], 16 << 20, "{read}");
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);

    c.down_and_check(&ports);
}
