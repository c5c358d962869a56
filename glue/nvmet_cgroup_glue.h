/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C side of nvmet_cgroup: the only code that sees nvmet's private
 * structures.  Rust calls these functions through rust/ffi.rs.
 */
#ifndef NVMET_CGROUP_GLUE_H
#define NVMET_CGROUP_GLUE_H

#include <linux/types.h>

bool nvmet_cgroup_glue_nvmet_ready(void);

#endif /* NVMET_CGROUP_GLUE_H */
