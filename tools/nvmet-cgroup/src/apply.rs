// SPDX-License-Identifier: GPL-2.0
//! `limit`: writing io.max, io.weight and io.latency settings for every leaf
//! device of a bound namespace (also used by `restore`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use crate::bind::show_rel;
use crate::cgroupfs;
use crate::cli::LimitArgs;
use crate::configfs::Namespace;
use crate::device::{self, DevLookup, DevT, Resolved};
use crate::limits::{self, Change, DevLimits};
use crate::paths::Roots;
use crate::sysio;

/// The cgroup a namespace is bound to: its ID and path.
pub fn bound_cgroup(roots: &Roots, ns: &Namespace) -> Result<(u64, String)> {
    let id = ns.cgroup_id()?;
    if id == 0 {
        bail!(
            "{} is not bound to a cgroup (cgroup_id is 0): bind it first",
            ns.label()
        );
    }
    let rel = cgroupfs::find_by_id(roots, id)?.ok_or_else(|| {
        anyhow!(
            "{}: cgroup_id {id} matches no cgroup under {} (stale id? bind it again)",
            ns.label(),
            roots.cgroupfs.display()
        )
    })?;
    Ok((id, rel))
}

/// The namespace's backing device and its leaf disks.
pub fn ns_devices(roots: &Roots, lookup: &dyn DevLookup, ns: &Namespace) -> Result<Resolved> {
    let dp = ns.device_path()?;
    if dp.is_empty() {
        bail!("{} has no device_path", ns.label());
    }
    device::resolve_path(roots, lookup, Path::new(&dp))
        .with_context(|| format!("{}: device_path {dp}", ns.label()))
}

fn control_files(dir: &Path, change: &Change) -> Vec<(PathBuf, &'static str)> {
    let mut v = Vec::new();
    if change.has_io_max() {
        v.push((dir.join("io.max"), "blk-throttle"));
    }
    if change.weight.is_some() {
        v.push((dir.join("io.weight"), "io.cost or bfq"));
    }
    if change.latency.is_some() {
        v.push((dir.join("io.latency"), "io.latency"));
    }
    v
}

/// Fail unless the cgroup has the files the change writes.
pub fn check_files(dir: &Path, change: &Change) -> Result<()> {
    for (f, policy) in control_files(dir, change) {
        // io enabled (io.max is there) and still no io.latency: the kernel
        // lacks the controller, as Debian's does; say so rather than blame
        // the parent's subtree_control.
        if policy == "io.latency" && !f.is_file() && dir.join("io.max").is_file() {
            bail!(
                "io.latency is not available on this kernel (built without CONFIG_BLK_CGROUP_IOLATENCY, as Debian's kernels are): {} does not exist; use --weight (io.cost) or --riops/--wiops/--rbps/--wbps (io.max) instead",
                f.display()
            );
        }
        if !f.is_file() {
            bail!(
                "{} does not exist (io not enabled in the parent's cgroup.subtree_control, or no {policy} in this kernel)",
                f.display()
            );
        }
    }
    Ok(())
}

/// Write a change for one device; returns the lines written, with their file.
pub fn write_change(dir: &Path, dev: DevT, change: &Change) -> Result<Vec<String>> {
    let mut done = Vec::new();
    let lines = [
        ("io.max", change.io_max_line(dev)),
        ("io.weight", change.weight_line(dev)),
        ("io.latency", change.latency_line(dev)),
    ];
    for (file, line) in lines {
        if let Some(l) = line {
            sysio::write_control(&dir.join(file), &l)?;
            done.push(format!("{file} \"{l}\""));
        }
    }
    Ok(done)
}

/// The limits in effect for `dev` in the cgroup `dir`.
pub fn read_limits(dir: &Path, dev: DevT) -> Result<DevLimits> {
    let get =
        |f: &str| -> Result<String> { Ok(sysio::read_opt(&dir.join(f))?.unwrap_or_default()) };
    Ok(limits::limits_for(
        &get("io.max")?,
        &get("io.weight")?,
        &get("io.latency")?,
        dev,
    ))
}

/// How a device is shown: `8:16 (sdb)`.
pub fn show_dev(roots: &Roots, dev: DevT) -> String {
    match device::dev_name(roots, dev) {
        Some(n) => format!("{dev} ({n})"),
        None => dev.to_string(),
    }
}

pub fn limit(
    roots: &Roots,
    lookup: &dyn DevLookup,
    args: &LimitArgs,
    out: &mut String,
) -> Result<()> {
    let ns = Namespace::open(roots, &args.ns.nqn, args.ns.nsid)?;
    let change = Change {
        riops: args.riops,
        wiops: args.wiops,
        rbps: args.rbps,
        wbps: args.wbps,
        weight: args.weight,
        latency: args.latency,
    };
    if change.is_empty() {
        bail!("give at least one of --riops, --wiops, --rbps, --wbps, --weight, --latency");
    }
    let (_, rel) = bound_cgroup(roots, &ns)?;
    let dir = roots.cgroup_dir(&rel);
    let res = ns_devices(roots, lookup, &ns)?;
    check_files(&dir, &change)?;
    let _ = writeln!(
        out,
        "{} (device {}) in cgroup {}:",
        ns.label(),
        show_dev(roots, res.top),
        show_rel(&rel)
    );
    for leaf in &res.leaves {
        let done = write_change(&dir, *leaf, &change)?;
        let _ = writeln!(out, "  {}: {}", show_dev(roots, *leaf), done.join(", "));
    }
    Ok(())
}
