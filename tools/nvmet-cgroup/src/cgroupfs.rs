// SPDX-License-Identifier: GPL-2.0
//! cgroup v2 directories: naming (paths and systemd slices), validation,
//! creation with the io controller enabled on the way down, and lookup by ID.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::paths::Roots;
use crate::sysio;

/// Which cgroup a namespace is to be charged to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A path relative to the cgroup root ("" is the root).
    Path(String),
    /// A systemd slice, by unit name (`a-b.slice`).
    Slice(String),
}

/// The components of `p` with `.` and `..` resolved lexically (`..` at the
/// top stays at the top, as for `/..`); `None` if a component is not UTF-8.
fn lexical(p: &Path) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str()?),
            Component::ParentDir => {
                parts.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(parts)
}

/// Normalise a `--cgroup` argument to a path relative to the cgroup2 mount:
/// `tenant-a`, `./tenant-a` and `MOUNT/tenant-a` all name the same cgroup.
/// An absolute path must lie under the mount, a relative one is relative to
/// it, `..` may not climb out of it, and the root cgroup itself (``, `.`,
/// `/`, the mount) is refused: nothing can be bound to it.
pub fn normalize_path(roots: &Roots, arg: &str) -> Result<String> {
    let mount = roots.cgroupfs.display();
    if arg.is_empty() {
        bail!("the cgroup path is empty: name a cgroup below the cgroup2 mount {mount}");
    }
    let p = Path::new(arg);
    let utf8 = || anyhow::anyhow!("cgroup path \"{arg}\" is not valid UTF-8");
    // "/" as the cgroup root, as cgroup paths are shown (/proc/PID/cgroup).
    let parts: Vec<&str> = if p.components().all(|c| c == Component::RootDir) {
        Vec::new()
    } else if p.is_absolute() {
        let abs = lexical(p).ok_or_else(utf8)?;
        let top = lexical(&roots.cgroupfs).ok_or_else(|| {
            anyhow::anyhow!("the cgroup2 mount {mount} is not a valid UTF-8 path")
        })?;
        match abs.strip_prefix(top.as_slice()) {
            Some(rest) => rest.to_vec(),
            None => bail!(
                "cgroup path \"{arg}\" is not under the cgroup2 mount {mount} \
                 (give a path relative to it, or an absolute one below it)"
            ),
        }
    } else {
        let mut parts = Vec::new();
        for c in p.components() {
            match c {
                Component::Normal(s) => parts.push(s.to_str().ok_or_else(utf8)?),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        bail!(
                            "cgroup path \"{arg}\" climbs out of the cgroup2 mount {mount} \
                             (a \"..\" above it)"
                        );
                    }
                }
                Component::RootDir | Component::Prefix(_) => unreachable!("a relative path"),
            }
        }
        parts
    };
    if parts.is_empty() {
        bail!(
            "cgroup path \"{arg}\" is the root cgroup ({mount}): \
             name a cgroup below it"
        );
    }
    Ok(parts.join("/"))
}

/// Validate a path relative to the cgroup root as found in a saved file.
pub fn check_rel(rel: &str) -> Result<()> {
    if rel.starts_with('/') || rel.ends_with('/') {
        bail!("cgroup path \"{rel}\" must be relative to the cgroup root, without a trailing /");
    }
    if !rel.is_empty()
        && rel
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        bail!("cgroup path \"{rel}\" has an empty, \".\" or \"..\" component");
    }
    Ok(())
}

