// SPDX-License-Identifier: GPL-2.0

//! Charge the I/O of NVMe-oF target namespaces to cgroups.
//!
//! nvmet keeps each namespace's `cgroup_id` (configfs).  When a namespace
//! with one is enabled, nvmet asks this module, its execution extension
//! (`struct nvmet_exec_ext_ops`), for a context: the namespace's I/O
//! commands then run in it ([`exec`]), or in the transport's thread where
//! that is safe ([`fast_path`]), associated with the cgroup's effective io
//! css, so the block layer's io.max, io.cost and io.latency apply to that
//! namespace alone.
//!
//! Layers, imports pointing one way: [`entry`] (what nvmet calls) → policy
//! ([`exec`], [`fast_path`], [`cgroup_id`], [`status`]) → safe abstractions
//! of the C objects, shaped like the kernel crate's ([`nvmet`], [`cgroup`],
//! [`blkcg`], [`noio`], [`inline_scope`], [`exec_queue`]) → raw
//! declarations ([`raw`], generated from the glue's header).  Only the
//! abstractions and [`entry`] contain `unsafe`.

use kernel::{debugfs, prelude::*, sync::Arc};

mod blkcg;
mod cgroup;
mod cgroup_id;
mod entry;
mod exec;
mod exec_queue;
mod fast_context;
mod fast_path;
mod inline_scope;
mod noio;
mod nvmet;
mod raw;
mod status;

module! {
    type: NvmetCgroup,
    name: "nvmet_cgroup",
    authors: ["nvmet-cgroup developers"],
    description: "Charge nvmet namespace I/O to a cgroup",
    license: "GPL",
    params: {
        fast_path: bool {
            default: true,
            description: "Run Read/Write inline where no policy can sleep the caller (0: never)",
        },
        inline_assoc: bool {
            default: false,
            description: "Diagnostic: run Read/Write in the transport's thread (can stall it)",
        },
    },
}

/// State shared by every namespace.
pub(crate) struct State {
    /// The queues every namespace's workers run on; `None` outside the
    /// module's lifetime.
    queue: Option<Arc<exec_queue::ExecQueues>>,
    /// The enabled namespaces the status file shows.
    namespaces: KVec<Arc<status::NsStatus>>,
}

kernel::sync::global_lock! {
    // SAFETY: Initialised in `NvmetCgroup::init` before nvmet can call in.
    unsafe(uninit) static STATE: Mutex<State> = State {
        queue: None,
        namespaces: KVec::new(),
    };
}

/// The queues for a namespace being enabled.
pub(crate) fn shared_queues() -> Result<Arc<exec_queue::ExecQueues>> {
    STATE.lock().queue.clone().ok_or(ENODEV)
}

struct NvmetCgroup {
    /// `nvmet_cgroup/namespaces` in debugfs ([`status`]); dropped after
    /// the extension is unregistered.
    _status_file: Pin<KBox<debugfs::File<status::StatusFile>>>,
    _debugfs: debugfs::Dir,
}

impl kernel::Module for NvmetCgroup {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: Called once, before anything uses `STATE`.
        unsafe { STATE.init() };
        let dir = debugfs::Dir::new(c"nvmet_cgroup");
        let status_file = KBox::pin_init(
            dir.read_only_file(c"namespaces", status::StatusFile),
            GFP_KERNEL,
        )?;
        let queue = Arc::new(exec_queue::ExecQueues::new()?, GFP_KERNEL)?;
        STATE.lock().queue = Some(queue);
        if let Err(e) = entry::register() {
            pr_err!("cannot register with nvmet: {:?}\n", e);
            let queue = STATE.lock().queue.take();
            drop(queue);
            return Err(e);
        }
        pr_info!("loaded\n");
        Ok(NvmetCgroup {
            _status_file: status_file,
            _debugfs: dir,
        })
    }
}

impl Drop for NvmetCgroup {
    fn drop(&mut self) {
        // No namespace holds a context: each enabled one holds a reference on
        // the module.  A call from nvmet for a namespace disabled just before
        // may still be returning through `exec::Dispatch::run` (holding a
        // lane): `unregister` returns only once it has.
        entry::unregister();
        let queue = STATE.lock().queue.take();
        // Without the lock: a worker of a namespace disabled just before may
        // still be returning from its last command (disabling does not wait
        // for it, see `exec`), and holds its lane, which holds a reference on
        // the queues.  Draining waits for it, so the last reference is this
        // one, and nothing of the module runs once it is dropped.
        if let Some(queue) = &queue {
            queue.drain();
        }
        drop(queue);
        pr_info!("unloaded\n");
    }
}
