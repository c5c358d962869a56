// SPDX-License-Identifier: GPL-2.0
//! Reading and writing kernel attribute files, with errors that name the
//! file and carry the kernel's errno text.

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::Path;

use anyhow::{Context, Result};

/// The whole file, as text.
pub fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// The file with surrounding whitespace removed.
pub fn read_trim(path: &Path) -> Result<String> {
    Ok(read(path)?.trim().to_string())
}

/// The file, or `None` if it does not exist.
pub fn read_opt(path: &Path) -> Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn write_with(path: &Path, value: &str, append: bool) -> Result<()> {
    let ctx = || format!("writing \"{value}\" to {}", path.display());
    let mut buf = String::with_capacity(value.len() + 1);
    buf.push_str(value);
    buf.push('\n');
    let mut opts = OpenOptions::new();
    if append {
        opts.append(true);
    } else {
        opts.write(true).truncate(true);
    }
    // Never create: a missing attribute is an error, not a new file.
    let mut f = opts.open(path).with_context(ctx)?;
    // One write(2): configfs and kernfs parse each write on its own.
    f.write_all(buf.as_bytes()).with_context(ctx)?;
    f.flush().with_context(ctx)
}

/// Replace an attribute's value (configfs attributes such as `enable` and
/// `cgroup_id`): `echo VALUE > PATH`.
pub fn write_attr(path: &Path, value: &str) -> Result<()> {
    write_with(path, value, false)
}

/// Where a namespace's attribute writes (`enable`, `cgroup_id`) go.  The
/// binary uses [`Files`]; tests wrap it to refuse a chosen write, as the
/// kernel refuses to enable a namespace, which a fixture's plain file can't.
pub trait AttrWriter {
    fn write_attr(&self, path: &Path, value: &str) -> Result<()>;
}

/// [`write_attr`] itself.
pub struct Files;

impl AttrWriter for Files {
    fn write_attr(&self, path: &Path, value: &str) -> Result<()> {
        write_attr(path, value)
    }
}

/// Write one line to a cgroup control file (`io.max`, `io.weight`,
/// `io.latency`, `cgroup.subtree_control`): `echo LINE >> PATH`.  The kernel
/// applies each write to its state (one line per device); on a plain file,
/// as in test fixtures, the writes accumulate and the file reads as a log
/// that the parsers in `limits` merge the way the kernel does.
pub fn write_control(path: &Path, line: &str) -> Result<()> {
    write_with(path, line, true)
}