/// The cgroup path of a systemd slice: each dash adds a level, so
/// `a-b-c.slice` is `a.slice/a-b.slice/a-b-c.slice`; `-.slice` is the root.
pub fn slice_path(name: &str) -> Result<String> {
    let bad = |why: &str| anyhow::anyhow!("invalid slice name \"{name}\": {why}");
    let Some(stem) = name.strip_suffix(".slice") else {
        return Err(bad("it must end in .slice"));
    };
    if stem == "-" {
        return Ok(String::new());
    }
    if stem.is_empty() {
        return Err(bad("the name before .slice is empty"));
    }
    if !stem
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '_' | '.' | '\\' | '-'))
    {
        return Err(bad("only letters, digits and \":_.\\-\" are allowed"));
    }
    if stem.starts_with('-') || stem.ends_with('-') || stem.contains("--") {
        return Err(bad(
            "dashes separate levels, so none may be leading, trailing or doubled",
        ));
    }
    let words: Vec<&str> = stem.split('-').collect();
    let levels: Vec<String> = (1..=words.len())
        .map(|n| format!("{}.slice", words[..n].join("-")))
        .collect();
    Ok(levels.join("/"))
}

/// If `rel` is the path of a slice (its last component is a slice whose
/// path is `rel`), that slice's name.
pub fn slice_of(rel: &str) -> Option<String> {
    let last = rel.rsplit('/').next()?;
    match slice_path(last) {
        Ok(p) if p == rel && !rel.is_empty() => Some(last.to_string()),
        _ => None,
    }
}

/// A cgroup is a directory with a `cgroup.procs` file.
pub fn is_cgroup(dir: &Path) -> bool {
    dir.is_dir() && dir.join("cgroup.procs").is_file()
}

fn words(path: &Path) -> Result<Vec<String>> {
    Ok(sysio::read(path)?
        .split_whitespace()
        .map(|w| w.trim_start_matches('+').to_string())
        .collect())
}

fn io_available(dir: &Path) -> Result<bool> {
    Ok(words(&dir.join("cgroup.controllers"))?
        .iter()
        .any(|w| w == "io"))
}

/// Whether `io` is enabled in `dir`'s `cgroup.subtree_control`.  Reads the
/// file as the kernel shows it ("io memory") or, in a fixture, as the log of
/// "+io"/"-io" writes.
pub fn io_enabled_below(dir: &Path) -> Result<bool> {
    let mut on = false;
    for w in sysio::read(&dir.join("cgroup.subtree_control"))?.split_whitespace() {
        match w {
            "io" | "+io" => on = true,
            "-io" => on = false,
            _ => {}
        }
    }
    Ok(on)
}

/// What the tool asks of systemd, for slices on a systemd host; the one
/// place it talks to systemd, so tests never run systemctl.
pub trait Systemd {
    /// Make the slice exist with the io controller enabled on every level
    /// down to it.
    fn ensure_slice(&self, name: &str) -> Result<()>;
    /// Set unit properties for this boot (`IOReadIOPSMax=/dev/sdb 1000`).
    fn set_properties(&self, unit: &str, props: &[String]) -> Result<()>;
}

/// The real thing: `systemctl set-property --runtime NAME IOAccounting=yes`
/// (systemd enables io on every level down to the slice) and
/// `systemctl start NAME` (which creates its cgroup); limits with
/// `systemctl set-property --runtime` too.  systemd owns a slice's
/// `cgroup.subtree_control` and io files: what is written there behind its
/// back is undone when it next realizes the unit (`systemctl
/// daemon-reload`), while its own runtime properties (drop-ins under
/// /run/systemd/system.control) survive that and go at reboot, when
/// `restore` sets them again.
pub struct Systemctl;

fn systemctl(args: &[&str]) -> Result<()> {
    let shown = format!("systemctl {}", args.join(" "));
    let out = Command::new("systemctl")
        .args(args)
        .output()
        .with_context(|| format!("running {shown}"))?;
    if !out.status.success() {
        // All it said, on one line: its first line alone may be a banner
        // or miss the reason.
        let err = String::from_utf8_lossy(&out.stderr);
        let said: Vec<&str> = err
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        if said.is_empty() {
            bail!("{shown} failed ({}, nothing on stderr)", out.status);
        }
        bail!("{shown} failed ({}): {}", out.status, said.join(" "));
    }
    Ok(())
}

impl Systemd for Systemctl {
    fn ensure_slice(&self, name: &str) -> Result<()> {
        systemctl(&["set-property", "--runtime", name, "IOAccounting=yes"])?;
        systemctl(&["start", name])
    }

