// SPDX-License-Identifier: GPL-2.0

//! The functions nvmet calls, through the extension ops of the glue.
//!
//! They only turn raw pointers into the safe handles of [`crate::nvmet`] and
//! the context nvmet holds back into its owner, and hand over to the policy
//! code ([`crate::exec`]).  The context is a `KBox<NsExec>` given to nvmet
//! with [`ForeignOwnable::into_foreign`] when a namespace is enabled and taken
//! back with [`ForeignOwnable::from_foreign`] when it is disabled.

use crate::{
    exec::NsExec,
    nvmet::{Facts, Namespace, Req},
    raw,
};
use kernel::{ffi::c_void, prelude::*, types::ForeignOwnable};

/// What nvmet holds for an enabled namespace with a cgroup.
type Context = KBox<NsExec>;

// The glue's header, through bindgen, declares these entry points too: make
// the compiler check that both sides agree on their types.
const _: [unsafe extern "C" fn(*mut raw::nvmet_ns) -> *mut c_void; 2] =
    [raw::nvmet_cgroup_rs_ns_enable, nvmet_cgroup_rs_ns_enable];
const _: [unsafe extern "C" fn(*mut raw::nvmet_ns, *mut c_void); 2] =
    [raw::nvmet_cgroup_rs_ns_disable, nvmet_cgroup_rs_ns_disable];
const _: [unsafe extern "C" fn(*mut raw::nvmet_req, *mut c_void, u32); 2] =
    [raw::nvmet_cgroup_rs_execute, nvmet_cgroup_rs_execute];

/// Namespace enable: returns the namespace's context or an `ERR_PTR`.
///
/// # Safety
///
/// `ns` is a namespace with a cgroup ID being enabled under its subsystem's
/// lock, with its backend open.
#[no_mangle]
unsafe extern "C" fn nvmet_cgroup_rs_ns_enable(ns: *mut raw::nvmet_ns) -> *mut c_void {
    // SAFETY: As required by this function's contract.
    let ns = unsafe { Namespace::from_raw(ns) };
    match NsExec::enable(ns) {
        Ok(ctx) => ctx.into_foreign(),
        Err(e) => e.to_ptr(),
    }
}

/// Namespace disable, once every command of the namespace has completed.
///
/// # Safety
///
/// `ctx` was returned by [`nvmet_cgroup_rs_ns_enable`] for `ns`, and nvmet
/// does not use it after this call.
#[no_mangle]
unsafe extern "C" fn nvmet_cgroup_rs_ns_disable(_ns: *mut raw::nvmet_ns, ctx: *mut c_void) {
    // SAFETY: `ctx` came from `into_foreign` and nvmet gives it back once.
    let ctx = unsafe { Context::from_foreign(ctx) };
    ctx.disable();
}

/// Takes over an I/O command of a namespace with a context that the glue's
/// `execute` (nvmet's `execute` of the extension) did not run in the
/// caller's thread itself, with the facts it read.
///
/// # Safety
///
/// `req` is a parsed command of a namespace whose context is `ctx`; the
/// command belongs to the extension until it is run or aborted.  The context
/// is not given back to [`nvmet_cgroup_rs_ns_disable`] before the command
/// completes, which it may do as soon as it runs or is queued, before this
/// returns; nvmet keeps the module's code until then.
#[no_mangle]
unsafe extern "C" fn nvmet_cgroup_rs_execute(
    req: *mut raw::nvmet_req,
    ctx: *mut c_void,
    facts: u32,
) {
    // SAFETY: As required by this function's contract.
    let req = unsafe { Req::from_raw(req) };
    // SAFETY: `ctx` came from `into_foreign`: nvmet stored it in
    // `ns->exec_ctx` before publishing `ns->exec_ext` with a release, and
    // redirected this command only after an acquire load saw `exec_ext`, so
    // it passes the pointer `ns_enable` returned and the context it
    // initialised, on any architecture (the glue passes it on unchanged).
    // The borrow ends when `dispatch` returns, before the command runs or
    // is queued (see above): `Dispatch` holds nothing of the context.
    let dispatch = unsafe { Context::borrow(ctx) }.dispatch(req, Facts::from_glue(facts));
    dispatch.run();
}

/// Registers the extension with nvmet: from now on, enabling a namespace with
/// a cgroup ID calls [`nvmet_cgroup_rs_ns_enable`].
pub(crate) fn register() -> Result {
    // SAFETY: The glue's ops table is static and its callbacks are the entry
    // points above, which stay valid until `unregister` returns.
    kernel::error::to_result(unsafe { raw::nvmet_cgroup_register() })
}

/// Unregisters the extension.  No namespace holds a context then: each
/// enabled one holds a reference on the module, which is only unloaded
/// without any.  Returns once every call to [`nvmet_cgroup_rs_execute`] has
/// returned (nvmet's SRCU).
pub(crate) fn unregister() {
    // SAFETY: Only called after a successful `register`.
    unsafe { raw::nvmet_cgroup_unregister() }
}
