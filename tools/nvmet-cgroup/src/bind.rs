// SPDX-License-Identifier: GPL-2.0
//! `bind` and `unbind`: changing a namespace's cgroup_id, disabling and
//! re-enabling it around the change when asked, with nothing half-applied.

use std::fmt::Write as _;

use anyhow::{bail, Result};

use crate::cgroupfs::{self, Systemd, Target};
use crate::cli::{BindArgs, UnbindArgs};
use crate::configfs::Namespace;
use crate::module;
use crate::paths::Roots;
use crate::sysio::AttrWriter;

/// A namespace's state before a change.
#[derive(Debug, Clone, Copy)]
pub struct Current {
    pub enabled: bool,
    pub id: u64,
}

/// How a cgroup path is shown: the root is "/".
pub fn show_rel(rel: &str) -> &str {
    if rel.is_empty() {
        "/"
    } else {
        rel
    }
}

/// Check, without changing anything, that the namespace's cgroup_id can be
/// set to `new` (`None`: a non-zero ID not known yet).  An enabled namespace
/// needs `reenable` (else the error says `hint`), and the module if the new
/// ID is not 0.
pub fn precheck(
    roots: &Roots,
    ns: &Namespace,
    new: Option<u64>,
    reenable: bool,
    hint: &str,
) -> Result<Current> {
    let cur = Current {
        enabled: ns.enabled()?,
        id: ns.cgroup_id()?,
    };
    if !cur.enabled || new == Some(cur.id) {
        return Ok(cur);
    }
    if !reenable {
        bail!(
            "{} is enabled: its cgroup_id can only change while it is disabled ({hint})",
            ns.label()
        );
    }
    if new != Some(0) {
        module::require_loaded(roots, ns)?;
    }
    Ok(cur)
}

/// Write `new` to cgroup_id (disabling and enabling again if the namespace
/// is enabled; [`precheck`] said that is allowed).  If the final enable
/// fails, the previous cgroup_id is written back and the namespace enabled
/// again before the error is returned; the error says whether that worked
/// and, if not, the state the namespace is left in.  Returns whether
/// anything changed.
pub fn swap(w: &dyn AttrWriter, ns: &Namespace, cur: &Current, new: u64) -> Result<bool> {
    if cur.id == new {
        return Ok(false);
    }
    if !cur.enabled {
        ns.set_cgroup_id(w, new)?;
        return Ok(true);
    }
    let label = ns.label();
    let old = cur.id;
    let left = |id: u64| format!("{label} is left disabled with cgroup_id {id}");
    ns.set_enable(w, false)?;
    if let Err(e) = ns.set_cgroup_id(w, new) {
        let outcome = match ns.set_enable(w, true) {
            Ok(()) => format!("it is enabled again with cgroup_id {old}"),
            Err(e2) => format!("enabling it again failed too: {e2:#}; {}", left(old)),
        };
        bail!("changing the cgroup_id of {label} to {new} failed: {e:#}; {outcome}");
    }
    if let Err(e) = ns.set_enable(w, true) {
        // A refused enable leaves the namespace disabled: put back what was.
        let outcome = match ns.set_cgroup_id(w, old) {
            Err(e2) => format!(
                "restoring cgroup_id {old} failed too: {e2:#}; {}",
                left(new)
            ),
            Ok(()) => match ns.set_enable(w, true) {
                Ok(()) => format!("rolled back: it is enabled again with cgroup_id {old}"),
                Err(e2) => format!(
                    "cgroup_id {old} was restored but enabling it again failed too: {e2:#}; {}",
                    left(old)
                ),
            },
        };
        bail!("enabling {label} with cgroup_id {new} failed: {e:#}; {outcome}");
    }
    Ok(true)
}

/// `err` after undoing `applied`, unless the failed change left the
/// namespace naming the new cgroup (then the cgroup it names is kept).
pub fn undo_unless_named(
    applied: &cgroupfs::Applied,
    ns: &Namespace,
    err: anyhow::Error,
) -> anyhow::Error {
    match ns.cgroup_id() {
        Ok(now) if now != applied.id => applied.undo_after(err),
        _ => err,
    }
}

