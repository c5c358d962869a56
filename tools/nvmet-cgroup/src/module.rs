// SPDX-License-Identifier: GPL-2.0
//! The nvmet_cgroup module as seen from userspace: whether it is loaded and
//! what it says about where a namespace's commands run.

use anyhow::{bail, Result};

use crate::configfs::Namespace;
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

/// Where the namespace's commands run, from the module's status file
/// `DEBUGFS/nvmet_cgroup/namespaces`: one line per enabled namespace with a
/// cgroup, `NQN NSID cgroup_id=ID mode=MODE rw=WHERE` (the ABI file
/// documents it); this returns what follows `NQN NSID`.
pub fn exec_info(roots: &Roots, ns: &Namespace) -> String {
    if !roots.module_loaded() {
        return "module not loaded".to_string();
    }
    let text = match sysio::read_opt(&roots.status_file()) {
        Ok(Some(s)) => s,
        Ok(None) => {
            return "unknown (no nvmet_cgroup status file: is debugfs mounted?)".to_string()
        }
        Err(e) => return format!("unknown ({e:#})"),
    };
    let nsid = ns.nsid.to_string();
    text.lines()
        .find_map(|line| {
            let mut words = line.splitn(3, ' ');
            (words.next() == Some(ns.nqn.as_str()) && words.next() == Some(nsid.as_str()))
                .then(|| words.next().unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "not charged (not enabled with a cgroup)".to_string())
}
