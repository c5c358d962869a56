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

/// Where the namespace's commands run, from
/// `DEBUGFS/nvmet_cgroup/NQN/NSID/exec` (one line) when the module exposes it.
pub fn exec_info(roots: &Roots, ns: &Namespace) -> String {
    if !roots.module_loaded() {
        return "module not loaded".to_string();
    }
    match sysio::read_opt(&roots.exec_info(&ns.nqn, ns.nsid)) {
        Ok(Some(s)) => s.lines().next().unwrap_or("").trim().to_string(),
        Ok(None) => "unknown (module does not expose it)".to_string(),
        Err(e) => format!("unknown ({e:#})"),
    }
}
