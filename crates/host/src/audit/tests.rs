//! Tests of the audit table against the fixture machine: every check passes on the
//! well-tuned machine, warns when its setting is spoiled, and says unknown (or applies
//! its default) when its source is missing.

use std::path::Path;

use super::*;
use crate::inventory::collect;
use crate::testing::{Fixture, machine};

const MOUNTINFO: &str = "proc/self/mountinfo";

fn audit(fx: &Fixture, target: Option<&str>, profile: Option<Profile>) -> Vec<Finding> {
    let root = fx.root();
    let inventory = collect(&root, target.map(Path::new));
    run(&root, &inventory, profile)
}

fn of<'a>(findings: &'a [Finding], id: &str) -> Vec<&'a Finding> {
    findings.iter().filter(|f| f.id == id).collect()
}

/// A check, the target and profile it needs, how to spoil it and what a missing source
/// gives. `good` names the text replaced in `file`; `None` means the whole file.
struct Case {
    id: &'static str,
    target: &'static str,
    profile: Option<Profile>,
    file: &'static str,
    good: Option<&'static str>,
    bad: &'static str,
    when_missing: Status,
}

const fn case(
    id: &'static str,
    target: &'static str,
    file: &'static str,
    bad: &'static str,
) -> Case {
    Case {
        id,
        target,
        profile: None,
        file,
        good: None,
        bad,
        when_missing: Status::Unknown,
    }
}

fn cases() -> Vec<Case> {
    vec![
        case(
            "block.scheduler-flash",
            "/scratch",
            "sys/class/block/nvme0n1/queue/scheduler",
            "none mq-deadline [bfq]",
        ),
        case(
            "block.scheduler-rotational",
            "/data",
            "sys/class/block/sda/queue/scheduler",
            "[none] mq-deadline",
        ),
        case(
            "block.read-ahead-rotational",
            "/data",
            "sys/class/block/sda/queue/read_ahead_kb",
            "128",
        ),
        case(
            "block.read-ahead-flash",
            "/scratch",
            "sys/class/block/nvme0n1/queue/read_ahead_kb",
            "64",
        ),
        case(
            "mm.transparent-hugepages",
            "/",
            "sys/kernel/mm/transparent_hugepage/enabled",
            "[always] madvise never",
        ),
        case(
            "vm.min-free-kbytes",
            "/",
            "proc/sys/vm/min_free_kbytes",
            "67584",
        ),
        case("vm.dirty-ratio", "/", "proc/sys/vm/dirty_ratio", "40"),
        case(
            "vm.dirty-background-ratio",
            "/",
            "proc/sys/vm/dirty_background_ratio",
            "20",
        ),
        case(
            "cpu.max-cstate",
            "/",
            "sys/module/intel_idle/parameters/max_cstate",
            "9",
        ),
        case(
            "cpu.idle-exit-latency",
            "/",
            "sys/devices/system/cpu/cpu0/cpuidle/state1/latency",
            "50",
        ),
        case("net.rmem-max", "/", "proc/sys/net/core/rmem_max", "212992"),
        case("net.wmem-max", "/", "proc/sys/net/core/wmem_max", "212992"),
        case(
            "net.tcp-rmem",
            "/",
            "proc/sys/net/ipv4/tcp_rmem",
            "4096 131072 6291456",
        ),
        case(
            "net.tcp-wmem",
            "/",
            "proc/sys/net/ipv4/tcp_wmem",
            "4096 16384 4194304",
        ),
        case(
            "net.netdev-max-backlog",
            "/",
            "proc/sys/net/core/netdev_max_backlog",
            "1000",
        ),
        Case {
            profile: Some(Profile::StorageServer),
            ..case("net.somaxconn", "/", "proc/sys/net/core/somaxconn", "128")
        },
        case("net.mtu", "/", "sys/class/net/eth0/mtu", "1500"),
        Case {
            good: Some(",rsize=1048576"),
            ..case("nfs.rsize", "/mnt/nfs", MOUNTINFO, ",rsize=65536")
        },
        Case {
            good: Some(",wsize=1048576"),
            ..case("nfs.wsize", "/mnt/nfs", MOUNTINFO, ",wsize=524288")
        },
        Case {
            good: Some(",nconnect=8"),
            when_missing: Status::Warn, // not shown: the default, one connection
            ..case("nfs.nconnect", "/mnt/nfs", MOUNTINFO, ",nconnect=2")
        },
        Case {
            good: Some(",hard"),
            when_missing: Status::Pass, // not shown: the default, hard
            ..case("nfs.hard", "/mnt/nfs", MOUNTINFO, ",soft")
        },
        case(
            "nfs.read-ahead",
            "/mnt/nfs",
            "sys/class/bdi/0:53/read_ahead_kb",
            "128",
        ),
        Case {
            profile: Some(Profile::NfsServer),
            ..case("nfsd.threads", "/", "proc/fs/nfsd/threads", "8")
        },
    ]
}

