// SPDX-License-Identifier: GPL-2.0
//! `save`: record every bound namespace's cgroup (by path) and device limits
//! (by `/dev` path) in the save file, written atomically.  The file it
//! replaces is kept as `FILE.bak`, and one with records is not replaced by
//! an empty configuration without `--force`.

use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use crate::apply;
use crate::cgroupfs::{self, CgroupIndex};
use crate::config::{self, DeviceRecord, Record, SaveFile};
use crate::configfs::Namespace;
use crate::device::{self, DevLookup};
use crate::paths::Roots;

/// The record of a bound namespace or passthru controller; for a passthru
/// controller without the io.max limits found on its disks (they do not
/// apply to it), each of which adds a line to `notes`.
fn record(
    roots: &Roots,
    lookup: &dyn DevLookup,
    index: &CgroupIndex,
    ns: &Namespace,
    notes: &mut Vec<String>,
) -> Result<Option<Record>> {
    if ns.cgroup_id()? == 0 {
        return Ok(None);
    }
    let (_, rel) = apply::bound_cgroup_in(roots, index, ns)?;
    let res = apply::ns_devices(roots, lookup, ns)?;
    let dir = roots.cgroup_dir(&rel);
    let mut devices = Vec::new();
    for leaf in res.leaves.iter().copied() {
        let mut l = apply::read_limits(&dir, leaf)?;
        if ns.nsid.is_passthru() {
            let (kept, had) = apply::without_io_max(&l);
            if had {
                notes.push(format!(
                    "note: {}: io.max on {leaf} not saved: {}",
                    ns.label(),
                    apply::IO_MAX_PASSTHRU
                ));
            }
            l = kept;
        }
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
        stack: Some(res.stack),
        devices,
    }))
}

/// Replace `path` with `bytes` in one rename (with `mode`), creating its
/// directory if needed.
fn write_atomic_bytes(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let ctx = || format!("writing {}", path.display());
    let mut tmp = tempfile::NamedTempFile::new_in(parent).with_context(ctx)?;
    tmp.write_all(bytes).with_context(ctx)?;
    tmp.as_file()
        .set_permissions(fs::Permissions::from_mode(mode))
        .with_context(ctx)?;
    tmp.as_file().sync_all().with_context(ctx)?;
    tmp.persist(path)
        .map_err(|e| anyhow!(e.error))
        .with_context(ctx)?;
    Ok(())
}

/// Replace `path` with `text` in one rename (mode 0644), creating its
/// directory if needed.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    write_atomic_bytes(path, text.as_bytes(), 0o644)
}

/// Where the file a save replaces is kept: `FILE.bak`.
pub fn backup_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".bak");
    PathBuf::from(name)
}

/// How many records an existing save file holds: `None` if there is no
/// file; a file that does not parse counts as holding some (it is not
/// known to be empty, so it is not replaced by nothing).
fn existing_records(file: &Path) -> Result<Option<(Vec<u8>, u32, usize)>> {
    let bytes = match fs::read(file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    let mode = fs::metadata(file)
        .with_context(|| format!("reading {}", file.display()))?
        .permissions()
        .mode()
        & 0o7777;
    let text = String::from_utf8_lossy(&bytes);
    let n = if text.trim().is_empty() {
        0
    } else {
        config::parse(&text).map_or(usize::MAX, |f| f.namespaces.len())
    };
    Ok(Some((bytes, mode, n)))
}

pub fn save(
    roots: &Roots,
    lookup: &dyn DevLookup,
    file: &Path,
    force: bool,
    out: &mut String,
) -> Result<()> {
    let index = CgroupIndex::build(roots);
    let mut namespaces = Vec::new();
    let mut notes = Vec::new();
    for ns in Namespace::list(roots, None, None)? {
        if let Some(r) = record(roots, lookup, &index, &ns, &mut notes).context("nothing saved")? {
            namespaces.push(r);
        }
    }
    let doc = SaveFile {
        version: config::VERSION,
        namespaces,
    };
    let text = config::render(&doc)?;
    if let Some((old, mode, n)) = existing_records(file)? {
        if doc.namespaces.is_empty() && n > 0 && !force {
            let held = if n == usize::MAX {
                "content that is not a save file".to_string()
            } else {
                format!("{n} namespace(s)")
            };
            bail!(
                "no namespace is bound to a cgroup: not replacing {} ({held}) with an empty configuration (use --force to)",
                file.display()
            );
        }
        let bak = backup_path(file);
        write_atomic_bytes(&bak, &old, mode)
            .with_context(|| format!("keeping the old {} as {}", file.display(), bak.display()))?;
        let _ = writeln!(out, "kept the previous file as {}", bak.display());
    }
    write_atomic(file, &text)?;
    for n in notes {
        let _ = writeln!(out, "{n}");
    }
    let _ = writeln!(
        out,
        "saved {} namespace(s) to {}",
        doc.namespaces.len(),
        file.display()
    );
    Ok(())
}
