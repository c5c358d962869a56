// SPDX-License-Identifier: GPL-2.0

//! cgroup v2 groups, as reference-counted objects.
//!
//! Shaped like the kernel crate's own wrappers of C objects (`Opaque`,
//! [`AlwaysRefCounted`], [`ARef`]); the kernel crate has none for cgroups.

use crate::raw;
use core::ptr::NonNull;
use kernel::{
    bindings,
    error::from_err_ptr,
    prelude::*,
    sync::aref::{ARef, AlwaysRefCounted},
    types::Opaque,
};

/// A cgroup (v2).
///
/// # Invariants
///
/// Instances are only reached through references to a live `struct cgroup`,
/// on which the holder has a reference ([`ARef<Cgroup>`]) or borrows one.
#[repr(transparent)]
pub(crate) struct Cgroup(Opaque<bindings::cgroup>);

// SAFETY: cgroup references may be taken, used and dropped on any thread.
unsafe impl Send for Cgroup {}
// SAFETY: The operations through `&Cgroup` (counting, reading its effective io
// css in the glue) are thread safe.
unsafe impl Sync for Cgroup {}

// SAFETY: `cgroup_get` and `cgroup_put` count the cgroup's references, and
// the cgroup stays alive while any is held.
unsafe impl AlwaysRefCounted for Cgroup {
    fn inc_ref(&self) {
        // SAFETY: By the type invariant the cgroup is alive.
        unsafe { raw::nvmet_cgroup_get(self.0.get()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller gives up one reference it holds; `Cgroup` is
        // `repr(transparent)` over `struct cgroup`.
        unsafe { raw::nvmet_cgroup_put(obj.cast::<bindings::cgroup>().as_ptr()) }
    }
}

impl Cgroup {
    /// Looks up a cgroup by ID in the current task's cgroup namespace.
    pub(crate) fn from_id(id: u64) -> Result<ARef<Self>> {
        // SAFETY: `cgroup_get_from_id` accepts any ID and returns a counted
        // reference or an `ERR_PTR`.
        let ptr = from_err_ptr(unsafe { bindings::cgroup_get_from_id(id) })?;
        let ptr = NonNull::new(ptr).ok_or(ENOENT)?;
        // SAFETY: `ptr` carries the reference `cgroup_get_from_id` took, which
        // the `ARef` now owns; `Cgroup` is `repr(transparent)`.
        Ok(unsafe { ARef::from_raw(ptr.cast::<Self>()) })
    }

    /// The raw `struct cgroup`, for the glue.
    pub(crate) fn as_raw(&self) -> *mut bindings::cgroup {
        self.0.get()
    }
}