#[test]
fn every_check_passes_on_the_tuned_machine_and_warns_when_spoiled() {
    for c in cases() {
        let fx = machine();
        let good = audit(&fx, Some(c.target), c.profile);
        let found = of(&good, c.id);
        assert!(!found.is_empty(), "{}: no finding", c.id);
        for f in &found {
            assert_eq!(f.status, Status::Pass, "{}: {f:?}", c.id);
            assert_eq!(f.severity, Severity::Ok, "{}", c.id);
            assert!(f.current.is_some() && f.note.is_none(), "{}: {f:?}", c.id);
        }

        match c.good {
            Some(good) => fx.edit(c.file, good, c.bad),
            None => fx.file(c.file, c.bad),
        };
        let spoiled = audit(&fx, Some(c.target), c.profile);
        let check = CHECKS.iter().find(|k| k.id == c.id).unwrap();
        let warned: Vec<_> = of(&spoiled, c.id)
            .into_iter()
            .filter(|f| f.status == Status::Warn)
            .collect();
        assert_eq!(warned.len(), 1, "{}: {:?}", c.id, of(&spoiled, c.id));
        assert_eq!(warned[0].severity, check.severity, "{}", c.id);
        assert!(!warned[0].why.is_empty() && !warned[0].recommended.is_empty());
    }
}

#[test]
fn every_check_is_unknown_or_defaulted_when_its_source_is_missing() {
    for c in cases() {
        let fx = machine();
        match c.good {
            Some(good) => fx.edit(c.file, good, ""),
            None => fx.remove(c.file),
        };
        let findings = audit(&fx, Some(c.target), c.profile);
        let found = of(&findings, c.id);
        assert!(
            found.iter().any(|f| f.status == c.when_missing),
            "{}: {found:?}",
            c.id
        );
        for f in found.iter().filter(|f| f.status == Status::Unknown) {
            assert_eq!(f.current, None, "{}", c.id);
            assert_eq!(f.severity, Severity::Info, "{}", c.id);
            assert!(f.note.is_some(), "{}: unknown says why", c.id);
        }
    }
}

#[test]
fn governor_merges_cpus() {
    let fx = machine();
    fx.file(
        "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
        "powersave",
    );
    let findings = audit(&fx, None, None);
    let g = of(&findings, "cpu.governor");
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].status, Status::Warn);
    assert_eq!(g[0].current.as_deref(), Some("performance, powersave"));

    // A VM without cpufreq: unknown, with the reason.
    fx.remove("sys/devices/system/cpu/cpu0/cpufreq")
        .remove("sys/devices/system/cpu/cpu1/cpufreq");
    let findings = audit(&fx, None, None);
    let g = of(&findings, "cpu.governor");
    assert_eq!(g[0].status, Status::Unknown);
    assert!(
        g[0].note.as_deref().unwrap().contains("scaling_governor"),
        "{:?}",
        g[0]
    );
}

#[test]
fn recorded_values() {
    let fx = machine();
    let findings = audit(&fx, Some("/mnt/nfs"), None);
    let m = of(&findings, "cpu.mitigations")[0];
    assert_eq!(m.status, Status::Pass);
    assert_eq!(
        m.current.as_deref(),
        Some("1 vulnerable (mds), 1 mitigated, 1 not affected")
    );
    let a = of(&findings, "nfs.actimeo")[0];
    assert_eq!(a.current.as_deref(), Some("defaults"));

    fx.edit(
        MOUNTINFO,
        ",hard",
        ",hard,acregmin=0,acregmax=0,acdirmin=0,acdirmax=0",
    );
    let findings = audit(&fx, Some("/mnt/nfs"), None);
    let a = of(&findings, "nfs.actimeo")[0];
    assert_eq!(
        a.current.as_deref(),
        Some("actimeo=0,acregmin=0,acregmax=0,acdirmin=0,acdirmax=0")
    );

    fx.remove("sys/devices/system/cpu/vulnerabilities");
    let findings = audit(&fx, None, None);
    assert_eq!(of(&findings, "cpu.mitigations")[0].status, Status::Unknown);
}

