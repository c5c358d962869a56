// SPDX-License-Identifier: GPL-2.0
//! Backing-device resolution: from a namespace's `device_path` to the whole
//! disks that blk-cgroup policies act on, through partitions, dm/md
//! (`slaves/`) and loop devices (`loop/backing_file`), all read through
//! SYSFS; and the `/dev` names recorded in saved files.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

use crate::paths::Roots;
use crate::sysio;

/// A device number, shown as the kernel does: `MAJ:MIN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevT {
    pub major: u32,
    pub minor: u32,
}

impl DevT {
    /// Split a `dev_t` as glibc's major()/minor() do.
    pub fn from_raw(dev: u64) -> DevT {
        DevT {
            major: (((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)) as u32,
            minor: ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32,
        }
    }
}

impl fmt::Display for DevT {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

impl FromStr for DevT {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<DevT> {
        let num = |p: &str| -> Option<u32> {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            p.parse().ok()
        };
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| anyhow!("\"{s}\" is not MAJ:MIN"))?;
        match (num(a), num(b)) {
            (Some(major), Some(minor)) => Ok(DevT { major, minor }),
            _ => bail!("\"{s}\" is not MAJ:MIN"),
        }
    }
}

/// What a path names, as far as blk-cgroup cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// A block device node: its `st_rdev`.
    Block(DevT),
    /// A regular file: the `st_dev` of the filesystem it is on.
    File(DevT),
}

/// Path → device number: `stat(2)` normally, a table in tests (a fixture
/// can't make device nodes or choose a file's `st_dev`).
pub trait DevLookup {
    fn lookup(&self, path: &Path) -> Result<Node>;
}

/// `stat(2)`, following symlinks.
pub struct StatLookup;

impl DevLookup for StatLookup {
    fn lookup(&self, path: &Path) -> Result<Node> {
        let md = fs::metadata(path).with_context(|| format!("stat {}", path.display()))?;
        let ft = md.file_type();
        if ft.is_block_device() {
            Ok(Node::Block(DevT::from_raw(md.rdev())))
        } else if ft.is_file() {
            Ok(Node::File(DevT::from_raw(md.dev())))
        } else {
            bail!(
                "{} is neither a block device nor a regular file",
                path.display()
            )
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
enum NodeSpec {
    Block(String),
    File(String),
}

/// A table of paths (canonicalised where they exist) and what they are,
/// read from a JSON object `{"PATH": {"block": "8:16"} | {"file": "8:1"}}`
/// (the hidden `--dev-map` / `NVMET_CGROUP_DEVMAP`, for tests); paths not in
/// it are stat'ed.
pub struct MapLookup {
    map: HashMap<PathBuf, Node>,
}

fn canon(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

impl MapLookup {
    pub fn load(file: &Path) -> Result<MapLookup> {
        let text = sysio::read(file)?;
        let raw: HashMap<String, NodeSpec> = serde_json::from_str(&text)
            .with_context(|| format!("parsing device map {}", file.display()))?;
        let mut map = HashMap::new();
        for (k, v) in raw {
            let node = match v {
                NodeSpec::Block(d) => Node::Block(d.parse()?),
                NodeSpec::File(d) => Node::File(d.parse()?),
            };
            map.insert(canon(Path::new(&k)), node);
        }
        Ok(MapLookup { map })
    }
}

impl DevLookup for MapLookup {
    fn lookup(&self, path: &Path) -> Result<Node> {
        match self.map.get(&canon(path)) {
            Some(n) => Ok(*n),
            None => StatLookup.lookup(path),
        }
    }
}

/// A namespace's device and the whole disks its I/O reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub top: DevT,
    pub leaves: Vec<DevT>,
}

/// Resolve a namespace's `device_path` (a block device or a regular file).
pub fn resolve_path(roots: &Roots, lookup: &dyn DevLookup, path: &Path) -> Result<Resolved> {
    let top = match lookup.lookup(path)? {
        Node::Block(d) | Node::File(d) => d,
    };
    Ok(Resolved {
        top,
        leaves: resolve_dev(roots, lookup, top)?,
    })
}

/// Resolve a block device to the set of leaf whole disks.
pub fn resolve_dev(roots: &Roots, lookup: &dyn DevLookup, dev: DevT) -> Result<Vec<DevT>> {
    let mut out = BTreeSet::new();
    leaves(roots, lookup, dev, 0, &mut out)?;
    Ok(out.into_iter().collect())
}

const MAX_DEPTH: usize = 16;

fn read_dev(path: &Path) -> Result<DevT> {
    let s = sysio::read_trim(path)?;
    s.parse()
        .with_context(|| format!("unexpected content in {}", path.display()))
}

fn leaves(
    roots: &Roots,
    lookup: &dyn DevLookup,
    dev: DevT,
    depth: usize,
    out: &mut BTreeSet<DevT>,
) -> Result<()> {
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
    if real.join("partition").is_file() {
        // blk-cgroup takes limits on whole disks only.
        let disk = real
            .parent()
            .ok_or_else(|| anyhow!("partition {} has no parent disk", real.display()))?;
        let d = read_dev(&disk.join("dev"))?;
        return leaves(roots, lookup, d, depth + 1, out);
    }
    let slaves = real.join("slaves");
    if slaves.is_dir() {
        let mut ents: Vec<PathBuf> = fs::read_dir(&slaves)
            .with_context(|| format!("reading {}", slaves.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        if !ents.is_empty() {
            ents.sort();
            for e in ents {
                let d = read_dev(&e.join("dev"))?;
                leaves(roots, lookup, d, depth + 1, out)?;
            }
            return Ok(());
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
        };
        return leaves(roots, lookup, d, depth + 1, out);
    }
    out.insert(dev);
    Ok(())
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
        Node::File(_) => bail!("{recorded} ({}) is not a block device", p.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devt_parse() {
        let cases = [
            ("8:16", Some((8, 16))),
            ("259:0", Some((259, 0))),
            ("8:", None),
            (":1", None),
            ("8-16", None),
            ("+8:1", None),
            ("a:b", None),
        ];
        for (s, want) in cases {
            let got = s.parse::<DevT>().ok().map(|d| (d.major, d.minor));
            assert_eq!(got, want, "{s}");
        }
    }

    #[test]
    fn devt_raw() {
        assert_eq!(
            DevT::from_raw(0x0810),
            DevT {
                major: 8,
                minor: 16
            }
        );
        assert_eq!(
            DevT::from_raw(0x10300),
            DevT {
                major: 259,
                minor: 0
            }
        );
        assert_eq!(
            DevT::from_raw(0x100800),
            DevT {
                major: 8,
                minor: 256
            }
        );
    }
}