    fn set_properties(&self, unit: &str, props: &[String]) -> Result<()> {
        let mut args = vec!["set-property", "--runtime", unit];
        args.extend(props.iter().map(String::as_str));
        systemctl(&args)
    }
}

/// The slice whose io settings systemd owns: `plan`'s, on a systemd host.
pub fn systemd_slice(roots: &Roots, rel: &str) -> Option<String> {
    if roots.systemd_booted() {
        slice_of(rel)
    } else {
        None
    }
}

/// What making a cgroup ready takes; computed without changing anything.
#[derive(Debug)]
pub struct Plan {
    /// Path relative to the cgroup root.
    pub rel: String,
    /// Directories to create, top-down.
    pub create: Vec<PathBuf>,
    /// Directories whose `cgroup.subtree_control` needs `+io`, top-down.
    pub enable_io: Vec<PathBuf>,
}

impl Plan {
    pub fn dir(&self, roots: &Roots) -> PathBuf {
        roots.cgroup_dir(&self.rel)
    }
}

/// Check that `target` is (or, with `create`, can become) a cgroup that the
/// io controller reaches, and say what has to change.
pub fn plan(roots: &Roots, target: &Target, create: bool) -> Result<Plan> {
    let (rel, slice) = match target {
        Target::Path(p) => {
            check_rel(p)?;
            (p.clone(), slice_of(p))
        }
        Target::Slice(s) => (slice_path(s)?, Some(s.clone())),
    };
    let root = &roots.cgroupfs;
    if !is_cgroup(root) {
        bail!(
            "{} is not a cgroup v2 hierarchy (no cgroup.procs)",
            root.display()
        );
    }
    let comps: Vec<&str> = if rel.is_empty() {
        Vec::new()
    } else {
        rel.split('/').collect()
    };
    let mut dirs = vec![root.clone()];
    for c in &comps {
        let next = dirs[dirs.len() - 1].join(c);
        dirs.push(next);
    }
    let mut create_dirs = Vec::new();
    for d in &dirs[1..] {
        if !create_dirs.is_empty() {
            create_dirs.push(d.clone());
        } else if d.exists() {
            if !is_cgroup(d) {
                bail!("{} is not a cgroup (no cgroup.procs)", d.display());
            }
        } else if create {
            create_dirs.push(d.clone());
        } else {
            let what = match &slice {
                Some(s) => format!("slice {s}"),
                None => "cgroup".to_string(),
            };
            bail!(
                "{what} {} does not exist (use --create to create it)",
                d.display()
            );
        }
    }
    // Every level above the target needs io in its subtree_control.
    let mut enable_io = Vec::new();
    for d in &dirs[..dirs.len() - 1] {
        if create_dirs.contains(d) {
            enable_io.push(d.clone());
            continue;
        }
        if !io_available(d)? {
            bail!(
                "io controller not available at {} (not in cgroup.controllers)",
                d.display()
            );
        }
        if !io_enabled_below(d)? {
            enable_io.push(d.clone());
        }
    }
    Ok(Plan {
        rel,
        create: create_dirs,
        enable_io,
    })
}

/// One change [`apply`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// A directory it created (not one systemd created).
    Created(PathBuf),
    /// A directory whose `cgroup.subtree_control` it wrote `+io` to.
    EnabledIo(PathBuf),
}

/// What [`apply`] did: the cgroup's ID and the changes, in order, so that a
/// step failing later can put the tree back with [`Applied::undo_after`].
#[derive(Debug)]
#[must_use = "undo_after the error of a later step"]
pub struct Applied {
    pub id: u64,
    steps: Vec<Step>,
}

