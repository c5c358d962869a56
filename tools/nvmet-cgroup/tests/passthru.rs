// SPDX-License-Identifier: GPL-2.0
//! Passthru subsystems, named `NQN passthru`, against fixture trees: bind
//! and unbind through `passthru/cgroup_id`, io.weight and io.latency on the
//! controller's disks, io.max refused (passthrough requests bypass
//! blk-throttle), status, save and restore.

mod common;

use std::fs;

use common::{Fixture, CTRL1, NQN_A, NQN_P};

fn passthru(enabled: bool) -> Fixture {
    let f = Fixture::new();
    f.make_passthru(&CTRL1, enabled);
    f
}

#[test]
fn bind_and_unbind_write_passthru_cgroup_id() {
    let f = passthru(false);
    let out = f.ok(&["bind", NQN_P, "passthru", "--cgroup", "tenant-a"]);
    let id = f.ino("tenant-a");
    assert!(
        out.starts_with(&format!(
            "bound: {NQN_P} passthru -> cgroup tenant-a (id {id})\n"
        )),
        "{out}"
    );
    assert!(
        out.contains("note: load nvmet_cgroup before enabling the passthru controller"),
        "{out}"
    );
    assert_eq!(f.pt_cgroup_id(NQN_P), id);
    // Only passthru/cgroup_id: no namespace of another subsystem, nor the
    // passthru directory of one, is touched.
    assert_eq!(f.pt_cgroup_id(NQN_A), 0);
    assert_eq!(
        f.read(&format!("configfs/subsystems/{NQN_P}/passthru/enable")),
        "0\n"
    );
    let out = f.ok(&["bind", NQN_P, "passthru", "--cgroup", "tenant-a"]);
    assert!(out.starts_with("already bound: "), "{out}");
    let out = f.ok(&["unbind", NQN_P, "passthru"]);
    assert_eq!(out, format!("unbound: {NQN_P} passthru\n"));
    assert_eq!(f.pt_cgroup_id(NQN_P), 0);
}

/// passthru/cgroup_id can't change while passthru/enable reads 1 (the
/// kernel says EBUSY): refused without --reenable, with nothing changed;
/// with --reenable, passthru/enable goes to 0 and back to 1 around the
/// write, and the module must be loaded for a non-zero ID.
#[test]
fn enabled_passthru_needs_reenable_and_the_module() {
    let f = passthru(true);
    let before = f.snapshot();
    let (code, _, err) = f.run(&["bind", NQN_P, "passthru", "--cgroup", "tenant-a"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!(
            "nvmet-cgroup: error: {NQN_P} passthru is enabled: its cgroup_id can only change while it is disabled (use --reenable to disable it, change it and enable it again)\n"
        )
    );
    assert_eq!(f.snapshot(), before);

    let args = [
        "bind",
        NQN_P,
        "passthru",
        "--cgroup",
        "tenant-a",
        "--reenable",
    ];
    let (code, _, err) = f.run(&args);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("cannot enable {NQN_P} passthru with a cgroup"))
            && err.contains("modprobe nvmet_cgroup"),
        "{err}"
    );
    assert_eq!(f.snapshot(), before);

    f.load_module();
    f.ok(&args);
    assert_eq!(f.pt_cgroup_id(NQN_P), f.ino("tenant-a"));
    assert_eq!(
        f.read(&format!("configfs/subsystems/{NQN_P}/passthru/enable")),
        "1\n"
    );

    let before = f.snapshot();
    let (code, _, err) = f.run(&["unbind", NQN_P, "passthru"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("is enabled") && err.contains("--reenable"),
        "{err}"
    );
    assert_eq!(f.snapshot(), before);
    f.ok(&["unbind", NQN_P, "passthru", "--reenable"]);
    assert_eq!(f.pt_cgroup_id(NQN_P), 0);
    assert_eq!(
        f.read(&format!("configfs/subsystems/{NQN_P}/passthru/enable")),
        "1\n"
    );
}

#[test]
fn passthru_names_are_checked() {
    let f = passthru(false);
    // A subsystem without passthru/ (nvmet built without passthru).
    fs::create_dir_all(f.p("configfs/subsystems/nqn.nopt/namespaces")).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["bind", NQN_P, "passthrough", "--cgroup", "tenant-a"],
            "\"passthrough\" is neither a namespace ID (1 to 4294967295) nor passthru",
        ),
        (
            vec!["bind", NQN_P, "0", "--cgroup", "tenant-a"],
            "\"0\" is neither a namespace ID",
        ),
        (
            vec!["bind", "nqn.nopt", "passthru", "--cgroup", "tenant-a"],
            "subsystem nqn.nopt has no passthru directory",
        ),
        (vec!["status", NQN_P, "1"], "has no namespace 1"),
    ];
    for (args, want) in cases {
        let before = f.snapshot();
        let (code, out, err) = f.run(&args);
        assert_ne!(code, 0, "{args:?} succeeded: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
        assert_eq!(f.snapshot(), before, "{args:?} changed the tree");
    }
}
