// SPDX-License-Identifier: GPL-2.0
//! Backing-device resolution: from a namespace's `device_path` to the whole
//! disks that blk-cgroup policies act on, through partitions, dm/md
//! (`slaves/`) and loop devices (`loop/backing_file`), all read through
//! SYSFS; and the `/dev` names recorded in saved files.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

pub use crate::devnum::{DevT, Node};
use crate::paths::Roots;
use crate::sysio;

/// Path → device number: `stat(2)` normally, a table in tests (a fixture
/// can't make device nodes or choose a file's `st_dev`).
pub trait DevLookup {
    fn lookup(&self, path: &Path) -> Result<Node>;
}

/// `stat(2)`, following symlinks.
pub struct StatLookup;

impl DevLookup for StatLookup {
    fn lookup(&self, path: &Path) -> Result<Node> {
        crate::devnum::stat_node(path)
    }
}

/// A namespace's device and the whole disks its I/O reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub top: DevT,
    pub leaves: Vec<DevT>,
    /// How the top reaches each leaf, by stable identities rather than
    /// device numbers and names: one `A > B > disk ...` chain per leaf,
    /// sorted (see [`chains`]).
    pub stack: Vec<String>,
}

/// Resolve a namespace's `device_path` (a block device or a regular file).
pub fn resolve_path(roots: &Roots, lookup: &dyn DevLookup, path: &Path) -> Result<Resolved> {
    let top = match lookup.lookup(path)? {
        Node::Block(d) | Node::File(d) => d,
        Node::Char(_) => bail!(
            "{} is a character device, not a block device or a file (an NVMe controller is exported by a passthru subsystem, named NQN passthru)",
            path.display()
        ),
    };
    resolve_top(roots, lookup, top)
}

fn resolve_top(roots: &Roots, lookup: &dyn DevLookup, top: DevT) -> Result<Resolved> {
    let found = chains(roots, lookup, top, 0)?;
    let leaves: BTreeSet<DevT> = found.iter().map(|c| c.leaf).collect();
    let mut stack: Vec<String> = found.iter().map(|c| c.layers.join(" > ")).collect();
    stack.sort();
    stack.dedup();
    Ok(Resolved {
        top,
        leaves: leaves.into_iter().collect(),
        stack,
    })
}

/// Resolve a block device to the set of leaf whole disks.
pub fn resolve_dev(roots: &Roots, lookup: &dyn DevLookup, dev: DevT) -> Result<Vec<DevT>> {
    Ok(resolve_top(roots, lookup, dev)?.leaves)
}

const MAX_DEPTH: usize = 16;

pub fn read_dev(path: &Path) -> Result<DevT> {
    let s = sysio::read_trim(path)?;
    s.parse()
        .with_context(|| format!("unexpected content in {}", path.display()))
}

/// A sysfs attribute's value, if it exists and is not blank.
pub fn attr(dir: &Path, rel: &str) -> Option<String> {
    let v = sysio::read_opt(&dir.join(rel)).ok()??;
    let v = v.trim();
    (!v.is_empty()).then(|| v.to_string())
}

/// A whole disk by what survives a reboot and a rescan: its WWID (NVMe,
/// SCSI), else its serial number (NVMe, virtio), else, for devices with
/// neither (null_blk, brd, loop without a backing file), its name.
pub fn disk_identity(real: &Path) -> String {
    for rel in ["wwid", "device/wwid"] {
        if let Some(v) = attr(real, rel) {
            return format!("disk wwid={v}");
        }
    }
    for rel in ["serial", "device/serial"] {
        if let Some(v) = attr(real, rel) {
            return format!("disk serial={v}");
        }
    }
    let name = real.file_name().map(|n| n.to_string_lossy().into_owned());
    format!("disk name={}", name.unwrap_or_default())
}

/// A stacking device (dm, md) by its UUID, else its name.
fn stacked_identity(real: &Path) -> String {
    if let Some(u) = attr(real, "dm/uuid") {
        return format!("dm uuid={u}");
    }
    if let Some(n) = attr(real, "dm/name") {
        return format!("dm name={n}");
    }
    if let Some(u) = attr(real, "md/uuid") {
        return format!("md uuid={u}");
    }
    let name = real.file_name().map(|n| n.to_string_lossy().into_owned());
    format!("stacked name={}", name.unwrap_or_default())
}

