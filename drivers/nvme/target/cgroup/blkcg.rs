// SPDX-License-Identifier: GPL-2.0

//! The current kernel thread's blkcg association, as a scope guard.

use crate::{cgroup::Cgroup, raw};
use core::{marker::PhantomData, ptr::NonNull};
use kernel::bindings;

/// The current kernel thread's bios are charged to a cgroup until this drops.
///
/// Dropping it clears the thread's association rather than restoring an
/// earlier one: the kernel has no exported way to read that, and the threads
/// nvmet executes commands from (transport work items, the module's lane
/// workers) carry none.
///
/// The association's own reference on the css is the only one: the value
/// keeps the css's address to compare, and never uses the css itself.
///
/// # Invariants
///
/// The current thread is associated with the blkcg of `css` by
/// [`BlkcgAssociation::associate`], which holds a reference on `css` until
/// the value drops; the value does not leave the thread.
pub(crate) struct BlkcgAssociation {
    css: NonNull<bindings::cgroup_subsys_state>,
    _not_send: PhantomData<*mut ()>,
}

impl BlkcgAssociation {
    /// Associates the current kernel thread with `cgroup`'s effective io css
    /// (its own, or its nearest ancestor's, that is not being removed),
    /// looked up now.
    pub(crate) fn associate(cgroup: &Cgroup) -> Self {
        // SAFETY: By the type invariant of `Cgroup` the cgroup is alive; the
        // glue associates the thread with a css it found alive under RCU,
        // which the association now holds a reference on, and returns it
        // (never NULL: at worst the io root's css).  `drop` clears the
        // association on this thread.
        let css = unsafe { raw::nvmet_cgroup_associate(cgroup.as_raw()) };
        // INVARIANT: The thread was associated with `css` just above.
        Self {
            // SAFETY: Never NULL (see above).
            css: unsafe { NonNull::new_unchecked(css) },
            _not_send: PhantomData,
        }
    }

    /// Whether the association is still `cgroup`'s effective io css, the one
    /// it was made for: false once io was enabled above the cgroup (it has a
    /// css of its own now) or its css is dying (io disabled above it, the
    /// cgroup removed), whose bios the block layer would send to the root
    /// (`bio_associate_blkg` only takes online csses).
    pub(crate) fn is_current(&self, cgroup: &Cgroup) -> bool {
        // SAFETY: By the type invariant of `Cgroup` the cgroup is alive; the
        // glue reads the css pointers of the cgroup and its ancestors under
        // RCU and only compares `css`'s address with them, which cannot be
        // another css's: by the type invariant the thread's association
        // holds a reference on it while this value lives.
        unsafe { raw::nvmet_cgroup_e_io_css_is(cgroup.as_raw(), self.css.as_ptr()) }
    }
}

impl Drop for BlkcgAssociation {
    fn drop(&mut self) {
        // SAFETY: Clearing the association is always allowed; by the type
        // invariant it is this thread's, and it drops the reference on `css`.
        unsafe { raw::nvmet_cgroup_unassociate() };
    }
}
