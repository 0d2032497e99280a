//! Network interfaces: [`interfaces`] lists /sys/class/net (without `lo`) with speed,
//! MTU, state and driver, and their addresses: IPv4 from the kernel's local routing
//! table (/proc/net/fib_trie) matched to interfaces through /proc/net/route, IPv6 from
//! /proc/net/if_inet6 (link-local left out).

use std::net::{Ipv4Addr, Ipv6Addr};

use iolab_core::inventory::NetInterfaceInfo;

use crate::root::{SysRoot, dir_names, link_name, noted, read_parsed, read_text, read_trimmed};

pub(crate) fn interfaces(root: &SysRoot, notes: &mut Vec<String>) -> Vec<NetInterfaceInfo> {
    let net = root.sys_path("class/net");
    let Some(names) = noted(notes, "network interfaces", dir_names(&net)) else {
        return Vec::new();
    };
    let v4 = ipv4_addresses(root);
    let v6 = ipv6_addresses(root);
    names
        .into_iter()
        .filter(|n| n != "lo")
        .map(|name| {
            let dir = net.join(&name);
            // speed reads -1 or fails with EINVAL when the link is down or virtual: unknown.
            let speed_mbps = read_parsed::<i64>(&dir.join("speed"))
                .ok()
                .and_then(|s| u64::try_from(s).ok());
            let mut addresses: Vec<String> = v4
                .iter()
                .chain(&v6)
                .filter(|(iface, _)| *iface == name)
                .map(|(_, addr)| addr.clone())
                .collect();
            addresses.dedup();
            NetInterfaceInfo {
                mtu: noted(notes, &format!("{name} mtu"), read_parsed(&dir.join("mtu"))),
                state: noted(
                    notes,
                    &format!("{name} operstate"),
                    read_trimmed(&dir.join("operstate")),
                ),
                // Virtual interfaces (bridges, veth, bonds) have no device and no driver.
                driver: link_name(&dir.join("device/driver")).ok(),
                speed_mbps,
                addresses,
                name,
            }
        })
        .collect()
}

/// (interface, "a.b.c.d/prefix") for each local IPv4 address.
fn ipv4_addresses(root: &SysRoot) -> Vec<(String, String)> {
    let (Ok(trie), Ok(route)) = (
        read_text(&root.proc_path("net/fib_trie")),
        read_text(&root.proc_path("net/route")),
    ) else {
        return Vec::new();
    };
    let routes = parse_routes(&route);
    let mut out: Vec<(String, String)> = Vec::new();
    for addr in local_addresses(&trie) {
        let best = routes
            .iter()
            .filter(|r| u32::from(addr) & r.mask == r.destination && r.mask != 0)
            .max_by_key(|r| r.mask.count_ones());
        if let Some(r) = best {
            let entry = (r.iface.clone(), format!("{addr}/{}", r.mask.count_ones()));
            if !out.contains(&entry) {
                out.push(entry);
            }
        }
    }
    out
}

/// Addresses the trie marks "/32 host LOCAL", loopback excluded.
fn local_addresses(trie: &str) -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    let mut last: Option<Ipv4Addr> = None;
    for line in trie.lines() {
        let line = line.trim_start_matches([' ', '|', '+', '-']).trim();
        if let Ok(addr) = line.parse::<Ipv4Addr>() {
            last = Some(addr);
        } else if line.starts_with("/32 host LOCAL")
            && let Some(addr) = last
            && !addr.is_loopback()
            && !out.contains(&addr)
        {
            out.push(addr);
        }
    }
    out
}

struct Route {
    iface: String,
    destination: u32,
    mask: u32,
}

/// Directly connected routes of /proc/net/route (no gateway flag).
fn parse_routes(text: &str) -> Vec<Route> {
    const RTF_GATEWAY: u32 = 0x2;
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let hex = |s: &str| u32::from_str_radix(s, 16).ok();
            let flags = hex(f.get(3)?)?;
            if flags & RTF_GATEWAY != 0 {
                return None;
            }
            // The kernel prints the network-order word as a host-order number.
            let word = |s: &str| hex(s).map(|h| u32::from_be_bytes(h.to_ne_bytes()));
            Some(Route {
                iface: f.first()?.to_string(),
                destination: word(f.get(1)?)?,
                mask: word(f.get(7)?)?,
            })
        })
        .collect()
}