/// One way down from a device to a leaf disk.
struct Chain {
    /// Identities from the device down to the leaf.
    layers: Vec<String>,
    leaf: DevT,
}

/// Every chain from `dev` down to the whole disks blk-cgroup acts on:
/// through partitions (to their disk), dm/md (to each of their `slaves/`)
/// and loop devices (to the device of their backing file's filesystem).
fn chains(roots: &Roots, lookup: &dyn DevLookup, dev: DevT, depth: usize) -> Result<Vec<Chain>> {
    if depth > MAX_DEPTH {
        bail!("device {dev}: stacked more than {MAX_DEPTH} levels deep (a loop?)");
    }
    let link = roots.dev_block(dev);
    let real = fs::canonicalize(&link).with_context(|| {
        format!(
            "cannot resolve device {dev}: {} is not a block device in sysfs",
            link.display()
        )
    })?;
    let below = |layer: String, d: DevT| -> Result<Vec<Chain>> {
        let mut v = chains(roots, lookup, d, depth + 1)?;
        for c in &mut v {
            c.layers.insert(0, layer.clone());
        }
        Ok(v)
    };
    if let Some(n) = attr(&real, "partition") {
        // blk-cgroup takes limits on whole disks only.
        let disk = real
            .parent()
            .ok_or_else(|| anyhow!("partition {} has no parent disk", real.display()))?;
        return below(format!("partition {n}"), read_dev(&disk.join("dev"))?);
    }
    let slaves = real.join("slaves");
    if slaves.is_dir() {
        let mut ents: Vec<PathBuf> = fs::read_dir(&slaves)
            .with_context(|| format!("reading {}", slaves.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        if !ents.is_empty() {
            ents.sort();
            let me = stacked_identity(&real);
            let mut all = Vec::new();
            for e in ents {
                all.extend(below(me.clone(), read_dev(&e.join("dev"))?)?);
            }
            return Ok(all);
        }
    }
    let backing = real.join("loop/backing_file");
    if let Some(s) = sysio::read_opt(&backing)? {
        let file = s.trim_end_matches('\n');
        if file.ends_with(" (deleted)") {
            bail!("loop device {dev}: its backing file {file} was deleted");
        }
        let d = match lookup.lookup(Path::new(file))? {
            Node::Block(d) | Node::File(d) => d,
            Node::Char(_) => {
                bail!("loop device {dev}: its backing file {file} is a character device")
            }
        };
        return below(format!("loop file={file}"), d);
    }
    Ok(vec![Chain {
        layers: vec![disk_identity(&real)],
        leaf: dev,
    }])
}

/// The kernel's name for a device (`DEVNAME` in its uevent), if any.
pub fn dev_name(roots: &Roots, dev: DevT) -> Option<String> {
    let text = sysio::read_opt(&roots.dev_block(dev).join("uevent")).ok()??;
    text.lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .map(|s| s.trim().to_string())
}

/// The path to record for a device: a `/dev/disk/by-id/` link to it if one
/// exists (sorted, first wins), else `/dev/DEVNAME`.
pub fn dev_save_path(roots: &Roots, dev: DevT) -> Result<String> {
    let name = dev_name(roots, dev).ok_or_else(|| {
        anyhow!(
            "device {dev} has no DEVNAME in {}",
            roots.dev_block(dev).join("uevent").display()
        )
    })?;
    let base = name.rsplit('/').next().unwrap_or(&name).to_string();
    let byid = roots.devfs.join("disk/by-id");
    if let Ok(rd) = fs::read_dir(&byid) {
        let mut links: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let target = fs::read_link(e.path()).ok()?;
                let tname = target.file_name()?.to_string_lossy().into_owned();
                (tname == base).then(|| e.file_name().to_string_lossy().into_owned())
            })
            .collect();
        links.sort();
        if let Some(l) = links.first() {
            return Ok(format!("/dev/disk/by-id/{l}"));
        }
    }
    Ok(format!("/dev/{name}"))
}

/// A recorded `/dev/...` path → the leaf disks of the block device it names.
pub fn resolve_recorded(
    roots: &Roots,
    lookup: &dyn DevLookup,
    recorded: &str,
) -> Result<Vec<DevT>> {
    let p = roots.in_devfs(recorded);
    match lookup.lookup(&p)? {
        Node::Block(d) => resolve_dev(roots, lookup, d),
        Node::File(_) | Node::Char(_) => {
            bail!("{recorded} ({}) is not a block device", p.display())
        }
    }
}
