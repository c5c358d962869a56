// SPDX-License-Identifier: GPL-2.0

//! The module's foreign-function boundary.
//!
//! [`raw`] declares the C glue (`glue/nvmet_cgroup_glue.h`); the
//! `nvmet_cgroup_rs_*` functions below are the entry points the glue's
//! extension ops call.  They only turn raw pointers into the safe handles of
//! [`crate::nvmet`] and hand over to the policy code.

use crate::nvmet::{Ns, Req};
use kernel::{error::to_result, ffi::c_void, prelude::*};

pub(crate) mod raw {
    use kernel::{
        bindings,
        ffi::{c_char, c_int, c_uint},
    };

    /// `struct nvmet_ns`, private to nvmet: only ever behind a pointer.
    #[repr(C)]
    pub(crate) struct NvmetNs {
        _opaque: [u8; 0],
    }

    /// `struct nvmet_req`, private to nvmet: only ever behind a pointer.
    #[repr(C)]
    pub(crate) struct NvmetReq {
        _opaque: [u8; 0],
    }

    /// `struct request_queue`: only ever behind a pointer.
    #[repr(C)]
    pub(crate) struct RequestQueue {
        _opaque: [u8; 0],
    }

    /// `struct cgroup`: only ever behind a pointer.
    #[repr(C)]
    pub(crate) struct Cgroup {
        _opaque: [u8; 0],
    }

    /// `struct cgroup_subsys_state`: only ever behind a pointer.
    #[repr(C)]
    pub(crate) struct Css {
        _opaque: [u8; 0],
    }

    extern "C" {
        pub(crate) fn nvmet_cgroup_register() -> c_int;
        pub(crate) fn nvmet_cgroup_unregister();

        pub(crate) fn nvmet_cgroup_ns_enabled(ns: *const NvmetNs) -> bool;
        pub(crate) fn nvmet_cgroup_ns_buffered_io(ns: *const NvmetNs) -> bool;
        pub(crate) fn nvmet_cgroup_ns_device_path(ns: *const NvmetNs) -> *const c_char;
        pub(crate) fn nvmet_cgroup_ns_nsid(ns: *const NvmetNs) -> u32;
        pub(crate) fn nvmet_cgroup_ns_queue(ns: *const NvmetNs) -> *mut RequestQueue;

        pub(crate) fn nvmet_cgroup_req_ns_live(req: *const NvmetReq) -> bool;
        pub(crate) fn nvmet_cgroup_req_sq_dying(req: *const NvmetReq) -> bool;
        pub(crate) fn nvmet_cgroup_req_may_run_inline(
            req: *const NvmetReq,
            q: *mut RequestQueue,
        ) -> bool;
        pub(crate) fn nvmet_cgroup_req_abort(req: *mut NvmetReq);
        pub(crate) fn nvmet_cgroup_req_run(req: *mut NvmetReq, own_ctx: bool);
        pub(crate) fn nvmet_cgroup_req_push(
            list: *mut bindings::llist_head,
            req: *mut NvmetReq,
        ) -> bool;
        pub(crate) fn nvmet_cgroup_reqs_take(list: *mut bindings::llist_head) -> *mut NvmetReq;
        pub(crate) fn nvmet_cgroup_req_next(req: *const NvmetReq) -> *mut NvmetReq;

        pub(crate) fn nvmet_cgroup_get_from_id(id: u64) -> *mut Cgroup;
        pub(crate) fn nvmet_cgroup_get(cgrp: *mut Cgroup) -> *mut Cgroup;
        pub(crate) fn nvmet_cgroup_put(cgrp: *mut Cgroup);
        pub(crate) fn nvmet_cgroup_io_css_get(cgrp: *mut Cgroup) -> *mut Css;
        pub(crate) fn nvmet_cgroup_css_put(css: *mut Css);
        pub(crate) fn nvmet_cgroup_associate_blkcg(css: *mut Css);
        pub(crate) fn nvmet_cgroup_noio_save() -> c_uint;
        pub(crate) fn nvmet_cgroup_noio_restore(flags: c_uint);

        pub(crate) fn nvmet_cgroup_alloc_workqueue() -> *mut bindings::workqueue_struct;
        pub(crate) fn nvmet_cgroup_this_cpu() -> c_uint;
        pub(crate) fn nvmet_cgroup_nr_cpu_ids() -> c_uint;
        pub(crate) fn nvmet_cgroup_kstrtou64(s: *const c_char, res: *mut u64) -> c_int;
    }
}

