// SPDX-License-Identifier: GPL-2.0

//! The scope of a command run in the transport's own thread, entered and
//! left in one call each.

use crate::{cgroup::Cgroup, nvmet::Req, raw};
use core::{marker::PhantomData, mem::ManuallyDrop};

/// Until this drops or runs a command, the current thread's allocations do
/// not start I/O (`memalloc_noio`) and, if it was entered charged, its bios
/// are charged to a cgroup: what [`crate::noio::NoIo`] and
/// [`crate::blkcg::BlkcgAssociation`] do for a lane's run, for one command.
///
/// It serves the commands the Rust side runs in the transport's thread
/// (those of a namespace being disabled, uncharged); the fast path's
/// common case never reaches Rust: the glue's `execute` enters, runs and
/// leaves the same scope itself ([`crate::fast_context`]).  One value for
/// both guards takes two calls between the module and the kernel where the
/// guards and the run took five.
///
/// # Invariants
///
/// `noio_flags` is what `memalloc_noio_save` returned on this thread, which
/// the value does not leave; if `charged`, the thread is associated with
/// the effective io css of the cgroup it was entered for, holding a
/// reference on that css, until the value drops or runs a command.
pub(crate) struct InlineScope {
    noio_flags: u32,
    charged: bool,
    _not_send: PhantomData<*mut ()>,
}

impl InlineScope {
    /// Enters a `memalloc_noio` scope and, if `charge`, associates the
    /// current kernel thread with `cgroup`'s effective io css (its own, or
    /// its nearest ancestor's, that is not being removed), looked up now.
    pub(crate) fn enter(cgroup: &Cgroup, charge: bool) -> Self {
        // SAFETY: By the type invariant of `Cgroup` the cgroup is alive; the
        // glue saves the NOIO flags and, if `charge`, associates the thread
        // with a css it found alive under RCU, on which the association
        // holds a reference.  `drop` or `run` leaves both on this thread.
        let noio_flags = unsafe { raw::nvmet_cgroup_inline_enter(cgroup.as_raw(), charge) };
        // INVARIANT: Entered just above, on this thread.
        Self {
            noio_flags,
            charged: charge,
            _not_send: PhantomData,
        }
    }

    /// Runs `req`'s own `execute` in the caller's (transport's) context
    /// within this scope, then leaves the scope.
    pub(crate) fn run(self, req: Req) {
        let scope = ManuallyDrop::new(self);
        // SAFETY: The command is handed back to nvmet, which runs it once;
        // by the type invariant the scope is this thread's, and the glue
        // leaves it (ends the association, dropping its reference, then
        // restores the NOIO flags) once `execute` returns.  `drop` does not
        // run for `scope`.
        unsafe {
            raw::nvmet_cgroup_inline_run_leave(req.into_raw(), scope.noio_flags, scope.charged)
        }
    }
}

impl Drop for InlineScope {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the scope is this thread's: ending the
        // association drops its reference, then the NOIO flags are restored.
        unsafe { raw::nvmet_cgroup_inline_leave(self.noio_flags, self.charged) }
    }
}
