// SPDX-License-Identifier: GPL-2.0
//! A passthru subsystem's NVMe controller: from its character device
//! (`passthru/device_path`, e.g. `/dev/nvme0`) to the disks that its
//! passthrough requests go to, the controller's namespaces, read through
//! SYSFS.
//!
//! The disks are the block devices in the controller's sysfs directory:
//! `nvme0n1`, ... or, with native multipath, the per-path disks
//! `nvmeXcYnZ` (the multipath head `nvmeXnZ` lives under the
//! nvme-subsystem and is not where a passthru command goes).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use crate::device::{self, DevLookup, DevT, Node, Resolved};
use crate::paths::Roots;

/// `nvme` followed by digits, then `n` and digits, with an optional
/// `c` and digits before the `n` (a multipath per-path disk).
fn is_ns_disk(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("nvme") else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let Some((head, ns)) = rest.rsplit_once('n') else {
        return false;
    };
    if !digits(ns) {
        return false;
    }
    match head.split_once('c') {
        Some((sub, ctrl)) => digits(sub) && digits(ctrl),
        None => digits(head),
    }
}

/// An NVMe controller's name: `nvme` and digits.
fn is_ctrl_name(name: &str) -> bool {
    name.strip_prefix("nvme")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The controller's sysfs directory, from its character device's number.
fn ctrl_dir(roots: &Roots, dev: DevT) -> Result<(PathBuf, String)> {
    let link = roots.dev_char(dev);
    let real = fs::canonicalize(&link).with_context(|| {
        format!(
            "cannot resolve character device {dev}: {} is not a device in sysfs",
            link.display()
        )
    })?;
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !is_ctrl_name(&name) {
        bail!("character device {dev} is {name}, not an NVMe controller (nvmeN)");
    }
    Ok((real, name))
}

/// The controller by what survives a reboot: its serial number, else its
/// name.
fn ctrl_identity(dir: &Path, name: &str) -> String {
    match device::attr(dir, "serial") {
        Some(s) => format!("nvme ctrl serial={s}"),
        None => format!("nvme ctrl name={name}"),
    }
}

/// The controller's name (`nvme0`) for its character device, if sysfs
/// knows it.
pub fn ctrl_name(roots: &Roots, dev: DevT) -> Option<String> {
    ctrl_dir(roots, dev).ok().map(|(_, n)| n)
}

/// Resolve a passthru `device_path`: `top` is the controller's character
/// device, `leaves` its namespaces' disks (none for a controller without
/// namespaces), `stack` one `nvme ctrl ... > disk ...` chain per disk.
pub fn resolve(roots: &Roots, lookup: &dyn DevLookup, path: &Path) -> Result<Resolved> {
    let top = match lookup.lookup(path)? {
        Node::Char(d) => d,
        Node::Block(_) | Node::File(_) => bail!(
            "{} is not a character device: a passthru subsystem's device_path is an NVMe controller (/dev/nvmeN)",
            path.display()
        ),
    };
    let (dir, name) = ctrl_dir(roots, top)?;
    let me = ctrl_identity(&dir, &name);
    let mut disks = Vec::new();
    let rd = fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
    for e in rd {
        let e = e.with_context(|| format!("reading {}", dir.display()))?;
        let n = e.file_name().to_string_lossy().into_owned();
        let p = e.path();
        if !is_ns_disk(&n) || !p.join("dev").is_file() {
            continue;
        }
        let dev = device::read_dev(&p.join("dev"))?;
        let real = fs::canonicalize(&p).with_context(|| format!("resolving {}", p.display()))?;
        disks.push((dev, format!("{me} > {}", device::disk_identity(&real))));
    }
    disks.sort();
    let mut stack: Vec<String> = disks.iter().map(|(_, s)| s.clone()).collect();
    stack.sort();
    stack.dedup();
    if stack.is_empty() {
        stack.push(format!("{me} > no namespaces"));
    }
    Ok(Resolved {
        top,
        leaves: disks.into_iter().map(|(d, _)| d).collect(),
        stack,
    })
}

/// A device recorded in a save file for a passthru controller whose disks
/// are now `leaves`: through DEVFS as for a namespace, or, for a disk
/// without a device node (a multipath per-path disk `/dev/nvmeXcYnZ`), by
/// its kernel name among `leaves`.  Refused unless it is one of `leaves`:
/// the limits of a controller go to its own disks only.
pub fn resolve_recorded(
    roots: &Roots,
    lookup: &dyn DevLookup,
    recorded: &str,
    leaves: &[DevT],
) -> Result<DevT> {
    let p = roots.in_devfs(recorded);
    let found = if p.exists() {
        device::resolve_recorded(roots, lookup, recorded)?
    } else {
        let base = recorded.strip_prefix("/dev/").unwrap_or(recorded);
        leaves
            .iter()
            .copied()
            .filter(|d| device::dev_name(roots, *d).as_deref() == Some(base))
            .collect()
    };
    match found.as_slice() {
        [d] if leaves.contains(d) => Ok(*d),
        [d] => bail!("{recorded} ({d}) is not one of the controller's disks now"),
        [] => Err(anyhow!(
            "{recorded} does not exist and names none of the controller's disks"
        )),
        _ => bail!("{recorded} reaches several disks, not one of the controller's"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_names() {
        for n in ["nvme0n1", "nvme12n3", "nvme0c1n1", "nvme3c10n42"] {
            assert!(is_ns_disk(n), "{n}");
        }
        for n in [
            "nvme0",
            "ng0n1",
            "nvme0n",
            "nvmen1",
            "nvme0n1p1",
            "nvme0c1",
            "nvme0cn1",
            "sda",
        ] {
            assert!(!is_ns_disk(n), "{n}");
        }
        assert!(is_ctrl_name("nvme0") && is_ctrl_name("nvme17"));
        assert!(!is_ctrl_name("nvme") && !is_ctrl_name("nvme0n1") && !is_ctrl_name("nvme-fabrics"));
    }
}