const REENABLE_HINT: &str = "use --reenable to disable it, change it and enable it again";

pub fn bind(
    roots: &Roots,
    systemd: &dyn Systemd,
    w: &dyn AttrWriter,
    args: &BindArgs,
    out: &mut String,
) -> Result<()> {
    let ns = Namespace::open(roots, &args.ns.nqn, args.ns.nsid)?;
    let target = match (&args.target.cgroup, &args.target.slice) {
        (Some(c), _) => Target::Path(cgroupfs::normalize_path(roots, c)?),
        (None, Some(s)) => {
            // -.slice is systemd's name for the root cgroup: binding there
            // would charge the tenant to the root, as if unbound.
            if cgroupfs::slice_path(s)?.is_empty() {
                bail!("slice \"{s}\" is the root cgroup: name a slice below it");
            }
            Target::Slice(s.clone())
        }
        (None, None) => bail!("give --cgroup PATH or --slice NAME.slice"),
    };
    let plan = cgroupfs::plan(roots, &target, args.create)?;
    let known = if plan.create.is_empty() {
        Some(cgroupfs::id_of(&plan.dir(roots))?)
    } else {
        None
    };
    let cur = precheck(roots, &ns, known, args.reenable, REENABLE_HINT)?;
    let applied = cgroupfs::apply(roots, &plan, systemd)?;
    let id = applied.id;
    let changed = swap(w, &ns, &cur, id).map_err(|e| undo_unless_named(&applied, &ns, e))?;
    let verb = if changed { "bound" } else { "already bound" };
    let _ = writeln!(
        out,
        "{verb}: {} -> cgroup {} (id {id})",
        ns.label(),
        show_rel(&plan.rel)
    );
    if !cur.enabled && !roots.module_loaded() {
        let _ = writeln!(
            out,
            "note: load nvmet_cgroup before enabling the {}",
            ns.what()
        );
    }
    if roots.systemd_booted() && cgroupfs::slice_of(&plan.rel).is_none() {
        let _ = writeln!(
            out,
            "warning: systemd manages this host's cgroup tree, and {} is not a slice: the +io above it is systemd's to keep, and it may take it back (systemctl daemon-reload) with every limit in it; bind to a slice (--slice) instead",
            show_rel(&plan.rel)
        );
    }
    Ok(())
}

