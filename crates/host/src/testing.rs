//! Test support: [`Fixture`] builds a fake /proc, /sys and /etc tree in a temporary
//! directory (files and symlinks, as the kernel lays them out) and hands out a
//! [`SysRoot`] pointing at it.

use std::fs;
use std::path::{Path, PathBuf};

use crate::root::SysRoot;

pub(crate) struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        Fixture {
            dir: tempfile::tempdir().expect("create a temporary directory"),
        }
    }

    pub(crate) fn root(&self) -> SysRoot {
        SysRoot::under(self.dir.path())
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes `rel` (creating its parents) with `contents`.
    pub(crate) fn file(&self, rel: &str, contents: &str) -> &Self {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().expect("fixture path has a parent")).expect("mkdir");
        fs::write(&path, contents).expect("write fixture file");
        self
    }

    /// Creates the directory `rel` and its parents.
    pub(crate) fn dir(&self, rel: &str) -> &Self {
        fs::create_dir_all(self.path(rel)).expect("mkdir");
        self
    }

    /// Makes `rel` a symlink to `target` (relative targets as sysfs uses them).
    pub(crate) fn symlink(&self, rel: &str, target: &str) -> &Self {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().expect("fixture path has a parent")).expect("mkdir");
        std::os::unix::fs::symlink(Path::new(target), &path).expect("symlink");
        self
    }

    /// A whole block device as sysfs shows it, under /sys/devices/<bus>/block/<name>,
    /// with /sys/class/block/<name> and /sys/dev/block/<maj:min> linking to it.
    pub(crate) fn disk(&self, bus: &str, name: &str, dev: &str, attrs: &[(&str, &str)]) -> &Self {
        let dir = format!("sys/devices/{bus}/block/{name}");
        self.device_dir(&dir, name, dev, attrs)
    }

    /// A partition inside its disk's directory, as sysfs nests it.
    pub(crate) fn partition(&self, bus: &str, disk: &str, name: &str, dev: &str) -> &Self {
        let dir = format!("sys/devices/{bus}/block/{disk}/{name}");
        self.device_dir(&dir, name, dev, &[("partition", "1")])
    }

    /// A virtual block device (dm, md) with its slaves.
    pub(crate) fn virtual_disk(
        &self,
        name: &str,
        dev: &str,
        slaves: &[&str],
        attrs: &[(&str, &str)],
    ) -> &Self {
        let dir = format!("sys/devices/virtual/block/{name}");
        self.device_dir(&dir, name, dev, attrs);
        self.dir(&format!("{dir}/slaves"));
        for slave in slaves {
            self.symlink(
                &format!("{dir}/slaves/{slave}"),
                &format!("../../../../fake/{slave}"),
            );
        }
        self
    }

    fn device_dir(&self, dir: &str, name: &str, dev: &str, attrs: &[(&str, &str)]) -> &Self {
        self.dir(dir);
        self.file(&format!("{dir}/dev"), &format!("{dev}\n"));
        for (attr, value) in attrs {
            self.file(&format!("{dir}/{attr}"), &format!("{value}\n"));
        }
        let rel = dir.trim_start_matches("sys/");
        self.symlink(&format!("sys/class/block/{name}"), &format!("../../{rel}"));
        self.symlink(&format!("sys/dev/block/{dev}"), &format!("../../{rel}"));
        self
    }
}

impl Fixture {
    /// Removes the file or directory `rel`.
    pub(crate) fn remove(&self, rel: &str) -> &Self {
        let path = self.path(rel);
        if path.is_dir() {
            fs::remove_dir_all(&path).expect("remove fixture directory");
        } else {
            fs::remove_file(&path).expect("remove fixture file");
        }
        self
    }

    /// Replaces `from` with `to` in the file `rel`, which must contain it.
    pub(crate) fn edit(&self, rel: &str, from: &str, to: &str) -> &Self {
        let text = fs::read_to_string(self.path(rel)).expect("read fixture file");
        assert!(text.contains(from), "{rel} does not contain '{from}'");
        fs::write(self.path(rel), text.replace(from, to)).expect("write fixture file");
        self
    }
}

