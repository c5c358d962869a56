// SPDX-License-Identifier: GPL-2.0

//! The part of a namespace's context that the glue's `execute` reads.

use crate::{cgroup::Cgroup, fast_path::Rule, nvmet::BackingQueue, raw};
use kernel::sync::aref::ARef;

/// The fast path's rule and what a command run in the transport's thread
/// needs (`struct nvmet_cgroup_fast`), with the references that keep them.
///
/// The glue's `execute` reads `raw` at the start of the namespace's context
/// ([`crate::exec::NsExec`] puts this value first): it runs a command in
/// the caller's thread, associated with `cgroup`, when the command's facts
/// read from `backing` match the rule, and hands the others to the Rust
/// side, so that the common case makes no call between the glue and Rust.
///
/// # Invariants
///
/// `raw.queue` is `_backing`'s queue (or NULL) and `raw.cgrp` is `cgroup`:
/// both are alive while the value is.  `raw.plain_queue` is `raw.queue` if
/// the rule is the plain one ([`Rule::is_plain`]) and the queue is blk-mq,
/// else NULL.
#[repr(C)]
pub(crate) struct FastContext {
    raw: raw::nvmet_cgroup_fast,
    /// Held for the reference on the queue.
    _backing: BackingQueue,
    cgroup: ARef<Cgroup>,
}

// Where the glue finds it.
const _: () = assert!(core::mem::offset_of!(FastContext, raw) == 0);

// SAFETY: The raw part only mirrors `backing` and `cgroup`, which are `Send`
// and `Sync`; the glue only reads the rule and passes the pointers on.
unsafe impl Send for FastContext {}
// SAFETY: As above: nothing writes the raw part after `new`.
unsafe impl Sync for FastContext {}

impl FastContext {
    /// The context of a namespace whose commands read their facts from
    /// `backing`, are charged to `cgroup`, and run in the caller's thread
    /// when they match `rule`.
    ///
    /// The glue's plain test does not ask whether the queue is blk-mq (a
    /// queue is blk-mq or not from its allocation on): it is asked here.  A
    /// queue not live now is not taken for a plain one, so its commands are
    /// tested by their facts, which say it once it is live.
    pub(crate) fn new(rule: Rule, backing: BackingQueue, cgroup: ARef<Cgroup>) -> Self {
        let queue = backing.as_raw();
        let plain = rule.is_plain() && backing.queue_facts().is_some_and(|q| q.blk_mq());
        // INVARIANT: The pointers are those of the references stored with
        // them; the plain queue is the queue for a plain rule on a blk-mq
        // queue only.
        Self {
            raw: raw::nvmet_cgroup_fast {
                mask: rule.mask,
                want: rule.want,
                queue,
                cgrp: cgroup.as_raw(),
                plain_queue: if plain { queue } else { core::ptr::null_mut() },
            },
            _backing: backing,
            cgroup,
        }
    }

    /// The cgroup the namespace's commands are charged to.
    pub(crate) fn cgroup(&self) -> &ARef<Cgroup> {
        &self.cgroup
    }
}