pub fn unbind(
    roots: &Roots,
    w: &dyn AttrWriter,
    args: &UnbindArgs,
    out: &mut String,
) -> Result<()> {
    let ns = Namespace::open(roots, &args.ns.nqn, args.ns.nsid)?;
    let cur = precheck(roots, &ns, Some(0), args.reenable, REENABLE_HINT)?;
    let changed = swap(w, &ns, &cur, 0)?;
    let verb = if changed { "unbound" } else { "not bound" };
    let _ = writeln!(out, "{verb}: {}", ns.label());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::fs;
    use std::path::{Path, PathBuf};

    use anyhow::Context;
    use clap::Parser;

    use crate::cli::{Cli, Command};
    use crate::sysio;

    const NQN: &str = "nqn.2014-08.org.example:a";

    /// Writes through to the files and logs each write as `NAME=VALUE`;
    /// the writes whose numbers (from 0) are in `refuse` fail with EINVAL
    /// instead and change nothing, as when the kernel refuses to enable a
    /// namespace (a fixture's plain `enable` file takes any write).
    struct Refuse {
        refuse: Vec<usize>,
        log: RefCell<Vec<String>>,
    }

    impl AttrWriter for Refuse {
        fn write_attr(&self, path: &Path, value: &str) -> Result<()> {
            let n = self.log.borrow().len();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            self.log.borrow_mut().push(format!("{name}={value}"));
            if self.refuse.contains(&n) {
                return Err(std::io::Error::from_raw_os_error(22))
                    .with_context(|| format!("writing \"{value}\" to {}", path.display()));
            }
            sysio::write_attr(path, value)
        }
    }

    struct NoSystemd;

    impl Systemd for NoSystemd {
        fn ensure_slice(&self, name: &str) -> Result<()> {
            bail!("unexpected systemctl call for {name}")
        }

        fn set_properties(&self, unit: &str, _: &[String]) -> Result<()> {
            bail!("unexpected systemctl call for {unit}")
        }
    }

    fn put(p: &Path, s: &str) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, s).unwrap();
    }

    /// Every file below `dir` with its content.
    fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(p) = stack.pop() {
            if p.is_dir() {
                stack.extend(fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else {
                out.insert(p.clone(), fs::read_to_string(&p).unwrap());
            }
        }
        out
    }

    /// A fixture tree and `bind` run in it.
    struct Run {
        tree: tempfile::TempDir,
        /// The namespace's configfs directory.
        ns: PathBuf,
        /// The namespace's cgroup_id before: tenant-b's ID.
        old: u64,
        /// tenant-a's ID.
        new: u64,
        /// The files of the tree before the bind.
        before: BTreeMap<PathBuf, String>,
        res: Result<String>,
    }

    /// `bind NQN 1 --cgroup tenant-a --reenable` through the real command
    /// line, with the module loaded, on a namespace that is enabled and
    /// bound to tenant-b, in a fixture tree whose configfs writes go
    /// through `w`.
    fn bind_enabled(w: &Refuse) -> Run {
        bind_enabled_to(w, &["--cgroup", "tenant-a"])
    }

    /// The same with other target arguments.
    fn bind_enabled_to(w: &Refuse, target: &[&str]) -> Run {
        bind_enabled_at(w, "1", target)
    }

    /// The same for `nsid` (a number, or passthru: the subsystem's
    /// passthru directory, a controller's device_path).
    fn bind_enabled_at(w: &Refuse, nsid: &str, target: &[&str]) -> Run {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        for cg in ["cgroup", "cgroup/tenant-a", "cgroup/tenant-b"] {
            put(&root.join(cg).join("cgroup.procs"), "");
            put(&root.join(cg).join("cgroup.controllers"), "io\n");
            put(&root.join(cg).join("cgroup.subtree_control"), "");
        }
        put(&root.join("cgroup/cgroup.subtree_control"), "io\n");
        fs::create_dir_all(root.join("sys/module/nvmet_cgroup")).unwrap();
        fs::create_dir_all(root.join("run")).unwrap();
        let old = cgroupfs::id_of(&root.join("cgroup/tenant-b")).unwrap();
        let new = cgroupfs::id_of(&root.join("cgroup/tenant-a")).unwrap();
        let sub = root.join("configfs/subsystems").join(NQN);
        let ns = if nsid == "passthru" {
            sub.join("passthru")
        } else {
            sub.join("namespaces").join(nsid)
        };
        let dev = if nsid == "passthru" {
            "/dev/nvme0"
        } else {
            "/dev/sdb"
        };
        put(&ns.join("device_path"), &format!("{dev}\n"));
        put(&ns.join("enable"), "1\n");
        put(&ns.join("cgroup_id"), &format!("{old}\n"));
        let before = snapshot(root);

        let p = |d: &str| root.join(d).display().to_string();
        let mut argv = vec!["nvmet-cgroup", "bind", NQN, nsid];
        argv.extend_from_slice(target);
        let roots = [
            "--reenable",
            "--configfs",
            &p("configfs"),
            "--cgroupfs",
            &p("cgroup"),
            "--sysfs",
            &p("sys"),
            "--devfs",
            &p("dev"),
            "--debugfs",
            &p("debug"),
            "--rundir",
            &p("run"),
        ];
        argv.extend_from_slice(&roots);
        let cli = Cli::try_parse_from(argv).unwrap();
        let Command::Bind(args) = &cli.command else {
            panic!("not a bind command: {cli:?}");
        };
        let mut out = String::new();
        let res = bind(&cli.roots.roots(), &NoSystemd, w, args, &mut out).map(|()| out);
        Run {
            tree: t,
            ns,
            old,
            new,
            before,
            res,
        }
    }

    fn refusing(refuse: &[usize]) -> Refuse {
        Refuse {
            refuse: refuse.to_vec(),
            log: RefCell::new(Vec::new()),
        }
    }

    #[test]
    fn reenable_without_refusals_binds() {
        let w = refusing(&[]);
        let r = bind_enabled(&w);
        let out = r.res.unwrap();
        assert!(out.starts_with("bound: "), "{out}");
        assert_eq!(
            *w.log.borrow(),
            [
                "enable=0".to_string(),
                format!("cgroup_id={}", r.new),
                "enable=1".into()
            ]
        );
        assert_eq!(fs::read_to_string(r.ns.join("enable")).unwrap(), "1\n");
        assert_eq!(
            fs::read_to_string(r.ns.join("cgroup_id")).unwrap(),
            format!("{}\n", r.new)
        );
    }

    /// The final enable (write 2) refused, and then each step of the roll
    /// back; also writing cgroup_id (write 1) refused.  Placeholders: <old>
    /// and <new> IDs, <ns> the namespace's label, <enable> and <cgroup_id>
    /// the attribute files, <errno> the refusal.
    #[test]
    fn reenable_rolls_back_when_enabling_fails() {
        let enable_failed = "enabling <ns> with cgroup_id <new> failed: \
                             writing \"1\" to <enable>: <errno>";
        let id_failed = "changing the cgroup_id of <ns> to <new> failed: \
                         writing \"<new>\" to <cgroup_id>: <errno>";
        let all = [
            "enable=0",
            "cgroup_id=<new>",
            "enable=1",
            "cgroup_id=<old>",
            "enable=1",
        ];
        struct Case {
            refuse: &'static [usize],
            writes: usize,
            /// enable and cgroup_id afterwards.
            enable: &'static str,
            id: &'static str,
            /// The error: what failed, then what became of the namespace.
            first: &'static str,
            outcome: &'static str,
        }
        let cases = [
            Case {
                refuse: &[2],
                writes: 5,
                enable: "1",
                id: "<old>",
                first: enable_failed,
                outcome: "rolled back: it is enabled again with cgroup_id <old>",
            },
            Case {
                refuse: &[2, 4],
                writes: 5,
                enable: "0",
                id: "<old>",
                first: enable_failed,
                outcome: "cgroup_id <old> was restored but enabling it again failed too: \
                          writing \"1\" to <enable>: <errno>; \
                          <ns> is left disabled with cgroup_id <old>",
            },
            Case {
                refuse: &[2, 3],
                writes: 4,
                enable: "0",
                id: "<new>",
                first: enable_failed,
                outcome: "restoring cgroup_id <old> failed too: \
                          writing \"<old>\" to <cgroup_id>: <errno>; \
                          <ns> is left disabled with cgroup_id <new>",
            },
            Case {
                refuse: &[1],
                writes: 3,
                enable: "1",
                id: "<old>",
                first: id_failed,
                outcome: "it is enabled again with cgroup_id <old>",
            },
            Case {
                refuse: &[1, 2],
                writes: 3,
                enable: "0",
                id: "<old>",
                first: id_failed,
                outcome: "enabling it again failed too: \
                          writing \"1\" to <enable>: <errno>; \
                          <ns> is left disabled with cgroup_id <old>",
            },
        ];
        for c in cases {
            let w = refusing(c.refuse);
            let r = bind_enabled(&w);
            let fill = |s: &str| {
                s.replace("<new>", &r.new.to_string())
                    .replace("<old>", &r.old.to_string())
                    .replace("<ns>", &format!("{NQN} nsid 1"))
                    .replace("<errno>", "Invalid argument (os error 22)")
                    .replace("<enable>", &r.ns.join("enable").display().to_string())
                    .replace("<cgroup_id>", &r.ns.join("cgroup_id").display().to_string())
            };
            let refuse = c.refuse;
            let Err(e) = &r.res else {
                panic!("{refuse:?}: bind succeeded");
            };
            // What main prints after "nvmet-cgroup: error: " before it exits 1.
            let msg = format!("{e:#}");
            assert_eq!(
                msg,
                fill(&format!("{}; {}", c.first, c.outcome)),
                "{refuse:?}"
            );
            assert!(!msg.contains('\n'), "{refuse:?}: {msg}");
            let writes: Vec<String> = all[..c.writes].iter().map(|s| fill(s)).collect();
            assert_eq!(*w.log.borrow(), writes, "{refuse:?}");
            let attr = |a: &str| fs::read_to_string(r.ns.join(a)).unwrap();
            assert_eq!(attr("enable"), format!("{}\n", c.enable), "{refuse:?}");
            assert_eq!(
                attr("cgroup_id"),
                fill(&format!("{}\n", c.id)),
                "{refuse:?}"
            );
            if c.enable == "1" {
                // Rolled back: the whole tree is as it was.
                assert_eq!(snapshot(r.tree.path()), r.before, "{refuse:?}");
            }
        }
    }

    /// A passthru controller is disabled, bound and enabled again through
    /// passthru/enable and passthru/cgroup_id, and rolled back the same
    /// way when the kernel refuses the enable (ENOENT for a cgroup it
    /// can't find) or the cgroup_id write (EBUSY).
    #[test]
    fn passthru_reenable_and_roll_back() {
        let w = refusing(&[]);
        let r = bind_enabled_at(&w, "passthru", &["--cgroup", "tenant-a"]);
        assert!(r.ns.ends_with("passthru"), "{}", r.ns.display());
        let out = r.res.unwrap();
        assert!(
            out.starts_with(&format!("bound: {NQN} passthru -> ")),
            "{out}"
        );
        assert_eq!(
            *w.log.borrow(),
            [
                "enable=0".to_string(),
                format!("cgroup_id={}", r.new),
                "enable=1".into()
            ]
        );
        assert_eq!(
            fs::read_to_string(r.ns.join("cgroup_id")).unwrap(),
            format!("{}\n", r.new)
        );

        for refuse in [&[2][..], &[1][..]] {
            let w = refusing(refuse);
            let r = bind_enabled_at(&w, "passthru", &["--cgroup", "tenant-a"]);
            let msg = format!("{:#}", r.res.as_ref().unwrap_err());
            let enable = r.ns.join("enable").display().to_string();
            let first = if refuse == [2] {
                format!(
                    "enabling {NQN} passthru with cgroup_id {} failed: writing \"1\" to {enable}",
                    r.new
                )
            } else {
                format!(
                    "changing the cgroup_id of {NQN} passthru to {} failed",
                    r.new
                )
            };
            assert!(msg.starts_with(&first), "{refuse:?}: {msg}");
            assert!(
                msg.ends_with(&format!("enabled again with cgroup_id {}", r.old)),
                "{refuse:?}: {msg}"
            );
            assert_eq!(snapshot(r.tree.path()), r.before, "{refuse:?}");
        }
    }

    /// A bind that created its cgroup and then failed to change cgroup_id
    /// removes the cgroup again, unless the namespace is left naming it.
    #[test]
    fn failed_swap_removes_the_created_cgroup() {
        let target = ["--cgroup", "tenant-new", "--create"];
        // cgroup_id refused: enabled again with the old ID; all undone.
        let w = refusing(&[1]);
        let r = bind_enabled_to(&w, &target);
        let msg = format!("{:#}", r.res.as_ref().unwrap_err());
        assert!(
            msg.ends_with(
                "it is enabled again with cgroup_id {old}; \
                 rolled back the cgroup directories created and the +io written"
                    .replace("{old}", &r.old.to_string())
                    .as_str()
            ),
            "{msg}"
        );
        assert!(!r.tree.path().join("cgroup/tenant-new").exists());
        assert_eq!(snapshot(r.tree.path()), r.before);

        // The enable and putting back the old ID refused: the namespace
        // names the new cgroup, which stays.
        let w = refusing(&[2, 3]);
        let r = bind_enabled_to(&w, &target);
        let msg = format!("{:#}", r.res.as_ref().unwrap_err());
        assert!(!msg.contains("rolled back"), "{msg}");
        let dir = r.tree.path().join("cgroup/tenant-new");
        assert!(dir.is_dir());
        assert_eq!(
            fs::read_to_string(r.ns.join("cgroup_id")).unwrap(),
            format!("{}\n", cgroupfs::id_of(&dir).unwrap())
        );
    }
}
