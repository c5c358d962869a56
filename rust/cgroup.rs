// SPDX-License-Identifier: GPL-2.0

//! RAII wrappers for cgroup references, blkcg association and `memalloc_noio`.

use crate::ffi::raw;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{error::from_err_ptr, prelude::*};

/// A counted reference to a cgroup (v2).
///
/// # Invariants
///
/// `ptr` is a cgroup on which this value holds one reference.
pub(crate) struct CgroupRef {
    ptr: NonNull<raw::Cgroup>,
}

// SAFETY: cgroup references may be taken, used and dropped on any thread.
unsafe impl Send for CgroupRef {}
// SAFETY: The shared operations (`effective_io_css`, `clone`) are thread safe.
unsafe impl Sync for CgroupRef {}

impl CgroupRef {
    /// Looks up a cgroup by ID in the current task's cgroup namespace.
    pub(crate) fn from_id(id: u64) -> Result<Self> {
        // SAFETY: `cgroup_get_from_id` accepts any ID and returns a counted
        // reference or an `ERR_PTR`.
        let ptr = from_err_ptr(unsafe { raw::nvmet_cgroup_get_from_id(id) })?;
        NonNull::new(ptr).map(|ptr| Self { ptr }).ok_or(ENOENT)
    }

    /// Associates the current kernel thread with this cgroup's effective io
    /// css (its own, or its nearest ancestor's with the io controller), looked
    /// up now so that a removed cgroup falls back to a remaining ancestor.
    pub(crate) fn associate(&self) -> BlkcgAssociation {
        // SAFETY: By the type invariant the cgroup is alive; the call returns
        // a counted css reference (the root's at worst), never NULL.
        let css = unsafe { raw::nvmet_cgroup_io_css_get(self.ptr.as_ptr()) };
        // SAFETY: `css` is valid; the association takes its own reference,
        // so ours is dropped right away.
        unsafe {
            raw::nvmet_cgroup_associate_blkcg(css);
            raw::nvmet_cgroup_css_put(css);
        }
        BlkcgAssociation {
            _not_send: PhantomData,
        }
    }
}

impl Clone for CgroupRef {
    fn clone(&self) -> Self {
        // SAFETY: By the type invariant the cgroup is alive; this takes one
        // more reference for the new value.
        let ptr = unsafe { raw::nvmet_cgroup_get(self.ptr.as_ptr()) };
        Self {
            // SAFETY: `cgroup_get` returns its argument.
            ptr: unsafe { NonNull::new_unchecked(ptr) },
        }
    }
}

impl Drop for CgroupRef {
    fn drop(&mut self) {
        // SAFETY: By the type invariant this value owns one reference.
        unsafe { raw::nvmet_cgroup_put(self.ptr.as_ptr()) }
    }
}

/// The current kernel thread's bios are charged to a cgroup until this drops.
///
/// # Invariants
///
/// The current thread is associated with a blkcg by [`CgroupRef::associate`]
/// and this value does not leave the thread.
pub(crate) struct BlkcgAssociation {
    _not_send: PhantomData<*mut ()>,
}

impl Drop for BlkcgAssociation {
    fn drop(&mut self) {
        // SAFETY: Clearing the association is always allowed; by the type
        // invariant it is this thread's.
        unsafe { raw::nvmet_cgroup_associate_blkcg(core::ptr::null_mut()) }
    }
}

/// Memory allocations of the current thread do not start I/O until this drops.
///
/// # Invariants
///
/// `flags` is what `memalloc_noio_save` returned on this thread, which this
/// value does not leave.
pub(crate) struct NoIo {
    flags: u32,
    _not_send: PhantomData<*mut ()>,
}

impl NoIo {
    /// Enters a `memalloc_noio` scope.
    pub(crate) fn enter() -> Self {
        Self {
            // SAFETY: Always allowed; restored in `drop` on this thread.
            flags: unsafe { raw::nvmet_cgroup_noio_save() },
            _not_send: PhantomData,
        }
    }
}

impl Drop for NoIo {
    fn drop(&mut self) {
        // SAFETY: By the type invariant.
        unsafe { raw::nvmet_cgroup_noio_restore(self.flags) }
    }
}
