// SPDX-License-Identifier: GPL-2.0
//! The real binary against fixture trees: bind, limit, status, save,
//! restore, and bad inputs that must change nothing.

mod common;

use std::fs;
use std::os::unix::fs::MetadataExt;

use common::{d, last_line, FakeSystemctl, Fixture, BOOT1, BOOT2, NQN_A, NQN_B};

#[test]
fn bind_writes_inode_and_enables_io_top_down() {
    let f = Fixture::new();
    let out = f.ok(&["bind", NQN_A, "1", "--slice", "tenants-b.slice"]);
    assert!(out.contains("tenants.slice/tenants-b.slice"), "{out}");
    assert_eq!(
        f.cgroup_id(NQN_A, 1),
        f.ino("tenants.slice/tenants-b.slice")
    );
    assert_eq!(f.read("cgroup/cgroup.subtree_control"), "+io\n");
    assert_eq!(
        f.read("cgroup/tenants.slice/cgroup.subtree_control"),
        "+io\n"
    );
    // The leaf's own subtree_control is not touched.
    assert_eq!(
        f.read("cgroup/tenants.slice/tenants-b.slice/cgroup.subtree_control"),
        ""
    );

    // Already enabled above: no second +io; --cgroup takes an absolute
    // path under the mount.
    let abs = f.cg("tenant-a").display().to_string();
    f.ok(&["bind", NQN_A, "2", "--cgroup", &abs]);
    assert_eq!(f.cgroup_id(NQN_A, 2), f.ino("tenant-a"));
    assert_eq!(f.read("cgroup/cgroup.subtree_control"), "+io\n");

    // --create makes the directory.
    f.ok(&["bind", NQN_A, "3", "--cgroup", "tenant-new", "--create"]);
    assert!(f.cg("tenant-new").is_dir());
    assert_eq!(f.cgroup_id(NQN_A, 3), f.ino("tenant-new"));

    // Binding again is a no-op; unbind writes 0.
    let out = f.ok(&["bind", NQN_A, "2", "--cgroup", "tenant-a"]);
    assert!(out.contains("already bound"), "{out}");
    f.ok(&["unbind", NQN_A, "2"]);
    assert_eq!(f.cgroup_id(NQN_A, 2), 0);
}

