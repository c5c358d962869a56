// SPDX-License-Identifier: GPL-2.0

//! Raw declarations of the C glue (`nvmet_cgroup_glue.h`).
//!
//! bindgen generates them from the glue's header at build time (see the
//! `Makefile`), so they cannot drift from the C.  Only the safe abstractions
//! ([`crate::nvmet`], [`crate::cgroup`], [`crate::blkcg`], [`crate::noio`],
//! [`crate::inline_scope`], [`crate::exec_queue`]) and the entry points
//! ([`crate::entry`]) use them.

#![allow(
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    dead_code,
    improper_ctypes,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    unreachable_pub,
    unsafe_op_in_unsafe_fn
)]

include!(env!("NVMET_CGROUP_GLUE_RS"));
