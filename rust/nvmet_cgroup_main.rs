// SPDX-License-Identifier: GPL-2.0

//! Charge the I/O of NVMe-oF target namespaces to cgroups.

use kernel::prelude::*;

mod ffi;

module! {
    type: NvmetCgroup,
    name: "nvmet_cgroup",
    authors: ["nvmet-cgroup developers"],
    description: "Charge nvmet namespace I/O to a cgroup",
    license: "GPL",
}

struct NvmetCgroup;

impl kernel::Module for NvmetCgroup {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        if !ffi::nvmet_ready() {
            pr_err!("nvmet is not initialised\n");
            return Err(ENODEV);
        }
        pr_info!("loaded\n");
        Ok(NvmetCgroup)
    }
}

impl Drop for NvmetCgroup {
    fn drop(&mut self) {
        pr_info!("unloaded\n");
    }
}