#[test]
fn cgroup_paths_outside_the_mount_or_the_root_are_refused() {
    let f = Fixture::new();
    let mount = f.cg("").display().to_string();
    let mount = mount.trim_end_matches('/').to_string();
    let evil = f.p("evil").display().to_string();
    let climb = format!("{mount}/../evil");
    let mount_slash = format!("{mount}/");
    let mount_dot = format!("{mount}/tenant-a/..");
    let outside = "is not under the cgroup2 mount";
    let root = "is the root cgroup";
    let cases: Vec<(&str, &str)> = vec![
        (&evil, outside),
        (&climb, outside),
        ("/tmp/evil", outside),
        // Once re-rooted under the mount; now refused.
        ("/tenant-a", outside),
        ("../evil", "climbs out of the cgroup2 mount"),
        ("tenant-a/../../evil", "climbs out of the cgroup2 mount"),
        ("", "is empty"),
        ("/", root),
        (".", root),
        ("tenant-a/..", root),
        (&mount, root),
        (&mount_slash, root),
        (&mount_dot, root),
    ];
    for (path, want) in cases {
        for create in [false, true] {
            let mut args = vec!["bind", NQN_A, "2", "--cgroup", path];
            if create {
                args.push("--create");
            }
            let before = f.snapshot();
            let (code, out, err) = f.run(&args);
            assert_eq!(code, 1, "{args:?} succeeded: {out}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.starts_with("nvmet-cgroup: error: "), "{args:?}: {err}");
            assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
            assert_eq!(f.snapshot(), before, "{args:?} changed the tree");
        }
    }
    assert!(!f.p("evil").exists());
    assert_eq!(f.cgroup_id(NQN_A, 2), 0);

    // systemd's name for the root cgroup.
    for create in [false, true] {
        let mut args = vec!["bind", NQN_A, "2", "--slice=-.slice"];
        if create {
            args.push("--create");
        }
        let before = f.snapshot();
        let (code, _, err) = f.run(&args);
        assert_eq!(code, 1, "{args:?} succeeded");
        assert!(err.contains(root), "{args:?}: {err}");
        assert_eq!(f.snapshot(), before, "{args:?} changed the tree");
    }

    // Relative to the mount, with harmless "." and "..".
    f.ok(&["bind", NQN_A, "2", "--cgroup", "./noio/../tenant-a"]);
    assert_eq!(f.cgroup_id(NQN_A, 2), f.ino("tenant-a"));
    let abs = format!("{mount}/x/../tenants.slice/./tenants-b.slice");
    f.ok(&["bind", NQN_A, "2", "--cgroup", &abs]);
    assert_eq!(
        f.cgroup_id(NQN_A, 2),
        f.ino("tenants.slice/tenants-b.slice")
    );
}

/// A bind that fails after it created cgroups and wrote +io undoes both.
/// In a fixture the second of two new levels can't get +io: a fixture's
/// mkdir makes no cgroup.subtree_control to write it to.
#[test]
fn failed_bind_removes_the_cgroups_it_created() {
    let args = ["bind", NQN_A, "2", "--cgroup", "new/child", "--create"];
    let check = |f: &common::Fixture| {
        let (code, out, err) = f.run(&args);
        assert_eq!(code, 1, "succeeded: {out}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("new/cgroup.subtree_control")
                && err.contains("rolled back the cgroup directories created and the +io written"),
            "{err}"
        );
        assert!(!f.cg("new").exists());
        assert_eq!(f.cgroup_id(NQN_A, 2), 0);
    };

    // io already on at the root: only the directories to remove.
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    let before = f.snapshot();
    check(&f);
    assert_eq!(f.snapshot(), before, "the tree changed");

    // io off at the root: +io written there is taken back with -io (a
    // fixture's file keeps both writes, the kernel's would read as before).
    let f = Fixture::new();
    let mut before = f.snapshot();
    check(&f);
    let subtree = std::path::PathBuf::from("cgroup/cgroup.subtree_control");
    assert_eq!(before.get(&subtree).map(String::as_str), Some(""));
    before.insert(subtree, "+io\n-io\n".into());
    assert_eq!(f.snapshot(), before, "the tree changed");
}

/// The directories of acme-web.slice, top-down.
const ACME_WEB: [&str; 2] = ["acme.slice", "acme.slice/acme-web.slice"];

#[test]
fn create_slice_on_a_systemd_host_goes_through_systemctl() {
    let args = ["bind", NQN_A, "1", "--slice", "acme-web.slice", "--create"];
    let f = Fixture::new();
    f.boot_with_systemd();
    let fake = FakeSystemctl::creating(&f, &ACME_WEB, "io\n");
    let (code, out, err) = f.run_with(&fake, &args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        fake.calls(),
        [
            "[set-property][--runtime][acme-web.slice][IOAccounting=yes]",
            "[start][acme-web.slice]",
        ]
    );
    let id = f.ino("acme.slice/acme-web.slice");
    assert_eq!(f.cgroup_id(NQN_A, 1), id);
    assert!(
        out.starts_with(&format!(
            "bound: {NQN_A} nsid 1 -> cgroup acme.slice/acme-web.slice (id {id})\n"
        )),
        "{out}"
    );
    // io on every level above the slice (the fake, unlike systemd, leaves
    // subtree_control alone); nothing written in the slice itself.
    assert_eq!(f.read("cgroup/cgroup.subtree_control"), "+io\n");
    assert_eq!(f.read("cgroup/acme.slice/cgroup.subtree_control"), "+io\n");
    assert_eq!(
        f.read("cgroup/acme.slice/acme-web.slice/cgroup.subtree_control"),
        ""
    );

    // It exists now: no systemctl.
    let (code, out, err) = f.run_with(&fake, &args);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("already bound: "), "{out}");
    assert_eq!(fake.calls().len(), 2);

    // Without RUNDIR/systemd/system the tool makes the directory itself
    // (one level: a fixture's mkdir, unlike cgroupfs's, makes no files).
    let f = Fixture::new();
    let fake = FakeSystemctl::creating(&f, &ACME_WEB[..1], "io\n");
    let (code, _, err) = f.run_with(
        &fake,
        &["bind", NQN_A, "1", "--slice", "acme.slice", "--create"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(fake.calls(), Vec::<String>::new());
    assert_eq!(f.cgroup_id(NQN_A, 1), f.ino("acme.slice"));
}

#[test]
fn failing_systemctl_changes_nothing() {
    let args = ["bind", NQN_A, "1", "--slice", "acme-web.slice", "--create"];
    let set =
        "systemctl set-property --runtime acme-web.slice IOAccounting=yes failed (exit status: 1)";
    let start = "systemctl start acme-web.slice failed (exit status: 1)";
    // (the call that fails, what it says on stderr, the calls made, the error).
    let cases = [
        (
            "set-property",
            "Failed to set unit properties on acme-web.slice: Access denied",
            1,
            format!("{set}: Failed to set unit properties on acme-web.slice: Access denied"),
        ),
        (
            "start",
            "Job for acme-web.slice failed.\n\
             See \"systemctl status acme-web.slice\" for details.",
            2,
            format!(
                "{start}: Job for acme-web.slice failed. \
                 See \"systemctl status acme-web.slice\" for details."
            ),
        ),
        (
            "start",
            "",
            2,
            "systemctl start acme-web.slice failed (exit status: 1, nothing on stderr)".into(),
        ),
    ];
    let all = [
        "[set-property][--runtime][acme-web.slice][IOAccounting=yes]",
        "[start][acme-web.slice]",
    ];
    for (verb, stderr, calls, want) in cases {
        let f = Fixture::new();
        f.boot_with_systemd();
        let fake = FakeSystemctl::failing(verb, stderr);
        let before = f.snapshot();
        let (code, out, err) = f.run_with(&fake, &args);
        assert_eq!(code, 1, "{verb}: {out}");
        assert_eq!(err, format!("nvmet-cgroup: error: {want}\n"), "{verb}");
        assert_eq!(fake.calls(), all[..calls], "{verb}");
        assert_eq!(f.snapshot(), before, "{verb}: the tree changed");
    }
}

#[test]
fn enabled_namespace_needs_reenable_and_the_module() {
    let f = Fixture::new();
    let before = f.snapshot();
    let (code, _, err) = f.run(&["bind", NQN_B, "1", "--cgroup", "tenant-a"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("is enabled") && err.contains("--reenable"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(f.snapshot(), before);

    let (code, _, err) = f.run(&["bind", NQN_B, "1", "--cgroup", "tenant-a", "--reenable"]);
    assert_ne!(code, 0);
    assert!(err.contains("load nvmet_cgroup"), "{err}");
    assert_eq!(f.snapshot(), before);

    f.load_module();
    f.ok(&["bind", NQN_B, "1", "--cgroup", "tenant-a", "--reenable"]);
    assert_eq!(f.cgroup_id(NQN_B, 1), f.ino("tenant-a"));
    assert_eq!(
        fs::read_to_string(f.ns(NQN_B, 1).join("enable")).unwrap(),
        "1\n"
    );

    let (code, _, err) = f.run(&["unbind", NQN_B, "1"]);
    assert_ne!(code, 0, "{err}");
    f.ok(&["unbind", NQN_B, "1", "--reenable"]);
    assert_eq!(f.cgroup_id(NQN_B, 1), 0);
}

#[test]
fn limit_partition_goes_to_whole_disk() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    let out = f.ok(&[
        "limit",
        NQN_A,
        "1",
        "--riops",
        "1K",
        "--wbps",
        "20M",
        "--weight",
        "300",
        "--latency",
        "5ms",
    ]);
    assert!(out.contains("8:16 (sdb)"), "{out}");
    assert_eq!(
        f.read("cgroup/tenant-a/io.max"),
        "8:16 wbps=20000000 riops=1000\n"
    );
    assert_eq!(last_line(&f.read("cgroup/tenant-a/io.weight")), "8:16 300");
    assert_eq!(f.read("cgroup/tenant-a/io.latency"), "8:16 target=5000\n");
    f.ok(&["limit", NQN_A, "1", "--riops", "max"]);
    assert_eq!(
        last_line(&f.read("cgroup/tenant-a/io.max")),
        "8:16 riops=max"
    );
    // systemd's word for no limit clears one too.
    f.ok(&["limit", NQN_A, "1", "--wbps", "infinity"]);
    assert_eq!(
        last_line(&f.read("cgroup/tenant-a/io.max")),
        "8:16 wbps=max"
    );
}

/// A kernel without io.latency (Debian's): io enabled, no io.latency file.
#[test]
fn latency_on_a_kernel_without_io_latency_is_refused_clearly() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    std::fs::remove_file(f.cg("tenant-a").join("io.latency")).unwrap();
    let before = f.snapshot();
    let (code, _, err) = f.run(&["limit", NQN_A, "1", "--riops", "1K", "--latency", "5ms"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("io.latency is not available on this kernel")
            && err.contains("CONFIG_BLK_CGROUP_IOLATENCY"),
        "{err}"
    );
    assert_eq!(f.snapshot(), before, "nothing may be written");
    f.ok(&["limit", NQN_A, "1", "--riops", "1K"]);
    assert_eq!(f.read("cgroup/tenant-a/io.max"), "8:16 riops=1000\n");
}

#[test]
fn limit_dm_goes_to_both_disks() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "2", "--cgroup", "tenant-a"]);
    let out = f.ok(&["limit", NQN_A, "2", "--rbps", "1G"]);
    assert!(out.contains("253:0"), "{out}");
    assert_eq!(
        f.read("cgroup/tenant-a/io.max"),
        "8:32 rbps=1000000000\n8:48 rbps=1000000000\n"
    );
}

#[test]
fn limit_loop_goes_to_the_backing_files_disk() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "3", "--cgroup", "tenant-a"]);
    f.ok(&["limit", NQN_A, "3", "--wiops", "500"]);
    assert_eq!(f.read("cgroup/tenant-a/io.max"), "8:64 wiops=500\n");
}

