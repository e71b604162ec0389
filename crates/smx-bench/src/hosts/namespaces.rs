//! Two network namespaces joined by a veth pair, each standing for a host; deleted on drop.
//! Addresses live inside the two namespaces only, so nothing leaves this machine.

use std::process::Command;

pub struct Hosts {
    pub names: [String; 2],
    pub addresses: [String; 2],
    /// The CPU of each host: two different cores of this machine where it has two, as two
    /// hosts have a CPU each (else none, and both share every core).
    pub cores: [Option<usize>; 2],
    veth: String,
}

impl Hosts {
    /// The two hosts, or why they cannot be made here (not root, no `ip`).
    pub fn new() -> Result<Hosts, String> {
        if unsafe { libc::geteuid() } != 0 {
            return Err("simulating two hosts with network namespaces needs root".into());
        }
        let tag = std::process::id() % 100_000;
        let subnet = format!("10.214.{}", std::process::id() % 250);
        let allowed: Vec<usize> = core_affinity::get_core_ids()
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.id)
            .collect();
        let cores = match allowed[..] {
            [a, b, ..] => [Some(a), Some(b)],
            _ => [None, None],
        };
        let hosts = Hosts {
            names: [format!("smxbench-a{tag}"), format!("smxbench-b{tag}")],
            addresses: [format!("{subnet}.1"), format!("{subnet}.2")],
            cores,
            veth: format!("smxbv{tag}"),
        };
        let peer = format!("{}p", hosts.veth);
        let steps: [&[&str]; 5] = [
            &["netns", "add", &hosts.names[0]],
            &["netns", "add", &hosts.names[1]],
            &["link", "add", &hosts.veth, "type", "veth", "peer", "name", &peer],
            &["link", "set", &hosts.veth, "netns", &hosts.names[0]],
            &["link", "set", &peer, "netns", &hosts.names[1]],
        ];
        for step in steps {
            ip(None, step)?;
        }
        for (i, dev) in [hosts.veth.as_str(), peer.as_str()].into_iter().enumerate() {
            let address = format!("{}/24", hosts.addresses[i]);
            ip(Some(&hosts.names[i]), &["addr", "add", &address, "dev", dev])?;
            ip(Some(&hosts.names[i]), &["link", "set", dev, "up"])?;
            ip(Some(&hosts.names[i]), &["link", "set", "lo", "up"])?;
        }
        Ok(hosts)
    }

    /// Processes `a` and `b` of a deployment configuration, one on each host (and its core).
    pub fn config(&self) -> String {
        let mut text = String::new();
        for (i, name) in ["a", "b"].into_iter().enumerate() {
            text.push_str(&format!(
                "[process.{name}]\nhost = \"{}\"\nlaunch = \"ip netns exec {}\"\n",
                self.addresses[i], self.names[i]
            ));
            if let Some(core) = self.cores[i] {
                text.push_str(&format!("cores = [{core}]\n"));
            }
            text.push('\n');
        }
        text
    }

    /// The file that enters namespace `i` with `setns`.
    pub fn namespace_file(&self, i: usize) -> String {
        format!("/var/run/netns/{}", self.names[i])
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = ip(None, &["netns", "del", name]);
        }
    }
}

/// `ip [-n NAMESPACE] ARGS`, an error naming the command when it fails.
fn ip(namespace: Option<&str>, args: &[&str]) -> Result<(), String> {
    let mut command = Command::new("ip");
    if let Some(ns) = namespace {
        command.args(["-n", ns]);
    }
    let shown = || {
        format!(
            "`ip {}{}`",
            namespace.map(|n| format!("-n {n} ")).unwrap_or_default(),
            args.join(" ")
        )
    };
    match command.args(args).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "{} failed: {}",
            shown(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("{} cannot run: {e}", shown())),
    }
}
