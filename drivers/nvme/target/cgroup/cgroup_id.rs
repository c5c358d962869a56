// SPDX-License-Identifier: GPL-2.0

//! The namespace's cgroup binding, resolved when the namespace is enabled.
//!
//! nvmet owns `cgroup_id`: the value and its configfs file (v12's ABI:
//! parsing, EBUSY while enabled, 0 clears), kept with the namespace whatever
//! the module does.  It calls the module only to enable a namespace whose
//! `cgroup_id` is set; this checks what v12 checks at that point.

use crate::{cgroup::Cgroup, nvmet::Namespace};
use kernel::{prelude::*, sync::aref::ARef};

/// The cgroup a namespace being enabled charges its I/O to, looked up in the
/// enabling task's cgroup namespace.
pub(crate) fn resolve(ns: &Namespace) -> Result<ARef<Cgroup>> {
    let id = ns.cgroup_id();
    // Writeback of buffered writes is charged through the page cache's
    // memcg, not to this cgroup.
    if ns.buffered_io() {
        pr_err!(
            "cgroup_id is not supported with buffered_io: {}\n",
            ns.device_path()
        );
        return Err(EINVAL);
    }
    Cgroup::from_id(id).inspect_err(|e| match ns.nsid() {
        // nvmet's stand-in for a passthru controller.
        0 => pr_err!(
            "failed to resolve cgroup id {} for passthru subsystem {}: {:?}\n",
            id,
            ns.subsys_nqn(),
            e
        ),
        nsid => pr_err!(
            "failed to resolve cgroup id {} for nsid {}: {:?}\n",
            id,
            nsid,
            e
        ),
    })
}