#[test]
fn file_namespace_uses_the_filesystems_device() {
    let f = Fixture::new();
    let img = f.p("srv/file-ns.img");
    fs::write(&img, "x").unwrap();
    let dev = fs::metadata(&img).unwrap().dev();
    let (maj, min) = (
        (((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)) as u32,
        ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32,
    );
    let link = f.p("sys/dev/block").join(d((maj, min)));
    if link.exists() {
        eprintln!("skipped: the tempdir's device {maj}:{min} collides with the fixture");
        return;
    }
    let disk = f.p("sys/devices/virtual/block/tmpdisk");
    fs::create_dir_all(&disk).unwrap();
    fs::write(disk.join("dev"), format!("{maj}:{min}\n")).unwrap();
    std::os::unix::fs::symlink(&disk, &link).unwrap();
    f.make_ns(NQN_A, 7, &img, false, 0);
    f.ok(&["bind", NQN_A, "7", "--cgroup", "tenant-a"]);
    f.ok(&["limit", NQN_A, "7", "--riops", "7"]);
    assert_eq!(
        f.read("cgroup/tenant-a/io.max"),
        format!("{maj}:{min} riops=7\n")
    );
}

#[test]
fn status_json_shape() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    f.ok(&["limit", NQN_A, "1", "--riops", "1000"]);
    fs::write(
        f.cg("tenant-a/io.stat"),
        "8:16 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0 cost.usage=3\n",
    )
    .unwrap();
    let out = f.ok(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["version"], 1);
    let nss = v["namespaces"].as_array().unwrap();
    assert_eq!(nss.len(), 5);
    let ns = &nss[0];
    assert_eq!(ns["nqn"], NQN_A);
    assert_eq!(ns["nsid"], 1);
    assert_eq!(ns["enabled"], false);
    assert_eq!(ns["cgroup_id"], f.ino("tenant-a"));
    assert_eq!(ns["cgroup_state"], "bound");
    assert_eq!(ns["cgroup_path"], "tenant-a");
    assert_eq!(ns["top_device"], "8:17");
    assert_eq!(ns["device_error"], serde_json::Value::Null);
    assert_eq!(ns["devices"][0]["dev"], "8:16");
    assert_eq!(ns["devices"][0]["name"], "sdb");
    assert_eq!(ns["devices"][0]["limits"]["riops"], 1000);
    assert_eq!(ns["devices"][0]["limits"]["wiops"], serde_json::Value::Null);
    assert_eq!(ns["devices"][0]["stat"]["rbytes"], 4096);
    assert_eq!(ns["exec"], "module not loaded");
    // nsid 4: bound, device unresolvable; an unbound one has no limits.
    assert!(nss[3]["device_error"].as_str().unwrap().contains("8:200"));
    assert_eq!(nss[1]["cgroup_state"], "none");
    assert_eq!(nss[1]["devices"][0]["limits"], serde_json::Value::Null);

    f.load_module();
    let out = f.ok(&["status", NQN_A, "1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["namespaces"][0]["exec"]
            .as_str()
            .unwrap()
            .starts_with("unknown (no nvmet_cgroup status file"),
        "{out}"
    );
    let status = f.p("debug/nvmet_cgroup/namespaces");
    fs::create_dir_all(status.parent().unwrap()).unwrap();
    fs::write(
        &status,
        format!(
            "{NQN_A} 10 cgroup_id=5 mode=fast_path rw=transport\n\
             {NQN_A} 1 cgroup_id=7 mode=fast_path rw=context: io.cost enabled\n\n"
        ),
    )
    .unwrap();
    let out = f.ok(&["status", NQN_A, "1"]);
    assert!(
        out.contains("cgroup_id=7 mode=fast_path rw=context: io.cost enabled"),
        "{out}"
    );
    fs::write(&status, "\n").unwrap();
    let out = f.ok(&["status", NQN_A, "1"]);
    assert!(
        out.contains("not charged (not enabled with a cgroup)"),
        "{out}"
    );
    assert!(out.contains("8:17 -> 8:16"), "{out}");
    assert!(out.contains("default"), "{out}");
    println!("{out}");
    // A stale id.
    fs::write(f.ns(NQN_A, 2).join("cgroup_id"), "999999999\n").unwrap();
    let out = f.ok(&["status", NQN_A, "2"]);
    assert!(out.contains("not found (stale id?)"), "{out}");
}

#[test]
fn save_then_restore_after_reboot() {
    let f = Fixture::new();
    fs::write(f.ns(NQN_A, 4).join("cgroup_id"), "0\n").unwrap();
    f.load_module();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    f.ok(&["limit", NQN_A, "1", "--riops", "1K", "--latency", "2ms"]);
    f.ok(&["bind", NQN_A, "2", "--slice", "tenants-b.slice"]);
    f.ok(&["limit", NQN_A, "2", "--wbps", "10M"]);
    f.ok(&["bind", NQN_B, "1", "--cgroup", "tenant-a", "--reenable"]);
    let file = f.p("etc/nvmet/cgroup.json");
    let file = file.to_str().unwrap();
    f.ok(&["save", file]);
    let saved: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(saved["version"], 1);
    let recs = saved["namespaces"].as_array().unwrap();
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[0]["cgroup"], "tenant-a");
    assert_eq!(
        recs[0]["devices"][0]["path"],
        "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"
    );
    assert_eq!(recs[0]["devices"][0]["riops"], 1000);
    assert_eq!(recs[0]["devices"][0]["latency_us"], 2000);
    assert_eq!(recs[1]["cgroup"], "tenants.slice/tenants-b.slice");
    assert_eq!(recs[1]["slice"], "tenants-b.slice");
    assert_eq!(recs[1]["devices"][0]["path"], "/dev/sdc");
    assert_eq!(recs[1]["devices"][1]["path"], "/dev/sdd");
    // The same disk in the same cgroup: the same limits.
    assert_eq!(recs[2]["devices"], recs[0]["devices"]);
    let text = fs::read_to_string(file).unwrap();
    assert!(!text.contains("8:16") && !text.contains("8:32"), "{text}");

    // "Reboot": new cgroup inodes (the old directories are kept aside so
    // their numbers can't be reused), new device numbers, cgroup_id 0.
    let old_a = f.ino("tenant-a");
    fs::create_dir_all(f.p("old")).unwrap();
    fs::rename(f.cg("tenants.slice"), f.p("old/tenants.slice")).unwrap();
    fs::rename(f.cg("tenant-a"), f.p("old/tenant-a")).unwrap();
    f.make_cgroup("tenants.slice", "io\n");
    f.make_cgroup("tenants.slice/tenants-b.slice", "io\n");
    f.make_cgroup("tenant-a", "io\n");
    fs::write(f.cg("cgroup.subtree_control"), "").unwrap();
    f.remove_devices();
    f.make_devices(&BOOT2);
    let dev = f.p("dev");
    f.make_ns(NQN_A, 1, &dev.join("sdb1"), false, 0);
    f.make_ns(NQN_A, 2, &dev.join("dm-0"), false, 0);
    f.make_ns(NQN_B, 1, &dev.join("sdb"), true, 0);
    assert_ne!(f.ino("tenant-a"), old_a);

    let out = f.ok(&["restore", file]);
    assert!(out.contains("restored 3"), "{out}");
    assert_eq!(f.cgroup_id(NQN_A, 1), f.ino("tenant-a"));
    assert_eq!(f.cgroup_id(NQN_B, 1), f.ino("tenant-a"));
    assert_eq!(
        f.cgroup_id(NQN_A, 2),
        f.ino("tenants.slice/tenants-b.slice")
    );
    assert_eq!(
        fs::read_to_string(f.ns(NQN_B, 1).join("enable")).unwrap(),
        "1\n"
    );
    assert_eq!(f.read("cgroup/cgroup.subtree_control"), "+io\n");
    assert_eq!(
        f.read("cgroup/tenant-a/io.max"),
        format!("{} riops=1000\n", d(BOOT2.sdb))
    );
    assert_eq!(
        f.read("cgroup/tenant-a/io.latency"),
        format!("{} target=2000\n", d(BOOT2.sdb))
    );
    assert_eq!(
        f.read("cgroup/tenants.slice/tenants-b.slice/io.max"),
        format!(
            "{} wbps=10000000\n{} wbps=10000000\n",
            d(BOOT2.sdc),
            d(BOOT2.sdd)
        )
    );

    // Again: nothing changes.
    let before = f.snapshot();
    let out = f.ok(&["restore", file]);
    assert_eq!(out.matches("unchanged").count(), 3, "{out}");
    assert_eq!(f.snapshot(), before);
    let _ = BOOT1;
}