/// A whole, well-tuned storage server as a fixture: two CPUs, one NUMA node, disks
/// under / (vda1), /scratch (NVMe partition), /data (md0 RAID over sda1 and sdb1) and
/// "/mnt/my data" (LVM dm-0 on sdc), an NFS mount at /mnt/nfs, one 25 GbE NIC, and
/// sysctls set as the reference studies recommend. Tests spoil one setting at a time.
pub(crate) fn machine() -> Fixture {
    let fx = Fixture::new();
    fx.file("proc/sys/kernel/hostname", "node01\n")
        .file("proc/sys/kernel/osrelease", "6.1.0-18-amd64\n")
        .file("etc/os-release", "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")
        .file(
            "proc/cpuinfo",
            "processor\t: 0\nmodel name\t: AMD EPYC 7302\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7302\n\n",
        )
        .file("proc/meminfo", "MemTotal:       65536000 kB\nMemFree:         1000 kB\n")
        .file("proc/self/mountinfo", include_str!("../../core/tests/fixtures/mountinfo"))
        .file("sys/devices/system/cpu/online", "0-1\n")
        .dir("sys/devices/system/node/node0");
    for cpu in 0..2 {
        let dir = format!("sys/devices/system/cpu/cpu{cpu}");
        fx.file(&format!("{dir}/topology/physical_package_id"), "0")
            .file(&format!("{dir}/topology/core_id"), &cpu.to_string())
            .file(&format!("{dir}/cpufreq/scaling_governor"), "performance\n")
            .file(&format!("{dir}/cpuidle/state0/name"), "POLL\n")
            .file(&format!("{dir}/cpuidle/state0/latency"), "0\n")
            .file(&format!("{dir}/cpuidle/state0/disable"), "0\n")
            .file(&format!("{dir}/cpuidle/state1/name"), "C1\n")
            .file(&format!("{dir}/cpuidle/state1/latency"), "1\n")
            .file(&format!("{dir}/cpuidle/state1/disable"), "0\n")
            .file(&format!("{dir}/cpuidle/state2/name"), "C2\n")
            .file(&format!("{dir}/cpuidle/state2/latency"), "400\n")
            .file(&format!("{dir}/cpuidle/state2/disable"), "1\n");
    }
    let vulns = "sys/devices/system/cpu/vulnerabilities";
    fx.file(&format!("{vulns}/meltdown"), "Not affected\n")
        .file(
            &format!("{vulns}/spectre_v2"),
            "Mitigation: Retpolines; IBPB: conditional\n",
        )
        .file(
            &format!("{vulns}/mds"),
            "Vulnerable: Clear CPU buffers attempted, no microcode\n",
        );

    let queue = |scheduler, rotational, read_ahead| {
        vec![
            ("size", "3907029168"),
            ("device/model", "FAKE DISK"),
            ("queue/rotational", rotational),
            ("queue/scheduler", scheduler),
            ("queue/nr_requests", "256"),
            ("queue/read_ahead_kb", read_ahead),
            ("queue/logical_block_size", "512"),
            ("queue/physical_block_size", "4096"),
        ]
    };
    let virtio = "pci0000:00/0000:00:02.0/virtio1";
    let nvme = "pci0000:00/0000:00:03.0/nvme/nvme0";
    fx.disk(
        virtio,
        "vda",
        "254:0",
        &queue("none [mq-deadline]", "0", "128"),
    )
    .partition(virtio, "vda", "vda1", "254:1")
    .disk(
        nvme,
        "nvme0n1",
        "259:0",
        &queue("[none] mq-deadline", "0", "128"),
    )
    .partition(nvme, "nvme0n1", "nvme0n1p1", "259:2")
    .disk(
        "sas/host0",
        "sda",
        "8:0",
        &queue("[mq-deadline] none", "1", "4096"),
    )
    .partition("sas/host0", "sda", "sda1", "8:1")
    .disk(
        "sas/host1",
        "sdb",
        "8:16",
        &queue("[mq-deadline] none", "1", "4096"),
    )
    .partition("sas/host1", "sdb", "sdb1", "8:17")
    .disk(
        "sas/host2",
        "sdc",
        "8:32",
        &queue("[none] mq-deadline", "0", "128"),
    )
    .virtual_disk("md0", "9:0", &["sda1", "sdb1"], &[])
    .virtual_disk("dm-0", "253:0", &["sdc"], &[("dm/name", "vg-data lv")]);
    fx.file("sys/class/bdi/0:53/read_ahead_kb", "4096\n");

    fx.file("sys/class/net/lo/mtu", "65536\n")
        .file("sys/class/net/lo/operstate", "unknown\n")
        .file("sys/class/net/eth0/mtu", "9000\n")
        .file("sys/class/net/eth0/operstate", "up\n")
        .file("sys/class/net/eth0/speed", "25000\n")
        .symlink(
            "sys/class/net/eth0/device/driver",
            "../../../bus/pci/drivers/mlx5_core",
        )
        .file("sys/class/net/docker0/mtu", "1500\n")
        .file("sys/class/net/docker0/operstate", "up\n");

    for (sysctl, value) in [
        ("net/core/rmem_max", "16777216"),
        ("net/core/wmem_max", "16777216"),
        ("net/ipv4/tcp_rmem", "4096\t87380\t16777216"),
        ("net/ipv4/tcp_wmem", "4096\t65536\t16777216"),
        ("net/core/netdev_max_backlog", "250000"),
        ("net/core/somaxconn", "4096"),
        ("vm/min_free_kbytes", "262144"),
        ("vm/dirty_ratio", "10"),
        ("vm/dirty_background_ratio", "5"),
    ] {
        fx.file(&format!("proc/sys/{sysctl}"), &format!("{value}\n"));
    }
    fx.file(
        "sys/kernel/mm/transparent_hugepage/enabled",
        "always [madvise] never\n",
    )
    .file("sys/module/intel_idle/parameters/max_cstate", "1\n")
    .file(
        "sys/devices/system/cpu/cpuidle/current_driver",
        "intel_idle\n",
    )
    .file("proc/fs/nfsd/threads", "256\n");
    fx
}