impl Applied {
    /// Undo every step in reverse order: `-io` where `+io` was written (not
    /// in directories about to be removed), then the created directories,
    /// bottom-up.  Returns what could not be undone.
    fn undo(&self) -> Vec<String> {
        let created: Vec<&PathBuf> = self
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Created(d) => Some(d),
                Step::EnabledIo(_) => None,
            })
            .collect();
        let mut failed = Vec::new();
        for s in self.steps.iter().rev() {
            let res = match s {
                Step::EnabledIo(d) if created.contains(&d) => continue,
                Step::EnabledIo(d) => {
                    sysio::write_control(&d.join("cgroup.subtree_control"), "-io")
                }
                Step::Created(d) => {
                    fs::remove_dir(d).with_context(|| format!("removing {}", d.display()))
                }
            };
            if let Err(e) = res {
                failed.push(format!("{e:#}"));
            }
        }
        failed
    }

    /// `err`, a later step's failure, after undoing what was applied; the
    /// message says what was undone or what could not be.
    pub fn undo_after(&self, err: anyhow::Error) -> anyhow::Error {
        if self.steps.is_empty() {
            return err;
        }
        let failed = self.undo();
        if failed.is_empty() {
            anyhow::anyhow!(
                "{err:#}; rolled back the cgroup directories created and the +io written"
            )
        } else {
            anyhow::anyhow!(
                "{err:#}; rolling back the cgroup changes failed too: {}",
                failed.join("; ")
            )
        }
    }
}

/// Carry out a plan; returns the cgroup's ID and what changed.  A slice on a
/// systemd host is made by systemd; otherwise the directories are created
/// here.  If a step fails, the ones before it are undone.
pub fn apply(roots: &Roots, plan: &Plan, systemd: &dyn Systemd) -> Result<Applied> {
    let mut done = Applied {
        id: 0,
        steps: Vec::new(),
    };
    match apply_steps(roots, plan, systemd, &mut done) {
        Ok(id) => {
            done.id = id;
            Ok(done)
        }
        Err(e) => Err(done.undo_after(e)),
    }
}

fn apply_steps(
    roots: &Roots,
    plan: &Plan,
    systemd: &dyn Systemd,
    done: &mut Applied,
) -> Result<u64> {
    // A slice on a systemd host: systemd creates it and enables io above
    // it (a +io written here would be taken back at its next
    // daemon-reload).
    if let Some(name) = systemd_slice(roots, &plan.rel) {
        if !plan.create.is_empty() || !plan.enable_io.is_empty() {
            systemd.ensure_slice(name.as_str())?;
        }
        let dir = plan.dir(roots);
        if !dir.is_dir() {
            bail!("systemd did not create {} for {name}", dir.display());
        }
        for d in &plan.enable_io {
            if !io_enabled_below(d).unwrap_or(false) {
                bail!(
                    "systemd did not enable io in {} for {name} (IOAccounting=yes)",
                    d.join("cgroup.subtree_control").display()
                );
            }
        }
        return id_of(&dir);
    }
    for d in &plan.create {
        fs::create_dir(d).with_context(|| format!("creating {}", d.display()))?;
        done.steps.push(Step::Created(d.clone()));
    }
    for d in &plan.enable_io {
        if !io_enabled_below(d).unwrap_or(false) {
            sysio::write_control(&d.join("cgroup.subtree_control"), "+io")?;
            done.steps.push(Step::EnabledIo(d.clone()));
        }
    }
    id_of(&plan.dir(roots))
}