#[test]
fn save_keeps_a_backup_and_wont_replace_records_with_nothing() {
    let f = Fixture::new();
    // No namespace bound (nsid 4 is bound in the fixture).
    fs::write(f.ns(NQN_A, 4).join("cgroup_id"), "0\n").unwrap();
    let file = f.p("etc/nvmet/cgroup.json");
    let bak = f.p("etc/nvmet/cgroup.json.bak");
    let arg = file.to_str().unwrap();
    let records = |p: &std::path::Path| -> usize {
        let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap();
        v["namespaces"].as_array().unwrap().len()
    };

    // A first save: nothing to keep.
    let out = f.ok(&["save", arg]);
    assert!(!out.contains(".bak"), "{out}");
    assert!(!bak.exists());
    assert_eq!(records(&file), 0);
    // Empty over empty is fine; the old file is kept all the same.
    let empty = fs::read_to_string(&file).unwrap();
    let out = f.ok(&["save", arg]);
    assert!(
        out.contains(&format!("kept the previous file as {}", bak.display())),
        "{out}"
    );
    assert_eq!(fs::read_to_string(&bak).unwrap(), empty);

    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    f.ok(&["save", arg]);
    assert_eq!(records(&file), 1);
    assert_eq!(fs::read_to_string(&bak).unwrap(), empty);
    let one = fs::read_to_string(&file).unwrap();

    // Everything unbound: saving would lose the record.
    f.ok(&["unbind", NQN_A, "1"]);
    let before = f.snapshot();
    let (code, out, err) = f.run(&["save", arg]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        err,
        format!(
            "nvmet-cgroup: error: no namespace is bound to a cgroup: not replacing {arg} \
             (1 namespace(s)) with an empty configuration (use --force to)\n"
        )
    );
    assert_eq!(f.snapshot(), before, "the refused save changed something");

    // --force: replaced, the record kept in the .bak.
    f.ok(&["save", arg, "--force"]);
    assert_eq!(records(&file), 0);
    assert_eq!(fs::read_to_string(&bak).unwrap(), one);

    // A file that is not a save file is not known to be empty.
    fs::write(&file, "hand-written notes\n").unwrap();
    let before = f.snapshot();
    let (code, _, err) = f.run(&["save", arg]);
    assert_eq!(code, 1);
    assert!(err.contains("content that is not a save file"), "{err}");
    assert_eq!(f.snapshot(), before);
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    f.ok(&["save", arg]);
    assert_eq!(records(&file), 1);
    assert_eq!(fs::read_to_string(&bak).unwrap(), "hand-written notes\n");
}

