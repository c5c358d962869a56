// SPDX-License-Identifier: GPL-2.0
/*
 * C glue between nvmet's private header and the Rust module.
 */
#include "nvmet.h"
#include "nvmet_cgroup_glue.h"

/*
 * Referencing an nvmet export makes modprobe load nvmet first and keeps
 * nvmet loaded while this module is.
 */
bool nvmet_cgroup_glue_nvmet_ready(void)
{
	return nvmet_wq;
}