/// The cgroup ID: the inode number of its directory.
pub fn id_of(dir: &Path) -> Result<u64> {
    Ok(fs::metadata(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .ino())
}

/// Every cgroup below the mount by ID (its directory's inode number), from
/// one walk of the tree: for commands that look up many namespaces' IDs
/// (`status`, `save`), so that they cost O(namespaces + cgroups).
pub struct CgroupIndex {
    by_id: HashMap<u64, String>,
}

impl CgroupIndex {
    pub fn build(roots: &Roots) -> CgroupIndex {
        let mut by_id = HashMap::new();
        walk(roots, |dir, ino| {
            if let Some(rel) = roots.cgroup_rel(dir) {
                by_id.entry(ino).or_insert(rel);
            }
            false
        });
        CgroupIndex { by_id }
    }

    /// The path (relative to the mount) of the cgroup with this ID; `None`
    /// for 0 and for IDs no cgroup has.
    pub fn get(&self, id: u64) -> Option<&str> {
        if id == 0 {
            return None;
        }
        self.by_id.get(&id).map(String::as_str)
    }
}

/// Visit every cgroup directory below the mount (depth first, sorted, the
/// mount first) with its inode number until `visit` returns true; the
/// directory it stopped at.
fn walk(roots: &Roots, mut visit: impl FnMut(&Path, u64) -> bool) -> Option<PathBuf> {
    let mut stack = vec![roots.cgroupfs.clone()];
    while let Some(dir) = stack.pop() {
        let md = match fs::symlink_metadata(&dir) {
            Ok(m) => m,
            Err(_) => continue,
        };
        if !md.is_dir() {
            continue;
        }
        if is_cgroup(&dir) && visit(&dir, md.ino()) {
            return Some(dir);
        }
        let Ok(rd) = fs::read_dir(&dir) else {
            continue;
        };
        let mut subs: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
            .map(|e| e.path())
            .collect();
        subs.sort();
        subs.reverse();
        stack.extend(subs);
    }
    None
}

/// The path (relative to the mount) of the cgroup with this ID, stopping at
/// the first match; `None` for 0 and for IDs no cgroup has.
pub fn find_by_id(roots: &Roots, id: u64) -> Result<Option<String>> {
    if id == 0 {
        return Ok(None);
    }
    Ok(walk(roots, |_, ino| ino == id).and_then(|dir| roots.cgroup_rel(&dir)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn slice_names() {
        let ok = [
            ("-.slice", ""),
            ("system.slice", "system.slice"),
            ("tenants-a.slice", "tenants.slice/tenants-a.slice"),
            ("a-b-c.slice", "a.slice/a-b.slice/a-b-c.slice"),
            ("x_y:z.slice", "x_y:z.slice"),
        ];
        for (name, want) in ok {
            assert_eq!(slice_path(name).ok().as_deref(), Some(want), "{name}");
        }
        let bad = [
            "tenant",
            ".slice",
            "a--b.slice",
            "-a.slice",
            "a-.slice",
            "a/b.slice",
            "a b.slice",
            "",
        ];
        for name in bad {
            assert!(slice_path(name).is_err(), "{name}");
        }
    }

    #[test]
    fn slice_of_paths() {
        let cases = [
            ("a.slice/a-b.slice", Some("a-b.slice")),
            ("a.slice", Some("a.slice")),
            ("tenant-a", None),
            ("x/a.slice", None),
            ("", None),
        ];
        for (rel, want) in cases {
            assert_eq!(slice_of(rel).as_deref(), want, "{rel}");
        }
    }

    #[test]
    fn normalize() {
        let roots = Roots::default();
        let cases = [
            ("tenant-a", Some("tenant-a")),
            ("tenant-a/", Some("tenant-a")),
            ("./tenant-a", Some("tenant-a")),
            ("t/./a", Some("t/a")),
            ("a/../b", Some("b")),
            ("/sys/fs/cgroup/t/a", Some("t/a")),
            ("/sys/fs/cgroup/t/a/", Some("t/a")),
            ("/sys/fs/cgroup//t", Some("t")),
            ("/sys/fs/cgroup/x/../y", Some("y")),
            ("/sys/fs/cgroup/../cgroup/z", Some("z")),
            // Outside the mount.
            ("/tmp/evil", None),
            ("/tenant-a", None),
            ("/sys/fs/cgroupx/a", None),
            ("/sys/fs/cgroup/../../../tmp", None),
            ("/sys/fs/cgroup/x/../..", None),
            ("..", None),
            ("../etc", None),
            ("a/../../etc", None),
            // The root cgroup.
            ("", None),
            ("/", None),
            (".", None),
            ("./", None),
            ("a/..", None),
            ("/sys/fs/cgroup", None),
            ("/sys/fs/cgroup/", None),
            ("/sys/fs/cgroup/.", None),
        ];
        for (arg, want) in cases {
            assert_eq!(normalize_path(&roots, arg).ok().as_deref(), want, "{arg}");
        }
        let msg = |arg: &str| format!("{:#}", normalize_path(&roots, arg).unwrap_err());
        assert!(msg("/tmp/evil").contains("is not under the cgroup2 mount /sys/fs/cgroup"));
        assert!(msg("../etc").contains("climbs out of the cgroup2 mount"));
        assert!(msg("").contains("is empty"));
        for root in ["/", ".", "/sys/fs/cgroup"] {
            assert!(msg(root).contains("is the root cgroup"), "{root}");
        }
    }

    struct FakeSystemd {
        cgroupfs: PathBuf,
        calls: RefCell<Vec<String>>,
    }

    /// Does what systemd does for `set-property IOAccounting=yes` and
    /// `start`: every level of the slice exists, io enabled above it.
    impl Systemd for FakeSystemd {
        fn ensure_slice(&self, name: &str) -> Result<()> {
            self.calls.borrow_mut().push(name.to_string());
            let rel = slice_path(name)?;
            let mut dir = self.cgroupfs.clone();
            fs::write(dir.join("cgroup.subtree_control"), "io\n")?;
            for part in rel.split('/') {
                dir = dir.join(part);
                fs::create_dir_all(&dir)?;
                fs::write(dir.join("cgroup.procs"), "")?;
                fs::write(dir.join("cgroup.controllers"), "io\n")?;
                if dir != self.cgroupfs.join(&rel) {
                    fs::write(dir.join("cgroup.subtree_control"), "io\n")?;
                }
            }
            Ok(())
        }

        fn set_properties(&self, unit: &str, props: &[String]) -> Result<()> {
            self.calls
                .borrow_mut()
                .push(format!("{unit} {}", props.join(" ")));
            Ok(())
        }
    }

    #[test]
    fn slice_goes_through_systemd_when_booted_with_it() -> Result<()> {
        let t = tempfile::tempdir()?;
        let cg = t.path().join("cg");
        fs::create_dir_all(&cg)?;
        fs::write(cg.join("cgroup.procs"), "")?;
        fs::write(cg.join("cgroup.controllers"), "io memory\n")?;
        fs::write(cg.join("cgroup.subtree_control"), "")?;
        fs::create_dir_all(t.path().join("run/systemd/system"))?;
        let roots = Roots {
            cgroupfs: cg.clone(),
            rundir: t.path().join("run"),
            ..Roots::default()
        };
        let p = plan(&roots, &Target::Slice("t-a.slice".into()), true)?;
        assert_eq!(p.rel, "t.slice/t-a.slice");
        let fake = FakeSystemd {
            cgroupfs: cg.clone(),
            calls: RefCell::new(Vec::new()),
        };
        let id = apply(&roots, &p, &fake)?.id;
        assert_eq!(fake.calls.borrow().as_slice(), ["t-a.slice".to_string()]);
        assert_eq!(id, id_of(&cg.join("t.slice/t-a.slice"))?);
        // io came from systemd, not from a +io written here (which systemd
        // would take back at its next daemon-reload).
        assert_eq!(
            fs::read_to_string(cg.join("cgroup.subtree_control"))?,
            "io\n"
        );
        assert_eq!(
            fs::read_to_string(cg.join("t.slice/cgroup.subtree_control"))?,
            "io\n"
        );

        // An existing slice whose parent lacks io: systemd is asked again,
        // and nothing is written here.
        fs::write(cg.join("t.slice/cgroup.subtree_control"), "")?;
        let p = plan(&roots, &Target::Slice("t-a.slice".into()), false)?;
        assert_eq!(p.create.len(), 0);
        assert_eq!(p.enable_io.len(), 1);
        let _ = apply(&roots, &p, &fake)?;
        assert_eq!(fake.calls.borrow().len(), 2);
        assert_eq!(
            fs::read_to_string(cg.join("t.slice/cgroup.subtree_control"))?,
            "io\n"
        );
        Ok(())
    }
}
