// SPDX-License-Identifier: GPL-2.0

//! The module's status file, `/sys/kernel/debug/nvmet_cgroup/namespaces`.
//!
//! One line per enabled namespace with a cgroup: where its Read and Write
//! commands run now and, if not in the transport's thread, why (the other
//! commands always run in the execution context).  It is computed when the
//! file is read, from the same facts the fast path decides from, so it
//! follows policies being enabled and turned off.  `nvmet-cgroup status`
//! prints it; [`NsStatus`] writes the format.
//! Nothing here is on the I/O path: namespaces are added when they are
//! enabled and removed when they are disabled.

use crate::{
    fast_path::Mode,
    nvmet::{BackingQueue, Namespace},
};
use core::fmt;
use kernel::{
    prelude::*,
    str::CString,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
};

/// What the status file shows of one enabled namespace.
pub(crate) struct NsStatus {
    nqn: CString,
    nsid: u32,
    cgroup_id: u64,
    file: bool,
    mode: Mode,
    /// A reference of its own on the namespace's queue, read when the file is.
    backing: BackingQueue,
    /// How many lanes the namespace's context has made, its fallback lane
    /// included ([`crate::exec`]).
    lanes: Atomic<u32>,
}

impl NsStatus {
    /// The namespace's line: `NQN NSID cgroup_id=ID mode=MODE lanes=N
    /// rw=WHERE`, `WHERE` being `transport` or `context: REASON`.
    fn line(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_fmt(fmt!(
            "{} {} cgroup_id={} mode={} lanes={} rw=",
            &*self.nqn,
            self.nsid,
            self.cgroup_id,
            self.mode.name(),
            self.lanes.load(Relaxed)
        ))?;
        match self
            .mode
            .decide_read_write(self.backing.queue_facts(), self.file)
        {
            Ok(()) => f.write_str("transport\n"),
            Err(why) => f.write_fmt(fmt!("context: {}\n", why.describe())),
        }
    }
}

/// A namespace's entry in the status file, from its enable to its disable.
pub(crate) struct Registration(Arc<NsStatus>);

impl Registration {
    /// Adds a namespace being enabled to the status file.
    pub(crate) fn new(ns: &Namespace, mode: Mode) -> Result<Self> {
        let status = Arc::new(
            NsStatus {
                nqn: CString::try_from(ns.subsys_nqn())?,
                nsid: ns.nsid(),
                cgroup_id: ns.cgroup_id(),
                file: ns.is_file(),
                mode,
                backing: ns.backing_queue(),
                lanes: Atomic::new(1),
            },
            GFP_KERNEL,
        )?;
        crate::STATE
            .lock()
            .namespaces
            .push(status.clone(), GFP_KERNEL)?;
        Ok(Self(status))
    }
}

impl Registration {
    /// Counts a lane the namespace's context made (a CPU's, or its deferred
    /// lane).
    pub(crate) fn lane_made(&self) {
        self.0.lanes.add(1, Relaxed);
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        crate::STATE
            .lock()
            .namespaces
            .retain(|s| !Arc::ptr_eq(s, &self.0));
    }
}

/// The status file's contents: every registered namespace, in enable order.
pub(crate) struct StatusFile;

// debugfs renders a file through `Debug` (followed by a newline).
impl fmt::Debug for StatusFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = crate::STATE.lock();
        for ns in state.namespaces.iter() {
            ns.line(f)?;
        }
        Ok(())
    }
}
