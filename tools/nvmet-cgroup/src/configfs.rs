// SPDX-License-Identifier: GPL-2.0
//! nvmet namespaces in configfs: `CONFIGFS/subsystems/NQN/namespaces/NSID/`.

use std::fs;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::paths::Roots;
use crate::sysio::{self, AttrWriter};

/// One nvmet namespace, named as nvmetcli does: subsystem NQN and NSID.
#[derive(Debug, Clone)]
pub struct Namespace {
    pub nqn: String,
    pub nsid: u32,
    pub dir: PathBuf,
}

/// An NQN usable as one path component.
pub fn check_nqn(nqn: &str) -> Result<()> {
    if nqn.is_empty() || nqn == "." || nqn == ".." || nqn.contains('/') || nqn.contains('\0') {
        bail!("invalid NQN \"{nqn}\"");
    }
    Ok(())
}

fn subsystem_dir(roots: &Roots, nqn: &str) -> Result<PathBuf> {
    check_nqn(nqn)?;
    let dir = roots.configfs.join("subsystems").join(nqn);
    if !dir.is_dir() {
        bail!("no subsystem {nqn} ({} does not exist)", dir.display());
    }
    Ok(dir)
}

impl Namespace {
    /// The namespace NSID of subsystem NQN, which must exist.
    pub fn open(roots: &Roots, nqn: &str, nsid: u32) -> Result<Namespace> {
        let sub = subsystem_dir(roots, nqn)?;
        let dir = sub.join("namespaces").join(nsid.to_string());
        if !dir.is_dir() {
            bail!(
                "subsystem {nqn} has no namespace {nsid} ({} does not exist)",
                dir.display()
            );
        }
        Ok(Namespace {
            nqn: nqn.to_string(),
            nsid,
            dir,
        })
    }

    /// Every namespace (of one subsystem if `nqn` is given), sorted.
    pub fn list(roots: &Roots, nqn: Option<&str>, nsid: Option<u32>) -> Result<Vec<Namespace>> {
        if let (Some(q), Some(n)) = (nqn, nsid) {
            return Ok(vec![Namespace::open(roots, q, n)?]);
        }
        let mut subs = Vec::new();
        if let Some(q) = nqn {
            subs.push((q.to_string(), subsystem_dir(roots, q)?));
        } else {
            let top = roots.configfs.join("subsystems");
            let rd = fs::read_dir(&top)
                .with_context(|| format!("reading {} (is nvmet loaded?)", top.display()))?;
            for ent in rd {
                let ent = ent.with_context(|| format!("reading {}", top.display()))?;
                if ent.path().is_dir() {
                    subs.push((ent.file_name().to_string_lossy().into_owned(), ent.path()));
                }
            }
        }
        let mut out = Vec::new();
        for (q, sub) in subs {
            let nsdir = sub.join("namespaces");
            let rd = match fs::read_dir(&nsdir) {
                Ok(rd) => rd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("reading {}", nsdir.display())),
            };
            for ent in rd {
                let ent = ent.with_context(|| format!("reading {}", nsdir.display()))?;
                let Ok(id) = ent.file_name().to_string_lossy().parse::<u32>() else {
                    continue;
                };
                if ent.path().is_dir() {
                    out.push(Namespace {
                        nqn: q.clone(),
                        nsid: id,
                        dir: ent.path(),
                    });
                }
            }
        }
        out.sort_by(|a, b| (&a.nqn, a.nsid).cmp(&(&b.nqn, b.nsid)));
        Ok(out)
    }

    /// "NQN nsid N", for messages.
    pub fn label(&self) -> String {
        format!("{} nsid {}", self.nqn, self.nsid)
    }

    fn attr(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The backing device or file (empty if not set).
    pub fn device_path(&self) -> Result<String> {
        let s = sysio::read(&self.attr("device_path"))?;
        Ok(s.trim_end_matches('\n').to_string())
    }

    pub fn enabled(&self) -> Result<bool> {
        let p = self.attr("enable");
        match sysio::read_trim(&p)?.as_str() {
            "1" => Ok(true),
            "0" => Ok(false),
            other => bail!("unexpected content \"{other}\" in {}", p.display()),
        }
    }

    pub fn cgroup_id(&self) -> Result<u64> {
        let p = self.attr("cgroup_id");
        let s = sysio::read_trim(&p)?;
        s.parse::<u64>().with_context(|| {
            format!(
                "unexpected content \"{s}\" in {} (is the nvmet cgroup_id patch applied?)",
                p.display()
            )
        })
    }

    pub fn set_enable(&self, w: &dyn AttrWriter, on: bool) -> Result<()> {
        w.write_attr(&self.attr("enable"), if on { "1" } else { "0" })
    }

    pub fn set_cgroup_id(&self, w: &dyn AttrWriter, id: u64) -> Result<()> {
        w.write_attr(&self.attr("cgroup_id"), &id.to_string())
    }
}