/// (interface, "addr/prefix") for IPv6 addresses other than link-local (scope 0x20).
fn ipv6_addresses(root: &SysRoot) -> Vec<(String, String)> {
    let Ok(text) = read_text(&root.proc_path("net/if_inet6")) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let addr = Ipv6Addr::from(u128::from_str_radix(f.first()?, 16).ok()?);
            let prefix = u8::from_str_radix(f.get(2)?, 16).ok()?;
            let scope = u8::from_str_radix(f.get(3)?, 16).ok()?;
            let iface = f.get(5)?;
            (scope != 0x20 && !addr.is_loopback())
                .then(|| (iface.to_string(), format!("{addr}/{prefix}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Fixture;

    const FIB_TRIE: &str = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n\
     +-- 127.0.0.0/8 2 0 2\n           |-- 127.0.0.1\n              /32 host LOCAL\n\
     +-- 192.0.2.0/24 2 0 2\n           |-- 192.0.2.0\n              /24 link UNICAST\n\
           |-- 192.0.2.2\n              /32 host LOCAL\n        |-- 192.0.2.255\n           /32 link BROADCAST\n\
     +-- 10.10.0.0/16 2 0 2\n           |-- 10.10.3.7\n              /32 host LOCAL\n\
Local:\n  +-- 0.0.0.0/0 3 0 5\n           |-- 192.0.2.2\n              /32 host LOCAL\n";
    const ROUTE: &str = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
ib0\t00000A0A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n";
    const IF_INET6: &str = "00000000000000000000000000000001 01 80 10 80       lo\n\
fd000000000000000000000000000002 04 40 00 82     eth0\n\
fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n";

    #[test]
    fn interfaces_with_addresses_and_unknown_speed() {
        let fx = Fixture::new();
        for (name, mtu, state, speed) in [
            ("lo", "65536", "unknown", "x"),
            ("eth0", "1500", "up", "-1"),
            ("ib0", "9000", "up", "100000"),
            ("br0", "1500", "down", ""),
        ] {
            fx.file(&format!("sys/class/net/{name}/mtu"), mtu);
            fx.file(&format!("sys/class/net/{name}/operstate"), state);
            if !speed.is_empty() {
                fx.file(&format!("sys/class/net/{name}/speed"), speed);
            }
        }
        fx.symlink(
            "sys/class/net/eth0/device/driver",
            "../../../bus/virtio/drivers/virtio_net",
        );
        fx.symlink(
            "sys/class/net/ib0/device/driver",
            "../../../bus/pci/drivers/mlx5_core",
        );
        fx.file("proc/net/fib_trie", FIB_TRIE);
        fx.file("proc/net/route", ROUTE);
        fx.file("proc/net/if_inet6", IF_INET6);
        let mut notes = Vec::new();
        let nics = interfaces(&fx.root(), &mut notes);
        assert!(notes.is_empty(), "{notes:?}");
        let names: Vec<&str> = nics.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["br0", "eth0", "ib0"], "lo skipped, sorted");
        let eth0 = &nics[1];
        assert_eq!(eth0.speed_mbps, None, "-1 is unknown");
        assert_eq!(eth0.mtu, Some(1500));
        assert_eq!(eth0.state.as_deref(), Some("up"));
        assert_eq!(eth0.driver.as_deref(), Some("virtio_net"));
        assert_eq!(eth0.addresses, ["192.0.2.2/24", "fd00::2/64"]);
        let ib0 = &nics[2];
        assert_eq!(ib0.speed_mbps, Some(100_000));
        assert_eq!(ib0.driver.as_deref(), Some("mlx5_core"));
        assert_eq!(ib0.addresses, ["10.10.3.7/16"]);
        let br0 = &nics[0];
        assert_eq!((br0.speed_mbps, br0.driver.as_deref()), (None, None));
    }

    #[test]
    fn no_sysfs_is_a_note() {
        let fx = Fixture::new();
        let mut notes = Vec::new();
        assert!(interfaces(&fx.root(), &mut notes).is_empty());
        assert_eq!(notes.len(), 1);
    }
}