/// Registers the extension with nvmet.
pub(crate) fn register() -> Result {
    // SAFETY: The glue's ops table is static and its callbacks are the
    // functions below, which stay valid until `unregister` returns.
    to_result(unsafe { raw::nvmet_cgroup_register() })
}

/// Unregisters the extension; no callback runs after this returns.
pub(crate) fn unregister() {
    // SAFETY: Only called after a successful `register`.
    unsafe { raw::nvmet_cgroup_unregister() }
}

/// Converts a show/store result to what configfs expects.
fn ssize(r: Result<usize>) -> isize {
    match r {
        // A configfs page is one page: the count always fits.
        Ok(n) => n as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// `cgroup_id` show, called by nvmet with the subsystem's lock held.
///
/// # Safety
///
/// `ns` is a live namespace and `page` a writable configfs page.
#[no_mangle]
unsafe extern "C" fn nvmet_cgroup_rs_id_show(ns: *mut raw::NvmetNs, page: *mut u8) -> isize {
    // SAFETY: The caller passes a configfs page: `PAGE_SIZE` writable bytes.
    let page = unsafe { core::slice::from_raw_parts_mut(page, kernel::page::PAGE_SIZE) };
    // SAFETY: `ns` is live and its subsystem's lock is held for this call.
    let ns = unsafe { Ns::from_raw(ns) };
    ssize(crate::cgroup_id::show(&ns, page))
}

/// `cgroup_id` store, called by nvmet with the subsystem's lock held.
///
/// # Safety
///
/// `ns` is a live namespace and `page` points to `count` readable bytes.
#[no_mangle]
unsafe extern "C" fn nvmet_cgroup_rs_id_store(
    ns: *mut raw::NvmetNs,
    page: *const u8,
    count: usize,
) -> isize {
    // SAFETY: configfs passes `count` readable bytes.
    let input = unsafe { core::slice::from_raw_parts(page, count) };
    // SAFETY: `ns` is live and its subsystem's lock is held for this call.
    let ns = unsafe { Ns::from_raw(ns) };
    ssize(crate::cgroup_id::store(&ns, input).map(|()| count))
}

/// Namespace enable: returns its execution context, NULL or an `ERR_PTR`.
///
/// # Safety
///
/// `ns` is a live namespace being enabled under its subsystem's lock.
#[no_mangle]
unsafe extern "C" fn nvmet_cgroup_rs_ns_enable(ns: *mut raw::NvmetNs) -> *mut c_void {
    // SAFETY: As required by this function's contract.
    let ns = unsafe { Ns::from_raw(ns) };
    match crate::exec::NsExec::enable(&ns) {
        Ok(Some(ctx)) => ctx.into_raw().cast(),
        Ok(None) => core::ptr::null_mut(),
        Err(e) => e.to_ptr(),
    }
}

/// Namespace disable, once every command of the namespace has completed.
///
/// # Safety
///
/// `ctx` was returned by [`nvmet_cgroup_rs_ns_enable`] for `ns` and is not
/// used by nvmet after this call.
#[no_mangle]
unsafe extern "C" fn nvmet_cgroup_rs_ns_disable(ns: *mut raw::NvmetNs, ctx: *mut c_void) {
    // SAFETY: As required by this function's contract.
    let ns = unsafe { Ns::from_raw(ns) };
    // SAFETY: `ctx` came from `NsExec::into_raw` and nvmet gives it back once.
    let ctx = unsafe { crate::exec::NsExec::from_raw(ctx.cast()) };
    ctx.disable(&ns);
}

/// The namespace is being freed: forget its configuration.
///
/// # Safety
///
/// `ns` is the namespace being freed.
#[no_mangle]
unsafe extern "C" fn nvmet_cgroup_rs_ns_free(ns: *mut raw::NvmetNs) {
    // SAFETY: Only the address is used, as a key.
    let ns = unsafe { Ns::from_raw(ns) };
    crate::cgroup_id::forget(&ns);
}

/// Takes over an I/O command of a namespace with a context.
///
/// # Safety
///
/// `req` is a parsed command of a namespace whose context is `ctx`; the
/// command belongs to the extension until it is run or aborted.
#[no_mangle]
unsafe extern "C" fn nvmet_cgroup_rs_execute(req: *mut raw::NvmetReq, ctx: *mut c_void) {
    // SAFETY: As required by this function's contract.
    let req = unsafe { Req::from_raw(req) };
    // SAFETY: The namespace is enabled while it has commands, so its context
    // (from `NsExec::into_raw`) is alive.
    let ctx = unsafe { crate::exec::NsExec::borrow_raw(ctx.cast()) };
    ctx.submit(req);
}
