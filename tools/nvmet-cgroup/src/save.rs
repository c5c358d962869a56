// SPDX-License-Identifier: GPL-2.0
//! `save`: record every bound namespace's cgroup (by path) and device limits
//! (by `/dev` path) in the save file, written atomically.

use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{anyhow, Context, Result};

use crate::apply;
use crate::cgroupfs;
use crate::config::{self, DeviceRecord, Record, SaveFile};
use crate::configfs::Namespace;
use crate::device::{self, DevLookup};
use crate::paths::Roots;

fn record(roots: &Roots, lookup: &dyn DevLookup, ns: &Namespace) -> Result<Option<Record>> {
    if ns.cgroup_id()? == 0 {
        return Ok(None);
    }
    let (_, rel) = apply::bound_cgroup(roots, ns)?;
    let res = apply::ns_devices(roots, lookup, ns)?;
    let dir = roots.cgroup_dir(&rel);
    let mut devices = Vec::new();
    for leaf in res.leaves {
        let l = apply::read_limits(&dir, leaf)?;
        if l.is_empty() {
            continue;
        }
        let path = device::dev_save_path(roots, leaf)
            .with_context(|| format!("{}: naming device {leaf}", ns.label()))?;
        devices.push(DeviceRecord::new(path, &l));
    }
    Ok(Some(Record {
        nqn: ns.nqn.clone(),
        nsid: ns.nsid,
        slice: cgroupfs::slice_of(&rel),
        cgroup: rel,
        device_path: ns.device_path()?,
        devices,
    }))
}

/// Replace `path` with `text` in one rename (mode 0644), creating its
/// directory if needed.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let ctx = || format!("writing {}", path.display());
    let mut tmp = tempfile::NamedTempFile::new_in(parent).with_context(ctx)?;
    tmp.write_all(text.as_bytes()).with_context(ctx)?;
    tmp.as_file()
        .set_permissions(fs::Permissions::from_mode(0o644))
        .with_context(ctx)?;
    tmp.as_file().sync_all().with_context(ctx)?;
    tmp.persist(path)
        .map_err(|e| anyhow!(e.error))
        .with_context(ctx)?;
    Ok(())
}

pub fn save(roots: &Roots, lookup: &dyn DevLookup, file: &Path, out: &mut String) -> Result<()> {
    let mut namespaces = Vec::new();
    for ns in Namespace::list(roots, None, None)? {
        if let Some(r) = record(roots, lookup, &ns).context("nothing saved")? {
            namespaces.push(r);
        }
    }
    let doc = SaveFile {
        version: config::VERSION,
        namespaces,
    };
    write_atomic(file, &config::render(&doc)?)?;
    let _ = writeln!(
        out,
        "saved {} namespace(s) to {}",
        doc.namespaces.len(),
        file.display()
    );
    Ok(())
}
