// SPDX-License-Identifier: GPL-2.0

//! cgroup v2 groups and their subsystem states, as reference-counted objects.
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
// SAFETY: The operations through `&Cgroup` (the effective io css, counting) are
// thread safe.
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

    /// The cgroup's effective io css, looked up now: its own, or its nearest
    /// ancestor's with the io controller, so that a removed cgroup falls back
    /// to a remaining ancestor.
    pub(crate) fn effective_io_css(&self) -> ARef<CgroupSubsysState> {
        // SAFETY: By the type invariant the cgroup is alive, and the io
        // subsystem is a static of the kernel; the call returns a counted
        // css reference (the root's at worst), never NULL.
        let css =
            unsafe { bindings::cgroup_get_e_css(self.0.get(), &raw mut bindings::io_cgrp_subsys) };
        // SAFETY: Never NULL (see above); the `ARef` owns the reference taken.
        unsafe { ARef::from_raw(NonNull::new_unchecked(css).cast::<CgroupSubsysState>()) }
    }

    /// Whether `css` is what [`Cgroup::effective_io_css`] would look up
    /// now; cheap enough for every command (no reference is taken).
    pub(crate) fn effective_io_css_is(&self, css: &CgroupSubsysState) -> bool {
        // SAFETY: By the type invariants the cgroup and the css are alive;
        // the glue reads the css pointers of the cgroup and its ancestors
        // under RCU, and only compares `css` with them.
        unsafe { raw::nvmet_cgroup_e_io_css_is(self.0.get(), css.as_raw()) }
    }
}

/// A cgroup's state for one controller (a css).
///
/// # Invariants
///
/// Instances are only reached through references to a live
/// `struct cgroup_subsys_state`, on which the holder has a reference
/// ([`ARef<CgroupSubsysState>`]) or borrows one.
#[repr(transparent)]
pub(crate) struct CgroupSubsysState(Opaque<bindings::cgroup_subsys_state>);

// SAFETY: css references may be taken, used and dropped on any thread.
unsafe impl Send for CgroupSubsysState {}
// SAFETY: The operations through `&CgroupSubsysState` are thread safe.
unsafe impl Sync for CgroupSubsysState {}

// SAFETY: `css_get` and `css_put` count the css's references, and the css
// stays alive while any is held.
unsafe impl AlwaysRefCounted for CgroupSubsysState {
    fn inc_ref(&self) {
        // SAFETY: By the type invariant the css is alive.
        unsafe { raw::nvmet_cgroup_css_get(self.0.get()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller gives up one reference it holds;
        // `CgroupSubsysState` is `repr(transparent)`.
        unsafe { raw::nvmet_cgroup_css_put(obj.cast::<bindings::cgroup_subsys_state>().as_ptr()) }
    }
}

impl CgroupSubsysState {
    /// The raw `struct cgroup_subsys_state`, for the kernel's functions.
    pub(crate) fn as_raw(&self) -> *mut bindings::cgroup_subsys_state {
        self.0.get()
    }
}
