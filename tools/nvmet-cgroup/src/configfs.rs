// SPDX-License-Identifier: GPL-2.0
//! nvmet namespaces in configfs: `CONFIGFS/subsystems/NQN/namespaces/NSID/`,
//! and a passthru subsystem's controller, `CONFIGFS/subsystems/NQN/passthru/`,
//! which has the same `device_path`, `enable` and `cgroup_id` attributes.

use std::fmt;
use std::fs;
use std::path::PathBuf;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::paths::Roots;
use crate::sysio::{self, AttrWriter};

/// What follows the NQN: a namespace's NSID, or `passthru` for the
/// subsystem's passthru controller (the module's status file calls it
/// NSID 0).  Shown and parsed as the command line takes it; in JSON a
/// number or the string "passthru".  Namespaces sort before passthru.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NsId {
    Ns(u32),
    Passthru,
}

/// The word that names a subsystem's passthru controller.
pub const PASSTHRU: &str = "passthru";

impl NsId {
    pub fn is_passthru(self) -> bool {
        self == NsId::Passthru
    }
}

impl fmt::Display for NsId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NsId::Ns(n) => write!(f, "{n}"),
            NsId::Passthru => f.write_str(PASSTHRU),
        }
    }
}

impl FromStr for NsId {
    type Err = String;

    /// `1`..`4294967295` or `passthru`.
    fn from_str(s: &str) -> Result<NsId, String> {
        if s == PASSTHRU {
            return Ok(NsId::Passthru);
        }
        match s.parse::<u32>() {
            Ok(n) if n >= 1 && s.bytes().all(|b| b.is_ascii_digit()) => Ok(NsId::Ns(n)),
            _ => Err(format!(
                "\"{s}\" is neither a namespace ID (1 to {}) nor {PASSTHRU}",
                u32::MAX
            )),
        }
    }
}

impl Serialize for NsId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            NsId::Ns(n) => s.serialize_u32(*n),
            NsId::Passthru => s.serialize_str(PASSTHRU),
        }
    }
}

impl<'de> Deserialize<'de> for NsId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NsId, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(u32),
            Word(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(n) => Ok(NsId::Ns(n)),
            Raw::Word(w) if w == PASSTHRU => Ok(NsId::Passthru),
            Raw::Word(w) => Err(serde::de::Error::custom(format!(
                "nsid \"{w}\" is neither a number nor \"{PASSTHRU}\""
            ))),
        }
    }
}

/// One nvmet namespace, named as nvmetcli does: subsystem NQN and NSID; or
/// a passthru subsystem's controller (`nsid` is [`NsId::Passthru`], `dir`
/// the subsystem's `passthru/`).
#[derive(Debug, Clone)]
pub struct Namespace {
    pub nqn: String,
    pub nsid: NsId,
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

/// "NQN nsid N" or "NQN passthru", for messages.
pub fn label(nqn: &str, nsid: NsId) -> String {
    match nsid {
        NsId::Ns(n) => format!("{nqn} nsid {n}"),
        NsId::Passthru => format!("{nqn} {PASSTHRU}"),
    }
}

impl Namespace {
    /// The namespace NSID of subsystem NQN, or its passthru controller,
    /// which must exist.
    pub fn open(roots: &Roots, nqn: &str, nsid: NsId) -> Result<Namespace> {
        let sub = subsystem_dir(roots, nqn)?;
        let n = match nsid {
            NsId::Ns(n) => n,
            NsId::Passthru => {
                let dir = sub.join(PASSTHRU);
                if !dir.is_dir() {
                    bail!(
                        "subsystem {nqn} has no passthru directory ({} does not exist: nvmet built without CONFIG_NVME_TARGET_PASSTHRU?)",
                        dir.display()
                    );
                }
                return Ok(Namespace {
                    nqn: nqn.to_string(),
                    nsid,
                    dir,
                });
            }
        };
        let dir = sub.join("namespaces").join(n.to_string());
        if !dir.is_dir() {
            bail!(
                "subsystem {nqn} has no namespace {n} ({} does not exist)",
                dir.display()
            );
        }
        Ok(Namespace {
            nqn: nqn.to_string(),
            nsid,
            dir,
        })
    }

    /// Every namespace (of one subsystem if `nqn` is given), and every
    /// passthru controller in use (see [`Namespace::passthru_in_use`]),
    /// sorted.
    pub fn list(roots: &Roots, nqn: Option<&str>, nsid: Option<NsId>) -> Result<Vec<Namespace>> {
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
            let pt = Namespace {
                nqn: q.clone(),
                nsid: NsId::Passthru,
                dir: sub.join(PASSTHRU),
            };
            if pt.passthru_in_use()? {
                out.push(pt);
            }
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
                        nsid: NsId::Ns(id),
                        dir: ent.path(),
                    });
                }
            }
        }
        out.sort_by(|a, b| (&a.nqn, a.nsid).cmp(&(&b.nqn, b.nsid)));
        Ok(out)
    }

    /// "NQN nsid N" or "NQN passthru", for messages.
    pub fn label(&self) -> String {
        label(&self.nqn, self.nsid)
    }

    /// What it is, for messages: "namespace" or "passthru controller".
    pub fn what(&self) -> &'static str {
        match self.nsid {
            NsId::Ns(_) => "namespace",
            NsId::Passthru => "passthru controller",
        }
    }

    /// A passthru directory counts (for listing) when it has a
    /// `cgroup_id` and a `device_path` or a cgroup: every subsystem has
    /// one, unused unless the subsystem is a passthru subsystem.
    fn passthru_in_use(&self) -> Result<bool> {
        if !self.attr("cgroup_id").is_file() {
            return Ok(false);
        }
        Ok(!self.device_path()?.is_empty() || self.cgroup_id()? != 0)
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
        if self.nsid.is_passthru() && !p.exists() {
            bail!(
                "{} does not exist: this kernel's nvmet cannot charge a passthru subsystem to a cgroup (the passthru cgroup_id patch is not applied)",
                p.display()
            );
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nsid_words() {
        let cases: &[(&str, Option<NsId>)] = &[
            ("1", Some(NsId::Ns(1))),
            ("4294967295", Some(NsId::Ns(u32::MAX))),
            ("passthru", Some(NsId::Passthru)),
            ("0", None),
            ("+1", None),
            ("4294967296", None),
            ("Passthru", None),
            ("passthrough", None),
            ("", None),
        ];
        for (s, want) in cases {
            assert_eq!(s.parse::<NsId>().ok(), *want, "{s:?}");
            if let Some(n) = want {
                assert_eq!(n.to_string(), *s);
            }
        }
        assert!(NsId::Ns(u32::MAX) < NsId::Passthru);
    }

    #[test]
    fn nsid_json() {
        let json = serde_json::to_string(&[NsId::Ns(3), NsId::Passthru]).unwrap();
        assert_eq!(json, r#"[3,"passthru"]"#);
        let back: Vec<NsId> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, [NsId::Ns(3), NsId::Passthru]);
        assert!(serde_json::from_str::<NsId>(r#""ns1""#).is_err());
        assert!(serde_json::from_str::<NsId>("-1").is_err());
        assert_eq!(label("q", NsId::Passthru), "q passthru");
        assert_eq!(label("q", NsId::Ns(2)), "q nsid 2");
    }
}
