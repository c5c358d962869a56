// SPDX-License-Identifier: GPL-2.0
//! The nvmet_cgroup module as seen from userspace: whether it is loaded and
//! what it says about where a namespace's commands run.

use std::collections::HashMap;

use anyhow::{bail, Result};

use crate::configfs::{Namespace, NsId};
use crate::paths::Roots;
use crate::sysio;

/// Fail with the operator's next step unless the module is loaded: enabling
/// a namespace with a cgroup_id fails with EOPNOTSUPP without it.
pub fn require_loaded(roots: &Roots, ns: &Namespace) -> Result<()> {
    if !roots.module_loaded() {
        bail!(
            "cannot enable {} with a cgroup: nvmet_cgroup is not loaded ({} is absent); load nvmet_cgroup (modprobe nvmet_cgroup) first",
            ns.label(),
            roots.module_dir().display()
        );
    }
    Ok(())
}

/// Where namespaces' commands run, from the module's status file
/// `DEBUGFS/nvmet_cgroup/namespaces`, read once: one line per enabled
/// namespace with a cgroup, `NQN NSID cgroup_id=ID mode=MODE lanes=N rw=WHERE` (the
/// ABI file documents it); NSID 0 is a passthru subsystem's controller.
pub struct ExecInfo {
    /// What follows `NQN NSID`, per namespace; or why nothing is known.
    lines: std::result::Result<HashMap<(String, NsId), String>, String>,
}

impl ExecInfo {
    pub fn load(roots: &Roots) -> ExecInfo {
        let lines = if !roots.module_loaded() {
            Err("module not loaded".to_string())
        } else {
            match sysio::read_opt(&roots.status_file()) {
                Ok(Some(text)) => Ok(parse_status(&text)),
                Ok(None) => {
                    Err("unknown (no nvmet_cgroup status file: is debugfs mounted?)".to_string())
                }
                Err(e) => Err(format!("unknown ({e:#})")),
            }
        };
        ExecInfo { lines }
    }

    /// Where `ns`'s commands run.
    pub fn of(&self, ns: &Namespace) -> String {
        match &self.lines {
            Err(why) => why.clone(),
            Ok(map) => map
                .get(&(ns.nqn.clone(), ns.nsid))
                .cloned()
                .unwrap_or_else(|| "not charged (not enabled with a cgroup)".to_string()),
        }
    }
}

fn parse_status(text: &str) -> HashMap<(String, NsId), String> {
    let mut map = HashMap::new();
    for line in text.lines() {
        let mut words = line.splitn(3, ' ');
        let (Some(nqn), Some(nsid)) = (words.next(), words.next()) else {
            continue;
        };
        let nsid = match nsid.parse::<u32>() {
            Ok(0) => NsId::Passthru,
            Ok(n) => NsId::Ns(n),
            Err(_) => continue,
        };
        let rest = words.next().unwrap_or("").trim().to_string();
        map.entry((nqn.to_string(), nsid)).or_insert(rest);
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NSID 0 is a passthru subsystem's controller.
    #[test]
    fn status_lines() {
        let m = parse_status("q 0 cgroup_id=5 mode=lanes rw=transport\nq 2 cgroup_id=6 mode=lanes rw=transport\nq x junk\n");
        assert_eq!(
            m.get(&("q".to_string(), NsId::Passthru))
                .map(String::as_str),
            Some("cgroup_id=5 mode=lanes rw=transport")
        );
        assert_eq!(
            m.get(&("q".to_string(), NsId::Ns(2))).map(String::as_str),
            Some("cgroup_id=6 mode=lanes rw=transport")
        );
        assert_eq!(m.len(), 2);
    }
}
