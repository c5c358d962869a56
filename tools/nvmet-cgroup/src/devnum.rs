// SPDX-License-Identifier: GPL-2.0
//! Device numbers (`dev_t`) and what a path names: a block device or a file
//! on a filesystem's device, by `stat(2)` through rustix.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use anyhow::{anyhow, bail, Context, Result};
use rustix::fs::FileType;

/// A device number, shown as the kernel does: `MAJ:MIN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevT {
    pub major: u32,
    pub minor: u32,
}

impl DevT {
    /// Split a `dev_t` as the C library's major()/minor() do.
    pub fn from_raw(dev: u64) -> DevT {
        DevT {
            major: rustix::fs::major(dev),
            minor: rustix::fs::minor(dev),
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
    /// A character device node (an NVMe controller's `/dev/nvme0`): its
    /// `st_rdev`.
    Char(DevT),
}

/// `stat(2)` of `path`, following symlinks.
pub fn stat_node(path: &Path) -> Result<Node> {
    let st = rustix::fs::stat(path)
        .map_err(std::io::Error::from)
        .with_context(|| format!("stat {}", path.display()))?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::BlockDevice => Ok(Node::Block(DevT::from_raw(st.st_rdev))),
        FileType::RegularFile => Ok(Node::File(DevT::from_raw(st.st_dev))),
        FileType::CharacterDevice => Ok(Node::Char(DevT::from_raw(st.st_rdev))),
        _ => bail!(
            "{} is neither a block or character device nor a regular file",
            path.display()
        ),
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
