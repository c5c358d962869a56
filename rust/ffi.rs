// SPDX-License-Identifier: GPL-2.0

//! The module's only foreign-function layer: safe wrappers around the C glue.

mod raw {
    extern "C" {
        pub(super) fn nvmet_cgroup_glue_nvmet_ready() -> bool;
    }
}

/// Whether nvmet has finished its module initialisation.
pub(crate) fn nvmet_ready() -> bool {
    // SAFETY: The glue function only reads an exported pointer.
    unsafe { raw::nvmet_cgroup_glue_nvmet_ready() }
}