/// intel_idle's parameter is recommended only where the kernel runs intel_idle: an AMD
/// machine (acpi_idle) or one without cpuidle gets no Intel-only advice.
#[test]
fn intel_only_advice_follows_the_idle_driver() {
    let fx = machine();
    assert_eq!(of(&audit(&fx, Some("/"), None), "cpu.max-cstate").len(), 1);
    fx.edit(
        "sys/devices/system/cpu/cpuidle/current_driver",
        "intel_idle",
        "acpi_idle",
    );
    let findings = audit(&fx, Some("/"), None);
    assert!(of(&findings, "cpu.max-cstate").is_empty(), "{findings:?}");
    // The vendor-neutral idle check still applies.
    assert_eq!(of(&findings, "cpu.idle-exit-latency").len(), 1);
    fx.remove("sys/devices/system/cpu/cpuidle/current_driver");
    assert!(of(&audit(&fx, Some("/"), None), "cpu.max-cstate").is_empty());
}

#[test]
fn checks_follow_the_target_and_the_profile() {
    let fx = machine();
    let general = audit(&fx, Some("/scratch"), None);
    assert!(of(&general, "nfs.rsize").is_empty(), "not an NFS target");
    assert!(
        of(&general, "nfsd.threads").is_empty(),
        "server checks need the profile"
    );
    assert!(of(&general, "net.somaxconn").is_empty());
    assert!(
        of(&general, "block.scheduler-rotational").is_empty(),
        "no rotating disk under /scratch"
    );
    assert_eq!(
        of(&general, "block.scheduler-flash")[0].subject.as_deref(),
        Some("nvme0n1")
    );
    assert_eq!(
        of(&general, "net.mtu").len(),
        1,
        "eth0 only: lo and driverless docker0 skipped"
    );

    let nfs = audit(&fx, Some("/mnt/nfs"), Some(Profile::NfsClient));
    assert!(
        of(&nfs, "block.scheduler-flash").is_empty(),
        "no disks under NFS"
    );
    assert_eq!(of(&nfs, "nfs.rsize").len(), 1);

    // Without a target, per-disk checks look at every physical disk.
    let all = audit(&fx, None, Some(Profile::NfsServer));
    let flash: Vec<_> = of(&all, "block.scheduler-flash")
        .iter()
        .map(|f| f.subject.clone().unwrap())
        .collect();
    assert_eq!(flash, ["nvme0n1", "sdc", "vda"]);
    assert_eq!(of(&all, "block.scheduler-rotational").len(), 2);
    assert_eq!(of(&all, "nfsd.threads").len(), 1);
    assert!(all.iter().all(|f| f.status == Status::Pass), "{all:#?}");
}

#[test]
fn empty_tree_gives_unknowns_not_errors() {
    let fx = Fixture::new();
    let findings = audit(&fx, Some("/"), Some(Profile::NfsServer));
    assert!(!findings.is_empty());
    assert!(
        findings.iter().all(|f| f.status == Status::Unknown),
        "{findings:#?}"
    );
}

#[test]
fn unparsable_values_are_unknown() {
    let fx = machine();
    fx.file("proc/sys/vm/dirty_ratio", "lots");
    fx.file("proc/sys/net/ipv4/tcp_rmem", "4096");
    let findings = audit(&fx, None, None);
    for id in ["vm.dirty-ratio", "net.tcp-rmem"] {
        let f = of(&findings, id)[0];
        assert_eq!(f.status, Status::Unknown, "{f:?}");
        assert!(
            f.note.as_deref().unwrap().starts_with("cannot judge"),
            "{f:?}"
        );
    }
}

#[test]
fn table_is_well_formed() {
    let mut ids: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
    ids.sort();
    let count = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), count, "check ids are unique");
    for c in CHECKS {
        assert!(
            !c.title.is_empty() && !c.recommended.is_empty() && !c.why.is_empty(),
            "{}",
            c.id
        );
        assert!(c.severity != Severity::Ok, "{}: a miss cannot be ok", c.id);
        assert!(c.why.len() <= 120, "{}: why is one line", c.id);
    }
    // Every check of the table is exercised by a case or a dedicated test.
    let covered: Vec<&str> = cases()
        .iter()
        .map(|c| c.id)
        .chain(["cpu.governor", "cpu.mitigations", "nfs.actimeo"])
        .collect();
    for c in CHECKS {
        assert!(covered.contains(&c.id), "{} has no test", c.id);
    }
}

#[test]
fn profiles_parse_and_print() {
    for p in Profile::ALL {
        assert_eq!(p.name().parse::<Profile>(), Ok(p));
        assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{p}\""));
    }
    let err = "hpc".parse::<Profile>().unwrap_err().to_string();
    assert!(
        err.contains("hpc-client, nfs-client, nfs-server, storage-server"),
        "{err}"
    );
}

#[test]
fn findings_serialize() {
    let fx = machine();
    let findings = audit(&fx, Some("/scratch"), None);
    let json = serde_json::to_value(&findings).unwrap();
    let first = &json[0];
    assert_eq!(first["status"], "pass");
    assert_eq!(first["severity"], "ok");
    assert!(first.get("note").is_none(), "absent notes are left out");
}