#[test]
fn restore_reports_missing_namespace_and_continues() {
    let f = Fixture::new();
    let file = f.p("cg.json");
    let text = format!(
        r#"{{"version":1,"namespaces":[
        {{"nqn":"nqn.gone","nsid":1,"cgroup":"tenant-a","device_path":"/x"}},
        {{"nqn":"{NQN_A}","nsid":1,"cgroup":"tenant-c","device_path":"/x"}}]}}"#
    );
    fs::write(&file, text).unwrap();
    let (code, _, err) = f.run(&["restore", file.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("nqn.gone nsid 1: no subsystem"), "{err}");
    assert!(err.contains("1 of 2 record(s)"), "{err}");
    assert!(f.cg("tenant-c").is_dir());
    assert_eq!(f.cgroup_id(NQN_A, 1), f.ino("tenant-c"));
}

#[test]
fn bad_inputs_change_nothing() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    fs::write(f.p("bad.json"), "{\"version\":1,\"namespaces\":[").unwrap();
    fs::write(f.p("v2.json"), "{\"version\":2,\"namespaces\":[]}").unwrap();
    let bad = f.p("bad.json").display().to_string();
    let v2 = f.p("v2.json").display().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["bind", "nqn.nope", "1", "--cgroup", "tenant-a"],
            "no subsystem nqn.nope",
        ),
        (
            vec!["bind", NQN_A, "9", "--cgroup", "tenant-a"],
            "has no namespace 9",
        ),
        (
            vec!["bind", NQN_A, "2", "--cgroup", "notacg"],
            "is not a cgroup",
        ),
        (
            vec!["bind", NQN_A, "2", "--cgroup", "notacg/x", "--create"],
            "is not a cgroup",
        ),
        (
            vec!["bind", NQN_A, "2", "--cgroup", "noio/child"],
            "io controller not available at",
        ),
        (
            vec!["bind", NQN_A, "2", "--cgroup", "absent"],
            "use --create",
        ),
        (vec!["bind", NQN_A, "2", "--cgroup", "../etc"], "\"..\""),
        (
            vec!["bind", NQN_A, "2", "--slice", "a--b.slice", "--create"],
            "invalid slice name",
        ),
        (vec!["bind", NQN_A, "2"], "required"),
        (vec!["bind", NQN_A, "0", "--cgroup", "tenant-a"], "0"),
        (vec!["limit", NQN_A, "1", "--riops", "1.5M"], "fractions"),
        (vec!["limit", NQN_A, "1", "--wbps", "1.5K"], "fractions"),
        (vec!["limit", NQN_A, "1", "--rbps", "10X"], "unknown suffix"),
        (
            vec!["limit", NQN_A, "1", "--rbps", ""],
            "a number is missing",
        ),
        (vec!["limit", NQN_A, "1", "--riops", "5G"], "too large"),
        (
            vec!["limit", NQN_A, "1", "--rbps", "-1"],
            "not a whole number",
        ),
        (
            vec!["limit", NQN_A, "1", "--wiops", "10x"],
            "unknown suffix",
        ),
        (vec!["limit", NQN_A, "1", "--latency", "5"], "unit"),
        (vec!["limit", NQN_A, "1", "--weight", "0"], "1 to 10000"),
        (vec!["limit", NQN_A, "1"], "required"),
        (vec!["limit", NQN_A, "2", "--riops", "10"], "not bound"),
        (
            vec!["limit", NQN_A, "4", "--riops", "10"],
            "cannot resolve device 8:200",
        ),
        (vec!["restore", &bad], "malformed JSON"),
        (vec!["restore", &v2], "unsupported version 2"),
        (vec!["status", "nqn.nope"], "no subsystem"),
    ];
    for (args, want) in cases {
        let before = f.snapshot();
        let (code, out, err) = f.run(&args);
        assert_ne!(code, 0, "{args:?} succeeded: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("nvmet-cgroup: error: "), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
        assert_eq!(f.snapshot(), before, "{args:?} changed the tree");
    }
}

#[test]
fn man_page_and_help() {
    let f = Fixture::new();
    let man = f.ok(&["man"]);
    assert!(
        man.starts_with(".ie") || man.contains(".TH nvmet-cgroup 8"),
        "{man}"
    );
    assert!(man.contains("bind") && man.contains("restore"));
    let help = f.ok(&["limit", "--help"]);
    for want in ["base of 1000", "20K is 20000", "infinity"] {
        assert!(help.contains(want), "{want:?} not in {help}");
    }
    assert!(!help.contains("1024"), "{help}");
    for want in ["base of 1000", "infinity"] {
        assert!(man.contains(want), "{want:?} not in {man}");
    }
}
